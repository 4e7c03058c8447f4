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

import pandas as pd

from planner import display
from planner.capacity.plan import plan as plan_scenario
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun
from planner.loadtest.schedule import draw_lengths
from planner.loadtest.settings import LoadSettings
from planner.predict.band import PredictionBand, band_for, band_note, range_text, with_band
from planner.predict.calibration import CalibrationProfile, scored_values
from planner.predict.shape import StepShape, step_shape
from planner.predict.simulator import SimulatedRun, simulate
from planner.predict.speculative import (
    DEFAULT_ACCEPTANCE,
    SpecDecodeConfig,
    SpecDecodeEstimate,
    break_even_batch,
    layer_head_shape,
    speculative_estimate,
)
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

__all__ = [
    "DEFAULT_SOURCE",
    "OUTLOOK_MAX_CONCURRENCY",
    "OUTLOOK_OUTPUT_LEN",
    "Outlook",
    "Prediction",
    "SpeculativePrediction",
    "outlook",
    "planned_shape",
    "predict",
    "predict_speculative",
    "predicted_run",
]

#: Where the default coefficients come from, in words.
DEFAULT_SOURCE = "default coefficients (fitted to vLLM 0.24.0 on one H200: eleven models' runs and its decode steps)"


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
        band: how far the figures can be trusted: per metric the low and high values of the predictor's
            leave-one-model-out errors in this regime (:mod:`planner.predict.band`).
    """

    plan: Plan
    shape: StepShape
    settings: LoadSettings
    coefficients: StepCoefficients
    calibration: str
    run: SimulatedRun
    static: SimulatedRun | None = None
    notes: tuple[str, ...] = ()
    band: PredictionBand | None = None

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
    prefix_cache_hit_rate: float = 0.0,
    acceptance_rates: tuple[float, ...] = (),
    draft_weight_bytes: float | None = None,
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
        prefix_cache_hit_rate: share of each prompt the prefix cache holds (0–1, whole blocks: ⌊r · prompt / B⌋ · B
            tokens); those tokens are not prefilled (:func:`planner.predict.simulator.simulate`'s
            ``cached_tokens``). A measured run's hit rate (Load Test, ``vllm:prefix_cache_hits / queries``) fits here.
        acceptance_rates: conditional acceptance rate of each draft position of the scenario's ``speculative_config``
            (each in [0, 1], as :class:`~planner.predict.speculative.SpecDecodeConfig` takes them); empty = the
            method's published rate.
        draft_weight_bytes: bytes of the scenario's EAGLE/MTP head, when known (as :func:`predict_speculative`).

    A scenario with ``speculative_config`` is simulated with it (continuous batching; static batching has no
    drafter): the target as planned without the draft, its KV blocks as planned with it, the drafter as
    :func:`predict_speculative` builds it, at ``acceptance_rates`` or else the method's published acceptance rate
    (:data:`planner.predict.speculative.DEFAULT_ACCEPTANCE`; ``ngram`` has none: without rates it is left out, with
    a note).

    Returns:
        The prediction.

    Raises:
        InvalidParameterError: the engine is not vLLM, the configuration does not fit (with the planner's reason),
            a request is longer than ``max_model_len``, or the GPU lacks a bandwidth or TFLOPS figure.
        PlannerError: from planning (unknown model or GPU, bad settings).
    """
    result, shape = planned_shape(scenario, plan=plan, spec=spec)
    coefficients = profile.coefficients if profile else DEFAULT_COEFFICIENTS
    shape, speculative, notes = _speculative_shape(scenario, shape, spec, tuple(acceptance_rates), draft_weight_bytes)
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
    if not 0 <= prefix_cache_hit_rate <= 1:
        raise InvalidParameterError("prefix_cache_hit_rate", prefix_cache_hit_rate, "a share in [0, 1]")
    cached = None
    if prefix_cache_hit_rate:
        block = shape.block_size
        prompts = [a for a, _, _ in draw_lengths(work, work.num_prompts, 0)]
        cached = [int(prefix_cache_hit_rate * a // block) * block for a in prompts]
        notes.append(
            f"{prefix_cache_hit_rate:.0%} of each prompt served from the prefix cache (whole blocks): not prefilled"
        )
    run = simulate(shape, work, coefficients, cached_tokens=cached, speculative=speculative)
    if run.kv_saturated:
        notes.append(
            f"the KV cache filled up ({run.peak_kv_blocks:,} of {run.num_gpu_blocks:,} blocks; "
            f"{run.preemptions:,} preemption(s)): requests queued for blocks"
        )
    static_run = simulate(shape, work, coefficients, mode="static") if static else None
    band = band_for(shape, work, scored_values(run.metrics))
    return Prediction(result, shape, work, coefficients, source, run, static_run, tuple(notes), band)


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


#: Output tokens per request of the Budget page's outlook.
OUTLOOK_OUTPUT_LEN = 128
#: Most requests in flight the outlook simulates at full load (keeps it well under a second).
OUTLOOK_MAX_CONCURRENCY = 512


@dataclass(frozen=True)
class Outlook:
    """Predicted figures of a planned vLLM deployment at one request and at full load (the Budget page's answer).

    Attributes:
        input_len / output_len: the workload's prompt and output tokens per request.
        full_concurrency: requests in flight at full load: what the KV cache holds at ``input_len + output_len``
            tokens each, at most ``max_num_seqs`` (and :data:`OUTLOOK_MAX_CONCURRENCY`).
        single: the prediction at one request in flight.
        full: the prediction at ``full_concurrency``.
    """

    input_len: int
    output_len: int
    full_concurrency: int
    single: Prediction
    full: Prediction

    def table(self) -> pd.DataFrame:
        """One row per load (1 request, full load): TTFT and TPOT medians (ms), output tokens/s in all and per
        request, each followed by its error band, e.g. ``"7.2 (5.8–8.0)"``; "n/a" where a figure is missing.

        Tokens/s per request is ``1 / median TPOT``, so its band is ``1 / high`` to ``1 / low`` of the TPOT band.
        """
        rows = []
        for label, p in (("1 request", self.single), (f"{self.full_concurrency:,} requests (full)", self.full)):
            m = p.run.metrics
            band = p.band
            per_request = 1.0 / m.tpot.median_s if m.tpot and m.tpot.median_s else None
            tpot_band = band.get("median_tpot") if band is not None else None

            def ms(d: object) -> str:
                return display.ms(getattr(d, "median_s", None), unit=False)

            per_request_band = None if tpot_band is None else range_text(1 / tpot_band[1], 1 / tpot_band[0], digits=0)

            def within(value: str, metric: str, band: PredictionBand | None = band) -> str:
                return with_band(value, band.text(metric) if band is not None else None)

            rows.append(
                {
                    "load": label,
                    "TTFT p50 (ms)": within(ms(m.ttft), "median_ttft"),
                    "TPOT p50 (ms)": within(ms(m.tpot), "median_tpot"),
                    "output tok/s": within(display.number(m.output_throughput, 0), "output_throughput"),
                    "tok/s per request": with_band(display.number(per_request, 0), per_request_band),
                    "KV cache": "fills up" if p.run.kv_saturated else "room left",
                }
            )
        return pd.DataFrame(rows)

    @property
    def band_line(self) -> str | None:
        """What the ``(low–high)`` beside the figures of :meth:`table` is, in one line
        (:func:`planner.predict.band.band_note`); None without a band."""
        return band_note((self.single.band, self.full.band))


def outlook(plan: Plan, spec: ModelSpec | None = None) -> Outlook | None:
    """Predict a planned deployment at one request and at full load; None when it cannot be predicted (not vLLM,
    does not fit, no KV pool, or the GPU lacks a bandwidth or TFLOPS figure).

    The workload: prompts of the scenario's target context less :data:`OUTLOOK_OUTPUT_LEN` (else 1,024 tokens, or
    what ``max_model_len`` leaves), :data:`OUTLOOK_OUTPUT_LEN` output tokens; four waves of requests at full load,
    so the medians come from the staggered steady state more than from the first burst.
    """
    s = plan.scenario
    if s.engine != "vllm" or not plan.fits or plan.pool is None:
        return None
    output_len = min(OUTLOOK_OUTPUT_LEN, max(1, plan.max_model_len // 2))
    wanted = (s.target_context - output_len) if s.target_context and s.target_context > output_len else 1024
    input_len = max(1, min(wanted, plan.max_model_len - output_len))
    fit = plan.pool.concurrency_at(input_len + output_len)
    full = max(1, min(int(fit), plan.max_num_seqs or OUTLOOK_MAX_CONCURRENCY, OUTLOOK_MAX_CONCURRENCY))
    try:
        single = predict(
            s,
            LoadSettings(num_prompts=4, max_concurrency=1, input_len=input_len, output_len=output_len),
            spec=spec,
            plan=plan,
        )
        loaded = predict(
            s,
            LoadSettings(num_prompts=2 * full, max_concurrency=full, input_len=input_len, output_len=output_len),
            spec=spec,
            plan=plan,
        )
    except InvalidParameterError:
        return None
    return Outlook(input_len, output_len, full, single, loaded)


def _drafting(
    scenario: Scenario,
    target: StepShape,
    *,
    method: str,
    num_speculative_tokens: int,
    acceptance_rates: tuple[float, ...] = (),
    draft_model: str | None = None,
    draft_weight_bytes: float | None = None,
) -> tuple[SpecDecodeConfig, list[str]]:
    """The drafter of ``method`` beside ``target`` (planned bare), and what to say of it."""
    notes: list[str] = []
    draft = None
    if method == "draft_model":
        if not draft_model:
            raise InvalidParameterError("speculative_model", draft_model, "the draft model's id for draft_model")
        _, draft = planned_shape(replace(_bare(scenario), model=draft_model))
        notes.append(f"draft {draft_model} timed by the step model as planned on {target.gpu_id}")
    elif method != "ngram":
        draft = layer_head_shape(target, weight_bytes=draft_weight_bytes)
    return SpecDecodeConfig(method, num_speculative_tokens, acceptance_rates, draft), notes


def _speculative_shape(
    scenario: Scenario,
    shape: StepShape,
    spec: ModelSpec | None,
    rates: tuple[float, ...] = (),
    head_bytes: float | None = None,
) -> tuple[StepShape, SpecDecodeConfig | None, list[str]]:
    """The target's step shape and drafter of a scenario that carries ``speculative_config``: the target timed as
    planned without the draft (the drafter's forwards are timed apart), holding the KV blocks of the plan with it
    (the draft's layers share every block); ``rates`` per position, else the method's published acceptance rate;
    an EAGLE/MTP head of ``head_bytes`` when given. ``ngram`` has no default rate: without ``rates`` it is left out,
    and a note says so."""
    config = scenario.speculative_config
    if config is None:
        return shape, None, []
    if not rates and config.method not in DEFAULT_ACCEPTANCE:
        return (
            shape,
            None,
            [
                f"speculative decoding ({config.method}) not simulated: it needs acceptance rates per position "
                "(python -m planner predict --spec-acceptance-rates)"
            ],
        )
    _, bare = planned_shape(_bare(scenario), spec=spec)
    target = replace(bare, num_gpu_blocks=shape.num_gpu_blocks)
    drafter, notes = _drafting(
        scenario,
        target,
        method=config.method,
        num_speculative_tokens=config.num_speculative_tokens,
        acceptance_rates=rates,
        draft_model=config.model,
        draft_weight_bytes=head_bytes,
    )
    if rates:
        given = ", ".join(f"{a:.0%}" for a in drafter.rates)
        notes.append(f"speculative decoding ({config.describe()}) simulated at acceptance rates {given} by position")
        return target, drafter, notes
    rate = DEFAULT_ACCEPTANCE[config.method]
    notes.append(
        f"speculative decoding ({config.describe()}) simulated at "
        f"the method's published acceptance rate {rate:.0%} per position (measure yours: Load Test's spec-decode "
        "table; predict with it: python -m planner predict --spec-acceptance-from RESULT.json)"
    )
    return target, drafter, notes


def _bare(scenario: Scenario) -> Scenario:
    """``scenario`` without a speculative configuration, where the scenario carries one (its draft's weights would
    otherwise be read in the target's step as well as in the drafter's forwards)."""
    if scenario.speculative_config is None:
        return scenario
    return replace(scenario, speculative_config=None)


@dataclass(frozen=True)
class SpeculativePrediction:
    """Decode with and without speculative decoding on a planned deployment (:func:`predict_speculative`).

    Attributes:
        config: the speculative decoding modelled (its rates, drafter shape and host overhead).
        estimate: TPOT and output throughput with and without it at the workload's batch size.
        break_even_batch: the smallest batch at which it no longer shortens TPOT; None when it still pays at
            ``max_num_seqs``.
        run: the workload simulated with speculative decoding (continuous batching, prefill steps included), to
            set beside :func:`predict`'s run without it.
        notes: what the caller must know (the drafter's planning, the batch and context assumed).
    """

    config: SpecDecodeConfig
    estimate: SpecDecodeEstimate
    break_even_batch: int | None
    run: SimulatedRun
    notes: tuple[str, ...] = ()


def predict_speculative(
    scenario: Scenario,
    settings: LoadSettings,
    *,
    method: str,
    num_speculative_tokens: int,
    acceptance_rates: tuple[float, ...] = (),
    draft_model: str | None = None,
    draft_weight_bytes: float | None = None,
    profile: CalibrationProfile | None = None,
) -> SpeculativePrediction:
    """Predicted TPOT and output throughput with and without speculative decoding, and where it stops paying.

    The target is ``scenario`` planned (:func:`planned_shape`). The drafter: ``draft_model`` planned on the same GPU
    and flags (method ``draft_model``); one decoder layer of the target with its LM head for ``eagle``, ``eagle3``
    and ``mtp`` (:func:`planner.predict.speculative.layer_head_shape`, ``draft_weight_bytes`` when known); none for
    ``ngram``. The batch is ``max_concurrency`` (else ``num_prompts``, at most ``max_num_seqs``) and the context
    ``input_len + output_len / 2`` (mean over a request's decode) for the steady-decode estimate; the whole workload
    is also simulated with it (:func:`planner.predict.simulator.simulate`). Formulas:
    :mod:`planner.predict.speculative`.

    Args:
        scenario: the target deployment (vLLM).
        settings: the workload (``max_concurrency``, ``num_prompts``, ``input_len``, ``output_len``).
        method / num_speculative_tokens / acceptance_rates: as ``speculative_config`` (rates conditional per
            position; empty = the method's published default).
        draft_model: catalog id of the draft model (method ``draft_model``).
        draft_weight_bytes: bytes of an EAGLE/MTP head, when known.
        profile: calibrated coefficients; None = the defaults.

    Raises:
        InvalidParameterError: a bad speculative setting, ``draft_model`` missing for that method, or a target or
            drafter that does not fit.
        PlannerError: from planning.
    """
    # the target and the draft planned bare: the drafter's cost is modelled here, not as part of the target's step
    scenario = _bare(scenario)
    _, target = planned_shape(scenario)
    config, notes = _drafting(
        scenario,
        target,
        method=method,
        num_speculative_tokens=num_speculative_tokens,
        acceptance_rates=tuple(acceptance_rates),
        draft_model=draft_model,
        draft_weight_bytes=draft_weight_bytes,
    )
    coefficients = profile.coefficients if profile else DEFAULT_COEFFICIENTS
    batch = min(settings.max_concurrency or settings.num_prompts, target.max_num_seqs)
    context = settings.input_len + settings.output_len / 2
    notes.append(f"steady decode at batch {batch}, {context:,.0f} tokens of context (no prefill in the steps)")
    estimate = speculative_estimate(target, config, batch_size=batch, context_tokens=context, coefficients=coefficients)
    even = break_even_batch(target, config, context_tokens=context, coefficients=coefficients)
    run = simulate(target, _workload(settings), coefficients, speculative=config)
    return SpeculativePrediction(config, estimate, even, run, tuple(notes))
