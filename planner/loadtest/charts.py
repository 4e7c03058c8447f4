"""Figures and tables of the Load Test page. Pure functions returning plotly figures and pandas frames.

Metric definitions are ``vllm bench serve``'s (:mod:`planner.metrics.benchmark`): TTFT = first token − sent,
TPOT = (E2EL − TTFT) / (output tokens − 1), ITL = gap between token-bearing chunks (one sample per chunk),
E2EL = last token − sent; output throughput = Σ output tokens / run duration.

* :func:`sweep_figure`: the throughput-against-latency curve of each sweep (x: median latency, y: output tokens/s),
  one marker per concurrency level, the knee starred.
* :func:`curves_figure`: output throughput, TPOT and TTFT (median, p99 thinner) against concurrency or request rate
  (log₂ x axis), one colour per series group, predicted series dashed beside the measured ones they mirror, a
  shaded band around a median where the points carry one (a prediction's error band), the knee starred and the load
  at which the KV cache fills marked; its points come from :func:`curve_row` (one level of any run, measured or
  predicted) or :func:`sweep_curves` (the levels of saved sweeps), their knees from :func:`curve_knees`.
* :func:`runs_figure`: runs side by side (measured here, earlier, imported): throughput and latency medians with
  their p99.
* :func:`live_figure`: a run while it goes: output tokens/s and TTFT percentiles per time window, requests in
  flight (client) and, when scraped, the server's running / waiting requests and KV cache usage.
* :func:`turns_figure`: TTFT by conversation turn (median, p90 dotted) beside the prompt length of each turn.
* :func:`display_runs`: :func:`planner.loadtest.results.runs_frame` formatted for a table ("n/a" for missing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner import display
from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun, runs_frame
from planner.loadtest.sweep import find_knee
from planner.metrics.benchmark import BenchmarkMetrics, Distribution
from planner.metrics.timeseries import timeseries, timeseries_frame
from planner.palette import series_color
from planner.serving.server_metrics import ServerSample
from planner.serving.streaming import RequestRecord
from planner.units import MS_PER_S

__all__ = [
    "BAND_OPACITY",
    "CURVE_AXES",
    "CURVE_COLUMNS",
    "KV_FULL_TEXT",
    "LATENCY_AXES",
    "PREFIX_CACHE_HEADLINE",
    "RUNS_HEADLINE",
    "curve_knees",
    "curve_row",
    "curves_figure",
    "display_runs",
    "live_figure",
    "live_frames",
    "run_headline",
    "runs_figure",
    "sweep_curves",
    "sweep_figure",
    "sweep_points",
    "turns_figure",
]

#: Latency the sweep curve is drawn against: label → (vLLM metric name, statistic).
LATENCY_AXES: dict[str, tuple[str, str]] = {
    "median E2E latency (ms)": ("e2el", "median"),
    "median TPOT (ms)": ("tpot", "median"),
    "median TTFT (ms)": ("ttft", "median"),
    "p99 E2E latency (ms)": ("e2el", "p99"),
}


#: Panels of :func:`curves_figure`: (median column, p99 column or None, subplot title).
_CURVE_PANELS: tuple[tuple[str, str | None, str], ...] = (
    ("output_throughput", None, "output throughput (tok/s)"),
    ("median_tpot_ms", "p99_tpot_ms", "TPOT (ms): median, p99 thin"),
    ("median_ttft_ms", "p99_ttft_ms", "TTFT (ms): median, p99 thin"),
)
#: The columns the TTFT panel's log axis must span (its band's ends included).
_TTFT_COLUMNS: tuple[str, ...] = ("median_ttft_ms", "p99_ttft_ms", "median_ttft_ms_low", "median_ttft_ms_high")
#: Opacity of the band shaded around a median (the curve's own colour shows through it).
BAND_OPACITY = 0.18
#: Columns of a load curve's points (:func:`curve_row`); latencies in milliseconds, throughputs per second. Each
#: panel's median has ``<column>_low`` and ``<column>_high``: the band around it (None where there is none).
CURVE_COLUMNS: tuple[str, ...] = (
    "series",
    "group",
    "predicted",
    "level",
    "output_throughput",
    "request_throughput",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "completed",
    "failed",
    *(f"{median}_{end}" for median, _, _ in _CURVE_PANELS for end in ("low", "high")),
)
#: x-axis title of :func:`curves_figure` for each axis.
CURVE_AXES: dict[str, str] = {
    "concurrency": "concurrency (requests in flight, log scale)",
    "rate": "request rate (req/s, log scale)",
}
#: The text by the line that marks where a series' KV cache fills up.
KV_FULL_TEXT = "KV cache full"


def _ms(dist: Distribution | None, stat: str) -> float | None:
    value = None if dist is None else getattr(dist, f"{stat}_s")
    return None if value is None else value * MS_PER_S


def curve_row(
    series: str,
    level: float,
    metrics: BenchmarkMetrics,
    *,
    group: str | None = None,
    predicted: bool = False,
    band: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, object]:
    """One point of a load curve (the columns of :data:`CURVE_COLUMNS`).

    Args:
        series: the curve's name (legend).
        level: its concurrency (requests in flight) or request rate (req/s).
        metrics: the run's aggregates at that level, measured or predicted.
        group: the colour group (a predicted series shares its measured sweep's colour); None = ``series``.
        predicted: the metrics are a prediction.
        band: ``(low, high)`` around a median, keyed by its column (``output_throughput``, ``median_tpot_ms``,
            ``median_ttft_ms``) in that column's unit; a column left out has no band.

    Returns:
        ``{column: value}``: throughputs in tokens/s and requests/s, latencies in ms, None where there is no sample.
    """
    band = band or {}
    ends = {}
    for median, _, _ in _CURVE_PANELS:
        low, high = band.get(median, (None, None))
        ends |= {f"{median}_low": low, f"{median}_high": high}
    return {
        "series": series,
        "group": group or series,
        "predicted": predicted,
        "level": float(level),
        "output_throughput": metrics.output_throughput,
        "request_throughput": metrics.request_throughput,
        "median_tpot_ms": _ms(metrics.tpot, "median"),
        "p99_tpot_ms": _ms(metrics.tpot, "p99"),
        "median_ttft_ms": _ms(metrics.ttft, "median"),
        "p99_ttft_ms": _ms(metrics.ttft, "p99"),
        "median_itl_ms": _ms(metrics.itl, "median"),
        "completed": metrics.completed,
        "failed": metrics.failed,
        **ends,
    }


def sweep_curves(
    runs: Sequence[SavedRun], bands: Mapping[str, Mapping[str, tuple[float, float]]] | None = None
) -> pd.DataFrame:
    """The levels of the sweeps among ``runs`` as :func:`curve_row` points, level = concurrency.

    A run with ``source="predicted"`` (:func:`planner.predict.api.predicted_run`) is drawn as the prediction of the
    sweep its ``sweep`` names: series ``"<sweep> · predicted"`` in that sweep's colour group. Runs without a sweep id
    or a concurrency are left out.

    Args:
        runs: saved runs, measured, imported or predicted.
        bands: run label → :func:`curve_row`'s ``band`` (a prediction's error band); runs not named have none.

    Returns:
        A frame with :data:`CURVE_COLUMNS`, sorted by series and level.
    """
    rows = []
    for run in runs:
        if run.sweep is None or run.max_concurrency is None:
            continue
        predicted = run.source == "predicted"
        series = f"{run.sweep} · predicted" if predicted else run.sweep
        band = (bands or {}).get(run.label)
        rows.append(
            curve_row(series, run.max_concurrency, run.metrics, group=run.sweep, predicted=predicted, band=band)
        )
    frame = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    return frame.sort_values(["series", "level"], kind="stable").reset_index(drop=True)


def curve_knees(points: pd.DataFrame) -> dict[str, float | None]:
    """The knee of each series of :func:`sweep_curves` points (Kneedle over output throughput against log₂
    concurrency, :func:`planner.loadtest.sweep.find_knee`); None where a series does not bend."""
    knees: dict[str, float | None] = {}
    for series, group in points.groupby("series", sort=False):
        knee = find_knee([(int(c), t) for c, t in zip(group["level"], group["output_throughput"], strict=True)])
        knees[str(series)] = None if knee is None else float(knee)
    return knees


def _log_ticks(low: float, high: float) -> list[float]:
    """Ticks 1, 2, 5 × 10^k from just below ``low`` to just above ``high`` (both > 0)."""
    ticks = []
    for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        ticks += [m * 10.0**k for m in (1, 2, 5)]
    below = [t for t in ticks if t <= low]
    above = [t for t in ticks if t >= high]
    first, last = (below[-1] if below else ticks[0]), (above[0] if above else ticks[-1])
    return [t for t in ticks if first <= t <= last]


def _knee_star(x: object, y: object, series: str, text: str, color: str) -> go.Scatter:
    """The star at a series' knee, named ``knee of <series>: <text>``."""
    return go.Scatter(
        x=x,
        y=y,
        mode="markers",
        name=f"knee of {series}: {text}",
        legendgroup=series,
        marker={"symbol": "star", "size": 18, "color": color, "line": {"width": 1, "color": "black"}},
        hovertemplate=f"<b>knee</b> {text}<extra></extra>",
    )


def _band_trace(frame: pd.DataFrame, median: str, name: str, color: str) -> go.Scatter | None:
    """The band around ``frame``'s ``median`` (its ``_low`` and ``_high`` columns) as one closed, shaded polygon in
    ``color``; None where no point has a band. Its values show in the median's hover, not its own."""
    low, high = f"{median}_low", f"{median}_high"
    if low not in frame.columns:
        return None
    kept = frame.dropna(subset=[low, high])
    if kept.empty:
        return None
    levels = list(kept["level"])
    return go.Scatter(
        x=levels + levels[::-1],
        y=list(kept[high]) + list(kept[low])[::-1],
        fill="toself",
        fillcolor=color,
        opacity=BAND_OPACITY,
        mode="lines",
        line={"width": 0, "color": color},
        name=f"{name} band",
        legendgroup=name,
        showlegend=False,
        hoverinfo="skip",
    )


def _band_hover(frame: pd.DataFrame, median: str) -> list[str]:
    """Per point, ``<br>error band low–high`` (two decimals, the median's unit) for its hover; empty where it has
    none."""
    low, high = f"{median}_low", f"{median}_high"
    if low not in frame.columns:
        return [""] * len(frame)
    return [
        "" if pd.isna(lo) or pd.isna(hi) else f"<br>error band {lo:,.2f}–{hi:,.2f}"
        for lo, hi in zip(frame[low], frame[high], strict=True)
    ]


def _level_text(level: float) -> str:
    return f"{level:,.0f}" if float(level).is_integer() else f"{level:g}"


def curves_figure(
    points: pd.DataFrame,
    *,
    axis: str = "concurrency",
    knees: Mapping[str, float | None] | None = None,
    saturation: Mapping[str, float | None] | None = None,
    dash_predicted: bool = True,
) -> go.Figure:
    """Output throughput, median TPOT and median TTFT against the load, three panels side by side.

    Each series is a line with markers in its group's colour (:func:`planner.palette.series_color`, groups in order of
    appearance); its p99 TPOT and TTFT are a thinner dotted line of the same colour. A predicted series is dashed when
    ``dash_predicted`` (beside the measured sweep it mirrors). Where a series' points carry a band around a median
    (``<column>_low`` and ``_high``), it is shaded in the series' colour at :data:`BAND_OPACITY` under the line (trace
    ``"<series> band"``, out of the legend, toggled with its series), and the line's hover gives its low and high. The x
    axis is logarithmic with a tick at every level (1, 2, 4, … requests in flight, or the request rates); so is the TTFT
    axis (milliseconds when idle, seconds behind a queue).

    Args:
        points: :func:`curve_row` points (:data:`CURVE_COLUMNS`).
        axis: ``concurrency`` or ``rate`` (a key of :data:`CURVE_AXES`): the x-axis title.
        knees: series → level of its knee (a star on the throughput panel); None or missing = no knee.
        saturation: series → level at which its KV cache fills (a dashed vertical line on every panel, labelled
            :data:`KV_FULL_TEXT` on the throughput panel); None or missing = it never does.
        dash_predicted: draw predicted series dashed.

    Returns:
        The figure (an annotation says so when there is no point).

    Raises:
        InvalidParameterError: an unknown ``axis``.
    """
    if axis not in CURVE_AXES:
        raise InvalidParameterError("axis", axis, " or ".join(CURVE_AXES))
    knees, saturation = knees or {}, saturation or {}
    fig = make_subplots(rows=1, cols=3, subplot_titles=tuple(title for _, _, title in _CURVE_PANELS))
    groups = list(dict.fromkeys(points["group"]))
    unit = "" if axis == "concurrency" else " req/s"
    for series, frame in points.groupby("series", sort=False):
        frame = frame.sort_values("level")
        color = series_color(groups.index(frame["group"].iloc[0]))
        dash = "dash" if dash_predicted and bool(frame["predicted"].iloc[0]) else "solid"
        name = str(series)
        for col, (median, p99, title) in enumerate(_CURVE_PANELS, start=1):
            band = _band_trace(frame, median, name, color)
            if band is not None:  # first, so the line is drawn over it
                fig.add_trace(band, row=1, col=col)
            fig.add_trace(
                go.Scatter(
                    x=frame["level"],
                    y=frame[median],
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line={"color": color, "dash": dash, "width": 2.5},
                    marker={"size": 7},
                    customdata=_band_hover(frame, median),
                    hovertemplate=f"<b>{name}</b><br>{axis} %{{x:,.4~g}}{unit}<br>{title.split(' (')[0]} "
                    "%{y:,.2f}%{customdata}<extra></extra>",
                ),
                row=1,
                col=col,
            )
            if p99 is not None and frame[p99].notna().any():
                fig.add_trace(
                    go.Scatter(
                        x=frame["level"],
                        y=frame[p99],
                        mode="lines",
                        name=f"{name} p99",
                        legendgroup=name,
                        showlegend=False,
                        line={"color": color, "dash": "dot", "width": 1},
                        hovertemplate=f"<b>{name}</b> p99<br>{axis} %{{x:,.4~g}}{unit}<br>%{{y:,.2f}} ms"
                        "<extra></extra>",
                    ),
                    row=1,
                    col=col,
                )
        knee = knees.get(name)
        at = frame[frame["level"] == knee]
        if knee is not None and not at.empty:
            text = f"{_level_text(knee)}{unit or ' in flight'}"
            fig.add_trace(_knee_star(at["level"], at["output_throughput"], name, text, color), row=1, col=1)
        full = saturation.get(name)
        if full is not None:
            for col in (1, 2, 3):
                fig.add_vline(x=full, line={"color": color, "dash": "dash", "width": 1.5}, opacity=0.8, row=1, col=col)
            fig.add_annotation(
                x=math.log10(full),
                y=1,
                xref="x",
                yref="y domain",
                text=KV_FULL_TEXT,
                showarrow=False,
                textangle=-90,
                xanchor="right",
                yanchor="top",
                font={"color": color, "size": 11},
            )
    levels = sorted(set(points["level"]))
    for col in (1, 2, 3):
        fig.update_xaxes(
            type="log",
            tickvals=levels,
            ticktext=[_level_text(v) for v in levels],
            title_text=CURVE_AXES[axis] if col == 2 else None,
            row=1,
            col=col,
        )
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    # TTFT spans milliseconds (an idle server) to seconds (a queue): a log axis, ticked 1-2-5 in each decade
    ttft = points[[c for c in _TTFT_COLUMNS if c in points.columns]].to_numpy(dtype=float).ravel()
    ttft = ttft[ttft > 0]  # NaN compares False: missing values and bands drop out
    ticks = _log_ticks(float(ttft.min()), float(ttft.max())) if len(ttft) else []
    fig.update_yaxes(
        type="log", tickvals=ticks, ticktext=[f"{t:,.0f}" if t >= 1 else f"{t:g}" for t in ticks], row=1, col=3
    )
    fig.update_layout(
        height=430,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
        hovermode="closest",
    )
    if not len(points):
        fig.add_annotation(text="No points yet", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    return fig


def sweep_points(runs: Sequence[SavedRun], latency: str = "median E2E latency (ms)") -> pd.DataFrame:
    """One row per run that belongs to a sweep: sweep, endpoint, concurrency, output tok/s, latency (ms).

    Runs without a sweep id or a concurrency are left out; a latency that is missing is None.
    """
    metric, stat = LATENCY_AXES[latency]
    rows = []
    for run in runs:
        if run.sweep is None or run.max_concurrency is None:
            continue
        dist = getattr(run.metrics, metric)
        value = None if dist is None else getattr(dist, f"{stat}_s")
        rows.append(
            {
                "sweep": run.sweep,
                "endpoint": run.endpoint,
                "concurrency": run.max_concurrency,
                "output_throughput": run.metrics.output_throughput,
                "request_throughput": run.metrics.request_throughput,
                "latency_ms": None if value is None else value * MS_PER_S,
                "failed": run.metrics.failed,
            }
        )
    columns = ["sweep", "endpoint", "concurrency", "output_throughput", "request_throughput", "latency_ms", "failed"]
    return pd.DataFrame(rows, columns=columns).sort_values(["sweep", "concurrency"], kind="stable")


def sweep_figure(
    points: pd.DataFrame, knees: Mapping[str, int | None], latency: str = "median E2E latency (ms)"
) -> go.Figure:
    """Throughput against latency, one line per sweep, each marker labelled with its concurrency.

    Args:
        points: :func:`sweep_points`.
        knees: Sweep id → concurrency of its knee (None when it has none).
        latency: The x-axis, a key of :data:`LATENCY_AXES`.
    """
    fig = go.Figure()
    for i, (sweep, group) in enumerate(points.groupby("sweep", sort=False)):
        group = group.dropna(subset=["latency_ms"])
        color = series_color(i)
        fig.add_trace(
            go.Scatter(
                x=group["latency_ms"],
                y=group["output_throughput"],
                mode="lines+markers+text",
                text=[f"c={c}" for c in group["concurrency"]],
                textposition="top left",
                name=str(sweep),
                line={"color": color},
                customdata=group[["concurrency", "request_throughput", "failed"]],
                hovertemplate=(
                    f"<b>{sweep}</b><br>concurrency %{{customdata[0]}}<br>%{{y:,.1f}} output tok/s · "
                    "%{customdata[1]:.2f} req/s<br>" + latency + " %{x:,.1f}<br>failed %{customdata[2]}<extra></extra>"
                ),
            )
        )
        knee = knees.get(str(sweep))
        at = group[group["concurrency"] == knee]
        if knee is not None and not at.empty:
            fig.add_trace(_knee_star(at["latency_ms"], at["output_throughput"], str(sweep), f"c={knee}", color))
    fig.update_layout(
        title="Concurrency sweep: throughput against latency",
        xaxis_title=latency,
        yaxis_title="output throughput (tok/s)",
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 50, "b": 10},
        height=420,
    )
    if not len(points):
        fig.add_annotation(text="No sweep yet", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    return fig


def runs_figure(runs: Sequence[SavedRun]) -> go.Figure:
    """Runs side by side: output throughput (left) and TTFT / TPOT / E2EL medians with p99 whiskers (right)."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("output throughput (tok/s)", "latency (ms): median, whisker to p99")
    )
    labels = [r.label for r in runs]
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[r.metrics.output_throughput for r in runs],
            marker_color=series_color(0),
            name="output tok/s",
            hovertemplate="<b>%{x}</b><br>%{y:,.1f} output tok/s<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for i, name in enumerate(("ttft", "tpot", "e2el")):
        med, p99 = [], []
        for r in runs:
            dist = getattr(r.metrics, name)
            m = None if dist is None or dist.median_s is None else dist.median_s * MS_PER_S
            p = None if dist is None or dist.p99_s is None or m is None else dist.p99_s * MS_PER_S - m
            med.append(m)
            p99.append(p)
        fig.add_trace(
            go.Bar(
                x=labels,
                y=med,
                error_y={"type": "data", "array": p99, "arrayminus": [0] * len(p99), "visible": True},
                marker_color=series_color(i + 1),
                name=f"{name.upper()} median (whisker to p99)",
                hovertemplate=f"<b>%{{x}}</b><br>{name.upper()} median %{{y:,.1f}} ms<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_layout(barmode="group", height=420, legend={"orientation": "h", "y": -0.45}, margin={"t": 40})
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    fig.update_xaxes(tickangle=-20, automargin=True)
    return fig


def live_frames(
    records: Sequence[RequestRecord], run_start: float | None, server: Sequence[ServerSample]
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The frames :func:`live_figure` draws: per-window stats of the finished ``records``
    (:func:`planner.metrics.timeseries.timeseries`, run start = ``run_start``) and the scraped samples (None when
    there are none)."""
    windows = timeseries_frame(timeseries(records, run_start)) if records and run_start is not None else None
    if windows is None:
        windows = timeseries_frame(())
    samples = pd.DataFrame([s.__dict__ for s in server]) if server else None
    return windows, samples


def live_figure(
    windows: pd.DataFrame, in_flight: Sequence[tuple[float, int]], server: pd.DataFrame | None = None
) -> go.Figure:
    """A run while it goes, on a shared time axis (seconds since the run started).

    Args:
        windows: :func:`planner.metrics.timeseries.timeseries_frame`: per window ``end_s``, ``output_tokens_per_s``,
            ``ttft_p50_ms``, ``ttft_p99_ms``, ``e2e_p50_ms`` (NaN where a window has no finished request).
        in_flight: ``(seconds, requests in flight)`` samples of the client.
        server: Scraped samples: ``t_s``, ``running``, ``waiting``, ``kv_cache_usage_perc`` (0–1); None = not
            scraped.
    """
    kv = server is not None and len(server) and server["kv_cache_usage_perc"].notna().any()
    titles = ["output throughput (tok/s)", "latency (ms) of requests finishing", "requests"]
    if kv:
        titles.append("KV cache usage (%, server)")
    fig = make_subplots(
        rows=len(titles), cols=1, shared_xaxes=True, vertical_spacing=0.06, subplot_titles=tuple(titles)
    )
    if len(windows):
        fig.add_trace(
            go.Scatter(x=windows["end_s"], y=windows["output_tokens_per_s"], name="output tok/s", mode="lines+markers"),
            row=1,
            col=1,
        )
        for column, name, dash in (
            ("ttft_p50_ms", "TTFT p50", "solid"),
            ("ttft_p99_ms", "TTFT p99", "dot"),
            ("e2e_p50_ms", "E2E p50", "dash"),
        ):
            fig.add_trace(
                go.Scatter(x=windows["end_s"], y=windows[column], name=name, mode="lines+markers", line={"dash": dash}),
                row=2,
                col=1,
            )
    if in_flight:
        fig.add_trace(
            go.Scatter(
                x=[t for t, _ in in_flight],
                y=[n for _, n in in_flight],
                name="in flight (client)",
                mode="lines",
                line={"shape": "hv"},
            ),
            row=3,
            col=1,
        )
    if server is not None and len(server):
        for column, name in (("running", "running (server)"), ("waiting", "waiting (server)")):
            if server[column].notna().any():
                # a gauge holds its value until the next scrape (one a second): steps, not ramps between scrapes
                trace = go.Scatter(x=server["t_s"], y=server[column], name=name, mode="lines", line={"shape": "hv"})
                fig.add_trace(trace, row=3, col=1)
    if kv:
        fig.add_trace(
            go.Scatter(x=server["t_s"], y=server["kv_cache_usage_perc"] * 100, name="KV cache usage %", mode="lines"),
            row=4,
            col=1,
        )
        fig.update_yaxes(range=[0, 100], row=4, col=1)
    fig.update_xaxes(title_text="seconds since the run started", row=len(titles), col=1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(height=200 * len(titles) + 60, legend={"orientation": "h", "y": -0.1}, margin={"t": 40})
    return fig


def _cell(value: object) -> object:
    if display.is_missing(value):
        return display.NA
    if isinstance(value, float):
        return "inf" if math.isinf(value) else display.number(value)
    if isinstance(value, int) and not isinstance(value, bool):
        # as text like the rest of a column that may hold "n/a" (a column of ints and strings has no Arrow type)
        return display.count(value)
    return value


#: The columns of :func:`display_runs` that answer first and fit a page's width (the rest fold away on the page).
RUNS_HEADLINE: tuple[str, ...] = (
    "run",
    "completed",
    "failed",
    "request_throughput",
    "output_throughput",
    "median_ttft_ms",
    "median_tpot_ms",
    "median_e2el_ms",
)
#: The same for :func:`planner.loadtest.results.prefix_cache_frame`.
PREFIX_CACHE_HEADLINE: tuple[str, ...] = (
    "run",
    "dataset_name",
    "prefix_cache_hit_rate",
    "reusable_prefix_share",
    "cache_flushed",
    "median_ttft_ms",
)


def run_headline(run: SavedRun) -> str:
    """A finished run in one line, for where the eye is after Run: requests completed and failed, output throughput
    (total output tokens / duration) and median TTFT and TPOT; "n/a" where undefined (no completed request, no
    sample).

    Example: ``"timed · c=8 · 10:35:08: 8 completed, 0 failed · output 238.1 tok/s · median TTFT 169.7 ms · median TPOT
    8.2 ms"``.
    """
    m = run.metrics

    def median_ms(dist: object) -> str:
        return display.ms(getattr(dist, "median_s", None))

    output = display.rate(m.output_throughput, "tok/s", 1) if m.completed else display.NA
    return (
        f"{run.label}: {m.completed:,} completed, {m.failed:,} failed · output {output} · "
        f"median TTFT {median_ms(m.ttft)} · median TPOT {median_ms(m.tpot)}"
    )


def display_runs(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """:func:`~planner.loadtest.results.runs_frame` with "n/a" for missing values and numbers as rounded text."""
    frame = runs_frame(runs)
    return frame.astype(object).map(_cell) if len(frame) else frame


def turns_figure(frame: pd.DataFrame) -> go.Figure:
    """TTFT by turn of multi-turn runs (:func:`planner.loadtest.results.ttft_by_turn`): median TTFT per turn (p90
    dotted) on the left axis, the mean prompt length of the turn (the conversation so far) as bars on the right, one
    colour per run. A prefix cache shows as TTFT staying flat while the prompt grows."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for i, (run, g) in enumerate(frame.groupby("run", sort=False)):
        color = series_color(i)
        fig.add_bar(
            x=g["turn"],
            y=g["mean_input_tokens"],
            name=f"{run}: prompt tokens",
            marker_color=color,
            opacity=0.25,
            secondary_y=True,
        )
        for stat, mode, line in (
            ("median", "lines+markers", {"color": color}),
            ("p90", "lines", {"color": color, "dash": "dot", "width": 1}),
        ):
            fig.add_scatter(
                x=g["turn"], y=g[f"{stat}_ttft_ms"], name=f"{run}: {stat} TTFT", mode=mode, line=line, secondary_y=False
            )
    fig.update_xaxes(title_text="turn", dtick=1)
    fig.update_yaxes(title_text="TTFT (ms)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="prompt tokens", rangemode="tozero", secondary_y=True)
    fig.update_layout(height=380, margin={"t": 20, "b": 40}, legend={"orientation": "h", "y": -0.2})
    return fig
