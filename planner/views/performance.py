"""The Performance page's view: the workload its boxes hold, which scenarios can be predicted, and the predicted
curves as the page shows them (headline figures, chart, captions, the table of every point).

The page shows it in three steps: :func:`workload` reads the workload boxes, :func:`performance_plan` says what will
be predicted (or why nothing will), and :func:`performance_view` predicts each curve, reporting its progress, and
returns everything drawn under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from planner import display, fields
from planner.capacity.charts import scenario_label
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import ResolvedModel
from planner.catalog.model_spec import ModelSpec
from planner.errors import BadValue, PlannerError
from planner.loadtest.settings import LoadSettings
from planner.predict.calibration import CalibrationProfile
from planner.predict.charts import (
    band_caption,
    curve_points,
    headline_metrics,
    performance_figure,
    points_table,
    workload_caption,
)
from planner.predict.curves import (
    DEFAULT_RATES,
    DEFAULT_WORKLOAD,
    MAX_PAGE_OUTPUT_TOKENS,
    PredictedCurve,
    curve_levels,
    parse_rates,
    predict_curve,
    simulated_output_tokens,
)
from planner.views.message import Message

__all__ = [
    "Headline",
    "Job",
    "PerformancePlan",
    "PerformanceView",
    "Workload",
    "performance_plan",
    "performance_view",
    "workload",
]

#: What predicting a curve is given: the scenario, the workload, its levels and how to report progress.
CurveFunction = Callable[..., PredictedCurve]


@dataclass(frozen=True)
class Workload:
    """The workload the boxes hold: ``settings`` (the :data:`planner.predict.curves.DEFAULT_WORKLOAD` with the
    boxes' fields), the sweep ``axis`` (``concurrency`` or ``rate``), the ``rates`` of a rate sweep (req/s; the
    defaults while ``rates_error`` says why the typed ones are not valid)."""

    settings: LoadSettings
    axis: str
    rates: tuple[float, ...]
    rates_error: str | None = None


def workload(numbers: Mapping[str, float], axis: str, rates_text: str) -> Workload:
    """The workload of the page's boxes.

    Args:
        numbers: ``input_len``, ``output_len``, ``num_prompts``, ``range_ratio``, ``sweep_max`` and ``burstiness`` as
            the number boxes accepted them.
        axis: the sweep's axis.
        rates_text: the request-rate box (comma separated, req/s).
    """
    try:
        rates, error = parse_rates(rates_text), None
    except BadValue as bad:
        rates, error = DEFAULT_RATES, f"request rates {rates_text!r} are not valid: expected {bad.accepted}"
    settings = fields.replace(
        DEFAULT_WORKLOAD,
        input_len=int(numbers["input_len"]),
        output_len=int(numbers["output_len"]),
        num_prompts=int(numbers["num_prompts"]),
        range_ratio=float(numbers["range_ratio"]),
        sweep_max=int(numbers["sweep_max"]),
        burstiness=float(numbers["burstiness"]),
    )
    return Workload(settings, axis, rates, error)


@dataclass(frozen=True)
class Job:
    """One curve to predict: the scenario's ``label``, the ``scenario``, its model's ``spec`` and its ``plan``."""

    label: str
    scenario: Scenario
    spec: ModelSpec
    plan: Plan


@dataclass(frozen=True)
class PerformancePlan:
    """What will be predicted.

    Attributes:
        messages: a warning per scenario that cannot be predicted (not planned, not vLLM, does not fit).
        stop: why nothing is predicted (bad rates, too large a workload, no scenario left); None to go on.
        jobs: the curves to predict, in scenario order.
        levels: the sweep's levels (requests in flight, or req/s).
    """

    messages: tuple[Message, ...]
    stop: Message | None
    jobs: tuple[Job, ...]
    levels: tuple[float, ...]


def performance_plan(
    scenarios: Sequence[Scenario],
    planned: Sequence[tuple[ResolvedModel | PlannerError, Plan | PlannerError]],
    load: Workload,
) -> PerformancePlan:
    """Which of ``scenarios`` can be predicted under ``load``, and whether the page predicts at all (a workload over
    :data:`planner.predict.curves.MAX_PAGE_OUTPUT_TOKENS` simulated output tokens a curve is for the CLI)."""
    messages, jobs = [], []
    for index, (scenario, (model, result)) in enumerate(zip(scenarios, planned, strict=True)):
        label = scenario_label(index, scenario)
        if isinstance(result, PlannerError) or isinstance(model, PlannerError):
            messages.append(Message("warning", f"Scenario {index + 1} cannot be planned: {result}"))
        elif scenario.engine != "vllm":
            messages.append(
                Message(
                    "warning",
                    f"Scenario {index + 1} ({label}): the prediction simulates vLLM V1's scheduler; {scenario.engine} "
                    "is not modelled. Set its engine to vLLM on the VRAM Budget page to predict it.",
                )
            )
        elif not result.fits:
            text = f"Scenario {index + 1} ({label}) does not fit, so it has no performance: {result.reason}."
            messages.append(Message("warning", text))
        else:
            jobs.append(Job(label, scenario, model.spec, result))
    levels = tuple(curve_levels(load.settings, load.axis, load.rates))
    cost = simulated_output_tokens(load.settings, levels, load.axis)
    stop = None
    if load.rates_error:
        stop = Message("error", f"Cannot predict: {load.rates_error}.")
    elif cost > MAX_PAGE_OUTPUT_TOKENS:
        stop = Message(
            "error",
            f"Cannot predict here: this workload simulates {display.count(cost)} output tokens a curve, more than "
            f"this page's {display.count(MAX_PAGE_OUTPUT_TOKENS)}. Lower num_prompts, output_len or the sweep's top "
            "level, or run `python -m planner predict` (no cap).",
        )
    elif not jobs:
        stop = Message(
            "info",
            "Nothing to predict: no scenario is a vLLM deployment that fits (see above why). Change the scenarios on "
            "the VRAM Budget page (left sidebar).",
        )
    return PerformancePlan(tuple(messages), stop, tuple(jobs), levels)


@dataclass(frozen=True)
class Headline:
    """One curve's answer above the chart: its ``label`` (None when it is the only curve) and five ``metrics``,
    each ``(name, value, help, band)`` (:func:`planner.predict.charts.headline_metrics`)."""

    label: str | None
    metrics: tuple[tuple[str, str, str, str | None], ...]


@dataclass(frozen=True)
class PerformanceView:
    """The predicted curves as the page shows them.

    Attributes:
        messages: a warning per scenario whose prediction failed.
        nothing: what to say when no curve could be predicted (then the rest is empty).
        headlines: each curve's answer.
        caption: the workload and the coefficients, in one line.
        figure: throughput, TPOT and TTFT against the load.
        band_caption: what the shaded bands are; None without any.
        notes: each note of the curves once.
        table: every point for reading (:func:`planner.predict.charts.points_table`); ``csv`` the same points as
            numbers.
    """

    messages: tuple[Message, ...]
    nothing: str | None = None
    headlines: tuple[Headline, ...] = ()
    caption: str = ""
    figure: go.Figure | None = None
    band_caption: str | None = None
    notes: tuple[str, ...] = ()
    table: pd.DataFrame | None = None
    csv: str = ""


def performance_view(
    plan: PerformancePlan,
    load: Workload,
    *,
    profile: CalibrationProfile | None = None,
    curve: CurveFunction = predict_curve,
    on_progress: Callable[[float, str], object] | None = None,
) -> PerformanceView:
    """Predict each curve of ``plan`` and say what the page shows.

    Args:
        plan: :func:`performance_plan` (with no ``stop``).
        load: the workload.
        profile: the calibration profile the page was given; None for the default coefficients.
        curve: predicts one curve, as :func:`planner.predict.curves.predict_curve` (the page passes its
            session-remembered form).
        on_progress: called with the share done (0–1) and a line saying what is being predicted.
    """
    curves, labels, messages = [], [], []
    for i, job in enumerate(plan.jobs):

        def _level(done: int, total: int, i: int = i, label: str = job.label) -> None:
            if on_progress is not None:
                on_progress((i + done / total) / len(plan.jobs), f"Predicting {label}: level {done} of {total}")

        try:
            predicted = curve(
                job.scenario,
                load.settings,
                plan.levels,
                axis=load.axis,
                profile=profile,
                spec=job.spec,
                plan=job.plan,
                on_level=_level,
            )
        except PlannerError as exc:
            messages.append(Message("warning", f"Scenario {job.label}: no prediction: {exc}"))
            continue
        curves.append(predicted)
        labels.append(job.label)
    if not curves:
        return PerformanceView(tuple(messages), "No scenario could be predicted for this workload (see above why).")
    points = curve_points(curves, labels)
    return PerformanceView(
        messages=tuple(messages),
        headlines=tuple(
            Headline(label if len(curves) > 1 else None, headline_metrics(c))
            for c, label in zip(curves, labels, strict=True)
        ),
        caption=f"{workload_caption(load.settings, load.axis, plan.levels)} Coefficients: {curves[0].calibration}.",
        figure=performance_figure(curves, labels),
        band_caption=band_caption(curves),
        notes=tuple(dict.fromkeys(n for c in curves for n in c.notes)),
        table=points_table(points),
        csv=points.to_csv(index=False),
    )
