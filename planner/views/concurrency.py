"""The Concurrency vs Context page's view: what each scenario holds as the context per request grows.

The page shows it in two steps around its range slider: :func:`concurrency_setup` (what can be charted, the
slider's choices and where it starts) and :func:`concurrency_chart` (the chart, its captions and the table over the
range the slider holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.capacity.charts import (
    concurrency_figure,
    concurrency_table,
    context_label,
    context_points,
    is_empty_concurrency,
    model_context_limit,
    scenario_label,
)
from planner.capacity.explain import version_range_text
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import ResolvedModel
from planner.errors import PlannerError
from planner.views.message import Message

__all__ = [
    "CHART_CAPTION",
    "ConcurrencyChart",
    "ConcurrencySetup",
    "concurrency_chart",
    "concurrency_setup",
]

#: What the chart's caption says about its lines.
CHART_CAPTION = (
    "Solid: up to the scenario's max_model_len (diamond). Dotted: longer contexts the model supports, if "
    '--max-model-len were raised with the same KV memory. Grey dotted, "(does not fit)": a scenario the '
    "engine rejects. n/a beyond a model's own limit (max_position_embeddings)."
)
#: The shortest context of the range slider, and where its left end starts, tokens.
_SHORTEST, _DEFAULT_LOW = 128, 512


@dataclass(frozen=True)
class ConcurrencySetup:
    """What can be charted, before the range is chosen.

    Attributes:
        messages: a line per scenario that cannot be planned (error) or does not fit (warning), in order.
        plans: the planned scenarios; ``labels`` their labels.
        nothing: what to say when no scenario could be planned (then there is no chart, and no slider).
        options: the range slider's choices, tokens (powers of two up to the longest model limit, and the ends the
            session had chosen).
        value: where the slider starts, ``(low, high)`` tokens.
    """

    messages: tuple[Message, ...]
    plans: tuple[Plan, ...]
    labels: tuple[str, ...]
    nothing: str | None
    options: tuple[int, ...]
    value: tuple[int, int]


@dataclass(frozen=True)
class ConcurrencyChart:
    """The chart and table over a range.

    Attributes:
        problem: why there is nothing to show (a range with one end twice); then the rest is empty.
        figure: the chart; None when no scenario holds even part of a request over the range (``empty`` says so).
        empty: what to say instead of a blank chart.
        captions: the lines under the chart.
        table: concurrency at each context as text ("n/a" beyond a model's limit), indexed by "context (tokens)".
        csv: the same table as numbers, CSV.
    """

    problem: str | None = None
    figure: go.Figure | None = None
    empty: str | None = None
    captions: tuple[str, ...] = ()
    table: pd.DataFrame | None = None
    csv: str = ""


def concurrency_setup(
    scenarios: Sequence[Scenario],
    planned: Sequence[tuple[ResolvedModel | PlannerError, Plan | PlannerError]],
    saved: tuple[int | None, int | None] = (None, None),
) -> ConcurrencySetup:
    """What of ``scenarios`` can be charted, and the range slider.

    Args:
        scenarios: the page's scenarios.
        planned: each scenario's model and plan (or the error in their place).
        saved: the range the session (or the link) had, ``(min_context, max_context)`` tokens, None where unset.
    """
    messages, plans, labels = [], [], []
    for index, (scenario, (_, result)) in enumerate(zip(scenarios, planned, strict=True)):
        if isinstance(result, PlannerError):
            messages.append(Message("error", f"Scenario {index + 1} cannot be planned: {result}"))
            continue
        plans.append(result)
        labels.append(scenario_label(index, scenario))
        if not result.fits:
            drawn = (
                " Its line is grey and dotted: what the KV cache would hold if the engine started."
                if result.kv_cache_tokens
                else ""
            )
            messages.append(Message("warning", f"Scenario {index + 1} does not fit: {result.reason}.{drawn}"))
    if not plans:
        nothing = (
            "No scenario could be planned, so there is nothing to chart. Fix the scenarios on the VRAM Budget "
            "page (left sidebar)."
        )
        return ConcurrencySetup(tuple(messages), (), (), nothing, (), (0, 0))
    saved_low, saved_high = saved
    longest = max(model_context_limit(p) for p in plans)
    options = sorted({*context_points(_SHORTEST, max(longest, 2 * _SHORTEST)), *(v for v in saved if v)})
    low = saved_low if saved_low in options else _DEFAULT_LOW
    high = saved_high if saved_high in options else longest
    value = (low, high) if low < high else (options[0], options[-1])
    return ConcurrencySetup(tuple(messages), tuple(plans), tuple(labels), None, tuple(options), value)


def concurrency_chart(setup: ConcurrencySetup, low: int, high: int) -> ConcurrencyChart:
    """The chart and table of ``setup``'s plans from ``low`` to ``high`` tokens (the slider's ends)."""
    if low >= high:
        return ConcurrencyChart(problem="Pick a range with two different ends.")
    plans, labels = list(setup.plans), list(setup.labels)
    table = concurrency_table(plans, labels, context_points(low, high))
    shown = table.astype(object).map(display.cell)
    shown["context_tokens"] = table["context_tokens"].map(context_label)
    shown = shown.rename(columns={"context_tokens": "context (tokens)"}).set_index("context (tokens)")
    csv = table.to_csv(index=False)
    if is_empty_concurrency(table):
        empty = (
            f"Nothing to chart from {context_label(low)} to {context_label(high)} tokens: no scenario holds even "
            "part of one request there (its KV cache is empty, or the range is beyond the model's context "
            "limit, n/a). See the lines above for why; change the scenarios on the VRAM Budget page or the range."
        )
        return ConcurrencyChart(empty=empty, table=shown, csv=csv)
    ranges = [(label, version_range_text(p)) for label, p in zip(labels, plans, strict=True)]
    return ConcurrencyChart(
        figure=concurrency_figure(plans, labels, min_context=low, max_context=high),
        captions=(
            CHART_CAPTION,
            *(f"Shaded, {label}: no vLLM version set, {text}." for label, text in ranges if text),
        ),
        table=shown,
        csv=csv,
    )
