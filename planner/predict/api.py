"""Predict a planned deployment under a workload: the one call the pages and the CLI make.

:func:`predict` plans the scenario (:func:`planner.capacity.plan.plan`, so the KV pool and the scheduler limits
are the capacity plan's), builds its step shape and simulates the load test's settings with the default or a
calibrated set of coefficients. :func:`predicted_run` turns the result into a
:class:`~planner.loadtest.results.SavedRun` (``source="predicted"``), so it is tabled, charted and exported exactly
like a measured run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime

from planner.capacity.plan import plan as plan_scenario
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun
from planner.loadtest.settings import LoadSettings
from planner.predict.calibration import CalibrationProfile
from planner.predict.shape import StepShape, step_shape
from planner.predict.simulator import SimulatedRun, simulate
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

__all__ = ["DEFAULT_SOURCE", "Prediction", "planned_shape", "predict", "predicted_run"]

#: Where the default coefficients come from, in words.
DEFAULT_SOURCE = "default coefficients (fitted to one H200's decode steps and a vLLM 0.24.0 server)"


@dataclass(frozen=True)
class Prediction:
    """A predicted run of a planned deployment.

    Attributes:
        plan: the capacity plan (its KV pool and limits drive the simulation).
        shape: the per-GPU step quantities.
        settings: the workload.
        coefficients: the step model's coefficients used.
        calibration: where the coefficients come from, in words.
        run: the continuous-batching simulation.
        static: the same workload under static batching; None unless asked for.
        notes: what a reader of the figures must know.
    """

    plan: Plan
    shape: StepShape
    settings: LoadSettings
    coefficients: StepCoefficients
    calibration: str
    run: SimulatedRun
    static: SimulatedRun | None = None
    notes: tuple[str, ...] = ()

    @property
    def continuous_gain(self) -> float | None:
        """Output throughput of continuous over static batching; None without the static run."""
        if self.static is None or not self.static.metrics.output_throughput:
            return None
        return self.run.metrics.output_throughput / self.static.metrics.output_throughput


def _workload(settings: LoadSettings) -> LoadSettings:
    """The settings as the simulator reads them: ``ignore_eos`` is implied, no time cap."""
    return replace(settings, ignore_eos=True, duration_s=None, endpoints=(), mode="run")


def planned_shape(
    scenario: Scenario, *, plan: Plan | None = None, spec: ModelSpec | None = None
) -> tuple[Plan, StepShape]:
    """The plan of a vLLM deployment that fits, and its step shape: what every prediction starts from.

    Args:
        scenario: the deployment.
        plan: its plan when the caller has it already.
        spec: the model, when it is not resolved from ``scenario.model``.

    Raises:
        InvalidParameterError: the engine is not vLLM, the configuration does not fit (with the planner's reason),
            or the GPU lacks a bandwidth or TFLOPS figure.
        PlannerError: from planning.
    """
    if scenario.engine != "vllm":
        raise InvalidParameterError("engine", scenario.engine, "vllm (the simulator models vLLM V1's scheduler)")
    result = plan or plan_scenario(scenario, spec=spec, advise=False)
    if not result.fits:
        raise InvalidParameterError("scenario", result.model_id, f"a configuration that fits ({result.reason})")
    return result, step_shape(result, spec)


def predict(
    scenario: Scenario,
    settings: LoadSettings,
    *,
    profile: CalibrationProfile | None = None,
    static: bool = False,
    spec: ModelSpec | None = None,
    plan: Plan | None = None,
) -> Prediction:
    """Predict ``settings``' workload on the deployment ``scenario``.

    Args:
        scenario: the deployment (vLLM: ``engine="vllm"``).
        settings: the workload (``num_prompts``, ``max_concurrency`` or ``request_rate`` with ``burstiness``,
            ``input_len``, ``output_len``, ``range_ratio``, ``seed``, ``goodput_ms``).
        profile: calibrated coefficients; None = the defaults.
        static: also simulate static batching.
        spec: the model, when it is not resolved from ``scenario.model``.
        plan: the scenario's plan when the caller has it already.

    Returns:
        The prediction.

    Raises:
        InvalidParameterError: the engine is not vLLM, the configuration does not fit (with the planner's reason),
            a request is longer than ``max_model_len``, or the GPU lacks a bandwidth or TFLOPS figure.
        PlannerError: from planning (unknown model or GPU, bad settings).
    """
    result, shape = planned_shape(scenario, plan=plan, spec=spec)
    coefficients = profile.coefficients if profile else DEFAULT_COEFFICIENTS
    notes: list[str] = []
    if profile is None:
        source = DEFAULT_SOURCE
        if shape.gpu_id != "h200-sxm-141gb":
            notes.append(
                f"{shape.gpu_id}: default coefficients are fractions of the datasheet bandwidth and TFLOPS, "
                "measured on an H200; calibrate on this GPU's runs for tighter figures"
            )
    else:
        source = f"calibrated on {len(profile.runs)} run(s) of {', '.join(profile.models) or 'n/a'} ({profile.gpu})"
        if profile.gpu != shape.gpu_id:
            notes.append(f"calibrated on {profile.gpu}, applied to {shape.gpu_id} as fractions of its datasheet")
    if shape.pipeline_parallel_size > 1:
        notes.append("pipeline parallel: stages modelled one after another within a step (no micro-batch overlap)")
    work = _workload(settings)
    run = simulate(shape, work, coefficients)
    if run.kv_saturated:
        notes.append(
            f"the KV cache filled up ({run.peak_kv_blocks:,} of {run.num_gpu_blocks:,} blocks; "
            f"{run.preemptions:,} preemption(s)): requests queued for blocks"
        )
    static_run = simulate(shape, work, coefficients, mode="static") if static else None
    return Prediction(result, shape, work, coefficients, source, run, static_run, tuple(notes))


def predicted_run(prediction: Prediction, label: str | None = None, *, sweep: str | None = None) -> SavedRun:
    """The prediction as a :class:`~planner.loadtest.results.SavedRun` (``source="predicted"``, no per-request
    rows), to table, chart and export like a measured run."""
    s = prediction.settings
    name = label or (
        f"predicted · {prediction.plan.model_id.split('/')[-1]} · "
        + (f"c={s.max_concurrency}" if s.max_concurrency else f"{s.request_rate:g} req/s")
    )
    return SavedRun(
        label=name,
        endpoint="predicted",
        source="predicted",
        metrics=prediction.run.metrics,
        model=prediction.plan.model_id,
        date=datetime.now().strftime("%Y%m%d-%H%M%S"),
        num_prompts=s.num_prompts,
        max_concurrency=s.max_concurrency,
        request_rate=s.request_rate if not math.isinf(s.request_rate) else math.inf,
        burstiness=s.burstiness,
        sweep=sweep,
        input_tokens_method="dataset",
        requested_input_tokens=s.input_len,
        notes=(prediction.calibration, *prediction.notes),
    )
