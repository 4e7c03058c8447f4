"""Prefill/decode layouts (xPyD) in a sizing search: a prefill pool and a decode pool, possibly of different GPUs,
joined by a KV transfer, sized by matching the pools' rates and checked by simulating them together
(:func:`planner.fleet.disaggregation.simulate_disaggregated`), ranked with the aggregated replicas by cost.

:func:`disaggregated_options` takes the configurations the aggregated search planned (they fit, are priced and can be
predicted: :func:`planner.sizing.search.size`'s stages 1–3) and:

1. **Rates per role**, from the step model alone (:mod:`planner.sizing.bounds`, at the band's throughput end
   ``low``): a **prefill instance** computes prompts back to back, ``μ_p = low · max(1 / t(input_len), ⌊B_t /
   input_len⌋ / t(B_t))`` with ``t(n)`` the prefill steps of an ``n``-token prompt alone and ``B_t`` the
   ``max_num_batched_tokens`` a step holds (a full chunk of prompts, their attention counted as one prompt's: a
   little high); a **decode instance** does the decode work only (the request's work less its prefill's,
   ``w_d = w − w_p``, the fixed step part ``s`` shared by its ``B`` sequences): ``μ_d = low / (s · (output_len − 1) /
   B + w_d)``, at most
   ``(1 − s / L) / w_d`` under a TPOT (or ITL) limit ``L`` at the band's end, as the aggregated bound is. A
   configuration that cannot decode within the TPOT limit is no decode pool.
2. **Pairs**: the :data:`ROLE_CANDIDATES` cheapest configurations per unit of rate in each role, of the same
   checkpoint, weight quantization and KV-cache dtype (the KV moves as it is); each pair sized by
   :func:`~planner.fleet.disaggregation.rate_match` for ``target_rate · (1 + headroom)``: ``x = ⌈R / μ_p⌉``,
   ``y = ⌈R / μ_d⌉``; its cost ``x · GPUs_p · price_p + y · GPUs_d · price_d`` is the least it can cost.
3. **Simulation, cheapest first**: the prefill and decode pools on one clock at ``R`` (open loop, the probes' schedule
   and spans, :mod:`planner.sizing.probe`), the SLOs checked on the steady state's percentiles at the decode
   configuration's end of the band, the queue kept bounded; a miss adds a prefill instance (TTFT) or a decode one
   (TPOT, ITL, E2EL, or the busier pool when the queue grows), at most :data:`MAX_BUMPS` times. At most
   :data:`MAX_LAYOUTS` pairs are simulated; after the first (always simulated, so the best layout shows its figures),
   the search stops when the next pair's least cost is no cheaper than the cheapest option found (aggregated or not):
   those pairs keep the bound that rules them out. A KV transfer alone
   longer than the TTFT limit misses it at any size.
4. **At the chosen size** each layout that meets the SLOs is simulated at ``target_rate``: the p99s it should show.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from planner.catalog.gpus import get_gpu
from planner.fleet.disaggregation import DisaggregatedRun, KvTransfer, kv_bytes, kv_transfer, rate_match
from planner.fleet.disaggregation import simulate_disaggregated as simulate_pools
from planner.fleet.workload import fleet_requests
from planner.metrics.benchmark import metrics_from_samples
from planner.metrics.slo import binding
from planner.predict.step_time import StepCoefficients
from planner.sizing.bounds import bounds
from planner.sizing.options import PoolSize, SizingOption
from planner.sizing.prices import usd_per_million_output_tokens
from planner.sizing.probe import QUEUE_GROWTH_FRACTION, QUEUE_GROWTH_MIN, Probe, probe_load, probe_requests, spans
from planner.sizing.settings import SizingSettings

__all__ = ["MAX_BUMPS", "MAX_LAYOUTS", "ROLE_CANDIDATES", "decode_rate", "disaggregated_options", "prefill_rate"]

#: Configurations per role (prefill, decode) paired, the cheapest per unit of rate.
ROLE_CANDIDATES = 3
#: Most pairs simulated in one search.
MAX_LAYOUTS = 6
#: Most instances added to a pair after its first simulation.
MAX_BUMPS = 4


def prefill_rate(option: SizingOption, settings: SizingSettings, coefficients: StepCoefficients) -> float:
    """Requests/s one instance of ``option`` prefills (module docstring, step 1), at the band's throughput end."""
    assert option.plan is not None and option.shape is not None and option.ends is not None

    def steps_s(tokens: int) -> float:  # the prefill steps of one prompt of ``tokens`` alone
        b = bounds(option.plan, option.shape, coefficients, input_len=tokens, output_len=1)  # type: ignore[arg-type]
        return b.ttft_s - coefficients.request_in_s(tokens) - coefficients.response_overhead_s

    n, chunk = settings.input_len, option.shape.max_num_batched_tokens
    per_step = chunk // n  # prompts a full chunk holds (one prompt's context: attention counted high)
    rate = max(1.0 / steps_s(n), per_step / steps_s(chunk) if per_step else 0.0)
    return rate * option.ends.throughput_low


def decode_rate(option: SizingOption, settings: SizingSettings, coefficients: StepCoefficients) -> float:
    """Requests/s one instance of ``option`` decodes within the TPOT and ITL limits (module docstring, step 1); 0
    when it cannot meet them."""
    assert option.plan is not None and option.shape is not None and option.ends is not None
    full = bounds(option.plan, option.shape, coefficients, input_len=settings.input_len, output_len=settings.output_len)
    pre = bounds(option.plan, option.shape, coefficients, input_len=settings.input_len, output_len=1)
    work = max(full.work_per_request_s - pre.work_per_request_s, 1e-9)
    s, batch = full.fixed_step_s, full.max_batch
    rate = option.ends.throughput_low / (s * max(0, settings.output_len - 1) / batch + work)
    for slo in option.ends.slos:
        if slo.metric in ("tpot", "itl"):
            limit = option.ends.limit_s(slo)
            rate = min(rate, max(0.0, (1.0 - s / limit) / work) if limit > 0 else 0.0)
    return rate


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def _transfer(settings: SizingSettings, p: SizingOption, x: int, d: SizingOption, y: int) -> KvTransfer:
    return kv_transfer(
        get_gpu(p.config.gpu_id),
        p.config.tensor_parallel_size,
        x,
        get_gpu(d.config.gpu_id),
        d.config.tensor_parallel_size,
        y,
        bandwidth_gb_per_s=settings.kv_transfer_gb_per_s,
        latency_ms=settings.kv_transfer_latency_ms,
    )


def _simulate(
    settings: SizingSettings,
    p: SizingOption,
    x: int,
    d: SizingOption,
    y: int,
    rate: float,
    coefficients: StepCoefficients,
) -> tuple[Probe, DisaggregatedRun]:
    """The pair at ``rate`` req/s, warmed up and measured as a probe is (:mod:`planner.sizing.probe`)."""
    assert d.bounds is not None
    warm_s, measure_s = spans(d.bounds, rate / y, settings.output_len)
    warm, measured = probe_requests(rate, warm_s, measure_s)
    load = probe_load(
        rate=rate,
        input_len=settings.input_len,
        output_len=settings.output_len,
        burstiness=settings.burstiness,
        num_prompts=warm + measured,
    )
    requests = fleet_requests(load)
    assert p.shape is not None and d.shape is not None
    run = simulate_pools(
        p.shape,
        x,
        d.shape,
        y,
        requests,
        transfer=_transfer(settings, p, x, d, y),
        router="least_loaded",
        coefficients=coefficients,
    )
    sent = np.array([r.arrival_s or 0.0 for r in requests])
    window = slice(warm, None)
    finish = sent[window] + run.e2e_s[window]
    metrics = metrics_from_samples(
        ttft_s=run.ttft_s[window].tolist(),
        e2e_s=run.e2e_s[window].tolist(),
        output_tokens=[r.output_len for r in requests[warm:]],
        input_tokens=[r.prompt_tokens for r in requests[warm:]],
        itl_s=(),
        duration_s=max(float(finish.max() - sent[window].min()), 1e-9),
    )
    metrics = replace(metrics, itl=run.metrics.itl)
    first = sent + run.ttft_s

    def waiting(t: float) -> int:
        return int(np.count_nonzero((sent <= t) & (first > t)))

    growth = waiting(float(sent.max())) - waiting(float(sent[warm]))
    probe = Probe(rate, warm, measured, metrics, growth, run.decode_preemptions > 0, 0.0)
    return probe, run


def _keeps_up(probe: Probe) -> bool:
    return probe.queue_growth <= max(QUEUE_GROWTH_MIN, QUEUE_GROWTH_FRACTION * probe.num_prompts)


def disaggregated_options(
    settings: SizingSettings,
    configurations: Sequence[SizingOption],
    coefficients: StepCoefficients,
    *,
    best_usd_per_hour: float | None = None,
    on_progress: Callable[[float, str], object] | None = None,
) -> list[SizingOption]:
    """The prefill/decode layouts of ``configurations`` (module docstring), each a :class:`SizingOption` of
    ``mode="disaggregated"`` with its verdict and reason.

    Args:
        settings: the question (``target_rate``, the workload, the SLOs, the transfer's overrides).
        configurations: the aggregated search's configurations that fit, are priced and can be predicted (with
            ``plan``, ``shape``, ``bounds`` and ``ends``).
        coefficients: the step model's coefficients.
        best_usd_per_hour: the cheapest aggregated option's cost (pairs that cannot beat it are not simulated).
        on_progress: called as ``on_progress(fraction, text)`` per simulation.

    Returns:
        The layouts: those that meet the SLOs first (unranked), then the others.
    """
    progress = on_progress or (lambda *_: None)
    usable = [
        o
        for o in configurations
        if o.plan is not None and o.shape is not None and o.bounds is not None and o.ends is not None
        if o.price.usd_per_hour is not None
    ]
    rate_needed = settings.deployment_rate
    roles: dict[tuple[str, str, str], tuple[list[tuple[float, SizingOption]], list[tuple[float, SizingOption]]]] = {}
    for o in usable:
        cost = o.config.num_gpus * (o.price.usd_per_hour or 0.0)
        group = roles.setdefault((o.config.model, o.config.quantization, o.config.kv_cache_dtype), ([], []))
        mu_p = prefill_rate(o, settings, coefficients)
        mu_d = decode_rate(o, settings, coefficients)
        if mu_p > 0:
            group[0].append((mu_p, o))
        if mu_d > 0:
            group[1].append((mu_d, o))
    pairs = []
    for prefills, decodes in roles.values():
        prefills.sort(key=lambda mo: mo[1].config.num_gpus * (mo[1].price.usd_per_hour or 0.0) / mo[0])
        decodes.sort(key=lambda mo: mo[1].config.num_gpus * (mo[1].price.usd_per_hour or 0.0) / mo[0])
        for mu_p, p in prefills[:ROLE_CANDIDATES]:
            for mu_d, d in decodes[:ROLE_CANDIDATES]:
                x, y = rate_match(rate_needed, mu_p, mu_d)
                cost = x * p.config.num_gpus * (p.price.usd_per_hour or 0.0)
                cost += y * d.config.num_gpus * (d.price.usd_per_hour or 0.0)
                pairs.append((cost, x, y, mu_p, mu_d, p, d))
    pairs.sort(key=lambda t: (t[0], t[1] + t[2]))
    out: list[SizingOption] = []
    best = best_usd_per_hour if best_usd_per_hour is not None else math.inf
    simulated = 0
    for i, (least, x, y, mu_p, mu_d, p, d) in enumerate(pairs):
        pool = (PoolSize(p.config, x, p.price, p.plan), PoolSize(d.config, y, d.price, d.plan))
        base = SizingOption(
            d.config,
            "costs_more",
            None,
            d.price,
            ends=d.ends,
            mode="disaggregated",
            prefill=pool[0],
            decode=pool[1],
            least_usd_per_hour=least,
            least_replicas=x + y,
        )
        # the cheapest pair is simulated even when the bound says it cannot win: the table shows what it does
        if (least >= best - 1e-9 and simulated) or simulated >= MAX_LAYOUTS:
            why = "no cheaper than the options above" if least >= best - 1e-9 else "not simulated"
            verdict = "costs_more" if least >= best - 1e-9 else "not_searched"
            out.append(
                replace(
                    base,
                    verdict=verdict,
                    reason=f"at least {x}P{y}D = {_money(least)}/h (prefill {mu_p:.3g} and decode {mu_d:.3g} req/s "
                    f"per instance by the step model's bound): {why}",
                )
            )
            continue
        progress(i / max(1, len(pairs)), f"Simulating {x}P{y}D: {p.config.label} / {d.config.label}")
        simulated += 1
        out.append(_size_pair(settings, coefficients, base, p, x, d, y))
        found = out[-1]
        if found.verdict == "meets" and found.usd_per_hour is not None:
            best = min(best, found.usd_per_hour)
    return out


def _size_pair(
    settings: SizingSettings,
    coefficients: StepCoefficients,
    base: SizingOption,
    p: SizingOption,
    x: int,
    d: SizingOption,
    y: int,
) -> SizingOption:
    """Simulate a pair from its rate-matched size, adding instances where it misses (module docstring, step 3)."""
    assert d.ends is not None and p.shape is not None
    ends = d.ends
    rate_needed = settings.deployment_rate
    ttft = next((s for s in ends.slos if s.metric == "ttft"), None)
    one = _transfer(settings, p, x, d, y).seconds(kv_bytes(p.shape, settings.input_len))
    if ttft is not None and one >= ends.limit_s(ttft):
        return replace(
            base,
            verdict="misses_slo",
            reason=f"misses {ttft.key} at any size: the KV transfer alone takes {one * 1e3:,.1f} ms",
        )
    probes: list[tuple[Probe, bool]] = []
    for _ in range(MAX_BUMPS + 1):
        probe, run = _simulate(settings, p, x, d, y, rate_needed, coefficients)
        worst = binding(ends.checks(probe.metrics))
        keeps = _keeps_up(probe)
        met = keeps and (worst is None or worst.ok)
        probes.append((probe, met))
        if met:
            break
        if not keeps:
            busier_prefill = rate_needed / (x * prefill_rate(p, settings, coefficients)) >= rate_needed / (
                y * decode_rate(d, settings, coefficients)
            )
            x, y = (x + 1, y) if busier_prefill else (x, y + 1)
        elif worst is not None and worst.slo.metric == "ttft":
            x += 1
        else:
            y += 1
    pools = (replace(base.prefill, replicas=x), replace(base.decode, replicas=y))  # type: ignore[type-var]
    usd = pools[0].usd_per_hour + pools[1].usd_per_hour
    if not probes[-1][1]:
        worst = binding(ends.checks(probes[-1][0].metrics))
        what = f"{worst.slo.key} at {ends.describe(worst)}" if worst is not None and not worst.ok else "a growing queue"
        return replace(
            base,
            verdict="misses_slo",
            reason=f"still misses {what} at {x}P{y}D ({_money(usd)}/h) after {len(probes)} simulations",
            probes=tuple(probes),
            prefill=pools[0],
            decode=pools[1],
            least_usd_per_hour=usd,
            least_replicas=x + y,
        )
    at_size, run = _simulate(settings, p, x, d, y, settings.target_rate, coefficients)
    return replace(
        base,
        verdict="meets",
        reason=None,
        replicas=x + y,
        at_size=at_size,
        probes=tuple(probes),
        usd_per_hour=usd,
        usd_per_million_output_tokens=usd_per_million_output_tokens(usd, settings.target_rate, settings.output_len),
        prefill=pools[0],
        decode=pools[1],
        kv_transfer_s=run.kv_transfer_ms / 1e3 if run.kv_transfer_ms is not None else None,
        least_usd_per_hour=None,
        least_replicas=None,
    )
