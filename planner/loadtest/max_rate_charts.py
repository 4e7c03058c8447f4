"""Figures and tables of a maximum-rate search (:mod:`planner.loadtest.max_rate`): pure functions.

* :func:`steps_figure`: two panels over the steps: the level each run tried (filled green: met the SLOs; red: missed)
  with the answer as a line, and each SLO's measured value over its limit (1 = the limit).
* :func:`steps_table`: one row per step: level, throughput, each SLO's value, verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.loadtest.max_rate import MaxRateSpec, MaxRateStep

__all__ = ["steps_figure", "steps_table"]

_MET, _MISSED = "#00A86B", "#E5484D"


def _level(step: MaxRateStep) -> float:
    """The level drawn for a step: a burst is drawn at the throughput it measured."""
    return step.throughput if math.isinf(step.level) else step.level


def steps_figure(steps: Sequence[MaxRateStep], spec: MaxRateSpec, answer: float | None = None) -> go.Figure:
    """The search's steps (module docstring).

    Args:
        steps: the runs, in order.
        spec: the search (its variable and SLOs).
        answer: the level found (drawn as a line); None when nothing met the SLOs.
    """
    rate = spec.variable == "request_rate"
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        row_heights=[0.55, 0.45],
        subplot_titles=(
            "request rate tried (req/s)" if rate else "concurrency tried",
            "each SLO: measured / limit (≤ 1 meets it)",
        ),
    )
    x = [s.index for s in steps]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[_level(s) for s in steps],
            mode="lines+markers",
            name="level",
            line={"color": "#999", "dash": "dot"},
            marker={"size": 13, "color": [_MET if s.met else _MISSED for s in steps], "line": {"width": 1}},
            customdata=[
                [
                    "burst" if math.isinf(s.level) else f"{s.level:.3g}",
                    f"{s.throughput:.3g}",
                    s.why,
                ]
                for s in steps
            ],
            hovertemplate="step %{x}: %{customdata[0]}<br>measured %{customdata[1]} req/s<br>%{customdata[2]}"
            "<extra></extra>",
        ),
        row=1,
        col=1,
    )
    if answer is not None and math.isfinite(answer):
        fig.add_hline(
            y=answer,
            line={"color": _MET, "width": 2},
            annotation_text=f"highest meeting the SLOs: {answer:.3g}" + (" req/s" if rate else ""),
            annotation_position="top left",
            row=1,
            col=1,
        )
    for k, slo in enumerate(spec.slos):
        ratios = [s.checks[k].ratio if math.isfinite(s.checks[k].ratio) else None for s in steps]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ratios,
                mode="lines+markers",
                name=slo.key,
                hovertemplate=f"step %{{x}}: {slo.key} at %{{y:.2f}}× its limit<extra></extra>",
            ),
            row=2,
            col=1,
        )
    fig.add_hline(y=1.0, line={"color": _MISSED, "dash": "dash", "width": 1}, row=2, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_xaxes(title_text="step", dtick=1, row=2, col=1)
    fig.update_layout(height=520, margin={"l": 10, "r": 10, "t": 40, "b": 10}, legend={"orientation": "h"})
    return fig


def steps_table(steps: Sequence[MaxRateStep], spec: MaxRateSpec) -> pd.DataFrame:
    """One row per step: its level, requests, measured throughput, each SLO's value (ms), and the verdict."""
    rows = []
    for s in steps:
        row: dict[str, object] = {
            "step": s.index,
            "level": "burst"
            if math.isinf(s.level)
            else (f"{s.level:.3g}" if spec.variable == "request_rate" else int(s.level)),
            "requests": s.result.settings.num_prompts,
            "completed": s.result.metrics.completed,
            "req/s measured": round(s.throughput, 3),
        }
        for c in s.checks:
            row[c.slo.key] = "n/a" if c.value_s is None else round(c.value_s * 1e3, 1)
        row["meets"] = "yes" if s.met else "no"
        row["why"] = s.why
        rows.append(row)
    return pd.DataFrame(rows)
