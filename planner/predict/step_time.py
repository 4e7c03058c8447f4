"""The time of one engine step: a sum of named terms, each a physical quantity over a catalog rate.

For a step that decodes ``n_d`` sequences (one token each) and prefills ``T_p`` prompt tokens (chunks of running
or newly admitted requests) on one GPU (quantities from :mod:`planner.predict.shape`, rates from the GPU catalog)::

    step_s = step_overhead_s + seq_overhead_s · n_seqs          # host: scheduling, inputs, sampling, outputs
           + max(GPU, launches)                                  # critical_path()
    GPU    = layer_overhead_s · layers + moe_layer_overhead_s · moe_layers   # each layer's kernels' fixed time
           + weights_read_bytes(T) / (BW · weight_read_efficiency)
           + kv_read_bytes / (BW · kv_read_efficiency)
           + decode_matmul_fraction · decode_flops / peak      # what of the decode matmuls is not hidden
           + prefill_flops / (peak · prefill_efficiency)       #   under the weight reads, and the prefill
           + allreduce_s / allreduce_efficiency                # TP only
    launches = (eager_layer_s · layers + eager_moe_layer_s · moe_layers)  if T > cudagraph_max_tokens else 0

with ``T = n_d + T_p``, ``BW`` the datasheet memory bandwidth and ``peak`` the dense tensor FLOP/s of the compute
dtype. A step of up to ``cudagraph_max_tokens`` tokens replays a CUDA graph; a larger one (a big prefill chunk) has
its kernels launched one by one while the GPU runs those already launched, so it takes the longer of the two
(vLLM's CUDA-graph capture sizes, ``vllm/config/vllm.py`` v0.24.0). The terms follow the roofline view of decoding
(Williams et al. 2009; "LLM Inference Unveiled", Yuan et al. 2024, §3) and the "trained physics" step model of
inference-sim (``docs/guide/latency-models.md``: weight and KV bytes over bandwidth, per-layer, per-step and
per-sequence overheads, a prefill compute term, a TP term). Each term is linear in its coefficient
(:meth:`StepCoefficients.vector`), and with the ``max`` resolved per step (:func:`critical_path`) the step time is
linear again, which is what lets :mod:`planner.predict.calibration` fit them by least squares.

**The default coefficients** (``DEFAULT_COEFFICIENTS``) are fitted by ``bench/default_coefficients.py`` (which
prints each value) to measurements of one H200 with vLLM 0.24.0, and carried to every GPU as fractions of its
datasheet figures and as seconds (an assumption, scored in ``bench/prediction_accuracy.py``):

* ``shared/reference/measured/h200_ceilings.json``: 10 bare CUDA-graph decode steps of a Llama-3.1-8B-shaped model,
  batch 1–256 × KV length 1k–32k (the KV-read and decode-matmul terms);
* ``bench/data/h200_sweeps/`` and ``bench/data/h200_mechanisms/``: ``vllm bench serve`` against a real server, eleven
  models of five classes (dense Llama-3.1-8B, Llama-3.2-3B, Qwen3-14B and Qwen2.5-32B; MoE Qwen3-30B-A3B,
  Mixtral-8x7B and the block-FP8 Qwen3-Coder-30B-A3B; MLA MoE DeepSeek-V2-Lite; FP8 dense Llama-3.3-70B and
  Qwen3-8B; sliding-window Gemma-2-9B), closed loop at concurrency 1–256 and Poisson and gamma arrivals, 512–3,072
  input tokens, and the MoE's chat-route points (steps past the CUDA-graph size at low load: the launch terms);
* ``shared/device/vllm/README.md`` §4: Llama-3.1-8B on the chat route at concurrency 1 (TPOT 4.80 ms, TTFT 32 ms)
  and 16 (TPOT 5.3 ms).

The frontend figures (``request_overhead_s`` and the four after it) are not fitted: they were read off the servers'
own logs (the attributes' docs). DeepSeek-V2-Lite's and Qwen3-Coder-30B-A3B-FP8's runs above one sequence read the
experts of an uneven routing the defaults do not model (``moe_routing_exponent``), so only their concurrency-1 runs
are fitted. Fitted values: 0.087 ms per step and 8.3 µs per sequence on the host; 38 µs per layer on the GPU, 19 µs
more per MoE layer and 26 µs more per FP8 or MLA layer; weights read at 0.88 and the KV cache at 0.91 of the
datasheet bandwidth; 0.53 of the decode matmuls not hidden; prefill at 0.63 of peak; 0.48 ms per layer and 0.95 ms
more per MoE layer to launch a step without a graph. Scored on each model after refitting without it
(``bench/prediction_accuracy.py``, 91 runs of eleven models): median |error| 7.7% on median TPOT (3.3% on the dense
models), 4.3% on output throughput, 13.6% on median TTFT and 10.8% on p99 TTFT.

``allreduce_latency_s`` (8 µs per call) is the small-message latency of vLLM's custom all-reduce on NVLink
(vLLM ``csrc/custom_all_reduce.cuh`` design notes and PR #2192: one-shot all-reduce for messages under 512 KiB);
no TP measurement was at hand to fit ``allreduce_efficiency`` (default 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from planner.errors import InvalidParameterError
from planner.predict.shape import StepShape

__all__ = [
    "DEFAULT_COEFFICIENTS",
    "EAGER_TERMS",
    "GPU_TERMS",
    "TERMS",
    "StepCoefficients",
    "critical_path",
    "step_features",
    "step_row",
    "step_time_s",
]

#: The step's terms, in the order of :meth:`StepCoefficients.vector` and :func:`step_features`' columns.
TERMS: tuple[str, ...] = (
    "step",
    "seq",
    "layer",
    "moe_layer",
    "fp8_layer",
    "mla_layer",
    "weights",
    "kv",
    "decode_flops",
    "prefill_flops",
    "allreduce",
    "eager_layer",
    "eager_moe_layer",
)
#: Terms of the host's kernel launches in a step that runs without a CUDA graph (the second operand).
EAGER_TERMS: tuple[str, ...] = ("eager_layer", "eager_moe_layer")
#: Terms of the GPU's work in a step (the first operand of the step's ``max``, :func:`critical_path`): all but the
#: fixed per-step and per-sequence host costs and the eager launches.
GPU_TERMS: tuple[str, ...] = tuple(t for t in TERMS if t not in ("step", "seq", *EAGER_TERMS))
_COL = {name: i for i, name in enumerate(TERMS)}
_GPU_LIST = [_COL[t] for t in GPU_TERMS]
_PARALLEL = tuple(np.array([_COL[t] for t in group]) for group in (GPU_TERMS, EAGER_TERMS))
_IS_GPU = np.isin(np.arange(len(TERMS)), _PARALLEL[0])
_IS_EAGER = np.isin(np.arange(len(TERMS)), _PARALLEL[1])


@dataclass(frozen=True)
class StepCoefficients:
    """The step-time model's coefficients (formula and sources in the module docstring).

    Attributes:
        step_overhead_s: Fixed host time of every step (scheduling, input preparation, sampling, output
            processing), seconds.
        seq_overhead_s: Host time per scheduled sequence per step, seconds.
        layer_overhead_s: GPU time per decoder layer per step that no byte or FLOP accounts for (kernel start-up and
            tail of a layer's ~10 kernels, norms, rotary embedding), seconds.
        moe_layer_overhead_s: The same for the routed-expert block of an MoE layer (router, top-k, token sort
            ``moe_align_block_size``, two grouped GEMMs' tails, the weighted sum), seconds.
        fp8_layer_overhead_s: The same, more, for a layer with FP8 (W8A8) matmuls: vLLM 0.24.0 quantizes each
            matmul's input per token in a kernel of its own (the four of a layer: QKV, O, gate-up, down;
            torch.compile's ``fuse_norm_quant``/``fuse_act_quant`` passes are off by default, as the servers' logged
            ``compilation_config`` shows), seconds.
        mla_layer_overhead_s: The same, more, for a layer of multi-head latent attention (the latent projection and
            its norm, the rotary part, the two absorbed batched matmuls around the MLA kernel:
            ``vllm/model_executor/layers/mla.py``, ``vllm/v1/attention/backends/mla/``), seconds.
        weight_read_efficiency: Achieved fraction of the datasheet bandwidth when reading weights (0, 2].
        kv_read_efficiency: Achieved fraction of the datasheet bandwidth when reading the KV cache (0, 2].
        decode_matmul_fraction: Fraction of the decode tokens' matmul time (at peak FLOP/s) not hidden under the
            weight reads, ≥ 0.
        prefill_efficiency: Achieved fraction of peak FLOP/s in prefill (matmuls and attention), (0, 2].
        allreduce_efficiency: Achieved fraction of the link bandwidth in the TP all-reduce, (0, 2].
        eager_layer_s: Host time to launch one decoder layer's kernels when a step runs without a CUDA graph,
            seconds.
        eager_moe_layer_s: The same, added per MoE layer, seconds.
        allreduce_latency_s: Latency of one all-reduce call, seconds (not fitted).
        request_overhead_s: Time from the client sending a lone request to the engine receiving it (HTTP, JSON,
            rendering), seconds, besides the per-token part; part of TTFT and E2E, not of the steps.
        request_overhead_per_token_s: The same, per prompt token (tokenization), seconds.
        response_overhead_s: Time from the end of the engine step that made a token to the client reading it
            (output processing, detokenization, the SSE write), seconds; added to TTFT and E2E (every token is as
            late, so TPOT and ITL keep the steps' times).
        frontend_gap_s: API-server work per request that requests arriving together wait for one after another
            (the server is one process with one event loop), seconds, besides the per-token part.
        frontend_gap_per_token_s: The same, per prompt token, seconds.
        moe_routing_exponent: how independently a step's tokens pick their experts, in (0, 1]
            (:attr:`planner.predict.shape.StepShape.moe_routing_exponent`): 1 by default (independent, uniform
            routing); a calibration on a MoE model's own runs fits it.

    The five frontend figures were read off vLLM 0.24.0's own logs on one H200 host (``bench/data/h200_mechanisms``,
    eleven servers of nine models, ``bench/frontend_timing.py``): each request's "Received request" line (logged
    after tokenization, right before the engine call) against the client's send time, and each engine step's log
    line against the client's first token. A lone request reached the engine 2.96 ms after it was sent with 1,024
    prompt tokens and 3.89 ms with 3,072 (median of 32 and 14 requests: ``request_overhead_s`` 2.50 ms + 0.45 µs
    per token); the first token reached the client 2.54 ms after its step ended (46 requests); a burst of requests
    reached the engine 1.83 ms apart with 1,024-token prompts and 2.34 ms apart with 3,072 (means over 26 and 7
    first waves: ``frontend_gap_s`` 1.57 ms + 0.25 µs per token; 16-token prompts came 1.02 ms apart, one wave).
    They are host-CPU figures: a slower host, a proxy or
    TLS adds to them (``calibrate`` fits ``request_overhead_s``).
    """

    step_overhead_s: float = 0.087e-3
    seq_overhead_s: float = 8.3e-6
    layer_overhead_s: float = 38e-6
    moe_layer_overhead_s: float = 19e-6
    fp8_layer_overhead_s: float = 26e-6
    mla_layer_overhead_s: float = 26e-6
    weight_read_efficiency: float = 0.882
    kv_read_efficiency: float = 0.907
    decode_matmul_fraction: float = 0.528
    prefill_efficiency: float = 0.630
    allreduce_efficiency: float = 1.0
    eager_layer_s: float = 0.48e-3
    eager_moe_layer_s: float = 0.95e-3
    allreduce_latency_s: float = 8e-6
    request_overhead_s: float = 2.50e-3
    request_overhead_per_token_s: float = 0.45e-6
    response_overhead_s: float = 2.54e-3
    frontend_gap_s: float = 1.57e-3
    frontend_gap_per_token_s: float = 0.25e-6
    moe_routing_exponent: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise InvalidParameterError(f.name, value, "a finite number ≥ 0")
        for name in _EFFICIENCIES:
            if not 0 < getattr(self, name) <= 2:
                raise InvalidParameterError(name, getattr(self, name), "a fraction in (0, 2]")
        if not 0 < self.moe_routing_exponent <= 1:
            raise InvalidParameterError("moe_routing_exponent", self.moe_routing_exponent, "an exponent in (0, 1]")

    def request_in_s(self, prompt_tokens: float) -> float:
        """Seconds from sending a lone request of ``prompt_tokens`` to the engine receiving it."""
        return self.request_overhead_s + self.request_overhead_per_token_s * prompt_tokens

    def frontend_work_s(self, prompt_tokens: float) -> float:
        """Seconds of API-server work a request of ``prompt_tokens`` holds the next arrival behind."""
        return self.frontend_gap_s + self.frontend_gap_per_token_s * prompt_tokens

    def vector(self) -> np.ndarray:
        """The linear coefficients of :data:`TERMS`, in that order: seconds for the overheads and the eager terms,
        inverse efficiencies (``1/η``) for the bandwidth and FLOP terms, the decode matmul fraction as is."""
        return np.array(
            [
                1.0 / getattr(self, name) if name in _EFFICIENCIES else float(getattr(self, name))
                for name in _FIELD_OF_TERM.values()
            ]
        )

    @classmethod
    def from_vector(
        cls, vector: np.ndarray, *, base: StepCoefficients | None = None, **extra: float
    ) -> StepCoefficients:
        """Coefficients from a :meth:`vector` (inverse efficiencies back to efficiencies, at most 2); the fields
        outside :data:`TERMS` from ``base`` or ``extra``."""
        kept = asdict(base or cls())
        for name, x in zip(_FIELD_OF_TERM.values(), (float(v) for v in vector), strict=True):
            if name in _EFFICIENCIES:
                kept[name] = min(2.0, 1.0 / x) if x > 0 else 2.0
            else:
                kept[name] = x
        kept.update(extra)
        return cls(**kept)


#: The coefficient of each term of :data:`TERMS`.
_FIELD_OF_TERM: dict[str, str] = {
    "step": "step_overhead_s",
    "seq": "seq_overhead_s",
    "layer": "layer_overhead_s",
    "moe_layer": "moe_layer_overhead_s",
    "fp8_layer": "fp8_layer_overhead_s",
    "mla_layer": "mla_layer_overhead_s",
    "weights": "weight_read_efficiency",
    "kv": "kv_read_efficiency",
    "decode_flops": "decode_matmul_fraction",
    "prefill_flops": "prefill_efficiency",
    "allreduce": "allreduce_efficiency",
    "eager_layer": "eager_layer_s",
    "eager_moe_layer": "eager_moe_layer_s",
}
_EFFICIENCIES = frozenset(
    {"weight_read_efficiency", "kv_read_efficiency", "prefill_efficiency", "allreduce_efficiency"}
)


#: Fitted to the H200 measurements of the module docstring (``bench/default_coefficients.py``).
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
    group's window. A step of more tokens than ``shape.cudagraph_max_tokens`` runs without a CUDA graph: its
    eager columns hold its layer counts, and :func:`bind_eager` keeps either them or the GPU columns.

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
        An array ``(k, len(TERMS))``: seconds at datasheet rates for the bandwidth, FLOP and all-reduce columns;
        counts (1 per step, sequences, layers, MoE layers) for the others.
    """
    k = n_decode.shape[0]
    tokens = n_decode if prefill_tokens is None else n_decode + prefill_tokens
    weights = shape.dense_weight_bytes
    if shape.num_experts:
        reached = 1.0 - (1.0 - shape.experts_per_token / shape.num_experts) ** (tokens**shape.moe_routing_exponent)
        weights = weights + shape.expert_bytes * reached
    kv_tokens = decode_ctx if prefill_ctx is None else decode_ctx + prefill_ctx
    sampled = n_decode if n_sampled is None else n_sampled
    out = np.zeros((k, len(TERMS)))
    c = _COL
    out[:, c["step"]] = 1.0
    out[:, c["seq"]] = n_decode if n_seqs is None else n_seqs
    out[:, c["layer"]] = shape.num_layers
    out[:, c["moe_layer"]] = shape.num_moe_layers
    out[:, c["fp8_layer"]] = shape.num_layers if shape.fp8_weights else 0
    out[:, c["mla_layer"]] = shape.num_layers if shape.mla else 0
    bw = shape.memory_bandwidth_bytes_per_s
    out[:, c["weights"]] = weights / bw
    # reads of the cached context, and the writes of the step's own tokens
    out[:, c["kv"]] = (kv_tokens @ shape.kv_bytes_by_group + tokens * shape.kv_bytes_per_token) / bw
    lm_head = sampled * shape.lm_head_flops_per_token
    out[:, c["decode_flops"]] = (n_decode * shape.linear_flops_per_token + lm_head) / shape.peak_flops
    if prefill_tokens is not None:
        flops = prefill_tokens * shape.linear_flops_per_token
        if prefill_attn is not None:
            flops = flops + prefill_attn @ shape.layers_by_group * shape.attn_flops_per_token_ctx
        out[:, c["prefill_flops"]] = flops / shape.peak_flops
    if shape.allreduces_per_step:
        tp = shape.tensor_parallel_size
        moved = 2.0 * (tp - 1) / tp * tokens * shape.allreduce_bytes_per_token
        out[:, c["allreduce"]] = shape.allreduces_per_step * (allreduce_latency_s + moved / shape.link_bytes_per_s)
    eager = tokens > shape.cudagraph_max_tokens
    out[eager, c["eager_layer"]] = shape.num_layers
    out[eager, c["eager_moe_layer"]] = shape.num_moe_layers
    return out


def step_row(
    shape: StepShape,
    *,
    n_decode: int,
    decode_ctx: Sequence[float],
    prefill_tokens: int = 0,
    prefill_attn: Sequence[float] | None = None,
    prefill_ctx: Sequence[float] | None = None,
    n_sampled: int,
    n_seqs: int,
    allreduce_latency_s: float = 8e-6,
    coef: np.ndarray | None = None,
) -> np.ndarray:
    """The terms of one step, as :func:`step_features` gives them for ``k = 1``, from plain numbers: the
    simulator's general step calls it once per step, where numpy's per-call cost on one-element arrays would
    dominate. With ``coef``, the row is :func:`critical_path`'s.

    Args:
        shape: the deployment's per-GPU quantities.
        n_decode: sequences decoding one token each.
        decode_ctx: Σ over them of the tokens each attends to, per group (``len(shape.groups)``).
        prefill_tokens: prompt tokens computed in the step.
        prefill_attn / prefill_ctx: as :func:`step_features`' rows, per group; None when there is no prefill.
        n_sampled: tokens sampled. n_seqs: sequences scheduled.
        allreduce_latency_s: latency of one all-reduce call, seconds.
        coef: :meth:`StepCoefficients.vector` to resolve the eager ``max`` with, or None to leave it.

    Returns:
        A row ``(len(TERMS),)``.
    """
    tokens = n_decode + prefill_tokens
    weights = shape.dense_weight_bytes
    if shape.num_experts:
        independent = tokens**shape.moe_routing_exponent
        weights += shape.expert_bytes * (1.0 - (1.0 - shape.experts_per_token / shape.num_experts) ** independent)
    per_group = shape.kv_bytes_by_group_list
    kv = sum(x * b for x, b in zip(decode_ctx, per_group, strict=True))
    if prefill_ctx is not None:
        kv += sum(x * b for x, b in zip(prefill_ctx, per_group, strict=True))
    bw = shape.memory_bandwidth_bytes_per_s
    c = _COL
    row = [0.0] * len(TERMS)
    row[c["step"]] = 1.0
    row[c["seq"]] = float(n_seqs)
    row[c["layer"]] = float(shape.num_layers)
    row[c["moe_layer"]] = float(shape.num_moe_layers)
    row[c["fp8_layer"]] = float(shape.num_layers) if shape.fp8_weights else 0.0
    row[c["mla_layer"]] = float(shape.num_layers) if shape.mla else 0.0
    row[c["weights"]] = weights / bw
    row[c["kv"]] = (kv + tokens * shape.kv_bytes_per_token) / bw
    lm_head = n_sampled * shape.lm_head_flops_per_token
    row[c["decode_flops"]] = (n_decode * shape.linear_flops_per_token + lm_head) / shape.peak_flops
    if prefill_tokens:
        flops = prefill_tokens * shape.linear_flops_per_token
        if prefill_attn is not None:
            layers = shape.layers_by_group_list
            pairs = sum(x * n for x, n in zip(prefill_attn, layers, strict=True))
            flops += pairs * shape.attn_flops_per_token_ctx
        row[c["prefill_flops"]] = flops / shape.peak_flops
    if shape.allreduces_per_step:
        tp = shape.tensor_parallel_size
        moved = 2.0 * (tp - 1) / tp * tokens * shape.allreduce_bytes_per_token
        row[c["allreduce"]] = shape.allreduces_per_step * (allreduce_latency_s + moved / shape.link_bytes_per_s)
    if tokens > shape.cudagraph_max_tokens:
        e_layer, e_moe = c["eager_layer"], c["eager_moe_layer"]
        row[e_layer] = float(shape.num_layers)
        row[e_moe] = float(shape.num_moe_layers)
        if coef is not None:
            gpu = sum(row[i] * coef[i] for i in _GPU_LIST)
            if row[e_layer] * coef[e_layer] + row[e_moe] * coef[e_moe] > gpu:
                for i in _GPU_LIST:
                    row[i] = 0.0
            else:
                row[e_layer] = row[e_moe] = 0.0
    return np.array(row)


def critical_path(features: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """The terms that set each step's time: ``step_s = host + max(GPU work, eager launches)``.

    A step without a CUDA graph has its kernels launched one by one by the host while the GPU runs the ones
    already launched, so it takes the longer of the two (the host's scheduling and sampling, ``step`` and ``seq``,
    come before and after either way). Per row this keeps the columns of the longer part and zeroes the other's,
    so the result is linear in the coefficients again (``bound @ coef`` is the step's time), which the
    calibration's least squares needs.

    Args:
        features: rows of :func:`step_features`, ``(k, len(TERMS))``.
        coef: :meth:`StepCoefficients.vector`.

    Returns:
        A copy with, per row, the columns of the shorter part zeroed.
    """
    gpu_cols, eager_cols = _PARALLEL
    if not features[:, eager_cols].any():  # every step replays a CUDA graph
        return features
    host_bound = features[:, eager_cols] @ coef[eager_cols] > features[:, gpu_cols] @ coef[gpu_cols]
    out = features.copy()
    out[np.outer(host_bound, _IS_GPU)] = 0.0
    out[np.outer(~host_bound, _IS_EAGER)] = 0.0
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
    coef = coefficients.vector()
    return float(critical_path(features, coef)[0] @ coef)
