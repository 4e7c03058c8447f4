"""planner/figure_svg.py: a Plotly figure drawn as SVG keeps its content (every legend entry, title and label), maps
values where Plotly would (linear, log and category axes, stacks, bands, shapes) and escapes what a user typed.

Geometry is checked by relations worked by hand (a stack's second bar starts where the first ends; on log axes the
points 1, 10, 100 are evenly spaced), not by pixel values the code produced."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from planner.figure_svg import figure_svg

SVG = "{http://www.w3.org/2000/svg}"


def _tree(fig: go.Figure) -> ET.Element:
    return ET.fromstring(figure_svg(fig))  # also proves it is well-formed XML


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def _titles(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}title")]


def _rects(root: ET.Element) -> list[dict[str, float]]:
    out = []
    for r in root.iter(f"{SVG}rect"):
        if r.find(f"{SVG}title") is not None:  # data bars carry a tooltip; clip and legend boxes do not
            out.append({k: float(r.get(k)) for k in ("x", "y", "width", "height")})
    return out


def _circles(root: ET.Element) -> list[tuple[float, float]]:
    return [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{SVG}circle")]


def test_stacked_horizontal_bars_meet_end_to_start():
    fig = go.Figure([go.Bar(x=[2.0], y=["gpu"], orientation="h"), go.Bar(x=[3.0], y=["gpu"], orientation="h")])
    fig.update_layout(barmode="stack")
    first, second = _rects(_tree(fig))
    assert second["x"] == pytest.approx(first["x"] + first["width"], abs=0.11)  # rounding to 0.1 px
    assert second["width"] / first["width"] == pytest.approx(3 / 2, rel=0.01)
    assert first["y"] == second["y"] and first["height"] == second["height"]


def test_log_axes_space_decades_evenly():
    fig = go.Figure(go.Scatter(x=[1, 10, 100], y=[1, 10, 100], mode="markers"))
    fig.update_layout(xaxis_type="log", yaxis_type="log")
    (x1, y1), (x10, y10), (x100, y100) = _circles(_tree(fig))
    assert x10 - x1 == pytest.approx(x100 - x10, abs=0.2)
    assert y1 - y10 == pytest.approx(y10 - y100, abs=0.2)  # y grows upwards
    assert y1 > y10 > y100


def test_category_axis_reversed_puts_the_first_category_on_top():
    fig = go.Figure(go.Bar(x=[1, 1], y=["first", "second"], orientation="h"))
    fig.update_layout(yaxis={"autorange": "reversed"})
    top, bottom = _rects(_tree(fig))
    assert top["y"] < bottom["y"]


def test_tick_text_and_titles_are_kept():
    fig = go.Figure(go.Scatter(x=[512, 1024], y=[3.0, 1.5], name="one"))
    fig.update_layout(
        title="Concurrent requests",
        xaxis={"type": "log", "tickvals": [512, 1024], "ticktext": ["512", "1K"], "title": "context (tokens)"},
        yaxis_title="requests",
    )
    texts = _texts(_tree(fig))
    for wanted in ("512", "1K", "context (tokens)", "requests", "Concurrent requests"):
        assert wanted in texts


def test_hover_text_follows_the_template():
    # %{x:,} puts thousands separators; %{y:.2f} two decimals; customdata by index: worked by hand
    fig = go.Figure(
        go.Scatter(
            x=[1024],
            y=[3.454],
            customdata=[["vLLM 0.28"]],
            mode="markers",
            hovertemplate="<b>ctx</b> %{x:,} tokens<br>%{y:.2f} requests (%{customdata[0]})<extra></extra>",
        )
    )
    assert _titles(_tree(fig)) == ["ctx 1,024 tokens\n3.45 requests (vLLM 0.28)"]


def test_what_a_user_typed_is_escaped():
    name = '<script>alert("x")</script> $5 & more'
    fig = go.Figure([go.Scatter(x=[1, 2], y=[1, 2], name=name), go.Scatter(x=[1, 2], y=[2, 1], name="other")])
    svg = figure_svg(fig)
    assert "<script" not in svg and "$" not in svg  # $ as &#36;: markdown would read $…$ as math
    assert name in _texts(ET.fromstring(svg))  # the legend still says it, unescaped by the parser


def test_a_band_fills_between_its_two_edges():
    fig = go.Figure(
        [
            go.Scatter(x=[1, 2, 3], y=[1, 1, 1], mode="lines", line={"width": 0}, showlegend=False),
            go.Scatter(x=[1, 2, 3], y=[3, 3, 3], mode="lines", fill="tonexty", fillcolor="rgba(0, 0, 255, 0.2)"),
        ]
    )
    (band,) = [p for p in _tree(fig).iter(f"{SVG}path") if p.get("fill") == "rgba(0, 0, 255, 0.2)"]
    corners = re.findall(r"[-\d.]+,[-\d.]+", band.get("d"))
    assert len(corners) == 6  # three points along the top edge, three back along the bottom


def test_a_vertical_line_shape_on_a_log_axis_sits_at_its_value():
    # shapes take the value itself on a log axis (annotations take its log10)
    fig = go.Figure(go.Scatter(x=[1, 10, 100], y=[1, 2, 3], mode="markers"))
    fig.update_layout(xaxis_type="log")
    fig.add_vline(x=10, line={"color": "#123456"})
    root = _tree(fig)
    (line,) = [p for p in root.iter(f"{SVG}path") if p.get("stroke") == "#123456"]
    x_line = float(re.match(r"M([-\d.]+),", line.get("d"))[1])
    assert x_line == pytest.approx(_circles(root)[1][0], abs=0.11)


def test_box_quartiles_whiskers_and_outliers():
    # values 1, 2, 3, 4, 100: quartiles 2, 3, 4 (linear interpolation); 1.5 IQR reaches 7, so 100 is an outlier
    fig = go.Figure(go.Box(y=[1, 2, 3, 4, 100], name="ep"))
    root = _tree(fig)
    (summary,) = [t for t in _titles(root) if t.startswith("ep")]
    assert "median 3.0" in summary and "q1 2.0, q3 4.0" in summary and "whiskers 1.0–4.0" in summary
    assert "100.0" in _titles(root)  # the outlier is drawn, with its value


def test_subplots_draw_each_panel_title_and_legend_once():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("left panel", "right panel"))
    fig.add_trace(go.Scatter(x=[1, 2], y=[1, 2], name="series", showlegend=True), row=1, col=1)
    fig.add_trace(go.Scatter(x=[1, 2], y=[2, 3], name="series", showlegend=False), row=1, col=2)
    texts = _texts(_tree(fig))
    assert texts.count("left panel") == 1 and texts.count("right panel") == 1
    assert texts.count("series") == 1  # one trace asks for the legend: Plotly draws one for it


@pytest.mark.parametrize("kind", ["memory", "concurrency"])
def test_the_app_figures_keep_every_legend_entry_and_label(kind):
    from planner.capacity.charts import concurrency_figure, memory_breakdown_figure
    from planner.capacity.plan import plan
    from planner.capacity.scenario import Scenario

    plans = [plan(Scenario()), plan(Scenario(gpu_memory_utilization=0.5))]
    labels = ["1 · default", "2 · half the memory"]
    fig = (memory_breakdown_figure if kind == "memory" else concurrency_figure)(plans, labels)
    texts = set(_texts(_tree(fig)))
    legend = {t.name for t in fig.data if t.name and t.showlegend is not False}
    assert legend <= texts
    assert {str(a.text) for a in fig.layout.annotations} <= texts


def test_identical_figures_draw_identically_and_others_get_their_own_ids():
    def fig(y: float) -> go.Figure:
        return go.Figure(go.Scatter(x=[1, 2], y=[1, y]))

    assert figure_svg(fig(2)) == figure_svg(fig(2))
    ids = {m for y in (2, 3) for m in re.findall(r'clipPath id="([^"]+)"', figure_svg(fig(y)))}
    assert len(ids) == 2


def test_an_empty_box_beside_a_full_one_keeps_the_value_axis_numeric():
    # Live Compare's ITL figure while one endpoint has no sample yet: the empty box used to turn the value axis into
    # categories, one tick label per sample
    fig = go.Figure([go.Box(y=[], name="dead (n=0)"), go.Box(y=[19.3, 20.1, 21.5, 18.9, 25.0, 30.2], name="ok (n=6)")])
    texts = _texts(_tree(fig))
    assert "19.3" not in texts and "21.5" not in texts  # samples are not tick labels
    assert {"20", "30"} <= set(texts)  # a linear axis: round ticks over 18.9-30.2
    assert "dead (n=0)" in texts and "ok (n=6)" in texts  # each box keeps its slot on x


def test_panels_of_shared_x_axes_span_the_same_data():
    # make_subplots(shared_xaxes=True) matches x and x2 to x3 (the bottom axis), not to each other: every panel must
    # still span 0-4 s, the union of the three panels' data (Load Test's live figure)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True)
    for row, xs in ((1, [1, 2]), (2, [0, 1]), (3, [3, 4])):
        fig.add_trace(go.Scatter(x=xs, y=[1, 2], mode="markers"), row=row, col=1)
    circles = _circles(_tree(fig))
    left = min(x for x, _ in circles)
    right = max(x for x, _ in circles)
    rows = [circles[0:2], circles[2:4], circles[4:6]]
    # x = 0 and x = 4 lie on the same two verticals in every panel: 1 s apart is the same width everywhere
    one_second = [(b[0] - a[0]) for a, b in rows]
    assert one_second[0] == pytest.approx(one_second[1], abs=0.2) == pytest.approx(one_second[2], abs=0.2)
    assert rows[1][0][0] == pytest.approx(left, abs=0.2) and rows[2][1][0] == pytest.approx(right, abs=0.2)
    assert rows[0][0][0] == pytest.approx(left + one_second[0], abs=0.2)  # x = 1 in the top panel


def test_a_title_wider_than_a_narrow_drawing_stays_inside_it():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout={"title": "Inter-token latency (per token)"})
    root = ET.fromstring(figure_svg(fig, width_px=300))
    (title,) = [t for t in root.iter(f"{SVG}text") if t.text == "Inter-token latency (per token)"]
    x, size = float(title.get("x")), float(title.get("font-size"))
    # 31 characters at ~0.55 em each (the drawing's own estimate is 6.2 px a character at 12 px)
    assert x + 31 * 0.55 * size <= 300
    assert size >= 11
