"""Figures and tables of plans: pure functions that return a plotly ``Figure`` or a DataFrame.

Nothing here draws in place or imports streamlit; the pages pass the result to ``st.plotly_chart``
and ``st.dataframe``. Concurrency values come from :meth:`planner.capacity.result.Plan.concurrency_at`, so the
engine's own block accounting is what is plotted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.capacity.verdict import verdict
from planner.errors import InvalidParameterError
from planner.palette import series_color
from planner.units import GIB

__all__ = [
    "MEMORY_TERMS",
    "NOT_FIT_COLOR",
    "NOT_FIT_SUFFIX",
    "OVERFLOW_NAME",
    "concurrency_figure",
    "concurrency_table",
    "context_label",
    "context_points",
    "is_empty_concurrency",
    "key_figures_table",
    "memory_breakdown_figure",
    "model_context_limit",
    "scenario_label",
]

#: Memory terms of :class:`planner.capacity.result.MemoryTerms`, bottom of the stack first: (attribute,
#: legend name, colour).
MEMORY_TERMS: tuple[tuple[str, str, str], ...] = (
    ("weights_bytes", "Weights", "#4C78A8"),
    ("activation_bytes", "Activation (peak)", "#F58518"),
    ("non_torch_bytes", "Non-torch (CUDA context, NCCL)", "#B279A2"),
    ("cuda_graph_bytes", "CUDA graphs", "#E45756"),
    ("kv_cache_bytes", "KV cache", "#54A24B"),
    ("unused_bytes", "Unused headroom", "#D3D3D3"),
)
#: Legend name and colour of the part of a stack beyond the device's total memory.
OVERFLOW_NAME = "Over GPU total"
_OVERFLOW_COLOR = "#D62728"
#: Line colour and legend suffix of a scenario the engine rejects (drawn grey and dotted).
NOT_FIT_COLOR = "#8C8C8C"
NOT_FIT_SUFFIX = " (does not fit)"
#: Marker of each grey line, by scenario position, so two rejected scenarios stay apart.
_NOT_FIT_SYMBOLS = ("x", "triangle-up", "square", "cross")
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

    Falls back to ``plan.max_model_len`` when the model has no known limit (the article engine's
    hand-typed sizes). A ``max_model_len`` above the model's limit does not raise it: contexts beyond it
    are n/a (the engine refuses such a length).
    """
    return plan.model_max_position_embeddings or plan.max_model_len


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
    no scenario has gets no legend entry. A bar never runs past the device's total memory except
    in an explicit red, hatched :data:`OVERFLOW_NAME` segment: terms are drawn bottom-up until the
    total is reached, whatever is left of them is that segment, and "Unused headroom" only fills
    what remains below the total (``min(unused, total − used)``). The total is a black line with a
    white halo and a label; where the engine's budget (``budget_bytes``, e.g. total ×
    ``gpu_memory_utilization``) is below the total, a dashed line marks it. Hover shows each term's
    full value in GiB (2**30 bytes) and in bytes.

    Args:
        plans: the plans, one bar each.
        labels: one label per plan.

    Raises:
        InvalidParameterError: ``labels`` and ``plans`` differ in length.
    """
    if len(labels) != len(plans):
        raise InvalidParameterError("labels", len(labels), f"one label per plan ({len(plans)})")
    y = list(labels)
    totals = [p.per_gpu.total_bytes for p in plans]
    used = [sum(getattr(p.per_gpu, attr) or 0.0 for attr, _, _ in MEMORY_TERMS[:-1]) for p in plans]
    overflow = [max(0.0, u - t) for u, t in zip(used, totals, strict=True)]
    room = [max(0.0, t - u) for u, t in zip(used, totals, strict=True)]
    drawn = [0.0] * len(plans)  # bytes stacked so far per bar (capped at the total)
    fig = go.Figure()
    for attr, name, color in MEMORY_TERMS:
        values = [getattr(p.per_gpu, attr) for p in plans]
        if all(v is None for v in values):
            continue
        if attr == "unused_bytes":
            values = [None if v is None else min(v, r) for v, r in zip(values, room, strict=True)]
        shown: list[float | None] = []
        for i, v in enumerate(values):
            part = None if v is None else max(0.0, min(v, totals[i] - drawn[i]))
            drawn[i] += part or 0.0
            shown.append(None if part is None else part / GIB)
        fig.add_trace(
            go.Bar(
                name=name,
                y=y,
                orientation="h",
                marker_color=color,
                x=shown,
                customdata=[[display.count(v), display.gib(v, 3, unit=False)] for v in values],
                hovertemplate=f"<b>%{{y}}</b><br>{name}: %{{customdata[1]}} GiB (%{{customdata[0]}} bytes)"
                "<extra></extra>",
            )
        )
    if any(overflow):
        fig.add_trace(
            go.Bar(
                name=OVERFLOW_NAME,
                y=y,
                orientation="h",
                x=[o / GIB if o > 0 else None for o in overflow],
                marker={
                    "color": _OVERFLOW_COLOR,
                    "pattern": {"shape": "/", "fillmode": "overlay", "fgcolor": "white", "solidity": 0.3},
                },
                customdata=[
                    [display.gib(u, 3, unit=False), display.gib(t, 3, unit=False)]
                    for u, t in zip(used, totals, strict=True)
                ],
                hovertemplate="<b>%{y}</b><br>Over the GPU total by %{x:.3f} GiB<br>"
                "weights + overheads + KV: %{customdata[0]} GiB of %{customdata[1]} GiB<extra></extra>",
            )
        )
    for i, (plan, total) in enumerate(zip(plans, totals, strict=True)):
        x = total / GIB
        for width, color in ((6, "white"), (2.5, "black")):  # a white halo keeps it visible on any colour
            fig.add_shape(type="line", x0=x, x1=x, y0=i - 0.48, y1=i + 0.48, line={"color": color, "width": width})
        fig.add_annotation(
            x=x,
            y=i,
            text=f"total {display.gib(total, 1)}",
            showarrow=False,
            xanchor="left",
            xshift=6,
            font={"size": 11, "color": "black"},
            bgcolor="rgba(255,255,255,0.85)",
        )
        budget = plan.per_gpu.budget_bytes
        if 0 < budget < total * 0.999:
            fig.add_shape(
                type="line",
                x0=budget / GIB,
                x1=budget / GIB,
                y0=i - 0.48,
                y1=i + 0.48,
                line={"color": "#333333", "width": 2, "dash": "dash"},
            )
    fig.add_trace(
        go.Scatter(
            name="GPU memory (total)",
            y=y,
            x=[t / GIB for t in totals],
            mode="markers",
            marker={"symbol": "line-ns", "size": 24, "line": {"width": 3, "color": "black"}, "color": "black"},
            hovertemplate="<b>%{y}</b><br>Device total: %{x:.3f} GiB<extra></extra>",
        )
    )
    budgets = [p.per_gpu.budget_bytes for p in plans]
    if any(0 < b < t * 0.999 for b, t in zip(budgets, totals, strict=True)):
        fig.add_trace(
            go.Scatter(
                name="Engine budget (e.g. total × utilization)",
                y=y,
                x=[b / GIB if 0 < b < t * 0.999 else None for b, t in zip(budgets, totals, strict=True)],
                mode="markers",
                marker={"symbol": "line-ns", "size": 24, "line": {"width": 2, "color": "#333333"}},
                hovertemplate="<b>%{y}</b><br>Engine budget: %{x:.3f} GiB<extra></extra>",
            )
        )
    widest = max([(t + o) / GIB for t, o in zip(totals, overflow, strict=True)], default=1.0)
    fig.update_layout(
        barmode="stack",
        height=max(330, 200 + 70 * len(plans)),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"title": "GiB per GPU (2^30 bytes)", "range": [0, widest * 1.18]},
        yaxis={"autorange": "reversed", "automargin": True},
        # below the bars: at the side, eight entries are taller than a one- or two-scenario chart
        legend={"orientation": "h", "traceorder": "normal", "x": 0, "y": -0.3, "yanchor": "top"},
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
    give with the same KV memory); a diamond marks ``max_model_len``. No point lies beyond the
    model's limit (:func:`model_context_limit`): those contexts are n/a. A scenario that does not fit
    (``plan.fits`` false) is one grey dotted line named ``label + " (does not fit)"`` with its
    ``plan.reason`` in the hover, and no diamond. Values are :meth:`Plan.concurrency_at`. A plan with a
    :attr:`Plan.version_range` (vLLM, no version set) gets a band in its colour from the version with the least
    KV memory to the one with the most (:meth:`VersionRange.concurrency_band`), named after the two versions.

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
        points = [c for c in context_points(min_context, high) if c <= limit]
        marks_max_len = min_context <= plan.max_model_len <= min(high, limit)
        if marks_max_len:
            points = sorted({*points, plan.max_model_len})
        if not plan.fits:
            if points:
                fig.add_trace(_not_fit_trace(plan, label, points, _NOT_FIT_SYMBOLS[index % len(_NOT_FIT_SYMBOLS)]))
            continue
        color = series_color(index)
        _add_version_band(fig, plan, label, points, color)
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
        if marks_max_len:
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
        # one labelled tick per decade, written out in full ("500", "0.05"): plotly's default labels the minor
        # ticks of a log axis with their first digit only ("5", "2")
        yaxis={"type": "log", "title": "max concurrent requests (log scale)", "dtick": 1, "tickformat": ",~g"},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        hovermode="closest",
    )
    return fig


def _rgba(color: str, alpha: float) -> str:
    """``#RRGGBB`` → ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _add_version_band(fig: go.Figure, plan: Plan, label: str, points: Sequence[int], color: str) -> None:
    """Shade, in the scenario's colour, the concurrency range over the vLLM versions still in use
    (:attr:`Plan.version_range`), when the plan has one and its ends differ."""
    band = plan.version_range
    if band is None or band.low.kv_cache_bytes == band.high.kv_cache_bytes or not points:
        return
    pairs = [band.concurrency_band(c) for c in points]
    if any(p is None for p in pairs):
        return
    lows = [_positive(p[0]) for p in pairs if p is not None]
    highs = [_positive(p[1]) for p in pairs if p is not None]
    # the legend names the two ends' versions older first; which one sets the low end is in the hover text
    ends = sorted({band.low.version, band.high.version}, key=lambda v: tuple(int(n) for n in v.split(".")))
    name = f"{label}: vLLM {' … '.join(ends)}"
    edge = {"x": list(points), "mode": "lines", "line": {"width": 0, "color": color}, "legendgroup": label}
    fig.add_trace(go.Scatter(y=lows, showlegend=False, hoverinfo="skip", **edge))
    fig.add_trace(
        go.Scatter(
            y=highs,
            fill="tonexty",
            fillcolor=_rgba(color, 0.18),
            name=name,
            customdata=[[lo or 0.0] for lo in lows],
            hovertemplate=f"<b>{label}</b>, vLLM versions in use<br>context %{{x:,}} tokens<br>"
            f"%{{customdata[0]:,.2f}} ({band.low.version}) to %{{y:,.2f}} ({band.high.version}) concurrent "
            "requests<extra></extra>",
            **edge,
        )
    )


def _not_fit_trace(plan: Plan, label: str, points: Sequence[int], symbol: str) -> go.Scatter:
    """The line of a scenario the engine rejects: grey, dotted, ``(does not fit)`` in the legend."""
    reason = (plan.reason or "the engine rejects it").replace("<", "&lt;")
    return go.Scatter(
        x=list(points),
        y=[_positive(plan.concurrency_at(c)) for c in points],
        mode="lines+markers",
        name=label + NOT_FIT_SUFFIX,
        legendgroup=label,
        line={"color": NOT_FIT_COLOR, "dash": "dot", "width": 1.5},
        marker={"size": 7, "symbol": symbol, "color": NOT_FIT_COLOR},
        hovertemplate=f"<b>{label}</b>{NOT_FIT_SUFFIX}<br>{reason}<br>context %{{x:,}} tokens<br>"
        "%{y:,.2f} concurrent requests (if it started)<extra></extra>",
    )


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
        A DataFrame with a ``context_tokens`` column and one float column per plan, named by its
        label (plus :data:`NOT_FIT_SUFFIX` when the plan does not fit); a context longer than the
        model's limit (:func:`model_context_limit`) is missing (``NaN``, shown "n/a").

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
        name = label if plan.fits else label + NOT_FIT_SUFFIX
        while name in data:
            name += "′"
        limit = model_context_limit(plan)
        data[name] = [plan.concurrency_at(c) if c <= limit else None for c in contexts]
    return pd.DataFrame(data).astype({k: "float64" for k in list(data)[1:]})


def is_empty_concurrency(table: pd.DataFrame) -> bool:
    """Whether a :func:`concurrency_table` has nothing to draw: every value is 0 or n/a (``NaN``).

    A log axis cannot show 0, so such a chart would be blank.
    """
    values = table.drop(columns="context_tokens")
    return bool(values.empty or not (values.fillna(0) > 0).to_numpy().any())


def key_figures_table(plans: Sequence[Plan], labels: Sequence[str]) -> pd.DataFrame:
    """The headline numbers of each plan as text, a column per plan and a row per figure.

    For comparing three or four scenarios in one compact table instead of a grid of metrics. Rows:
    verdict, KV cache per GPU (GiB), KV cache tokens, KV blocks per GPU, KV bytes per token (per GPU),
    max_model_len (tokens), concurrency at max_model_len and at the target context (requests);
    missing values are "n/a".

    Args:
        plans: the plans.
        labels: one column name per plan (made unique if repeated).

    Raises:
        InvalidParameterError: ``labels`` and ``plans`` differ in length.
    """
    if len(labels) != len(plans):
        raise InvalidParameterError("labels", len(labels), f"one label per plan ({len(plans)})")
    rows = (
        "Verdict",
        "KV cache per GPU",
        "KV cache tokens",
        "KV blocks per GPU",
        "KV bytes per token (per GPU)",
        "max_model_len (tokens)",
        "Concurrency @ max_model_len",
        "Concurrency @ target",
    )
    data: dict[str, list[str]] = {}
    for plan, label in zip(plans, labels, strict=True):
        name = label
        while name in data:
            name += "′"
        target = plan.scenario.target_context
        data[name] = [
            {"fits": "fits", "warning": "fits in part"}.get(verdict(plan).level, "does not fit"),
            display.gib(plan.per_gpu.kv_cache_bytes),
            display.count(plan.kv_cache_tokens),
            display.count(plan.num_gpu_blocks),
            f"{display.count(plan.kv_bytes_per_token)} B",
            display.count(plan.max_model_len),
            display.number(plan.max_concurrency),
            display.NA
            if plan.max_concurrency_at_target is None or not target
            else f"{display.number(plan.max_concurrency_at_target)} @ {context_label(target)}",
        ]
    return pd.DataFrame(data, index=pd.Index(rows, name="figure"))
