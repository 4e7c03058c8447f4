"""The VRAM Budget page's view: each scenario's verdict, figures, explanation and fixes, the version comparisons, the
memory chart and each plan's details (launch command, predicted performance, formulas), as the page shows them.

:func:`budget_view` takes the scenarios the editors hold and their plans (the page resolves and plans them through
its caches) and returns a :class:`BudgetView`; the page only draws it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.capacity.charts import key_figures_table, memory_breakdown_figure, scenario_label
from planner.capacity.explain import Explanation, explain, layout_rows, version_changes, version_range_text
from planner.capacity.launch import Launch, launch
from planner.capacity.plan import plan
from planner.capacity.presets import scenario_from_advice
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.capacity.verdict import verdict
from planner.catalog.hub import ResolvedModel
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError, PlannerError
from planner.predict.api import Outlook, outlook
from planner.views.message import Metric
from planner.views.model import ModelDetails, model_details

__all__ = [
    "AdviceView",
    "BudgetView",
    "DetailView",
    "ExplanationView",
    "ForecastView",
    "Metric",
    "ScenarioAnswer",
    "VersionChangeView",
    "budget_view",
    "markdown_bullets",
]

#: What the memory chart's caption says.
MEMORY_CAPTION = (
    "Memory per GPU: the limiting GPU of each scenario; terms an engine does not model are left out. The black line "
    "(labelled) is the device's total memory, the dashed one the engine's budget (total × utilization); anything past "
    "the total is the red hatched over-budget segment."
)
#: What the compact key-figures table's caption says.
KEY_FIGURES_CAPTION = "Concurrency: requests of that many tokens each that fit in the KV cache at once."
#: Characters Streamlit's markdown would read as formatting (``_report_kv_cache_config``, ``$``) in the planner's text.
_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$"})


def markdown_bullets(lines: Sequence[str]) -> str:
    """The planner's sentences as a markdown bulleted list, their markdown characters escaped."""
    return "\n".join(f"- {line.translate(_MARKDOWN)}" for line in lines)


@dataclass(frozen=True)
class ExplanationView:
    """ "Why these numbers": the KV layout (a column per attention type), the reasons and the longest that fits as
    markdown bullets, and the formulas' sources in one line."""

    layout: pd.DataFrame
    reasons: str
    longest_fit: str
    sources: str


@dataclass(frozen=True)
class AdviceView:
    """One change that makes a scenario fit: ``text`` (markdown, the change and the concurrency it gives) and the
    page's ``scenarios`` with it applied (what "Apply" loads)."""

    text: str
    scenarios: tuple[Scenario, ...]


@dataclass(frozen=True)
class ScenarioAnswer:
    """The Verdict column of one scenario.

    Attributes:
        label: the scenario's short label.
        error: why the scenario has no plan ("Cannot plan this scenario: …"); then only ``model`` may be set.
        model: the resolved model's details; None when the model itself could not be resolved.
        verdict_level / verdict_text: :func:`planner.capacity.verdict.verdict` (``fits``, ``warning``, ``no_fit``,
            ``refused``).
        topology_warning: a TP or PP group that needs more than one node, and what vLLM launches it with.
        range_info: the range over the vLLM versions in use when no version is set.
        metric_rows: the headline figures, row by row (none for a refused plan, or when three or more scenarios
            share the page: the key-figures table shows them).
        explanation: "Why these numbers" (vLLM plans).
        advice: the changes that make it fit, each re-planned.
    """

    label: str
    error: str | None = None
    model: ModelDetails | None = None
    verdict_level: str = "fits"
    verdict_text: str = ""
    topology_warning: str | None = None
    range_info: str | None = None
    metric_rows: tuple[tuple[Metric, ...], ...] = ()
    explanation: ExplanationView | None = None
    advice: tuple[AdviceView, ...] = ()


@dataclass(frozen=True)
class VersionChangeView:
    """What changed between two scenarios that differ only in the vLLM version: a ``title``, the reasons as markdown
    bullets and a ``table`` of the figures of both."""

    title: str
    reasons: str
    table: pd.DataFrame


@dataclass(frozen=True)
class ForecastView:
    """The predicted performance of a plan (:func:`planner.predict.api.outlook`): a ``title`` (markdown), the
    ``table`` and its ``caption``."""

    title: str
    table: pd.DataFrame
    caption: str


@dataclass(frozen=True)
class DetailView:
    """One Details tab: the launch command, the predicted performance, the formulas and notes and the JSON export.

    Attributes:
        index: the scenario's 0-based position (the keys of its widgets).
        label: the tab's label.
        launch: the launch command, with its warning and the command that fits.
        upload_note: for a pasted config.json, what its name stands for in the command.
        forecast: the predicted performance; None where it cannot be predicted.
        formulas: one row per formula: ``what``, ``formula``, ``value``, ``source``.
        notes: the plan's notes.
        plan_json: the plan as JSON text; ``file_name`` its download name.
    """

    index: int
    label: str
    launch: Launch
    upload_note: str | None
    forecast: ForecastView | None
    formulas: tuple[dict[str, str], ...]
    notes: tuple[str, ...]
    plan_json: str
    file_name: str


@dataclass(frozen=True)
class BudgetView:
    """Everything the VRAM Budget page shows below its editors' inputs.

    Attributes:
        answers: one :class:`ScenarioAnswer` per scenario, in order.
        compact: three or more scenarios: the figures are one table (:attr:`key_figures`), not metric grids.
        version_changes: each pair of scenarios that differ only in the vLLM version.
        key_figures: the planned scenarios' headline figures side by side (compact pages only).
        launch: the launch command, when exactly one scenario is planned.
        memory_figure: the memory of each planned scenario's limiting GPU, refused configurations left out; None when
            none is left.
        details: one Details tab per planned scenario.
    """

    answers: tuple[ScenarioAnswer, ...]
    compact: bool
    version_changes: tuple[VersionChangeView, ...]
    key_figures: pd.DataFrame | None
    launch: Launch | None
    memory_figure: go.Figure | None
    details: tuple[DetailView, ...]


def _metric_rows(result: Plan, wide: bool) -> tuple[tuple[Metric, ...], ...]:
    """The answer first (concurrency, KV tokens), then where the memory went; four a row for one scenario."""
    target = result.scenario.target_context
    metrics = (
        Metric(
            f"Concurrency @ {display.count(result.max_model_len)}",
            display.number(result.max_concurrency),
            "Requests of max_model_len tokens that fit in the KV cache at once.",
        ),
        Metric(
            f"Concurrency @ {display.count(target)}" if target else "Concurrency @ target",
            display.number(result.max_concurrency_at_target),
            "Set a target context to see concurrency at it.",
        ),
        Metric("KV cache tokens", display.count(result.kv_cache_tokens)),
        Metric("KV blocks per GPU", display.count(result.num_gpu_blocks)),
        Metric("Weights per GPU", display.gib(result.per_gpu.weights_bytes)),
        Metric("KV cache per GPU", display.gib(result.per_gpu.kv_cache_bytes)),
        Metric("KV bytes per token (per GPU)", f"{display.count(result.kv_bytes_per_token)} B"),
    )
    size = 4 if wide else 2
    return tuple(metrics[i : i + size] for i in range(0, len(metrics), size))


def _explanation(explanation: Explanation) -> ExplanationView:
    return ExplanationView(
        # a column per attention type, a row per figure: narrow enough for half the page
        layout=pd.DataFrame(layout_rows(explanation.layout)).set_index("attention").T.rename_axis(None),
        reasons=markdown_bullets(explanation.lines),
        longest_fit=markdown_bullets(explanation.longest_fit.lines),
        sources="Formulas: " + "; ".join(explanation.sources),
    )


def _answer(
    index: int,
    scenarios: Sequence[Scenario],
    model: ResolvedModel | PlannerError,
    result: Plan | PlannerError,
    count: int,
) -> ScenarioAnswer:
    label = scenario_label(index, scenarios[index])
    details = None if isinstance(model, PlannerError) else model_details(model)
    if isinstance(result, PlannerError):
        return ScenarioAnswer(label, error=f"Cannot plan this scenario: {result}", model=details)
    said = verdict(result)
    topology = None
    if result.topology is not None and result.topology.warning:
        needs = " or ".join(result.topology.needs)
        topology = f"{result.topology.warning}." + (f" vLLM launches it with {needs}." if needs else "")
    range_text = version_range_text(result)
    explanation = explain(result)
    advice = []
    for item in result.advice:
        gpus = f"{item.num_gpus} GPU{'s' if item.num_gpus > 1 else ''}"
        applied = list(scenarios)
        applied[index] = scenario_from_advice(scenarios[index], result, item)
        advice.append(
            AdviceView(f"{item.change} → **{display.number(item.max_concurrency, 1)}** req. on {gpus}", tuple(applied))
        )
    return ScenarioAnswer(
        label,
        model=details,
        verdict_level=said.level,
        verdict_text=said.text,
        topology_warning=topology,
        range_info=None if not range_text else f"vLLM version not set: {range_text}.",
        # a refused configuration has no start-up to describe; four metric grids side by side truncate their values
        metric_rows=() if count >= 3 or result.refused else _metric_rows(result, wide=count == 1),
        explanation=None if explanation is None else _explanation(explanation),
        advice=tuple(advice),
    )


def _forecast(forecast: Outlook | None) -> ForecastView | None:
    if forecast is None:
        return None
    band_line = forecast.band_line
    return ForecastView(
        title=f"**Predicted performance** ({display.count(forecast.input_len)} prompt + {forecast.output_len} output "
        "tokens per request)",
        table=forecast.table(),
        caption=f"{forecast.full.calibration}. Full load: {display.count(forecast.full_concurrency)} requests in "
        "flight, what the KV cache holds at this length (at most max_num_seqs). "
        + (f"In parentheses: {band_line}. " if band_line else "")
        + "Curves for any workload, and calibration on your own runs: the Performance page or "
        "python -m planner predict.",
    )


def _detail(
    index: int,
    label: str,
    result: Plan,
    model: ResolvedModel,
    forecast: Callable[[Scenario, ModelSpec | None], Outlook | None],
) -> DetailView:
    upload_note = None
    if model.source == "upload":
        upload_note = (
            f"{result.scenario.model} stands for the pasted config.json: put the checkpoint's path or repo id there."
        )
    return DetailView(
        index=index,
        label=label,
        launch=launch(result),
        upload_note=upload_note,
        forecast=_forecast(forecast(result.scenario, model.spec)),
        formulas=tuple(
            {"what": f.label, "formula": f.expression, "value": f.value, "source": f.source} for f in result.formulas
        ),
        notes=tuple(result.notes),
        plan_json=json.dumps(result.to_json(), indent=2),
        file_name=f"plan-{index + 1}.json",
    )


def _planned_outlook(scenario: Scenario, spec: ModelSpec | None) -> Outlook | None:
    return outlook(plan(scenario, spec=spec), spec)


def budget_view(
    scenarios: Sequence[Scenario],
    planned: Sequence[tuple[ResolvedModel | PlannerError, Plan | PlannerError]],
    *,
    forecast: Callable[[Scenario, ModelSpec | None], Outlook | None] = _planned_outlook,
) -> BudgetView:
    """What the VRAM Budget page shows for ``scenarios``.

    Args:
        scenarios: the scenarios as the editors hold them (1–4).
        planned: each scenario's resolved model and plan, an error in place of either that failed (one pair per
            scenario, as the page's ``plan_scenarios`` gives them).
        forecast: the predicted performance of a planned scenario (the page passes its cached
            :func:`planner.predict.api.outlook`); by default planned and predicted afresh.

    Returns:
        The page's view. Nothing raises: a scenario that cannot be planned says why in its answer.

    Raises:
        InvalidParameterError: ``planned`` does not hold one pair per scenario.
    """
    if len(planned) != len(scenarios):
        raise InvalidParameterError("planned", len(planned), f"one (model, plan) per scenario ({len(scenarios)})")
    count = len(scenarios)
    answers = tuple(_answer(i, scenarios, m, r, count) for i, (m, r) in enumerate(planned))
    ok = [(i, a.label, r, m) for i, (a, (m, r)) in enumerate(zip(answers, planned, strict=True)) if isinstance(r, Plan)]
    changes = tuple(
        VersionChangeView(
            title=f"What changed from vLLM {change.old_version} to {change.new_version} (scenarios {first + 1} and "
            f"{second + 1})",
            reasons=markdown_bullets(change.lines),
            table=pd.DataFrame(change.rows()).set_index("figure").rename_axis(None),
        )
        for first, second, change in version_changes([r if isinstance(r, Plan) else None for _, r in planned])
    )
    plans = [r for _, _, r, _ in ok]
    # a configuration the engine refuses never starts: no memory of it to draw (its bar read as a working budget)
    charted = [(label, r) for _, label, r, _ in ok if not r.refused]
    key_figures = None
    if ok and count >= 3:
        key_figures = key_figures_table(plans, [f"Scenario {i + 1}" for i, *_ in ok]).rename_axis(None)
    return BudgetView(
        answers=answers,
        compact=count >= 3,
        version_changes=changes,
        key_figures=key_figures,
        launch=launch(plans[0]) if len(ok) == 1 else None,
        memory_figure=memory_breakdown_figure([r for _, r in charted], [label for label, _ in charted])
        if charted
        else None,
        details=tuple(_detail(i, label, r, m, forecast) for i, label, r, m in ok),
    )
