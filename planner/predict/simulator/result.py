"""A simulated run's result: per-request arrays, the run's metrics (the load test's own aggregation), and the step
terms each request's latencies covered (what the calibration fits)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.simulator.engine import Engine
from planner.predict.step_time import TERMS

__all__ = ["SimulatedRun", "assemble", "inter_token_gaps"]


@dataclass(frozen=True)
class SimulatedRun:
    """A predicted run: per-request arrays (aligned, seconds and tokens) and the run's metrics.

    Attributes:
        settings: the workload.
        mode: ``continuous`` or ``static``.
        metrics: the aggregates, as a measured run's (vLLM key names through ``metrics.to_vllm_json()``).
        sent_s: when each request was sent, seconds after the run's start.
        ttft_s / e2e_s: per request, seconds.
        input_tokens / output_tokens: per request.
        num_steps: engine steps taken.
        preemptions: requests preempted (recompute), counted each time.
        peak_kv_blocks: most KV blocks in use at once; ``num_gpu_blocks`` is the pool.
        num_gpu_blocks: the pool's size.
        mean_running: mean number of sequences scheduled per step.
        ttft_features / tpot_features: per request, the sum of the nominal step terms (:data:`TERMS`) over the
            steps its TTFT and its decode span covered, the TPOT one divided by ``output_tokens − 1`` (the
            calibration's linearization).
        ttft_fixed_s: per request, the part of its TTFT outside those steps and outside the fixed request overhead
            (``request_overhead_s``): its per-token way in, its wait behind other arrivals at the API server, idle
            engine time, the token's way out; seconds.
        median_itl_features: the nominal terms of the step whose duration is the median inter-token gap.
    """

    settings: LoadSettings
    mode: str
    metrics: BenchmarkMetrics
    sent_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    num_steps: int
    preemptions: int
    peak_kv_blocks: int
    num_gpu_blocks: int
    mean_running: float
    ttft_features: np.ndarray
    ttft_fixed_s: np.ndarray
    tpot_features: np.ndarray
    median_itl_features: np.ndarray

    @property
    def kv_saturated(self) -> bool:
        """The KV cache filled up during the run (requests were preempted or the pool was ≥ 99% in use)."""
        return self.preemptions > 0 or self.peak_kv_blocks >= 0.99 * self.num_gpu_blocks


def inter_token_gaps(
    ends: np.ndarray, first_step: np.ndarray, finish_step: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every inter-token gap of the requests, pooled (request after request), and the step each one is.

    Args:
        ends: each step's end, seconds.
        first_step / finish_step: per request, the step of its first and of its last token.

    Returns:
        ``(gaps in seconds, step indices)``: a request's gaps are the durations of the steps after its first token up
        to its last. A preempted request's include the steps it sat out: same total, more samples, a simplification.
    """
    gaps = np.diff(ends, prepend=ends[0] if ends.size else 0.0)
    spans = finish_step > first_step
    starts, counts = first_step[spans] + 1, (finish_step - first_step)[spans]
    where = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return gaps[where], where


def assemble(engine: Engine, settings: LoadSettings, mode: str) -> SimulatedRun:
    """The result of a finished run of ``engine``.

    Formulas: TTFT and E2E from sending to the first and last token's step end, plus the token's way out
    (``response_overhead_s``); inter-token gaps as :func:`inter_token_gaps`. A request's TTFT
    terms are the part still to go of the step under way when it reached the engine, then each whole step up to the
    one that made its first token; its TPOT terms, the steps after that up to its last token over
    ``output_tokens − 1``.
    """
    r, log = engine.requests, engine.log
    ends = np.array(log.ends)
    feats = log.features(engine.shape, engine.allreduce_latency_s)
    cum = np.vstack([np.zeros((1, feats.shape[1])), np.cumsum(feats, axis=0)])
    sent = np.array(r.sent, dtype=float)
    out_s = engine.frontend.out_s  # every token reaches the client this long after its step
    ttft = np.array(r.first, dtype=float) + out_s - sent
    e2e = np.array(r.finish, dtype=float) + out_s - sent
    first_step = np.array(r.first_step, dtype=np.int64)
    finish_step = np.array(r.finish_step, dtype=np.int64)
    out_len = np.array(r.out_len, dtype=np.int64)
    prompt = np.array(r.prompt, dtype=np.int64)
    itl, where = inter_token_gaps(ends, first_step, finish_step)
    median_itl_features = np.zeros(len(TERMS))
    if itl.size:
        middle = itl.size // 2
        median_itl_features = feats[where[np.argpartition(itl, middle)[middle]]]
    duration = float(np.nanmax(np.array(r.finish, dtype=float))) + out_s if r.n else 0.0
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=out_len.tolist(),
        input_tokens=prompt.tolist(),
        itl_s=itl,
        duration_s=max(duration, 1e-9),
        slo_ms=dict(settings.goodput_ms),
    )
    arrival = np.array(r.arrival, dtype=float)
    durations = feats @ engine.coef
    during = np.minimum(np.searchsorted(ends, arrival, side="right"), first_step) if ends.size else first_step
    ttft_feat = cum[first_step + 1] - cum[during + 1]
    if ends.size:
        frac = np.clip((ends[during] - arrival) / np.where(durations[during] > 0, durations[during], 1.0), 0.0, 1.0)
        ttft_feat += frac[:, None] * feats[during]
    ttft_fixed = ttft - ttft_feat @ engine.coef - engine.frontend.in_s
    tpot_feat = (cum[finish_step + 1] - cum[first_step + 1]) / np.maximum(out_len - 1, 1)[:, None]
    steps = len(log.ends)
    return SimulatedRun(
        settings=settings,
        mode=mode,
        metrics=metrics,
        sent_s=sent,
        ttft_s=ttft,
        e2e_s=e2e,
        input_tokens=prompt,
        output_tokens=out_len,
        num_steps=steps,
        preemptions=engine.preemptions,
        peak_kv_blocks=int(engine.pool.peak),
        num_gpu_blocks=engine.shape.num_gpu_blocks,
        mean_running=log.running_sum / steps if steps else 0.0,
        ttft_features=ttft_feat,
        ttft_fixed_s=ttft_fixed,
        tpot_features=tpot_feat,
        median_itl_features=median_itl_features,
    )
