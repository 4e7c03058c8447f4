"""The step-time model's seconds for one step of a given make-up, from plain numbers (the simulator's inner loop).

The same formula as :func:`planner.predict.step_time.step_features` followed by
:func:`~planner.predict.step_time.critical_path` and the product with the coefficients (the step-time module
docstring has it and its sources), with every per-deployment constant multiplied out once: a step's seconds are then
a handful of multiplications, where building its row of terms would cost a hundred times more. The step log
(:mod:`planner.predict.simulator.steps`) rebuilds the rows themselves, in bulk, once the run is over.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner.predict.shape import StepShape
from planner.predict.step_time import TERMS

__all__ = ["Drafter", "StepCost"]

_C = {name: i for i, name in enumerate(TERMS)}


class StepCost:
    """Seconds of a step on one deployment with one coefficient vector.

    Attributes:
        ctx_s: seconds per context token a decoding or prefilling sequence reads, per attention group.
        graph_max_tokens: most tokens of a step that replays a CUDA graph.
    """

    def __init__(self, shape: StepShape, coef: np.ndarray, allreduce_latency_s: float) -> None:
        c = [float(x) for x in coef]
        layers, moe_layers = float(shape.num_layers), float(shape.num_moe_layers)
        bw, peak = shape.memory_bandwidth_bytes_per_s, shape.peak_flops
        self._step_s = c[_C["step"]]
        self._seq_s = c[_C["seq"]]
        self._gpu_fixed_s = (
            c[_C["layer"]] * layers
            + c[_C["moe_layer"]] * moe_layers
            + c[_C["fp8_layer"]] * (layers if shape.fp8_weights else 0.0)
            + c[_C["mla_layer"]] * (layers if shape.mla else 0.0)
        )
        self._weight_s = c[_C["weights"]] / bw
        self._dense_bytes = shape.dense_weight_bytes
        self._moe_on = bool(shape.num_experts)
        if self._moe_on:
            miss = 1.0 - shape.experts_per_token / shape.num_experts  # a token's chance to skip a given expert
            self._moe = (shape.expert_bytes, miss, shape.moe_routing_exponent)
        self._weights_by_tokens: dict[int, float] = {}
        kv = c[_C["kv"]] / bw
        self.ctx_s = [kv * b for b in shape.kv_bytes_by_group_list]
        self._write_s = kv * shape.kv_bytes_per_token
        self._decode_s = c[_C["decode_flops"]] * shape.linear_flops_per_token / peak
        self._sample_s = c[_C["decode_flops"]] * shape.lm_head_flops_per_token / peak
        self._prefill_s = c[_C["prefill_flops"]] * shape.linear_flops_per_token / peak
        self._pair_s = [
            c[_C["prefill_flops"]] * n * shape.attn_flops_per_token_ctx / peak for n in shape.layers_by_group_list
        ]
        self._ar_fixed_s = self._ar_token_s = 0.0
        if shape.allreduces_per_step:
            tp = shape.tensor_parallel_size
            scale = c[_C["allreduce"]] * shape.allreduces_per_step
            self._ar_fixed_s = scale * allreduce_latency_s
            self._ar_token_s = scale * 2.0 * (tp - 1) / tp * shape.allreduce_bytes_per_token / shape.link_bytes_per_s
        self.graph_max_tokens = shape.cudagraph_max_tokens
        self._eager_s = c[_C["eager_layer"]] * layers + c[_C["eager_moe_layer"]] * moe_layers

    def _weights(self, tokens: int) -> float:
        """Seconds to read the weights a step of ``tokens`` tokens reaches (its routed experts, for an MoE)."""
        if not self._moe_on:
            return self._weight_s * self._dense_bytes
        cached = self._weights_by_tokens.get(tokens)
        if cached is None:
            expert_bytes, miss, exponent = self._moe
            reached = 1.0 - miss ** (tokens**exponent)
            cached = self._weights_by_tokens[tokens] = self._weight_s * (self._dense_bytes + expert_bytes * reached)
        return cached

    def line(
        self, n_decode: int, n_sampled: int, n_seqs: int, prefill_tokens: int = 0, attn_pairs_s: float = 0.0
    ) -> tuple[float, float, float | None]:
        """A step's seconds but for its context reads: ``(host, GPU, eager)``.

        The step then takes ``host + GPU + Σ ctx_s[g] · context[g]``, or ``host + eager`` when ``eager`` is not None
        and longer than that GPU part (a step of more than :attr:`graph_max_tokens` tokens, launched kernel by kernel).

        Args:
            n_decode: tokens decoded (one per decoding sequence, ``k + 1`` when speculating).
            n_sampled: tokens sampled. n_seqs: sequences scheduled.
            prefill_tokens: prompt tokens computed.
            attn_pairs_s: seconds of the prefill's attention (:meth:`attention_s`).
        """
        tokens = n_decode + prefill_tokens
        gpu = (
            self._gpu_fixed_s
            + self._weights(tokens)
            + self._write_s * tokens
            + self._decode_s * n_decode
            + self._sample_s * n_sampled
            + self._prefill_s * prefill_tokens
            + attn_pairs_s
            + self._ar_fixed_s
            + self._ar_token_s * tokens
        )
        eager = self._eager_s if tokens > self.graph_max_tokens else None
        return self._step_s + self._seq_s * n_seqs, gpu, eager

    def attention_s(self, pairs_by_group: Sequence[float]) -> float:
        """Seconds of prefill attention over ``pairs_by_group`` (Σ chunk tokens × mean attended context, per group)."""
        return sum(p * s for p, s in zip(pairs_by_group, self._pair_s, strict=True))

    def seconds(
        self,
        n_decode: int,
        n_sampled: int,
        n_seqs: int,
        ctx_by_group: Sequence[float],
        prefill_tokens: int = 0,
        attn_pairs_s: float = 0.0,
    ) -> float:
        """Seconds of a step (:meth:`line`'s arguments; ``ctx_by_group``: context tokens read, per group)."""
        host, gpu, eager = self.line(n_decode, n_sampled, n_seqs, prefill_tokens, attn_pairs_s)
        gpu += sum(x * s for x, s in zip(ctx_by_group, self.ctx_s, strict=True))
        return host + (eager if eager is not None and eager > gpu else gpu)


class Drafter:
    """Seconds a speculative drafter adds to a step (:mod:`planner.predict.speculative`): ``k`` forwards over the
    step's decoding sequences, the first over ``n·(k + 1)`` positions and the others over one token a sequence
    (every drafter layer attending the sequences' whole context), plus the host time per forward.

    Attributes:
        k: draft tokens per step.
    """

    def __init__(
        self, k: int, draft: StepShape | None, overhead_s: float, coef: np.ndarray, allreduce_latency_s: float
    ) -> None:
        self.k = k
        self._overhead_s = k * overhead_s
        self._cost = None if draft is None else StepCost(draft, coef, allreduce_latency_s)
        self._ctx_s = 0.0 if self._cost is None else sum(self._cost.ctx_s)
        self._lines: dict[int, tuple] = {}

    def seconds(self, n_decode: int, ctx_tokens: float) -> float:
        """Seconds for ``n_decode`` decoding sequences that attend ``ctx_tokens`` tokens in all."""
        if self._cost is None:
            return self._overhead_s
        lines = self._lines.get(n_decode)
        if lines is None:  # a batch size's two forwards but for their context reads
            first = self._cost.line(n_decode * (self.k + 1), n_decode, n_decode)
            rest = self._cost.line(n_decode, n_decode, n_decode)
            lines = self._lines[n_decode] = (first, rest)
        read = self._ctx_s * ctx_tokens
        (h1, g1, e1), (h2, g2, e2) = lines
        g1, g2 = g1 + read, g2 + read
        first_s = h1 + (e1 if e1 is not None and e1 > g1 else g1)
        rest_s = h2 + (e2 if e2 is not None and e2 > g2 else g2)
        return self._overhead_s + first_s + (self.k - 1) * rest_s
