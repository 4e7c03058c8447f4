"""Figures and tables of plans: pure functions that return a plotly ``Figure`` or a DataFrame.

Nothing here draws in place or imports streamlit; the pages pass the result to ``st.plotly_chart``
and ``st.dataframe``. Concurrency values come from :meth:`planner.result.Plan.concurrency_at`, so the
engine's own block accounting is what is plotted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.errors import InvalidParameterError, PlannerError
from planner.models import get_model
from planner.result import Plan
from planner.scenario import Scenario
from planner.units import GIB

__all__ = [
    "COLORS",
    "MEMORY_TERMS",
    "concurrency_figure",
    "concurrency_table",
    "context_label",
    "context_points",
    "memory_breakdown_figure",
    "model_context_limit",
    "scenario_label",
]

#: One colour per scenario (plotly's default qualitative palette, first four).
COLORS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA")
#: Memory terms of :class:`planner.result.MemoryTerms`, bottom of the stack first: (attribute,
#: legend name, colour).
MEMORY_TERMS: tuple[tuple[str, str, str], ...] = (
    ("weights_bytes", "Weights", "#4C78A8"),
    ("activation_bytes", "Activation (peak)", "#F58518"),
    ("non_torch_bytes", "Non-torch (CUDA context, NCCL)", "#B279A2"),
    ("cuda_graph_bytes", "CUDA graphs", "#E45756"),
    ("kv_cache_bytes", "KV cache", "#54A24B"),
    ("unused_bytes", "Unused headroom", "#D3D3D3"),
)
#: Smallest and largest context the concurrency chart spans, tokens.
_MIN_CONTEXT, _MAX_CONTEXT = 1, 10_485_760


def scenario_label(index: int, scenario: Scenario) -> str:
    """A short label: ``"1 · Llama-3.1-8B-Instruct · rtx-4090 ×2 · vllm"``.

    Args:
        index: 0-based position of the scenario.
        scenario: the scenario.
    """
    gpus = f" ×{scenario.num_gpus}" if scenario.num_gpus > 1 else ""
    return f"{index + 1} · {scenario.model.split('/')[-1]} · {scenario.gpu}{gpus} · {scenario.engine}"


def context_label(tokens: int) -> str:
    """Tick text of a context length: ``512``, ``1K``, ``128K``, ``1M`` (K = 1024, M = 1024²).

    Lengths that are not a whole number of K or M are written in full (``1,500``).
    """
    if tokens >= 2**20 and tokens % 2**20 == 0:
        return f"{tokens // 2**20}M"
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens // 1024}K"
    return f"{tokens:,}"


def model_context_limit(plan: Plan) -> int:
    """The longest context the plan's model supports (``max_position_embeddings``), tokens.

    Falls back to ``plan.max_model_len`` when the model is not in the catalog (the article engine's
    custom sizes); never below ``plan.max_model_len``.
    """
    try:
        limit = get_model(plan.scenario.model).spec.max_position_embeddings
    except PlannerError:
        limit = plan.max_model_len
    return max(limit or plan.max_model_len, plan.max_model_len)


def _check_range(min_context: int, max_context: int | None) -> None:
    for name, value in (("min_context", min_context), ("max_context", max_context)):
        if value is None and name == "max_context":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not _MIN_CONTEXT <= value <= _MAX_CONTEXT:
            raise InvalidParameterError(name, value, f"an integer from {_MIN_CONTEXT} to {_MAX_CONTEXT}")
    if max_context is not None and max_context <= min_context:
        raise InvalidParameterError("max_context", max_context, f"more than min_context={min_context}")


def context_points(min_context: int, max_context: int) -> list[int]:
    """Powers of two from ``min_context`` to ``max_context``, both ends included, tokens.

    Raises:
        InvalidParameterError: a bound outside 1 … 10,485,760 or ``max_context <= min_context``.
    """
    _check_range(min_context, max_context)
    points = {min_context, max_context}
    power = 2 ** math.ceil(math.log2(min_context))
    while power < max_context:
        points.add(power)
        power *= 2
    return sorted(points)


def memory_breakdown_figure(plans: Sequence[Plan], labels: Sequence[str]) -> go.Figure:
    """A stacked horizontal bar per scenario of the limiting GPU's memory, GiB.

    Terms the engine does not model (``None``) are left out of that bar, not drawn as zero; a term
    no scenario has gets no legend entry. A black tick marks the device's total memory, so a stack
    that overflows it is visible. Hover shows each term in GiB (2**30 bytes) and in bytes.

    Args:
        plans: the plans, one bar each.
        labels: one label per plan.

    Raises:
        InvalidParameterError: ``labels`` and ``plans`` differ in length.
    """
    if len(labels) != len(plans):
        raise InvalidParameterError("labels", len(labels), f"one label per plan ({len(plans)})")
    y = list(labels)
    fig = go.Figure()
    for attr, name, color in MEMORY_TERMS:
        values = [getattr(p.per_gpu, attr) for p in plans]
        if all(v is None for v in values):
            continue
        fig.add_trace(
            go.Bar(
                name=name,
                y=y,
                orientation="h",
                marker_color=color,
                x=[None if v is None else v / GIB for v in values],
                customdata=[[("n/a" if v is None else f"{v:,.0f}")] for v in values],
                hovertemplate=f"<b>%{{y}}</b><br>{name}: %{{x:.3f}} GiB (%{{customdata[0]}} bytes)<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            name="GPU memory (total)",
            y=y,
            x=[p.per_gpu.total_bytes / GIB for p in plans],
            mode="markers",
            marker={"symbol": "line-ns", "size": 28, "line": {"width": 3, "color": "black"}, "color": "black"},
            hovertemplate="<b>%{y}</b><br>Device total: %{x:.3f} GiB<extra></extra>",
        )
    )
    fig.update_layout(
        barmode="stack",
        height=max(260, 120 + 70 * len(plans)),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="GiB per GPU (2^30 bytes)",
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "v", "traceorder": "normal", "x": 1.01, "y": 1, "yanchor": "top"},
        hovermode="closest",
    )
    return fig


def concurrency_figure(
    plans: Sequence[Plan], labels: Sequence[str], min_context: int = 512, max_context: int | None = None
) -> go.Figure:
    """Concurrent requests that fit against context length, a line per scenario.

    The x axis is log-2 spaced with ticks 512, 1K, 2K, …; the y axis is logarithmic (a value of 0,
    nothing fits, is left out). Each line is solid up to the scenario's ``max_model_len`` and dotted
    beyond it up to the model's ``max_position_embeddings`` (what raising ``--max-model-len`` would
    give with the same KV memory); a diamond marks ``max_model_len``. Values are
    :meth:`Plan.concurrency_at`.

    Args:
        plans: the plans.
        labels: one label per plan.
        min_context: left end of the x axis, tokens.
        max_context: right end, tokens; ``None`` = the longest model limit among ``plans``.

    Raises:
        InvalidParameterError: mismatched ``labels`` or a bad range (see :func:`context_points`).
    """
    if len(labels) != len(plans):
        raise InvalidParameterError("labels", len(labels), f"one label per plan ({len(plans)})")
    _check_range(min_context, max_context)
    limits = [model_context_limit(p) for p in plans]
    high = max_context or max([*limits, min_context * 2])
    high = max(high, min_context + 1)
    fig = go.Figure()
    for index, (plan, label, limit) in enumerate(zip(plans, labels, limits, strict=True)):
        color = COLORS[index % len(COLORS)]
        points = [c for c in context_points(min_context, high) if c <= limit]
        if min_context <= plan.max_model_len <= high:
            points = sorted({*points, plan.max_model_len})
        solid = [c for c in points if c <= plan.max_model_len]
        dotted = [c for c in points if c >= plan.max_model_len]
        for part, dash, suffix, show in ((solid, "solid", "", True), (dotted, "dot", " (beyond max_model_len)", False)):
            if not part:
                continue
            fig.add_trace(
                go.Scatter(
                    x=part,
                    y=[_positive(plan.concurrency_at(c)) for c in part],
                    mode="lines+markers",
                    name=label + suffix,
                    legendgroup=label,
                    showlegend=show or not solid,
                    line={"color": color, "dash": dash, "width": 2.5 if dash == "solid" else 1.5},
                    marker={"size": 5},
                    hovertemplate=f"<b>{label}</b>{suffix}<br>context %{{x:,}} tokens<br>"
                    "%{y:,.2f} concurrent requests<extra></extra>",
                )
            )
        if min_context <= plan.max_model_len <= high:
            value = plan.concurrency_at(plan.max_model_len)
            fig.add_vline(x=plan.max_model_len, line={"color": color, "dash": "dash", "width": 1}, opacity=0.6)
            fig.add_trace(
                go.Scatter(
                    x=[plan.max_model_len],
                    y=[_positive(value)],
                    mode="markers",
                    legendgroup=label,
                    showlegend=False,
                    marker={"symbol": "diamond", "size": 12, "color": color, "line": {"width": 1, "color": "white"}},
                    hovertemplate=f"<b>{label}</b><br>max_model_len %{{x:,}} tokens<br>"
                    f"{value:,.2f} concurrent requests<extra></extra>",
                )
            )
    ticks = context_points(min_context, high)
    fig.add_hline(y=1, line={"color": "grey", "dash": "dot", "width": 1})
    # Annotations on a log axis take log10 of the value: y=0 is one request.
    fig.add_annotation(
        x=0,
        xref="paper",
        y=0,
        yref="y",
        text="1 request",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font={"color": "grey", "size": 11},
    )
    fig.update_layout(
        height=520,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={
            "type": "log",
            "title": "context length per request (tokens, log scale)",
            "tickvals": ticks,
            "ticktext": [context_label(t) for t in ticks],
            "range": [math.log10(min_context) - 0.05, math.log10(high) + 0.05],
        },
        yaxis={"type": "log", "title": "max concurrent requests (log scale)"},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        hovermode="closest",
    )
    return fig


def _positive(value: float) -> float | None:
    """``None`` for 0 (not drawable on a log axis)."""
    return value if value > 0 else None


def concurrency_table(plans: Sequence[Plan], labels: Sequence[str], contexts: Sequence[int]) -> pd.DataFrame:
    """Concurrent requests at each context length, a column per scenario.

    Args:
        plans: the plans.
        labels: one label per plan (column names; made unique if repeated).
        contexts: context lengths, tokens.

    Returns:
        A DataFrame with a ``context_tokens`` column and one float column per plan; a context longer
        than the model's limit (:func:`model_context_limit`) is missing (``NaN``, shown "n/a").

    Raises:
        InvalidParameterError: mismatched ``labels`` or a context outside 1 … 10,485,760.
    """
    if len(labels) != len(plans):
        raise InvalidParameterError("labels", len(labels), f"one label per plan ({len(plans)})")
    for c in contexts:
        if isinstance(c, bool) or not isinstance(c, int) or not _MIN_CONTEXT <= c <= _MAX_CONTEXT:
            raise InvalidParameterError("contexts", c, f"integers from {_MIN_CONTEXT} to {_MAX_CONTEXT}")
    data: dict[str, list[float | int | None]] = {"context_tokens": list(contexts)}
    for plan, label in zip(plans, labels, strict=True):
        name = label
        while name in data:
            name += "′"
        limit = model_context_limit(plan)
        data[name] = [plan.concurrency_at(c) if c <= limit else None for c in contexts]
    return pd.DataFrame(data).astype({k: "float64" for k in list(data)[1:]})
