"""The time of one engine step: a sum of named terms, each a physical quantity over a catalog rate.

For a step that decodes ``n_d`` sequences (one token each) and prefills ``T_p`` prompt tokens (chunks of running
or newly admitted requests) on one GPU (quantities from :mod:`planner.predict.shape`, rates from the GPU catalog)::

    step_s = step_overhead_s                                   # scheduler, launch, sampling, output processing
           + seq_overhead_s · n_seqs                           # the same per scheduled sequence
           + weights_read_bytes(T) / (BW · weight_read_efficiency)
           + kv_read_bytes / (BW · kv_read_efficiency)
           + decode_matmul_fraction · decode_flops / peak      # what of the decode matmuls is not hidden
           + prefill_flops / (peak · prefill_efficiency)       #   under the weight reads, and the prefill
           + allreduce_s / allreduce_efficiency                # TP only

with ``T = n_d + T_p``, ``BW`` the datasheet memory bandwidth and ``peak`` the dense tensor FLOP/s of the compute
dtype. It is linear in its coefficients (one per term, :meth:`StepCoefficients.vector`), which is what lets
:mod:`planner.predict.calibration` fit them by least squares. The terms follow the roofline view of decoding
(Williams et al. 2009; "LLM Inference Unveiled", Yuan et al. 2024, §3) and the "trained physics" step model of
inference-sim (``docs/guide/latency-models.md``: weight and KV bytes over bandwidth, per-step and per-sequence
overheads, a prefill compute term, a TP term).

The default coefficients (``DEFAULT_COEFFICIENTS``) are fitted once, by least squares, to two public measurement
sets of one H200, and carried to every GPU as fractions of its datasheet figures (an assumption, scored in
``bench/prediction_accuracy.py``):

* ``shared/reference/measured/h200_ceilings.json``: 10 CUDA-graph decode steps of a Llama-3.1-8B-shaped model,
  batch 1–256 × KV length 1k–32k (fits ``weight_read_efficiency``, ``kv_read_efficiency``,
  ``decode_matmul_fraction``), and its square bf16 matmuls: 742 of the datasheet's 989 TFLOPS
  (``prefill_efficiency`` 0.75);
* ``shared/device/vllm/README.md``: a vLLM 0.24.0 server on that H200, Llama-3.1-8B, 529-token prompts, 128
  output tokens: concurrency 1, TPOT 4.80 ms, TTFT 32 ms; concurrency 16, TPOT 5.3 ms (fits ``step_overhead_s``,
  ``seq_overhead_s`` and :attr:`StepCoefficients.request_overhead_s` over the bare steps above).

``bench/default_coefficients.py`` reproduces the fit: ``weight_read_efficiency`` 0.69, ``kv_read_efficiency``
0.95, ``decode_matmul_fraction`` 0.74 (the 10 decode steps within 4.5%); then 0.25 ms per step (TPOT 4.80 ms
against 4.55 ms bare at batch 1), 4 µs per sequence (5.3 ms against 4.99 ms bare at batch 16, the waves of a
closed-loop burst holding no prefill) and 17 ms per request (TTFT 32 ms against a 15 ms prefill step).

``allreduce_latency_s`` (8 µs per call) is the small-message latency of vLLM's custom all-reduce on NVLink
(vLLM ``csrc/custom_all_reduce.cuh`` design notes and PR #2192: one-shot all-reduce for messages under 512 KiB);
no TP measurement was at hand to fit ``allreduce_efficiency`` (default 1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from planner.errors import InvalidParameterError
from planner.predict.shape import StepShape

__all__ = ["DEFAULT_COEFFICIENTS", "TERMS", "StepCoefficients", "step_features", "step_time_s"]

#: The step's terms, in the order of :meth:`StepCoefficients.vector` and :func:`step_features`' columns.
TERMS: tuple[str, ...] = ("step", "seq", "weights", "kv", "decode_flops", "prefill_flops", "allreduce")


@dataclass(frozen=True)
class StepCoefficients:
    """The step-time model's coefficients (formula and sources in the module docstring).

    Attributes:
        step_overhead_s: Fixed time of every step, seconds.
        seq_overhead_s: Time per scheduled sequence per step, seconds.
        weight_read_efficiency: Achieved fraction of the datasheet bandwidth when reading weights (0, 2].
        kv_read_efficiency: Achieved fraction of the datasheet bandwidth when reading the KV cache (0, 2].
        decode_matmul_fraction: Fraction of the decode tokens' matmul time (at peak FLOP/s) not hidden under the
            weight reads, ≥ 0.
        prefill_efficiency: Achieved fraction of peak FLOP/s in prefill (matmuls and attention), (0, 2].
        allreduce_efficiency: Achieved fraction of the link bandwidth in the TP all-reduce, (0, 2].
        allreduce_latency_s: Latency of one all-reduce call, seconds (not fitted).
        request_overhead_s: Time from the client sending a request to the engine scheduling it (HTTP, parsing,
            tokenization), seconds; part of TTFT and E2E, not of the steps.
        frontend_gap_s: Least time between two requests reaching the engine, seconds: the API server is one
            process that prepares them one at a time (not fitted; an assumption of the order of its per-request
            CPU time).
    """

    step_overhead_s: float = 0.25e-3
    seq_overhead_s: float = 4e-6
    weight_read_efficiency: float = 0.69
    kv_read_efficiency: float = 0.95
    decode_matmul_fraction: float = 0.74
    prefill_efficiency: float = 0.75
    allreduce_efficiency: float = 1.0
    allreduce_latency_s: float = 8e-6
    request_overhead_s: float = 17e-3
    frontend_gap_s: float = 0.5e-3

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise InvalidParameterError(f.name, value, "a finite number ≥ 0")
        for name in ("weight_read_efficiency", "kv_read_efficiency", "prefill_efficiency", "allreduce_efficiency"):
            if not 0 < getattr(self, name) <= 2:
                raise InvalidParameterError(name, getattr(self, name), "a fraction in (0, 2]")

    def vector(self) -> np.ndarray:
        """The linear coefficients of :data:`TERMS`: ``[step_s, seq_s, 1/η_w, 1/η_kv, fraction, 1/η_p, 1/η_ar]``."""
        return np.array(
            [
                self.step_overhead_s,
                self.seq_overhead_s,
                1.0 / self.weight_read_efficiency,
                1.0 / self.kv_read_efficiency,
                self.decode_matmul_fraction,
                1.0 / self.prefill_efficiency,
                1.0 / self.allreduce_efficiency,
            ]
        )

    @classmethod
    def from_vector(
        cls, vector: np.ndarray, *, base: StepCoefficients | None = None, **extra: float
    ) -> StepCoefficients:
        """Coefficients from a :meth:`vector` (inverse efficiencies back to efficiencies); others from ``base``."""
        v = [float(x) for x in vector]
        kept = asdict(base or cls())
        kept.update(
            step_overhead_s=v[0],
            seq_overhead_s=v[1],
            weight_read_efficiency=min(2.0, 1.0 / v[2]) if v[2] > 0 else 2.0,
            kv_read_efficiency=min(2.0, 1.0 / v[3]) if v[3] > 0 else 2.0,
            decode_matmul_fraction=v[4],
            prefill_efficiency=min(2.0, 1.0 / v[5]) if v[5] > 0 else 2.0,
            allreduce_efficiency=min(2.0, 1.0 / v[6]) if v[6] > 0 else 2.0,
        )
        kept.update(extra)
        return cls(**kept)


#: Fitted to the two H200 measurement sets of the module docstring.
DEFAULT_COEFFICIENTS = StepCoefficients()


def step_features(
    shape: StepShape,
    *,
    n_decode: np.ndarray,
    decode_ctx: np.ndarray,
    prefill_tokens: np.ndarray | None = None,
    prefill_attn: np.ndarray | None = None,
    prefill_ctx: np.ndarray | None = None,
    n_sampled: np.ndarray | None = None,
    n_seqs: np.ndarray | None = None,
    allreduce_latency_s: float = 8e-6,
) -> np.ndarray:
    """The nominal terms of ``k`` steps: one row per step, one column per :data:`TERMS` entry.

    Context sums are per attention group (the last axis, in ``shape.groups`` order) and already capped at each
    group's window.

    Args:
        shape: the deployment's per-GPU quantities.
        n_decode: sequences decoding one token each, shape ``(k,)``.
        decode_ctx: Σ over decoding sequences of the tokens each attends to, per group, ``(k, G)``.
        prefill_tokens: prompt tokens computed in the step, ``(k,)``; None = 0.
        prefill_attn: Σ over prefill chunks of ``chunk tokens × mean attended context``, per group ``(k, G)``.
        prefill_ctx: Σ over prefill chunks of the cached context they read, per group ``(k, G)``.
        n_sampled: tokens sampled (decodes plus prompts that finish in the step); None = ``n_decode``.
        n_seqs: sequences scheduled; None = ``n_decode``.
        allreduce_latency_s: latency of one all-reduce call, seconds.

    Returns:
        An array ``(k, 7)`` of seconds at datasheet rates (column 0 is 1, column 1 the sequence count).
    """
    k = n_decode.shape[0]
    tokens = n_decode if prefill_tokens is None else n_decode + prefill_tokens
    weights = shape.dense_weight_bytes
    if shape.num_experts:
        reached = 1.0 - (1.0 - shape.experts_per_token / shape.num_experts) ** tokens
        weights = weights + shape.expert_bytes * reached
    kv_tokens = decode_ctx if prefill_ctx is None else decode_ctx + prefill_ctx
    sampled = n_decode if n_sampled is None else n_sampled
    out = np.zeros((k, len(TERMS)))
    out[:, 0] = 1.0
    out[:, 1] = n_decode if n_seqs is None else n_seqs
    bw = shape.memory_bandwidth_bytes_per_s
    out[:, 2] = weights / bw
    out[:, 3] = (kv_tokens @ shape.kv_bytes_by_group + tokens * shape.kv_bytes_per_token) / bw  # reads, and writes
    out[:, 4] = (n_decode * shape.linear_flops_per_token + sampled * shape.lm_head_flops_per_token) / shape.peak_flops
    if prefill_tokens is not None:
        flops = prefill_tokens * shape.linear_flops_per_token
        if prefill_attn is not None:
            flops = flops + prefill_attn @ shape.layers_by_group * shape.attn_flops_per_token_ctx
        out[:, 5] = flops / shape.peak_flops
    if shape.allreduces_per_step:
        tp = shape.tensor_parallel_size
        moved = 2.0 * (tp - 1) / tp * tokens * shape.allreduce_bytes_per_token
        out[:, 6] = shape.allreduces_per_step * (allreduce_latency_s + moved / shape.link_bytes_per_s)
    return out


def step_time_s(
    shape: StepShape,
    coefficients: StepCoefficients = DEFAULT_COEFFICIENTS,
    *,
    n_decode: int,
    decode_ctx: float,
    prefill_tokens: int = 0,
    prefill_attn: float = 0.0,
) -> float:
    """Seconds of one step: ``n_decode`` sequences attending ``decode_ctx`` tokens in all (in every group alike),
    and ``prefill_tokens`` prompt tokens attending ``prefill_attn`` token pairs.

    Example: one decode step of Llama-3.1-8B on an H200 at batch 1, 1,024 tokens of context::

        step_time_s(shape, n_decode=1, decode_ctx=1024)   # ≈ 0.0048 s
    """
    g = len(shape.groups)
    features = step_features(
        shape,
        n_decode=np.array([float(n_decode)]),
        decode_ctx=np.full((1, g), float(decode_ctx)),
        prefill_tokens=np.array([float(prefill_tokens)]) if prefill_tokens else None,
        prefill_attn=np.full((1, g), float(prefill_attn)) if prefill_tokens else None,
        n_seqs=np.array([float(n_decode + (1 if prefill_tokens else 0))]),
        allreduce_latency_s=coefficients.allreduce_latency_s,
    )
    return float(features[0] @ coefficients.vector())
