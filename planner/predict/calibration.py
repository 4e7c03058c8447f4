"""Fit the step-time coefficients to measured runs, score them, and keep them as a calibration profile (JSON).

**The fit.** A client-side run gives no step times, but its mean TPOT and mean TTFT are linear in the
coefficients once the step compositions are known: a request's TPOT is the sum of the steps between its first and
last token over ``output_tokens − 1``, each step's time is ``features · coefficients``
(:mod:`planner.predict.step_time`), and its TTFT adds the request overhead to the steps from its arrival to its
first token. So each run contributes two linear equations (mean TPOT, mean TTFT) whose left sides come from a
simulation of that run (:attr:`~planner.predict.simulator.SimulatedRun.tpot_features`), and a third when the run
reports its median ITL: the time of the step whose duration is the simulated median gap (it separates the
decode steps from the prefill stalls that the means mix). The fit alternates:
simulate every run with the current coefficients, solve the least-squares problem of relative errors (Huber
weights, so one run the model cannot explain does not move the rest; Huber 1964), repeat (3 rounds; compositions
barely move after the first). A ridge term pulls each coefficient towards its default by
``prior_weight`` (relative), so terms a run set cannot see (e.g. the all-reduce at TP 1) keep their defaults;
negative solutions are fixed at 0 and the rest re-solved (active set). Only measured means and the median ITL
are fitted; other medians, p99 and throughput are predictions of the fitted model and scored as such.

**Scoring.** :func:`score` simulates each run and reports the relative error of median and mean TPOT, median TTFT,
median ITL and output throughput against the measurement. ``bench/prediction_accuracy.py`` fits on some runs and scores
on the others.

**Profile.** :class:`CalibrationProfile` is what ``python -m planner calibrate`` writes and ``--calibration``
reads: the GPU, the engine and version, the models, the coefficients, the fit error and the runs used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.loadtest.results import SavedRun, import_runs
from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics
from planner.parsing import json_value
from planner.predict.shape import StepShape
from planner.predict.simulator import simulate
from planner.predict.step_time import DEFAULT_COEFFICIENTS, TERMS, StepCoefficients

__all__ = [
    "MAX_FIT_PREFIX_CACHE_HIT_RATE",
    "PROFILE_VERSION",
    "ROUTING_EXPONENTS",
    "CalibrationProfile",
    "CalibrationRun",
    "Fit",
    "RunScore",
    "calibration_run",
    "fit",
    "load_profile",
    "prefix_cache_refusal",
    "relative_errors",
    "score",
    "scored_values",
]

#: Format version of a profile file.
PROFILE_VERSION = 1
#: Largest profile file read, bytes.
MAX_PROFILE_BYTES = 1_000_000
#: Reweighting passes of the Huber fit per simulate-and-solve round.
_HUBER_ROUNDS = 4
#: Least scale of each coefficient's prior (``TERMS`` then the request overhead), in its own unit: a default near 0
#: would otherwise pin its coefficient (the prior is relative), e.g. a request overhead of 1 ms against runs that
#: measure 25 ms through a proxy.
_PRIOR_FLOOR = np.array([0.0] * len(TERMS) + [5e-3])
#: Metrics :func:`score` compares, with the measured value's key in ``BenchmarkMetrics``.
SCORED: tuple[str, ...] = (
    "median_tpot",
    "mean_tpot",
    "median_ttft",
    "median_itl",
    "output_throughput",
    "p99_ttft",
    "p99_tpot",
)


@dataclass(frozen=True)
class CalibrationRun:
    """One measured run to fit or score: its deployment, its workload and what was measured.

    Attributes:
        label: a name for tables.
        shape: the deployment (:func:`planner.predict.shape.step_shape` of the run's plan).
        settings: the workload the run used (lengths are the measured means).
        measured: ``{metric: value}`` in seconds and tokens/s: ``mean_tpot``, ``mean_ttft``, ``median_tpot``,
            ``median_ttft``, ``median_itl``, ``output_throughput`` (a key is missing when the run lacks it).
    """

    label: str
    shape: StepShape
    settings: LoadSettings
    measured: dict[str, float] = field(default_factory=dict)


#: Highest prefix-cache hit rate of a run the fit takes (0–1). The fit simulates every prompt token prefilled, so a
#: run whose prompts came mostly from the cache fits the prefill terms (TTFT, and the prefill chunks between decode
#: steps) too low: 98.5% hits made a profile predict TTFT 76% short. 10% lets through the chat template's shared first
#: block (16 of ~150+ prompt tokens) and costs at most that share of the prefill term, below the model's own TTFT error.
MAX_FIT_PREFIX_CACHE_HIT_RATE = 0.10


def prefix_cache_refusal(saved: SavedRun) -> str | None:
    """Why the fit refuses ``saved`` for its prefix-cache hits, in one clause; None when it takes it (no measured hit
    rate, or at most :data:`MAX_FIT_PREFIX_CACHE_HIT_RATE`). Call it on each run before :func:`calibration_run` where
    runs are fitted (predicting a run's workload needs no such check)."""
    rate = saved.prefix_cache_hit_rate
    if rate is None or rate <= MAX_FIT_PREFIX_CACHE_HIT_RATE:
        return None
    source = saved.prefix_cache.source if saved.prefix_cache is not None else "the server's counters"
    return (
        f"{rate:.1%} of its prompt tokens came from the prefix cache ({source}), and the fit prefills every prompt "
        f"token, so TTFT would fit too low; it takes runs with at most {MAX_FIT_PREFIX_CACHE_HIT_RATE:.0%} (measure "
        "with prefix caching off, vllm serve --no-enable-prefix-caching (the demo server: demo-server "
        "--no-enable-prefix-caching), or with prompts that do not repeat, e.g. another --seed)"
    )


def calibration_run(saved: SavedRun, shape: StepShape, *, label: str | None = None) -> CalibrationRun:
    """A :class:`CalibrationRun` of a measured or imported run (a ``vllm bench serve --save-result`` file).

    The workload: ``num_prompts`` (else the completed count), ``max_concurrency``, ``request_rate`` and
    ``burstiness`` as recorded; input and output lengths are the run's means per completed request.

    Raises:
        InvalidParameterError: the run completed no request, or lacks TPOT and TTFT.
    """
    m = saved.metrics
    if m.completed == 0 or m.tpot is None or m.ttft is None:
        raise InvalidParameterError("run", saved.label, "a run with completed requests and TPOT/TTFT figures")
    rate = saved.request_rate if saved.request_rate and saved.request_rate > 0 else math.inf
    settings = LoadSettings(
        num_prompts=saved.num_prompts or m.completed,
        max_concurrency=saved.max_concurrency,
        request_rate=rate,
        burstiness=saved.burstiness or 1.0,
        input_len=max(1, round(m.total_input_tokens / m.completed)),
        output_len=max(1, round(m.total_output_tokens / m.completed)),
        duration_s=None,
    )
    measured = {"mean_tpot": m.tpot.mean_s, "mean_ttft": m.ttft.mean_s, **scored_values(m)}
    return CalibrationRun(label or saved.label, shape, settings, {k: v for k, v in measured.items() if v is not None})


@dataclass(frozen=True)
class RunScore:
    """Predicted against measured for one run.

    Attributes:
        label: the run.
        predicted / measured: ``{metric: value}`` over :data:`SCORED` (seconds, tokens/s); None where unknown.
        errors: ``{metric: predicted / measured − 1}``; None where either is unknown.
    """

    label: str
    predicted: dict[str, float | None]
    measured: dict[str, float | None]
    errors: dict[str, float | None]


def scored_values(metrics: BenchmarkMetrics) -> dict[str, float | None]:
    """The :data:`SCORED` figures of a run's metrics, measured or predicted: median and mean TPOT, median TTFT and
    ITL, p99 TTFT and TPOT in seconds, output throughput in tokens/s; None where the run has no sample."""
    return {
        "median_tpot": metrics.tpot.median_s if metrics.tpot else None,
        "mean_tpot": metrics.tpot.mean_s if metrics.tpot else None,
        "median_ttft": metrics.ttft.median_s if metrics.ttft else None,
        "median_itl": metrics.itl.median_s if metrics.itl else None,
        "output_throughput": metrics.output_throughput,
        "p99_ttft": metrics.ttft.p99_s if metrics.ttft else None,
        "p99_tpot": metrics.tpot.p99_s if metrics.tpot else None,
    }


def relative_errors(
    predicted: Mapping[str, float | None], measured: Mapping[str, float | None]
) -> dict[str, float | None]:
    """``predicted / measured − 1`` for each :data:`SCORED` metric; None where either is unknown or measured is 0."""
    out: dict[str, float | None] = {}
    for k in SCORED:
        p, m = predicted.get(k), measured.get(k)
        out[k] = p / m - 1.0 if p is not None and m else None
    return out


def score(
    runs: Sequence[CalibrationRun], coefficients: StepCoefficients = DEFAULT_COEFFICIENTS
) -> tuple[RunScore, ...]:
    """Simulate each run with ``coefficients`` and compare with what was measured (:data:`SCORED`)."""
    out = []
    for run in runs:
        predicted = scored_values(simulate(run.shape, run.settings, coefficients).metrics)
        measured = {k: run.measured.get(k) for k in SCORED}
        out.append(RunScore(run.label, predicted, measured, relative_errors(predicted, measured)))
    return tuple(out)


@dataclass(frozen=True)
class Fit:
    """The result of :func:`fit`.

    Attributes:
        coefficients: the fitted coefficients.
        scores: predicted against measured for every run fitted on (the fit error).
        rounds: simulate-and-solve rounds made.
    """

    coefficients: StepCoefficients
    scores: tuple[RunScore, ...]
    rounds: int

    def median_abs_error(self, metric: str) -> float | None:
        """Median |error| of ``metric`` over the fitted runs; None without a value."""
        values = [abs(s.errors[metric]) for s in self.scores if s.errors.get(metric) is not None]
        return float(np.median(values)) if values else None


def fit(
    runs: Sequence[CalibrationRun],
    *,
    base: StepCoefficients = DEFAULT_COEFFICIENTS,
    rounds: int = 3,
    prior_weight: float = 0.05,
    huber: float = 0.10,
    steps: Sequence[tuple[np.ndarray, float]] = (),
    fit_request_overhead: bool = True,
    fit_routing: bool = True,
) -> Fit:
    """Least-squares fit of the step coefficients and the request overhead to ``runs`` (module docstring).

    Args:
        runs: measured runs, each with ``mean_tpot`` (``mean_ttft`` is used where present: leave it out of a run
            whose TTFT holds something the model does not, such as a kernel compiled on first use); any mix of
            models on one GPU kind.
        base: the starting point and the prior.
        rounds: simulate-and-solve rounds.
        prior_weight: weight of each coefficient's relative distance from ``base`` against the runs' relative
            errors.
        huber: relative error beyond which a measurement's weight falls off (Huber loss, by iteratively
            reweighted least squares): a run dominated by something the model leaves out (a client or API server
            out of CPU at 256 streams) does not drag the coefficients every other run depends on.
        steps: measured engine steps fitted beside the runs: ``(features, seconds)`` with ``features`` a row of
            :func:`~planner.predict.step_time.step_features` (``len(TERMS)``), e.g. a profiler's bare decode steps.
        fit_request_overhead: fit ``request_overhead_s`` (a proxy or a slower host adds to it); False keeps
            ``base``'s, e.g. when it was measured on the server itself.
        fit_routing: when a run's model has routed experts, also choose ``moe_routing_exponent`` from
            :data:`ROUTING_EXPONENTS` (the fit is repeated for each; the one with the least median TPOT error wins).

    Returns:
        The fit and its error on the runs.

    Raises:
        InvalidParameterError: no run, or a run without a mean TPOT.
    """
    if not runs:
        raise InvalidParameterError("runs", 0, "at least one measured run")
    for run in runs:
        if "mean_tpot" not in run.measured:
            raise InvalidParameterError("run", run.label, "a run with a mean TPOT")
    kw = {"rounds": rounds, "prior_weight": prior_weight, "huber": huber, "steps": steps}
    if not (fit_routing and any(r.shape.num_experts for r in runs)):
        return _fit(runs, base, fit_request_overhead, **kw)
    fits = [
        _fit(runs, replace(base, moe_routing_exponent=alpha), fit_request_overhead, **kw) for alpha in ROUTING_EXPONENTS
    ]
    return min(fits, key=lambda f: f.median_abs_error("median_tpot") or 0.0)


#: The routing exponents a calibration of a MoE model tries (:attr:`StepCoefficients.moe_routing_exponent`).
ROUTING_EXPONENTS: tuple[float, ...] = (1.0, 0.8, 0.6, 0.45, 0.35, 0.25, 0.15)


def _fit(
    runs: Sequence[CalibrationRun],
    base: StepCoefficients,
    fit_request_overhead: bool,
    *,
    rounds: int,
    prior_weight: float,
    huber: float,
    steps: Sequence[tuple[np.ndarray, float]],
) -> Fit:
    """:func:`fit` at ``base``'s routing exponent."""
    prior = np.append(base.vector(), base.request_overhead_s)
    scale = np.maximum(np.where(prior > 0, prior, 1e-6), _PRIOR_FLOOR)
    if not fit_request_overhead:
        scale[-1] = 1e-9 * max(prior[-1], 1e-6)  # a prior this tight pins it
    current = base
    for _ in range(rounds):
        rows, targets = [], []
        for run in runs:
            sim = simulate(run.shape, run.settings, current)
            tpot = np.append(sim.tpot_features[sim.output_tokens > 1].mean(axis=0), 0.0)
            ttft = np.append(sim.ttft_features.mean(axis=0), 1.0)
            pairs = [(tpot, run.measured["mean_tpot"])]
            # the TTFT the steps and the fitted overhead must explain: what is left of the measured mean once the
            # frontend's queueing and the token's way out (simulated, not fitted) are taken off
            ttft_target = (run.measured.get("mean_ttft") or 0.0) - float(sim.ttft_fixed_s.mean())
            if run.measured.get("mean_ttft") and ttft_target > 0:
                pairs.append((ttft, ttft_target))
            if run.measured.get("median_itl"):
                pairs.append((np.append(sim.median_itl_features, 0.0), run.measured["median_itl"]))
            for row, target in pairs:
                rows.append(row / target)
                targets.append(1.0)
        for row, seconds in steps:
            rows.append(np.append(row, 0.0) / seconds)
            targets.append(1.0)
        a = np.array(rows)
        b = np.array(targets)
        x = prior.copy()
        weights = np.ones(len(b))
        for _ in range(_HUBER_ROUNDS):
            x = _solve(a * weights[:, None], b * weights, prior, scale, prior_weight)
            residual = np.abs(a @ x - b)
            weights = np.sqrt(np.where(residual <= huber, 1.0, huber / np.maximum(residual, 1e-12)))
        current = StepCoefficients.from_vector(x[: len(TERMS)], base=base, request_overhead_s=float(x[-1]))
    return Fit(current, score(runs, current), rounds)


def _solve(a: np.ndarray, b: np.ndarray, prior: np.ndarray, scale: np.ndarray, prior_weight: float) -> np.ndarray:
    """Least squares ``a·x ≈ b`` with a ridge towards ``prior`` (relative to ``scale``), ``x ≥ 0`` (active set)."""
    reg = np.diag(prior_weight / scale)
    a_all = np.vstack([a, reg])
    b_all = np.concatenate([b, prior_weight * prior / scale])
    free = np.ones(a.shape[1], dtype=bool)
    x = np.zeros(a.shape[1])
    for _ in range(a.shape[1]):
        sol, *_ = np.linalg.lstsq(a_all[:, free], b_all, rcond=None)
        if (sol >= 0).all():
            x[free] = sol
            break
        idx = np.flatnonzero(free)
        free[idx[sol < 0]] = False
    return x


class _ProfileFile(BaseModel):
    """Schema of a profile file (the JSON boundary)."""

    model_config = ConfigDict(extra="forbid")

    planner_profile_version: int = Field(PROFILE_VERSION, ge=1, le=PROFILE_VERSION)
    gpu: str
    engine: str = "vllm"
    engine_version: str | None = None
    models: list[str] = Field(default_factory=list)
    coefficients: dict[str, float]
    fit_error: dict[str, float | None] = Field(default_factory=dict)
    runs: list[dict[str, Any]] = Field(default_factory=list)
    created: str | None = None


@dataclass(frozen=True)
class CalibrationProfile:
    """A fitted set of coefficients and where it came from.

    Attributes:
        gpu: catalog id of the GPU the runs were measured on.
        engine / engine_version: the serving engine the runs measured (``vllm``, e.g. ``0.24.0``).
        models: the models of the runs.
        coefficients: the fitted coefficients.
        fit_error: median |relative error| per :data:`SCORED` metric on the fitted runs.
        runs: one entry per run used: label, workload, measured values.
        created: when it was fitted, ISO 8601 UTC.
    """

    gpu: str
    engine: str
    engine_version: str | None
    models: tuple[str, ...]
    coefficients: StepCoefficients
    fit_error: dict[str, float | None]
    runs: tuple[dict[str, Any], ...] = ()
    created: str | None = None

    @classmethod
    def from_fit(
        cls, result: Fit, runs: Sequence[CalibrationRun], *, engine_version: str | None = None
    ) -> CalibrationProfile:
        """The profile of a :func:`fit` over ``runs``."""
        return cls(
            gpu=runs[0].shape.gpu_id,
            engine="vllm",
            engine_version=engine_version,
            models=tuple(dict.fromkeys(r.shape.model_id for r in runs)),
            coefficients=result.coefficients,
            fit_error={k: result.median_abs_error(k) for k in SCORED},
            runs=tuple(
                {
                    "label": r.label,
                    "model": r.shape.model_id,
                    "max_concurrency": r.settings.max_concurrency,
                    "request_rate": None if math.isinf(r.settings.request_rate) else r.settings.request_rate,
                    "num_prompts": r.settings.num_prompts,
                    "input_len": r.settings.input_len,
                    "output_len": r.settings.output_len,
                    "measured": r.measured,
                }
                for r in runs
            ),
            created=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def to_json(self) -> str:
        """The profile file's text."""
        data = _ProfileFile(
            gpu=self.gpu,
            engine=self.engine,
            engine_version=self.engine_version,
            models=list(self.models),
            coefficients=asdict(self.coefficients),
            fit_error=self.fit_error,
            runs=list(self.runs),
            created=self.created,
        )
        return data.model_dump_json(indent=1)


def _refuse_results_file(text: str | bytes, name: str) -> None:
    """Raise the one line that says ``text`` is a results file, the runs a profile is fitted on, when it reads as one
    (:func:`~planner.loadtest.results.import_runs`); return when it does not."""
    try:
        runs = import_runs(text, name)
    except PlannerError:
        return
    raise MalformedTextError(
        name,
        f"a results file ({len(runs)} run(s) of vllm bench serve --save-result or python -m planner bench), not a "
        "calibration profile",
        f"a profile: fit one on these runs with python -m planner calibrate {name} --out profile.json and the "
        "deployment's flags (--model, --gpu, ...)",
    )


def load_profile(text: str | bytes, *, name: str = "profile") -> CalibrationProfile:
    """Read a profile file written by :meth:`CalibrationProfile.to_json`.

    Raises:
        InvalidParameterError: not JSON, too large, a results file instead of a profile (the message says how to fit
            one on it), or a field outside what is accepted (named in the message).
    """
    if len(text) > MAX_PROFILE_BYTES:
        raise InvalidParameterError(name, f"{len(text):,} bytes", f"a profile of at most {MAX_PROFILE_BYTES:,} bytes")
    try:
        data = _ProfileFile.model_validate(json_value(text, name=name, accepted="a JSON calibration profile"))
    except (ValidationError, MalformedTextError) as exc:
        _refuse_results_file(text, name)
        if isinstance(exc, MalformedTextError):
            raise
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise InvalidParameterError(f"{name}: {where}", err.get("input"), err["msg"]) from exc
    known = {f for f in StepCoefficients.__dataclass_fields__}
    unknown = sorted(set(data.coefficients) - known)
    if unknown:
        raise InvalidParameterError(f"{name}: coefficients", unknown[0], ", ".join(sorted(known)))
    try:
        coefficients = StepCoefficients(**data.coefficients)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{name}: coefficients.{exc.name}", exc.value, exc.accepted) from exc
    return CalibrationProfile(
        gpu=data.gpu,
        engine=data.engine,
        engine_version=data.engine_version,
        models=tuple(data.models),
        coefficients=coefficients,
        fit_error=data.fit_error,
        runs=tuple(data.runs),
        created=data.created,
    )
