"""The Fleet page's table and figures: pure functions returning pandas frames and plotly figures.

* :func:`policies_table`: one row per routing policy: TTFT and TPOT percentiles, throughput, prefix-cache hit rate,
  load imbalance, requests per replica ("n/a" where a figure is unknown).
* :func:`ttft_figure`: each policy's TTFT distribution (the share of requests whose first token came within x ms).
* :func:`hit_rate_figure`: each policy's prefix-cache hit rate, per replica and in all.
* :func:`load_figure`: requests each replica served under each policy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.fleet.simulation import FleetRun

__all__ = ["POLICY_COLOURS", "hit_rate_figure", "load_figure", "policies_table", "ttft_figure"]

#: One colour per routing policy, the same on every figure.
POLICY_COLOURS: dict[str, str] = {
    "round_robin": "#636EFA",
    "least_loaded": "#00CC96",
    "kv_aware": "#FFA15A",
    "prefix_aware": "#EF553B",
}


def _style(fig: go.Figure, **layout: object) -> None:
    """The Fleet page's figures' common layout (legend under the plot, 340 px high), with ``layout`` on top."""
    fig.update_layout(legend={"orientation": "h", "y": -0.25}, margin={"t": 40, "b": 10}, height=340, **layout)


def policies_table(runs: Sequence[FleetRun]) -> pd.DataFrame:
    """One row per policy: p50/p99 TTFT and p50 TPOT (ms), output tokens/s, prefix-cache hit rate, load imbalance
    (most requests on one replica / mean), requests per replica, preemptions."""
    rows = []
    for run in runs:
        m = run.metrics
        rows.append(
            {
                "router": run.router,
                "TTFT p50 (ms)": display.ms(m.ttft.median_s if m.ttft else None, 0, unit=False),
                "TTFT p99 (ms)": display.ms(m.ttft.p99_s if m.ttft else None, 0, unit=False),
                "TPOT p50 (ms)": display.ms(m.tpot.median_s if m.tpot else None, 1, unit=False),
                "output tok/s": display.number(m.output_throughput, 0),
                "prefix-cache hit rate": display.percent(run.prefix_cache_hit_rate),
                "load imbalance": display.number(run.load_imbalance, 2),
                "requests per replica": " · ".join(str(n) for n in run.replica_requests),
                "preemptions": display.count(sum(r.preemptions for r in run.replicas)),
            }
        )
    return pd.DataFrame(rows)


def ttft_figure(runs: Sequence[FleetRun]) -> go.Figure:
    """Each policy's TTFT as an empirical distribution: x = TTFT (ms), y = share of requests at or below it."""
    fig = go.Figure()
    for run in runs:
        values = np.sort(run.ttft_s[np.isfinite(run.ttft_s)]) * 1e3
        if not values.size:
            continue
        share = np.arange(1, values.size + 1) / values.size
        fig.add_trace(
            go.Scatter(
                x=values,
                y=share,
                mode="lines",
                name=run.router,
                line={"color": POLICY_COLOURS.get(run.router), "width": 2, "shape": "hv"},
                hovertemplate="%{x:,.0f} ms: %{y:.0%} of requests<extra>" + run.router + "</extra>",
            )
        )
    fig.add_hline(y=0.99, line={"dash": "dot", "width": 1, "color": "grey"}, annotation_text="p99")
    _style(
        fig,
        title="TTFT distribution",
        xaxis_title="time to first token (ms)",
        yaxis_title="share of requests",
        yaxis={"tickformat": ".0%", "range": [0, 1.02]},
    )
    return fig


def hit_rate_figure(runs: Sequence[FleetRun]) -> go.Figure:
    """Each policy's prefix-cache hit rate in all (a bar) and per replica (points over it)."""
    fig = go.Figure()
    names = [run.router for run in runs]
    fig.add_trace(
        go.Bar(
            x=names,
            y=[run.prefix_cache_hit_rate or 0.0 for run in runs],
            marker_color=[POLICY_COLOURS.get(n, "#888") for n in names],
            text=[display.percent(run.prefix_cache_hit_rate) for run in runs],
            textposition="outside",
            name="fleet",
            showlegend=False,
        )
    )
    xs, ys, labels = [], [], []
    for run in runs:
        for r in run.replicas:
            if r.prefix_cache_hit_rate is not None:
                xs.append(run.router)
                ys.append(r.prefix_cache_hit_rate)
                labels.append(f"replica {r.index}")
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            name="per replica",
            marker={"color": "black", "size": 6, "symbol": "line-ew-open"},
            text=labels,
            hovertemplate="%{text}: %{y:.1%}<extra></extra>",
        )
    )
    _style(
        fig,
        title="Prefix-cache hit rate",
        yaxis={"tickformat": ".0%", "range": [0, 1.1]},
    )
    return fig


def load_figure(runs: Sequence[FleetRun]) -> go.Figure:
    """Requests each replica served, one group of bars per replica, one bar per policy."""
    fig = go.Figure()
    for run in runs:
        fig.add_trace(
            go.Bar(
                x=[f"replica {r.index}" for r in run.replicas],
                y=list(run.replica_requests),
                name=f"{run.router} (imbalance {run.load_imbalance:.2f})",
                marker_color=POLICY_COLOURS.get(run.router),
            )
        )
    _style(
        fig,
        title="Requests per replica",
        barmode="group",
        yaxis_title="requests",
    )
    return fig
