"""Analytic figures of one planned deployment at the target workload, from the step-time model alone (no
simulation): what a request takes when it is alone, and how many requests per second one replica can sustain at
most. The search (:mod:`planner.sizing.search`) uses them to rank configurations before simulating any, to prune the
ones that cannot win, and to start each replica-count search near its answer.

**A request alone** (the latency floor): its prompt is prefilled in chunks of ``max_num_batched_tokens`` and its
output decoded one token a step, each step timed by :func:`planner.predict.step_time.step_features` exactly as the
simulator times it (:mod:`planner.predict.simulator`: a chunk of ``n`` tokens after ``c`` computed ones attends to
``c + (n + 1)/2`` tokens on average and reads the ``c`` cached; the decode step of token ``k + 1`` attends to
``input_len + k`` tokens; windows cap both). TTFT = the request overhead + the prefill steps; TPOT = the mean decode
step; E2EL = TTFT + the decode steps. More load only adds to these (other requests share every step), so a
configuration whose floor exceeds an SLO misses it at any request rate: more replicas do not help.

**The fluid bound of the request rate** (Little's law over the engine's steps, treating requests as a fluid): every step
costs a fixed part ``s`` (the step overhead and its per-layer launch costs, the weights read once for all its tokens —
for a MoE, the experts one token reaches — and the all-reduce latencies) plus a part per token and per sequence; a
request brings ``w`` seconds of the latter over its lifetime (the steps of the request alone, less their fixed parts). A
replica that serves ``λ`` requests/s spends ``λ·w`` of every second on them plus ``s`` per step, and it takes at least
``λ·(output_len − 1) / B`` decode steps a second with at most ``B`` sequences in a step (``max_num_seqs``, or what the
KV cache holds at the requests' mean length ``input_len + output_len / 2``), and at least ``λ·input_len /
max_num_batched_tokens`` steps for the prompts. So::

    λ ≤ λ_fluid = 1 / (s · max((output_len − 1) / B, input_len / max_num_batched_tokens) + w)

A TPOT (or ITL) SLO ``L`` bounds it further: when every step decodes, the mean step is ``s / (1 − λ·w)``
(steps fill the time ``λ·w`` leaves), and a percentile of TPOT is at least about its mean, so
``λ ≤ (1 − s / L) / w``; an E2EL SLO gives the same with ``L = (L_e2el − TTFT_floor) / (output_len − 1)``. TTFT
SLOs bound nothing here (queueing sets them): the simulation does. These are fluid figures, not guarantees: they
order the search and start it; every verdict on a rate comes from the simulator.

**At the band's pessimistic end** (:mod:`planner.sizing.estimate`) the simulation's value of an SLO's statistic is
multiplied by the band's high ratio ``h`` before it is checked, so the bounds take the limit as ``L / h``; and a
replica must keep up with ``λ / low`` (the throughput band's low ratio), so the throughput bound is
``low · λ_fluid``. A bound thus rules out exactly what the check it stands for would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.capacity.result import Plan
from planner.metrics.latency import percentiles
from planner.metrics.slo import Slo
from planner.predict.shape import StepShape
from planner.predict.step_time import TERMS, StepCoefficients, critical_path, step_features
from planner.sizing.estimate import SloEnds

__all__ = ["Bounds", "bounds"]

_COLUMN = {name: i for i, name in enumerate(TERMS)}
#: The columns no token or sequence adds to (a step's own, its layers' and its weights'), on the critical path.
_FIXED = [_COLUMN[t] for t in ("step", "layer", "moe_layer", "weights", "eager_layer", "eager_moe_layer")]


@dataclass(frozen=True)
class Bounds:
    """The analytic figures of one deployment at one workload (module docstring). Seconds, requests/s.

    Attributes:
        ttft_s / tpot_s / e2el_s: a request alone: its TTFT, TPOT and end-to-end latency.
        itl_p50_s / itl_p90_s / itl_p99_s: percentiles of its decode steps (its inter-token latencies).
        fixed_step_s: ``s``, the part of every step no token adds.
        work_per_request_s: ``w``, the step time one request adds over its lifetime.
        max_batch: ``B``, most sequences a step decodes at the workload's mean length.
        fluid_rate: ``λ_fluid``, the simulator's (the point estimate).
        rate_bound: the fluid rate at the throughput's end of the band, lowered by the TPOT, ITL and E2EL SLOs at
            theirs (0 when a floor misses one).
        binding: what sets ``rate_bound``: ``"throughput"`` or the SLO's key (``tpot_p99_ms``).
    """

    ttft_s: float
    tpot_s: float
    e2el_s: float
    itl_p50_s: float
    itl_p90_s: float
    itl_p99_s: float
    fixed_step_s: float
    work_per_request_s: float
    max_batch: int
    fluid_rate: float
    rate_bound: float
    binding: str

    def floor_s(self, slo: Slo) -> float:
        """The value of ``slo``'s statistic for a request alone, seconds: a floor no request rate goes below."""
        if slo.metric == "itl":
            return {"p50": self.itl_p50_s, "p90": self.itl_p90_s, "p99": self.itl_p99_s}.get(slo.stat, self.tpot_s)
        return {"ttft": self.ttft_s, "tpot": self.tpot_s, "e2el": self.e2el_s}[slo.metric]


def _alone(shape: StepShape, input_len: int, output_len: int, ar_latency_s: float) -> tuple[np.ndarray, int]:
    """The features of a request alone: its prefill chunks, then its decode steps; and how many chunks."""
    windows = np.array([g.window_tokens or math.inf for g in shape.groups], dtype=float)
    budget = shape.max_num_batched_tokens
    starts = np.arange(0, input_len, budget, dtype=float)
    sizes = np.minimum(budget, input_len - starts)
    chunks = len(starts)
    g = len(shape.groups)
    sampled = np.zeros(chunks)
    sampled[-1] = 1.0
    prefill = step_features(
        shape,
        n_decode=np.zeros(chunks),
        decode_ctx=np.zeros((chunks, g)),
        prefill_tokens=sizes,
        prefill_attn=sizes[:, None] * np.minimum(starts[:, None] + (sizes[:, None] + 1) / 2, windows),
        prefill_ctx=np.minimum(starts[:, None], windows),
        n_sampled=sampled,
        n_seqs=np.ones(chunks),
        allreduce_latency_s=ar_latency_s,
    )
    if output_len <= 1:
        return prefill, chunks
    ctx = input_len + np.arange(1, output_len, dtype=float)
    decode = step_features(
        shape,
        n_decode=np.ones(output_len - 1),
        decode_ctx=np.minimum(ctx[:, None], windows),
        allreduce_latency_s=ar_latency_s,
    )
    return np.vstack([prefill, decode]), chunks


def bounds(
    plan: Plan,
    shape: StepShape,
    coefficients: StepCoefficients,
    *,
    input_len: int,
    output_len: int,
    ends: SloEnds | None = None,
) -> Bounds:
    """The analytic figures of a deployment (module docstring).

    Args:
        plan: the deployment's capacity plan (its KV pool gives ``B``).
        shape: its step shape (:func:`planner.predict.shape.step_shape`).
        coefficients: the step model's coefficients.
        input_len / output_len: the workload's tokens per request.
        ends: the SLOs whose TPOT, ITL and E2EL limits lower the rate bound, and the ends of the band they and the
            throughput are checked at (None: no SLO, the point estimate).

    Returns:
        The figures.
    """
    coef = coefficients.vector()
    nominal, chunks = _alone(shape, input_len, output_len, coefficients.allreduce_latency_s)
    # A prompt chunk past the CUDA-graph sizes runs eagerly: its time is the longer of GPU work and launches, as the
    # simulator times it, not their sum.
    feats = critical_path(nominal, coef)
    times = feats @ coef
    ttft = coefficients.request_in_s(input_len) + float(times[:chunks].sum()) + coefficients.response_overhead_s
    decode = times[chunks:]
    # TPOT of a request alone: its output_len − 1 decode steps are its gaps after the first token, so
    # planner.metrics.latency.tpot_s's (E2E − TTFT) / (output_len − 1) is their mean
    tpot = float(decode.mean()) if decode.size else 0.0
    e2el = ttft + float(decode.sum())
    itl = percentiles(decode, (50, 90, 99)) if decode.size else (0.0, 0.0, 0.0)
    # The fixed part of a step: its overhead and per-layer launches, the weights every step reads (for a MoE, the
    # experts one token reaches), and the all-reduce calls' latency.
    reach = shape.experts_per_token / shape.num_experts if shape.num_experts else 0.0
    weights = (shape.dense_weight_bytes + shape.expert_bytes * reach) / shape.memory_bandwidth_bytes_per_s
    allreduce = coef[_COLUMN["allreduce"]] * shape.allreduces_per_step * coefficients.allreduce_latency_s
    fixed = (
        coef[_COLUMN["step"]]
        + coef[_COLUMN["layer"]] * shape.num_layers
        + coef[_COLUMN["moe_layer"]] * shape.num_moe_layers
        + coef[_COLUMN["weights"]] * weights
        + allreduce
    )
    per_step_fixed = feats[:, _FIXED] @ coef[_FIXED] + allreduce
    work = float(np.maximum(times - per_step_fixed, 0.0).sum())
    pool = plan.pool
    mean_tokens = input_len + max(1, output_len // 2)
    kv_batch = math.floor(pool.concurrency_at(mean_tokens)) if pool is not None else shape.max_num_seqs
    batch = max(1, min(shape.max_num_seqs, kv_batch))
    steps_per_request = max((output_len - 1) / batch, input_len / shape.max_num_batched_tokens)
    fluid = 1.0 / (fixed * steps_per_request + work) if work > 0 else math.inf
    ends = ends or SloEnds()
    rate, binding = fluid * ends.throughput_low, "throughput"
    for slo in ends.slos:
        if slo.metric in ("tpot", "itl"):
            limit = ends.limit_s(slo)
        elif slo.metric == "e2el" and output_len > 1:
            limit = (ends.limit_s(slo) - ttft) / (output_len - 1)
        else:
            continue
        bound = max(0.0, (1.0 - fixed / limit) / work) if limit > 0 and work > 0 else 0.0
        if bound < rate:
            rate, binding = bound, slo.key
    return Bounds(
        ttft_s=ttft,
        tpot_s=tpot,
        e2el_s=e2el,
        itl_p50_s=itl[0],
        itl_p90_s=itl[1],
        itl_p99_s=itl[2],
        fixed_step_s=float(fixed),
        work_per_request_s=work,
        max_batch=batch,
        fluid_rate=fluid,
        rate_bound=rate,
        binding=binding,
    )
