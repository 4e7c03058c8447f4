"""One replica simulated at one request rate: the continuous-batching simulator at the target workload, its
percentiles over the steady state (the SLOs are checked against them at the end of the error band the settings ask
for, :mod:`planner.sizing.estimate`), and whether its queue stayed bounded.

A probe runs :func:`planner.predict.simulator.simulate` on the deployment's step shape for an open-loop load
(``vllm bench serve``'s schedule: gamma arrival gaps of the settings' burstiness, seed 0, so every probe of every
deployment sees the same requests, only faster or slower: common random numbers keep pass/fail monotone in the
rate).

**Steady state.** A replica's running batch fills up over about one end-to-end latency after the load starts
(requests arrive, none has finished yet), and a short run measured from its start sees small batches, short TPOTs
and a queue that has not had time to grow: on Llama-3.1-8B / H100 at 2,048 + 300 tokens, 260 requests at 13 req/s
looked fine while 1,500 showed the replica saturating at 11.4 req/s. So a probe sends ``warmup_s`` seconds of
arrivals first (the caller's estimate of the end-to-end latency at that rate) and measures the requests of the next
``measure_s`` seconds (at least :data:`PROBE_MIN_MEASURED` of them); TTFT, TPOT and E2EL percentiles are over
those (ITL, pooled over chunks, over the whole run), and :data:`PROBE_MAX_REQUESTS` bounds its cost, shortening
both spans alike.

**A bounded queue.** A rate above what the replica serves makes the queue grow without end, which a TPOT-only SLO
never sees (the running batch is capped). So a probe also counts the requests waiting for their first token when
the measured span starts and at the last arrival: when the queue grew by more than :data:`QUEUE_GROWTH_FRACTION`
of the measured requests (at least :data:`QUEUE_GROWTH_MIN`), the replica is not keeping up and the probe fails
whatever its percentiles say (a queue growing linearly adds its overload's share of the requests: this catches an
overload of about 3% or more).

Results are cached per (shape, coefficients, rate, workload, spans) for the process (:data:`CACHE_SIZE` probes):
a page that reruns asks the same probes again.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.shape import StepShape
from planner.predict.simulator import simulate
from planner.predict.step_time import StepCoefficients
from planner.sizing.bounds import Bounds

__all__ = [
    "CACHE_SIZE",
    "PROBE_MAX_REQUESTS",
    "PROBE_MIN_MEASURED",
    "QUEUE_GROWTH_FRACTION",
    "QUEUE_GROWTH_MIN",
    "Probe",
    "probe",
    "probe_load",
    "probe_requests",
    "spans",
]

#: Fewest measured requests of a probe: its p99 interpolates between its slowest two of 100.
PROBE_MIN_MEASURED = 100
#: Most requests of a probe, warm-up included (its cost: about 0.3 ms of simulation a request on one core).
PROBE_MAX_REQUESTS = 300
#: A probe's queue may grow by at most this share of its measured requests over the measured span.
QUEUE_GROWTH_FRACTION = 0.03
#: ... and at least by this many requests (the queue of a replica that keeps up moves by a few).
QUEUE_GROWTH_MIN = 3
#: Probes kept in the process's cache.
CACHE_SIZE = 4096
#: Warm-up and measured spans of a probe, in end-to-end latencies at its rate.
_WARMUP_E2E = 1.0
_MEASURE_E2E = 1.0


def spans(b: Bounds, rate: float, output_len: int) -> tuple[float, float]:
    """Warm-up and measured spans (seconds) of a probe at ``rate``: multiples of its end-to-end latency estimated
    from the fluid model (mean step ``s / (1 − λ·w)``, :mod:`planner.sizing.bounds`)."""
    busy = min(0.95, rate * b.work_per_request_s)
    e2el = b.ttft_s + max(0, output_len - 1) * b.fixed_step_s / (1.0 - busy)
    return round(_WARMUP_E2E * e2el, 3), round(_MEASURE_E2E * e2el, 3)


def probe_requests(rate: float, warmup_s: float, measure_s: float) -> tuple[int, int]:
    """``(warm-up requests, measured requests)`` of a probe at ``rate`` req/s: ``⌈rate · warmup_s⌉`` and
    ``max(⌈rate · measure_s⌉, PROBE_MIN_MEASURED)``, both scaled down together to :data:`PROBE_MAX_REQUESTS` in all
    (the measured ones never below :data:`PROBE_MIN_MEASURED`)."""
    warm = max(0, math.ceil(rate * warmup_s))
    measured = max(PROBE_MIN_MEASURED, math.ceil(rate * measure_s))
    if warm + measured > PROBE_MAX_REQUESTS:
        scale = PROBE_MAX_REQUESTS / (warm + measured)
        measured = max(PROBE_MIN_MEASURED, int(measured * scale))
        warm = max(0, PROBE_MAX_REQUESTS - measured)
    return warm, measured


@dataclass(frozen=True)
class Probe:
    """One replica simulated at one request rate (module docstring).

    Attributes:
        rate: offered request rate, req/s.
        warmup: requests sent before the measured ones.
        num_prompts: measured requests.
        metrics: the measured requests' aggregates (``vllm bench serve``'s figures; ITL over the whole run).
        queue_growth: requests waiting for their first token at the last arrival less those waiting when the
            measured span began.
        kv_saturated: the KV cache filled up (preemptions, or ≥ 99% of the blocks in use).
        mean_running: mean sequences per engine step.
    """

    rate: float
    warmup: int
    num_prompts: int
    metrics: BenchmarkMetrics
    queue_growth: int
    kv_saturated: bool
    mean_running: float

    @property
    def keeps_up(self) -> bool:
        """The queue stayed bounded (module docstring)."""
        return self.queue_growth <= max(QUEUE_GROWTH_MIN, QUEUE_GROWTH_FRACTION * self.num_prompts)

    @property
    def tokens_per_s_per_user(self) -> float | None:
        """Output tokens per second one request sees while it decodes: 1 / median TPOT; None without TPOT."""
        tpot = self.metrics.tpot
        return None if tpot is None or not tpot.median_s else 1.0 / tpot.median_s


def _waiting(sent: np.ndarray, first: np.ndarray, t: float) -> int:
    """Requests sent by ``t`` without a first token at ``t``."""
    return int(np.count_nonzero((sent <= t) & (first > t)))


def probe_load(
    *, rate: float, input_len: int, output_len: int, burstiness: float = 1.0, num_prompts: int = 1
) -> LoadSettings:
    """The load a probe sends: ``num_prompts`` requests at ``rate`` req/s (open loop, ``vllm bench serve``'s
    schedule) of ``input_len`` prompt tokens, each answered with ``output_len`` tokens (``ignore_eos``)."""
    return LoadSettings(
        num_prompts=num_prompts,
        max_concurrency=None,
        request_rate=rate,
        burstiness=burstiness,
        input_len=input_len,
        output_len=output_len,
        duration_s=None,
        ignore_eos=True,
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def probe(
    shape: StepShape,
    coefficients: StepCoefficients,
    *,
    rate: float,
    input_len: int,
    output_len: int,
    burstiness: float = 1.0,
    warmup_s: float = 0.0,
    measure_s: float = 0.0,
) -> Probe:
    """Simulate one replica of ``shape`` at ``rate`` req/s of ``input_len``-token prompts and ``output_len``-token
    answers: ``warmup_s`` seconds of arrivals, then ``measure_s`` seconds measured (module docstring).

    Raises:
        InvalidParameterError: from the simulator (a request longer than ``max_model_len``, a KV cache that cannot
            hold one request).
    """
    warm, measured = probe_requests(rate, warmup_s, measure_s)
    settings = probe_load(
        rate=rate, input_len=input_len, output_len=output_len, burstiness=burstiness, num_prompts=warm + measured
    )
    run = simulate(shape, settings, coefficients)
    window = slice(warm, None)
    sent, ttft, e2e = run.sent_s[window], run.ttft_s[window], run.e2e_s[window]
    finish = sent + e2e
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=run.output_tokens[window].tolist(),
        input_tokens=run.input_tokens[window].tolist(),
        itl_s=(),
        duration_s=max(float(finish.max() - sent.min()), 1e-9),
    )
    metrics = replace(metrics, itl=run.metrics.itl)
    first = run.sent_s + run.ttft_s
    start = float(sent.min())
    growth = _waiting(run.sent_s, first, float(run.sent_s.max())) - _waiting(run.sent_s, first, start)
    return Probe(
        rate=rate,
        warmup=warm,
        num_prompts=measured,
        metrics=metrics,
        queue_growth=growth,
        kv_saturated=run.kv_saturated,
        mean_running=run.mean_running,
    )
