"""The sizing search: the cheapest GPU × parallelism × quantization × KV dtype × replicas that serves a target request
rate within percentile SLOs.

:func:`size` answers a :class:`~planner.sizing.settings.SizingSettings` in five stages:

1. **Configurations.** Every GPU asked for (default: the whole catalog), every weight quantization offered for the
   model (the checkpoint as published, vLLM's ``--quantization fp8``, the catalog's AWQ/GPTQ/int8/MXFP4 export),
   every KV-cache dtype asked for, tensor parallel sizes 1, 2, 4, … within a node and pipeline parallel sizes 1, 2,
   4, … within ``max_gpus``. A pipeline-parallel configuration is planned only when no tensor-parallel one of the
   same GPU count fits (the step model gives pipeline parallelism no speed, :mod:`planner.predict.shape`).
2. **Memory first.** Each is planned (:func:`planner.capacity.plan.plan`, the engine's own start-up accounting):
   one that does not fit, or that vLLM refuses, keeps the planner's reason.
3. **Bounds.** For each that fits, :func:`planner.sizing.bounds.bounds` gives the latency of a request alone
   (a configuration whose floor misses an SLO misses it at any load: no replica count helps) and the fluid upper
   bound of the rate one replica sustains, hence the fewest replicas it could need and the least it could cost.
   A GPU without a price (neither the catalog's nor the user's) cannot be ranked by cost and stops here.
4. **Simulation, cheapest first** (:func:`planner.sizing.replicas.cheapest_replicas`, a uniform-cost search over
   (configuration, replicas)): a heap holds each configuration at the fewest replicas not yet ruled out (by the
   throughput bound, or by a TPOT bound checked once by simulation), keyed by cost (replicas × GPUs × price); the
   cheapest entry is simulated at its per-replica share of ``target_rate · (1 + headroom)``
   (:func:`planner.sizing.probe.probe`, the continuous-batching simulator at the target workload, SLOs checked on
   percentiles over the steady state at the end of the predictor's error band the settings ask for,
   :func:`replica_verdict`). A pass is the configuration's answer once the replica count below it is
   known to fail (bisection between the two); a fail pushes the configuration back at more replicas, scaled by how
   far the binding SLO was missed. Because entries leave the heap in cost order, the first configurations resolved
   are the cheapest; the search stops when :data:`KEEP` options are resolved and the heap's cheapest remaining
   entry costs more than all of them (or after ``max_probes`` simulations), so configurations that cannot win are
   never simulated: they are listed with the bound that rules them out.
5. **At the chosen size.** Each resolved option is simulated once more at its actual share, ``target_rate /
   replicas``: the p50/p99 it is predicted to show in service.

**Which end of the error band.** With ``slo_estimate="pessimistic"`` (the default) every SLO is checked against the
worse end of the predictor's error band and a replica must keep up with its share at the band's low end of
throughput (:mod:`planner.sizing.estimate`); the floors and rate bounds of stage 3 take the same ratios
(:mod:`planner.sizing.bounds`), so they rule out what the checks would. ``"point"`` checks the predictions
themselves.

Per-replica capacity is reported as the bracket the search established: the highest rate simulated to meet the
SLOs (``target_rate · (1 + headroom) / replicas``) and the lowest one simulated to miss them (or the fluid bound
when none was). Replicas = ⌈target_rate · (1 + headroom) / capacity⌉ holds for every capacity in that bracket.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from planner.capacity.plan import plan as plan_scenario
from planner.capacity.result import Plan
from planner.catalog.gpus import GPU, get_gpu, list_gpus
from planner.catalog.hub import resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.catalog.models import quantized_exports
from planner.errors import InvalidParameterError, PlannerError
from planner.metrics.slo import SloCheck, binding
from planner.predict.api import DEFAULT_SOURCE
from planner.predict.calibration import CalibrationProfile
from planner.predict.shape import StepShape, step_shape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients
from planner.sizing.bounds import Bounds, bounds
from planner.sizing.disaggregated import disaggregated_options
from planner.sizing.estimate import SloEnds, ends_for
from planner.sizing.options import VERDICTS, Configuration, SizingOption, SizingResult
from planner.sizing.prices import GpuPrice, price_of, usd_per_million_output_tokens
from planner.sizing.probe import Probe, probe, probe_load, spans
from planner.sizing.replicas import cheapest_replicas
from planner.sizing.settings import SizingSettings

__all__ = [
    "KEEP",
    "MAX_PROBES",
    "MAX_REPLICAS",
    "ReplicaVerdict",
    "replica_probe",
    "replica_verdict",
    "size",
    "slo_ends",
    "spans",
]

#: Options the search resolves before it stops (the cheapest that meet the SLOs, fully simulated).
KEEP = 3
#: Most simulations of one search (each 30–300 ms on one core): a bound on its time.
MAX_PROBES = 40
#: Most replicas the search considers for one configuration.
MAX_REPLICAS = 4096
_EPS = 1e-9


# --- stage 1: configurations -------------------------------------------------------------------------------------
def _checkpoints(settings: SizingSettings, spec: ModelSpec) -> tuple[list[tuple[str, str, ModelSpec]], list[str]]:
    """``(quantization, checkpoint id, its spec)`` per quantization asked for, and notes on those left out."""
    out: list[tuple[str, str, ModelSpec]] = []
    notes: list[str] = []
    method = spec.quant.method
    for quant in settings.quantizations:
        if quant == "none":
            out.append(("none", settings.model, spec))
        elif quant == "fp8":
            if method != "none":
                notes.append(f"fp8 not applied: the checkpoint {settings.model} is already quantized ({method})")
            else:
                out.append(("fp8", settings.model, spec))
        else:
            export = next((m for m in quantized_exports(settings.model) if m.spec.quant.method == quant), None)
            if method == quant:
                continue  # the checkpoint itself ("none" covers it)
            if export is None:
                notes.append(f"{quant}: the catalog has no {quant.upper()} export of {settings.model}")
            else:
                out.append((quant, export.id, export.spec))
    unique = {(q, m): (q, m, s) for q, m, s in out}
    return list(unique.values()), notes


def _powers(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length()) if 1 << k <= limit]


@dataclass
class _Candidate:
    """A configuration that fits, can be predicted and has a price: the search's working state."""

    index: int
    config: Configuration
    plan: Plan
    shape: StepShape
    bounds: Bounds
    ends: SloEnds
    usd_per_gpu_hour: float
    failed: int  # most replicas known to miss (0: none known)
    passed: int | None = None  # fewest replicas known to meet
    probes: list[tuple[Probe, bool]] = field(default_factory=list)
    resolved: bool = False
    given_up: str | None = None

    def cost(self, replicas: int) -> float:
        return replicas * self.config.num_gpus * self.usd_per_gpu_hour


def replica_probe(
    shape: StepShape, b: Bounds, coefficients: StepCoefficients, settings: SizingSettings, rate: float
) -> Probe:
    """One replica simulated at ``rate`` req/s of ``settings``' workload, warmed up and measured over the spans of
    :func:`spans` (:func:`planner.sizing.probe.probe`, cached)."""
    warm, measure = spans(b, rate, settings.output_len)
    return probe(
        shape,
        coefficients,
        rate=rate,
        input_len=settings.input_len,
        output_len=settings.output_len,
        burstiness=settings.burstiness,
        warmup_s=warm,
        measure_s=measure,
    )


def slo_ends(shape: StepShape, settings: SizingSettings) -> SloEnds:
    """The ends of the error band ``settings``' SLOs are checked at on ``shape``, for the load every probe sends
    (:func:`planner.sizing.estimate.ends_for`)."""
    load = probe_load(
        rate=settings.deployment_rate,
        input_len=settings.input_len,
        output_len=settings.output_len,
        burstiness=settings.burstiness,
    )
    return ends_for(shape, settings.slos, settings.slo_estimate, load)


@dataclass(frozen=True)
class ReplicaVerdict:
    """Whether one replica meets the SLOs at one rate (:func:`replica_verdict`).

    Attributes:
        probe: the replica simulated at that rate.
        checks: each SLO against its value at the chosen end of the band.
        met: every check passes and the replica keeps up (at the throughput's end of the band).
        excess: by what ratio it missed (the binding check's ratio; ``1 / low`` when it keeps up only at the
            throughput's point estimate; inf when its queue grows).
        simulations: simulations asked for (1, or 2 with the throughput's end).
    """

    probe: Probe
    checks: tuple[SloCheck, ...]
    met: bool
    excess: float
    simulations: int


def replica_verdict(
    shape: StepShape,
    b: Bounds,
    coefficients: StepCoefficients,
    settings: SizingSettings,
    ends: SloEnds,
    rate: float,
) -> ReplicaVerdict:
    """One replica of ``shape`` at ``rate`` req/s checked against ``settings``' SLOs at ``ends``: the SLOs on the
    percentiles of :func:`replica_probe` at ``rate``, and its queue kept bounded at ``rate / ends.throughput_low``
    (a second simulation, only when the first passes and the band's throughput end is below 1:
    :mod:`planner.sizing.estimate`).

    Args:
        shape / b: the configuration's step shape and bounds.
        coefficients: the step model's coefficients.
        settings: the workload and the SLOs.
        ends: the ends of the band the SLOs and the throughput are checked at (:func:`slo_ends`).
        rate: the replica's request rate, req/s.

    Returns:
        The verdict, with the simulation at ``rate``.

    Raises:
        InvalidParameterError: from the simulator (a request longer than ``max_model_len``).
    """
    result = replica_probe(shape, b, coefficients, settings, rate)
    checks = ends.checks(result.metrics)
    worst = binding(checks)
    met = result.keeps_up and (worst is None or worst.ok)
    excess = worst.ratio if worst is not None and result.keeps_up else math.inf
    simulations = 1
    if met and ends.throughput_low < 1.0:
        simulations += 1
        if not replica_probe(shape, b, coefficients, settings, rate / ends.throughput_low).keeps_up:
            met, excess = False, 1.0 / ends.throughput_low
    return ReplicaVerdict(result, checks, met, excess, simulations)


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def size(
    settings: SizingSettings,
    *,
    profile: CalibrationProfile | None = None,
    max_probes: int = MAX_PROBES,
    keep: int = KEEP,
    on_progress: Callable[[float, str], object] | None = None,
    spec: ModelSpec | None = None,
) -> SizingResult:
    """Search the configurations for the cheapest that serves ``settings.target_rate`` within the SLOs (module
    docstring).

    Args:
        settings: the question.
        profile: calibrated step-model coefficients; None = the defaults.
        max_probes: most simulations (a bound on the search's time).
        keep: options to resolve before stopping (the ranked table's fully simulated rows).
        on_progress: called as ``on_progress(fraction, text)`` while it searches (a progress bar).
        spec: the model, when the caller resolved it (else :func:`planner.catalog.hub.resolve_model`).

    Returns:
        The ranked options and the headline answer.

    Raises:
        PlannerError: an unknown model or GPU id, a price for a GPU that is not in the catalog, or a
            ``max_model_len`` shorter than a request.
        InvalidParameterError: ``max_probes`` or ``keep`` below 1.
    """
    if max_probes < 1 or keep < 1:
        raise InvalidParameterError("max_probes" if max_probes < 1 else "keep", min(max_probes, keep), "≥ 1")
    started = time.perf_counter()
    _check_lengths(settings)
    spec = spec or resolve_model(settings.model).spec
    gpus, notes = _gpus(settings)
    coefficients: StepCoefficients = profile.coefficients if profile else DEFAULT_COEFFICIENTS
    search = _Search(settings, coefficients, on_progress or (lambda *_: None), notes)
    checkpoints, left_out = _checkpoints(settings, spec)
    search.notes += left_out
    search.plan_all(gpus, checkpoints, spec)  # stages 1-3
    resolved = search.simulate(keep=keep, max_probes=max_probes)  # stage 4
    search.predict_at_size(resolved)  # stage 5
    search.explain_the_rest(resolved, max_probes)
    # prefill/decode layouts of the same configurations, ranked with the aggregated options by cost
    aggregated = settings.disaggregation != "on"
    layouts = []
    if settings.disaggregation != "off":
        best = resolved[0] if resolved and aggregated else None
        layouts = disaggregated_options(
            settings,
            [search.options[c.index] for c in search.candidates],
            coefficients,
            best_usd_per_hour=best.cost(best.passed or 1) if best is not None else None,
            on_progress=lambda f, text: search.progress(0.9 + 0.1 * f, text),
        )
    meeting = [search.options[c.index] for c in resolved] * aggregated + [o for o in layouts if o.meets_slo]
    ranked = _rank(sorted(meeting, key=lambda o: (o.usd_per_hour, o.num_gpus)))
    others = sorted(
        [o for o in (*search.options.values(), *layouts) if not o.meets_slo and (aggregated or o.prefill is not None)],
        key=lambda o: (
            VERDICTS.index(o.verdict),
            o.least_usd_per_hour if o.least_usd_per_hour is not None else math.inf,
            o.config.num_gpus,
        ),
    )
    closest = None if ranked or not aggregated else _closest(search.options.values(), settings)
    answer = _answer(ranked, closest, settings, len(search.options))
    search.progress(1.0, "Done")
    return SizingResult(
        settings=settings,
        options=(*ranked, *others),
        answer=answer,
        closest=closest,
        calibration=DEFAULT_SOURCE if profile is None else f"calibrated on {len(profile.runs)} run(s) ({profile.gpu})",
        coefficients=coefficients,
        notes=tuple(dict.fromkeys(search.notes)),
        probes_run=search.probes_run,
        elapsed_s=time.perf_counter() - started,
    )


def _check_lengths(settings: SizingSettings) -> None:
    """Refuse a served ``max_model_len`` shorter than one request (``input_len + output_len``)."""
    if settings.input_len + settings.output_len > settings.served_max_model_len:
        raise InvalidParameterError(
            "max_model_len",
            settings.served_max_model_len,
            f"at least input_len + output_len ({settings.input_len + settings.output_len:,} tokens)",
        )


def _gpus(settings: SizingSettings) -> tuple[list[GPU], list[str]]:
    """The GPUs to search (default: the whole catalog), once each, and a note per price given for a GPU left out.

    Raises:
        UnknownGPUError: a GPU id, searched or priced, that is not in the catalog (naming the closest).
    """
    gpus: list[GPU] = [get_gpu(g) for g in settings.gpus] if settings.gpus else list(list_gpus())
    gpus = list({g.id: g for g in gpus}.values())
    searched = {g.id for g in gpus}
    notes: list[str] = []
    for gpu_id, _ in settings.prices:
        gpu = get_gpu(gpu_id)  # an unknown id raises, naming the closest
        if gpu.id not in searched:
            notes.append(f"a price is given for {gpu.id}, which is not among the GPUs searched")
    return gpus, notes


def _parallel_sizes(tp_limit: int, max_gpus: int) -> list[tuple[int, int]]:
    """``(tp, pp)`` in search order: tensor parallelism alone (1, 2, 4, … ``tp_limit``), then each pipeline size
    above 1 with every tensor size; at most ``max_gpus`` GPUs."""
    pairs = [(tp, 1) for tp in _powers(tp_limit)]
    pairs += [(tp, pp) for pp in _powers(max_gpus)[1:] for tp in _powers(tp_limit)]
    return [(tp, pp) for tp, pp in pairs if tp * pp <= max_gpus]


@dataclass
class _Search:
    """One search's working state: every configuration's row (by index, in the order planned), the candidates that
    go on to simulation, the notes and the simulations run."""

    settings: SizingSettings
    coefficients: StepCoefficients
    progress: Callable[[float, str], object]
    notes: list[str]
    options: dict[int, SizingOption] = field(default_factory=dict)
    candidates: list[_Candidate] = field(default_factory=list)
    probes_run: int = 0

    def add(self, config: Configuration, verdict: str, reason: str | None, price: GpuPrice, **extra: object) -> int:
        """Add a row; returns its index."""
        index = len(self.options)
        self.options[index] = SizingOption(config, verdict, reason, price, **extra)  # type: ignore[arg-type]
        return index

    # --- stages 1-3: configurations, memory, bounds ---------------------------------------------------------------
    def plan_all(self, gpus: Sequence[GPU], checkpoints: Sequence[tuple[str, str, ModelSpec]], spec: ModelSpec) -> None:
        """Plan every configuration of every GPU (a row each), keeping those that fit and can be predicted as
        candidates; a GPU without a price gets one row that asks for it."""
        settings = self.settings
        dominated = 0
        for gi, gpu in enumerate(gpus):
            self.progress(0.3 * gi / max(1, len(gpus)), f"Planning {gpu.name}")
            price = price_of(gpu, settings.price_override(gpu.id))
            if price.usd_per_hour is None:
                # Without a price nothing ranks it: one row says so, and its configurations are not planned.
                config = Configuration(
                    gpu.id, gpu.name, settings.model, "none", "auto", checkpoint_scheme=spec.quant.method
                )
                self.add(
                    config,
                    "no_price",
                    f"no public price in the catalog: give one (--price {gpu.id}=USD_PER_HOUR, or in the price table) "
                    "to plan, simulate and rank it",
                    price,
                )
                continue
            sizes = _parallel_sizes(min(settings.node_size(gpu.id), settings.max_gpus), settings.max_gpus)
            for quant, model_id, model_spec in checkpoints:
                for kv in settings.kv_cache_dtypes:
                    fitting: set[int] = set()
                    for tp, pp in sizes:
                        config = Configuration(gpu.id, gpu.name, model_id, quant, kv, tp, pp, model_spec.quant.method)
                        if pp > 1 and tp * pp in fitting:
                            dominated += 1  # TP alone fits on as many GPUs, and PP adds no speed in the step model
                            continue
                        if self._assess(config, model_spec, price):
                            fitting.add(tp * pp)
        if dominated:
            self.notes.append(
                f"{dominated} pipeline-parallel configuration(s) left out: tensor parallelism alone fits on as many "
                "GPUs, and pipeline parallelism adds no speed in the step model"
            )

    def _assess(self, config: Configuration, model_spec: ModelSpec, price: GpuPrice) -> bool:
        """Plan ``config`` (stage 2) and bound it (stage 3), adding its row (and a candidate when it can be
        simulated); True when it fits in memory."""
        settings = self.settings
        try:
            # no range over vLLM versions: nothing here reads it, and it is 9 more plans a configuration
            result = plan_scenario(config.scenario(settings), spec=model_spec, advise=False, with_range=False)
        except PlannerError as exc:
            self.add(config, "does_not_fit", str(exc), price)
            return False
        if not result.fits:
            what = "vLLM refuses it" if result.refused else "does not fit"
            self.add(config, "does_not_fit", f"{what}: {result.reason}", price, plan=result)
            return False
        try:
            shape = step_shape(result, model_spec)
        except PlannerError as exc:
            self.add(config, "not_predicted", f"cannot be predicted: {exc}", price, plan=result)
            return True
        ends = slo_ends(shape, settings)
        b = bounds(
            result, shape, self.coefficients, input_len=settings.input_len, output_len=settings.output_len, ends=ends
        )
        floor = binding([ends.check(slo, b.floor_s(slo)) for slo in settings.slos])
        if floor is not None and not floor.ok:
            slo = floor.slo
            self.add(
                config,
                "misses_slo",
                f"misses {slo.key} at any load: a request alone takes {ends.shown(floor)} (SLO "
                f"{slo.limit_ms:,.6g} ms); more replicas do not help",
                price,
                plan=result,
                bounds=b,
                ends=ends,
            )
            return True
        index = self.add(config, "not_searched", None, price, plan=result, shape=shape, bounds=b, ends=ends)
        assert price.usd_per_hour is not None  # plan_all plans only priced GPUs
        self.candidates.append(_Candidate(index, config, result, shape, b, ends, price.usd_per_hour, failed=0))
        return True

    # --- stage 4: simulation, cheapest first ------------------------------------------------------------------------
    def simulate(self, *, keep: int, max_probes: int) -> list[_Candidate]:
        """Simulate the candidates cheapest first (:func:`planner.sizing.replicas.cheapest_replicas`) until ``keep``
        are resolved or ``max_probes`` simulations are spent; returns the resolved ones."""
        rate_needed = self.settings.deployment_rate
        candidates = self.candidates

        def evaluate(i: int, replicas: int) -> tuple[bool, float]:
            c = candidates[i]
            verdict = replica_verdict(
                c.shape, c.bounds, self.coefficients, self.settings, c.ends, rate_needed / replicas
            )
            self.probes_run += verdict.simulations
            c.probes.append((verdict.probe, verdict.met))
            return verdict.met, verdict.excess

        def step(done: int, i: int, replicas: int) -> None:
            self.progress(0.3 + 0.6 * done / max_probes, f"Simulating {candidates[i].config.label} × {replicas}")

        searchable = [c for c in candidates if c.bounds.rate_bound > 0]
        for c in candidates:
            if c.bounds.rate_bound <= 0:
                c.given_up = f"its {c.bounds.binding} SLO leaves no request rate"
        states, _ = cheapest_replicas(
            [
                (
                    c.usd_per_gpu_hour * c.config.num_gpus,
                    max(1, math.ceil(rate_needed / c.bounds.rate_bound - _EPS)),
                    # the throughput bound holds for the simulator (all the work, at most B a step); an SLO's is an
                    # estimate (a percentile taken at its mean), so the count it rules out is simulated once
                    c.bounds.binding == "throughput",
                )
                for c in searchable
            ],
            lambda i, r: evaluate(candidates.index(searchable[i]), r),
            keep=keep,
            max_evaluations=max_probes,
            max_replicas=MAX_REPLICAS,
            on_step=lambda done, i, r: step(done, candidates.index(searchable[i]), r),
        )
        for c, state in zip(searchable, states, strict=True):
            c.failed, c.passed, c.resolved = state.failed, state.passed, state.resolved
            c.given_up = state.given_up
        return [c for c in searchable if c.resolved]

    # --- stage 5: at the chosen size --------------------------------------------------------------------------------
    def predict_at_size(self, resolved: list[_Candidate]) -> None:
        """Sort ``resolved`` cheapest first (in place) and simulate each once more at its actual share,
        ``target_rate / replicas``: its row becomes a ``meets`` option with its replicas, capacity and cost."""
        settings = self.settings
        rate_needed = settings.deployment_rate
        resolved.sort(key=lambda r: (r.cost(r.passed or 0), r.config.num_gpus * (r.passed or 0), r.index))
        for i, c in enumerate(resolved):
            self.progress(0.9 + 0.1 * i / max(1, len(resolved)), f"Predicting {c.config.label} at its size")
            replicas = c.passed or 1
            at_size = replica_probe(c.shape, c.bounds, self.coefficients, settings, settings.target_rate / replicas)
            self.probes_run += 1
            usd = c.cost(replicas)
            failed_rates = [p.rate for p, met in c.probes if not met]
            self.options[c.index] = replace(
                self.options[c.index],
                verdict="meets",
                replicas=replicas,
                replica_rate=rate_needed / replicas,
                replica_rate_limit=min(failed_rates) if failed_rates else c.bounds.rate_bound,
                at_size=at_size,
                probes=tuple(c.probes),
                usd_per_hour=usd,
                usd_per_million_output_tokens=usd_per_million_output_tokens(
                    usd, settings.target_rate, settings.output_len
                ),
            )

    def explain_the_rest(self, resolved: Sequence[_Candidate], max_probes: int) -> None:
        """Give every candidate not resolved its verdict and reason: it misses an SLO at any replica count, costs
        at least as much as the cheapest resolved option, or was not simulated within ``max_probes``."""
        best = resolved[0] if resolved else None
        best_cost = best.cost(best.passed or 1) if best else None
        for c in self.candidates:
            if c.resolved:
                continue
            least = c.failed + 1
            base = self.options[c.index]
            extra = {"probes": tuple(c.probes), "least_replicas": least, "least_usd_per_hour": c.cost(least)}
            if c.given_up:
                self.options[c.index] = replace(base, verdict="misses_slo", reason=c.given_up, **extra)
            elif best_cost is not None and c.cost(least) >= best_cost - _EPS:
                why = f"at least {least} replica(s) × {c.config.num_gpus} GPU(s) = {_money(c.cost(least))}/h"
                why += " (simulated)" if c.probes else " (by the step model's bound)"
                self.options[c.index] = replace(
                    base, verdict="costs_more", reason=f"{why}: no cheaper than the options above", **extra
                )
            else:
                self.options[c.index] = replace(
                    base,
                    verdict="not_searched",
                    reason=f"not simulated within {max_probes} simulations; it could cost as little as "
                    f"{_money(c.cost(least))}/h",
                    **extra,
                )
        if any(o.verdict == "not_searched" for o in self.options.values()):
            self.notes.append(
                f"the search stopped after {max_probes} simulations; some configurations were not simulated (raise "
                "max_probes to search them)"
            )


def _rank(options: list[SizingOption]) -> list[SizingOption]:
    """Rank 1, 2, … with each option's reason: what it costs more than the cheapest, and why."""
    if not options:
        return []
    first = options[0]
    out = [replace(first, rank=1, reason=None)]
    for i, o in enumerate(options[1:], start=2):
        assert o.usd_per_hour is not None and first.usd_per_hour is not None
        extra = o.usd_per_hour - first.usd_per_hour
        why = (
            f"{_money(extra)}/h more than #1: {o.replicas} × {o.config.num_gpus} GPU(s) at "
            f"{_money(o.price.usd_per_hour or 0)} against {first.replicas} × {first.config.num_gpus} at "
            f"{_money(first.price.usd_per_hour or 0)}"
        )
        if o.prefill is not None or first.prefill is not None:  # a prefill/decode layout: both pools
            why = f"{_money(extra)}/h more than #1: {o.fleet_text} against {first.fleet_text}"
        if extra <= _EPS and o.num_gpus == first.num_gpus:  # a tie: ranked in the search's order, said as such
            why = (
                f"ties with #1 at {_money(first.usd_per_hour)}/h on as many GPUs ({first.num_gpus}): {o.fleet_text} "
                f"against {first.fleet_text}; either serves the load"
            )
        elif extra <= _EPS:
            why = f"costs the same as #1 ({_money(first.usd_per_hour)}/h) on {o.num_gpus} GPUs against {first.num_gpus}"
        out.append(replace(o, rank=i, reason=why))
    return out


def _closest(options: Sequence[SizingOption], settings: SizingSettings) -> tuple[SizingOption, SloCheck] | None:
    """The option that misses the SLOs by the least: the smallest binding ratio, from its floor (a request alone)
    or from its best simulation."""
    best: tuple[float, SizingOption, SloCheck] | None = None
    for o in options:
        if o.bounds is None or o.ends is None:
            continue
        found = [binding([o.ends.check(s, o.bounds.floor_s(s)) for s in settings.slos])]
        found += [binding(o.ends.checks(p.metrics)) for p, _ in o.probes]
        for check in found:
            if check is not None and (best is None or check.ratio < best[0]):
                best = (check.ratio, o, check)
    return None if best is None else (best[1], best[2])


def _answer(
    ranked: Sequence[SizingOption],
    closest: tuple[SizingOption, SloCheck] | None,
    settings: SizingSettings,
    considered: int,
) -> str:
    """The headline: the cheapest option, or what comes closest and which SLO binds."""
    load = f"{settings.target_rate:g} req/s of {settings.input_len:,} + {settings.output_len:,} tokens"
    if ranked:
        o = ranked[0]
        assert o.replicas is not None and o.usd_per_hour is not None and o.usd_per_million_output_tokens is not None
        p99_ttft, p99_tpot = o.at_size_ms("ttft", "p99"), o.at_size_ms("tpot", "p99")
        figures = (
            f"; at {settings.target_rate / o.replicas:.3g} req/s each, p99 TTFT {p99_ttft:,.0f} ms and p99 TPOT "
            f"{p99_tpot:,.1f} ms"
            if p99_ttft is not None and p99_tpot is not None
            else ""
        )
        gpus = f"{o.num_gpus} GPU{'s' * (o.num_gpus != 1)}"
        who = f"{o.replicas} × {o.config.label} ({gpus})"
        capacity = f"each replica meets the SLOs up to at least {o.replica_rate or 0:.3g} req/s{figures}"
        if o.prefill is not None:  # a prefill/decode layout: the pools together
            who = f"{o.layout} ({o.label}; {gpus})"
            figures = figures.replace(f"at {settings.target_rate / o.replicas:.3g} req/s each", "at the target")
            capacity = f"the pools meet the SLOs at {settings.deployment_rate:.3g} req/s{figures}"
        return (
            f"{who} serves {load}: "
            f"{_money(o.usd_per_hour)}/h, {_money(o.usd_per_million_output_tokens)} per million output tokens; "
            f"{capacity}."
        )
    if closest is None and settings.disaggregation == "on":
        return f"No prefill/decode layout meets the SLOs for {load}: see each one's reason below."
    if closest is None:
        return (
            f"No configuration of the {considered} considered fits and can be predicted for {load}: see each one's "
            "reason below."
        )
    option, check = closest
    assert option.bounds is not None and option.ends is not None  # _closest keeps only such options
    floor = check == option.ends.check(check.slo, option.bounds.floor_s(check.slo))
    how = "even with a request alone (more replicas do not help)" if floor else "at its lightest simulated load"
    return (
        f"No configuration meets the SLOs for {load}. Closest: {option.config.label}, "
        f"{option.ends.describe(check)} {how}: "
        f"{check.slo.key} binds ({check.ratio:.2f}× its limit). A faster GPU, more tensor parallelism, FP8, or a "
        f"looser {check.slo.key} would help."
    )
