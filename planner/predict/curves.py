"""Predicted sweeps: the headline figures at each concurrency (or request rate), the knee, and where the KV cache
saturates.

A sweep predicts the same workload at each level with :func:`planner.predict.api.predict` (closed loop at each
concurrency, as the load test's sweep runs it; or open loop at each rate). The knee is the load test's own
(:func:`planner.loadtest.sweep.find_knee`, Kneedle over output throughput). The KV cache saturates at the first
level whose run filled the pool (preemptions, or ≥ 99% of the blocks in use); the capacity plan's "maximum
concurrency" at the workload's length (``input_len + output_len``) is the bound it approaches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from planner.capacity.plan import plan as plan_scenario
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.loadtest.sweep import find_knee, sweep_levels
from planner.metrics.benchmark import BenchmarkMetrics
from planner.predict.api import Prediction, predict
from planner.predict.calibration import CalibrationProfile

__all__ = ["AXES", "CurvePoint", "PredictedCurve", "predict_curve"]

#: What a sweep varies.
AXES: tuple[str, ...] = ("concurrency", "rate")
#: Requests per level at least this many times the level (a closed loop needs several waves to settle).
_WAVES = 4


@dataclass(frozen=True)
class CurvePoint:
    """One level of a predicted sweep.

    Attributes:
        level: concurrency (requests in flight) or request rate (req/s).
        metrics: the predicted run's aggregates.
        kv_saturated: the run filled the KV cache.
        preemptions: requests preempted during the run.
        mean_running: mean sequences per engine step.
    """

    level: float
    metrics: BenchmarkMetrics
    kv_saturated: bool
    preemptions: int
    mean_running: float


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


def predict_curve(
    scenario: Scenario,
    settings: LoadSettings,
    levels: Sequence[float] | None = None,
    *,
    axis: str = "concurrency",
    profile: CalibrationProfile | None = None,
    on_level: object = None,
) -> PredictedCurve:
    """Predict ``settings``' workload at each level.

    Args:
        scenario: the deployment.
        settings: the workload; its concurrency or rate is replaced per level, its ``num_prompts`` raised to
            4 × the level for concurrency sweeps.
        levels: concurrencies (default 1, 2, 4, … ``settings.sweep_max``) or rates (req/s, required).
        axis: ``concurrency`` or ``rate``.
        profile: calibrated coefficients; None = the defaults.
        on_level: called as ``on_level(done, total)`` after each level (progress bars).

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
        levels = sweep_levels(settings.sweep_max)
    if not levels:
        raise InvalidParameterError("levels", list(levels), "at least one level")
    plan = plan_scenario(scenario, advise=False)
    points: list[CurvePoint] = []
    notes: dict[str, None] = {}
    last: Prediction | None = None
    for i, level in enumerate(levels):
        if axis == "concurrency":
            work = replace(
                settings, max_concurrency=int(level), num_prompts=max(settings.num_prompts, _WAVES * int(level))
            )
        else:
            work = replace(settings, request_rate=float(level), max_concurrency=None)
        last = predict(scenario, work, profile=profile, plan=plan)
        notes.update(dict.fromkeys(n for n in last.notes if not n.startswith("the KV cache filled")))
        run = last.run
        points.append(CurvePoint(float(level), run.metrics, run.kv_saturated, run.preemptions, run.mean_running))
        if callable(on_level):
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
