"""pages/_light.py on the pages' first screens: each figure is an inline SVG drawing with its interactive Plotly
chart in a popover (whose content the browser draws only when it is opened, so Plotly's code loads then), and each
launch command is text with ``st.code`` in a copy popover (the syntax highlighter likewise)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120


def _nodes(at: AppTest) -> list[tuple[object, tuple[object, ...]]]:
    """Every element and block of the main area with its ancestors (outermost first)."""
    out = []

    def walk(node: object, ancestors: tuple[object, ...]) -> None:
        out.append((node, ancestors))
        for child in getattr(node, "children", {}).values():
            walk(child, (*ancestors, node))

    walk(at.main, ())
    return out


def _in_popover(ancestors: tuple[object, ...]) -> bool:
    return any(getattr(a, "type", None) == "popover" for a in ancestors)


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=TIMEOUT_S).run(timeout=TIMEOUT_S)
    assert not at.exception
    return at


@pytest.mark.parametrize(
    ("page", "key"),
    [
        ("budget.py", "memory_chart"),
        ("concurrency.py", "concurrency_chart"),
        ("performance.py", "perf.chart"),
        ("sizing.py", "size.pareto.gpu"),
        ("sizing.py", "size.pareto.cost"),
    ],
)
def test_a_figure_is_drawn_as_svg_and_plotly_waits_in_a_popover(page, key):
    nodes = _nodes(_page(page))
    (chart,) = [(n, a) for n, a in nodes if getattr(n, "type", None) == "plotly_chart" and n.key == key]
    assert _in_popover(chart[1])
    (static,) = [n for n, _ in nodes if getattr(n, "key", None) == f"{key}-static"]
    (drawing,) = static.children.values()
    assert drawing.type == "markdown" and drawing.value.startswith("<svg") and drawing.proto.allow_html
    assert not _in_popover(next(a for n, a in nodes if n is static))


@pytest.mark.parametrize("page", ["budget.py", "sizing.py"])
def test_the_launch_command_is_text_and_st_code_waits_in_a_copy_popover(page):
    nodes = _nodes(_page(page))
    codes = [(n, a) for n, a in nodes if getattr(n, "type", None) == "code"]
    in_popover = [n.value for n, a in codes if _in_popover(a)]
    assert in_popover and in_popover[0].startswith("vllm serve ")
    first = in_popover[0]
    shown = [n.value for n, a in nodes if getattr(n, "type", None) == "markdown" and not _in_popover(a)]
    assert f"` {first} `" in shown  # the same command, as a code span on the page
    assert all(_in_popover(a) for _, a in codes)  # the page draws no st.code until a copy button is pressed


def test_the_ranked_table_is_html_and_the_data_grid_waits_in_a_popover():
    at = _page("sizing.py")
    nodes = _nodes(at)
    grids = [(n, a) for n, a in nodes if getattr(n, "type", None) in ("arrow_data_frame", "dataframe")]
    assert grids and all(_in_popover(a) for _, a in grids)  # no data grid on the page until a popover is opened
    (static,) = [n for n, _ in nodes if getattr(n, "key", None) == "size.table-static"]
    (table,) = static.children.values()
    assert table.type == "html" and "<table" in table.value and ">meets the SLOs</td>" in table.value
    assert any({"rank", "verdict", "why", "layout"} <= set(n.value.columns) for n, _ in grids)  # every column


def test_no_data_grid_is_drawn_while_the_price_expander_is_closed():
    at = _page("sizing.py")
    assert not [n for n, _ in _nodes(at) if str(getattr(n, "key", None)).startswith("size.prices_table")]
