"""Predicted sweeps: the headline figures at each concurrency (or request rate), the knee, and where the KV cache
saturates.

A sweep predicts the same workload at each level with :func:`planner.predict.api.predict` (closed loop at each
concurrency, as the load test's sweep runs it; or open loop at each rate). The knee is the load test's own
(:func:`planner.loadtest.sweep.find_knee`, Kneedle over output throughput). The KV cache saturates at the first
level whose run filled the pool (preemptions, or ≥ 99% of the blocks in use); the capacity plan's "maximum
concurrency" at the workload's length (``input_len + output_len``) is the bound it approaches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from planner.capacity.plan import plan as plan_scenario
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.fields import find
from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.sweep import find_knee, sweep_levels
from planner.metrics.benchmark import BenchmarkMetrics
from planner.predict.api import Prediction, predict
from planner.predict.band import PredictionBand
from planner.predict.calibration import CalibrationProfile
from planner.values import format_value, parse_list, parse_number

__all__ = [
    "AXES",
    "DEFAULT_RATES",
    "DEFAULT_WORKLOAD",
    "MAX_PAGE_OUTPUT_TOKENS",
    "MAX_RATES",
    "CurvePoint",
    "PredictedCurve",
    "curve_levels",
    "format_rates",
    "parse_rates",
    "predict_curve",
    "simulated_output_tokens",
]

#: What a sweep varies.
AXES: tuple[str, ...] = ("concurrency", "rate")
#: Requests per level at least this many times the level (a closed loop needs several waves to settle).
_WAVES = 4
#: The workload the Performance page opens with: 512 prompt tokens, 128 output tokens, 256 requests a level,
#: concurrency 1 to 256 (a chat-sized request on a sweep as wide as vLLM's default ``max_num_seqs``).
DEFAULT_WORKLOAD = LoadSettings(num_prompts=256, input_len=512, output_len=128, sweep=SweepSettings(sweep_max=256))
#: The request rates (req/s) of a rate sweep the Performance page opens with.
DEFAULT_RATES: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: Most request rates of one rate sweep.
MAX_RATES = 12
#: Most output tokens the Performance page simulates for one curve (:func:`simulated_output_tokens`): 1 to 3 s of
#: simulation on one core (the default workload is 426,000). The CLI has no such cap.
MAX_PAGE_OUTPUT_TOKENS = 1_500_000


@dataclass(frozen=True)
class CurvePoint:
    """One level of a predicted sweep.

    Attributes:
        level: concurrency (requests in flight) or request rate (req/s).
        metrics: the predicted run's aggregates.
        kv_saturated: the run filled the KV cache.
        preemptions: requests preempted during the run.
        mean_running: mean sequences per engine step.
        band: the prediction's error band (:class:`~planner.predict.band.PredictionBand`); None for a level
            predicted without one.
    """

    level: float
    metrics: BenchmarkMetrics
    kv_saturated: bool
    preemptions: int
    mean_running: float
    band: PredictionBand | None = None


@dataclass(frozen=True)
class PredictedCurve:
    """A predicted sweep of one scenario.

    Attributes:
        axis: ``concurrency`` or ``rate``.
        points: one per level, in order.
        knee: the knee's level (concurrency sweeps); None when the curve does not bend.
        saturation_level: the first level at which the KV cache filled up; None when it never did.
        kv_max_concurrency: requests of the workload's length that fit in the KV cache at once (the plan's
            "maximum concurrency" at ``input_len + output_len``).
        calibration: where the coefficients come from, in words.
        notes: the predictions' notes, once each.
    """

    axis: str
    points: tuple[CurvePoint, ...]
    knee: float | None
    saturation_level: float | None
    kv_max_concurrency: float | None
    calibration: str
    notes: tuple[str, ...] = ()


#: Highest request rate of a rate sweep, req/s: the Load Test's bound for one typed rate.
_MAX_RATE = find(LoadSettings, "request_rate").setting.entry_range[1]  # type: ignore[attr-defined]


def parse_rates(text: str) -> tuple[float, ...]:
    """The levels of a rate sweep from text: ``"1, 2, 4"`` → ``(1.0, 2.0, 4.0)``, sorted, duplicates dropped.

    Args:
        text: 1 to :data:`MAX_RATES` rates in req/s, each > 0 and at most 10,000, comma separated.

    Returns:
        The rates, increasing.

    Raises:
        BadValue: anything else (no rate, too many, ``inf``, NaN, a part that is not a number); ``accepted`` says
            what is accepted.
    """
    accepted = f"1 to {MAX_RATES} request rates in (0, {_MAX_RATE}] req/s, comma separated, such as 1,2,4,8"
    rates = parse_list(
        text,
        lambda part: float(parse_number(part, 0, _MAX_RATE, low_open=True)),  # type: ignore[arg-type]
        accepted=accepted,
        least=1,
        most=MAX_RATES,
        spaces=False,
    )
    return tuple(sorted(set(rates)))


def format_rates(rates: Sequence[float]) -> str:
    """The inverse of :func:`parse_rates`: ``(1.0, 2.5)`` → ``"1,2.5"`` (sorted, duplicates dropped)."""
    return ",".join(format_value(float(r)) for r in sorted(set(rates)))


def curve_levels(settings: LoadSettings, axis: str, rates: Sequence[float] = DEFAULT_RATES) -> tuple[float, ...]:
    """The levels of a sweep: concurrency 1, 2, 4, … ``settings.sweep.sweep_max``, or ``rates`` (req/s), increasing.

    Raises:
        InvalidParameterError: an unknown axis, a ``sweep_max`` outside what
            :func:`planner.loadtest.sweep.sweep_levels` accepts, or no rate / a rate that is not a finite number > 0.
    """
    if axis not in AXES:
        raise InvalidParameterError("axis", axis, " or ".join(AXES))
    if axis == "concurrency":
        return tuple(float(level) for level in sweep_levels(settings.sweep.sweep_max))
    if not rates or any(not (isinstance(r, int | float) and 0 < r < math.inf) for r in rates):
        raise InvalidParameterError("rates", tuple(rates), "request rates > 0 (req/s)")
    return tuple(sorted({float(r) for r in rates}))


def _level_settings(settings: LoadSettings, level: float, axis: str) -> LoadSettings:
    """``settings`` at one level: closed loop at the concurrency (at least :data:`_WAVES` requests a slot), or open
    loop at the rate."""
    if axis == "concurrency":
        return replace(settings, max_concurrency=int(level), num_prompts=max(settings.num_prompts, _WAVES * int(level)))
    return replace(settings, request_rate=float(level), max_concurrency=None)


def simulated_output_tokens(settings: LoadSettings, levels: Sequence[float], axis: str = "concurrency") -> int:
    """Output tokens a sweep simulates at most: Σ over levels of its requests × the longest output length
    (``⌈output_len · (1 + range_ratio)⌉``), the measure of its cost (the simulator's steps grow with it).

    Args:
        settings: the workload.
        levels: the sweep's levels (:func:`curve_levels`).
        axis: ``concurrency`` or ``rate``.

    Returns:
        Tokens.
    """
    longest = math.ceil(settings.output_len * (1 + settings.range_ratio))
    return sum(_level_settings(settings, level, axis).num_prompts for level in levels) * longest


def predict_curve(
    scenario: Scenario,
    settings: LoadSettings,
    levels: Sequence[float] | None = None,
    *,
    axis: str = "concurrency",
    profile: CalibrationProfile | None = None,
    on_level: Callable[[int, int], object] | None = None,
    spec: ModelSpec | None = None,
    plan: Plan | None = None,
) -> PredictedCurve:
    """Predict ``settings``' workload at each level.

    Args:
        scenario: the deployment.
        settings: the workload; its concurrency or rate is replaced per level, its ``num_prompts`` raised to
            4 × the level for concurrency sweeps.
        levels: concurrencies (default 1, 2, 4, … ``settings.sweep.sweep_max``) or rates (req/s, required).
        axis: ``concurrency`` or ``rate``.
        profile: calibrated coefficients; None = the defaults.
        on_level: called as ``on_level(done, total)`` after each level (progress bars).
        spec: the model, when it is not resolved from ``scenario.model`` (a pasted config.json).
        plan: the scenario's plan when the caller has it already.

    Returns:
        The curve.

    Raises:
        InvalidParameterError: an unknown axis, no levels for a rate sweep, or from :func:`predict`.
    """
    if axis not in AXES:
        raise InvalidParameterError("axis", axis, " or ".join(AXES))
    if levels is None:
        if axis == "rate":
            raise InvalidParameterError("levels", None, "request rates (req/s) for a rate sweep")
        levels = sweep_levels(settings.sweep.sweep_max)
    if not levels:
        raise InvalidParameterError("levels", list(levels), "at least one level")
    plan = plan or plan_scenario(scenario, spec=spec, advise=False)
    points: list[CurvePoint] = []
    notes: dict[str, None] = {}
    last: Prediction | None = None
    for i, level in enumerate(levels):
        work = _level_settings(settings, level, axis)
        last = predict(scenario, work, profile=profile, plan=plan, spec=spec)
        notes.update(dict.fromkeys(n for n in last.notes if not n.startswith("the KV cache filled")))
        run = last.run
        points.append(
            CurvePoint(float(level), run.metrics, run.kv_saturated, run.preemptions, run.mean_running, last.band)
        )
        if on_level is not None:
            on_level(i + 1, len(levels))
    knee = find_knee([(int(p.level), p.metrics.output_throughput) for p in points]) if axis == "concurrency" else None
    saturated = next((p.level for p in points if p.kv_saturated), None)
    pool = plan.pool
    kv_max = pool.concurrency_at(settings.input_len + settings.output_len) if pool is not None else None
    return PredictedCurve(
        axis=axis,
        points=tuple(points),
        knee=float(knee) if knee is not None else None,
        saturation_level=saturated,
        kv_max_concurrency=kv_max,
        calibration=last.calibration if last else "",
        notes=tuple(notes),
    )
