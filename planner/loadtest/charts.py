"""Figures and tables of the Load Test page. Pure functions returning plotly figures and pandas frames.

Metric definitions are ``vllm bench serve``'s (:mod:`planner.metrics.benchmark`): TTFT = first token − sent,
TPOT = (E2EL − TTFT) / (output tokens − 1), ITL = gap between token-bearing chunks (one sample per chunk),
E2EL = last token − sent; output throughput = Σ output tokens / run duration.

* :func:`sweep_figure`: the throughput-against-latency curve of each sweep (x: median latency, y: output tokens/s),
  one marker per concurrency level, the knee starred.
* :func:`runs_figure`: runs side by side (measured here, earlier, imported): throughput and latency medians with
  their p99.
* :func:`live_figure`: a run while it goes: output tokens/s and TTFT percentiles per time window, requests in
  flight (client) and, when scraped, the server's running / waiting requests and KV cache usage.
* :func:`display_runs`: :func:`planner.loadtest.results.runs_frame` formatted for a table ("n/a" for missing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.loadtest.results import SavedRun, runs_frame
from planner.metrics.timeseries import timeseries, timeseries_frame
from planner.serving.server_metrics import ServerSample
from planner.serving.streaming import RequestRecord

__all__ = [
    "LATENCY_AXES",
    "display_runs",
    "live_figure",
    "live_frames",
    "runs_figure",
    "sweep_figure",
    "sweep_points",
]

_MS = 1000.0
_PALETTE = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880")
#: Latency the sweep curve is drawn against: label → (vLLM metric name, statistic).
LATENCY_AXES: dict[str, tuple[str, str]] = {
    "median E2E latency (ms)": ("e2el", "median"),
    "median TPOT (ms)": ("tpot", "median"),
    "median TTFT (ms)": ("ttft", "median"),
    "p99 E2E latency (ms)": ("e2el", "p99"),
}


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
                "latency_ms": None if value is None else value * _MS,
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
        color = _PALETTE[i % len(_PALETTE)]
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
            fig.add_trace(
                go.Scatter(
                    x=at["latency_ms"],
                    y=at["output_throughput"],
                    mode="markers",
                    marker={"symbol": "star", "size": 18, "color": color, "line": {"width": 1, "color": "black"}},
                    name=f"knee of {sweep}: c={knee}",
                    hovertemplate=f"<b>knee</b> c={knee}<extra></extra>",
                )
            )
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
            marker_color=_PALETTE[0],
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
            m = None if dist is None or dist.median_s is None else dist.median_s * _MS
            p = None if dist is None or dist.p99_s is None or m is None else dist.p99_s * _MS - m
            med.append(m)
            p99.append(p)
        fig.add_trace(
            go.Bar(
                x=labels,
                y=med,
                error_y={"type": "data", "array": p99, "arrayminus": [0] * len(p99), "visible": True},
                marker_color=_PALETTE[i + 1],
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
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:,.2f}"
    return value


def display_runs(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """:func:`~planner.loadtest.results.runs_frame` with "n/a" for missing values and numbers rounded for reading."""
    frame = runs_frame(runs)
    return frame.astype(object).map(_cell) if len(frame) else frame
