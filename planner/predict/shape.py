"""What one engine step of a planned deployment touches on one GPU: bytes to read, FLOPs to do, data to all-reduce.

Everything comes from the capacity plan (:func:`planner.capacity.plan.plan`) and the model's ``config.json``, so
prediction and capacity never disagree on the deployment:

* **Weights read per step**: the rank's weights ("Model loading took") less the input embedding table (a step
  gathers only its tokens' rows; with ``tie_word_embeddings`` the LM head multiplies by that same table, so it is
  read in full: Llama-3.2-3B's logged decode step at batch 1 on vLLM 0.24.0 takes 2.60 ms, which the step model
  puts at 2.46 ms without its 0.79 GB table's read and 2.64 ms with it, ``bench/data/h200_mechanisms/README.md``)
  and less the routed experts its tokens do not reach. With ``E`` experts of which each token picks ``k``, a step of
  ``T`` tokens reaches ``E · (1 − (1 − k/E)^T)`` experts per MoE layer in expectation, under uniform routing (the
  expected number of occupied bins when ``T·k`` balls fall into ``E`` bins, picking ``k`` distinct ones per ball;
  Switch Transformer, Fedus et al. 2021, §2.2, assumes the same balanced load). Tokens whose routing is correlated
  reach fewer: ``T`` is then replaced by ``T^α`` (``moe_routing_exponent`` α ≤ 1, fitted by a calibration; on vLLM
  0.24.0 with dummy weights DeepSeek-V2-Lite's decode steps read the experts of ~11, 16 and 25 of 64 experts at 8, 32
  and 128 sequences where independent routing reaches 35, 61 and 64: α ≈ 0.35,
  ``bench/data/h200_mechanisms/README.md``).
* **KV bytes per token**, per GPU and per layer: one block's page of one layer over the block size, as the plan
  laid the cache out (``KVPool.page_bytes``: GQA/MQA heads per rank, MLA's latent, fp8 KV). Sliding-window layers
  read at most their window.
* **FLOPs per token**: ``2 ×`` the parameters a token is multiplied with, per rank (routed experts counted
  ``num_experts_per_tok`` times; :func:`planner.catalog.params.count_params`), without the embedding gather; the
  LM head only for tokens that are sampled. Attention: ``2·n_q·(d_qk + d_v)`` per query token per context token
  per layer (QKᵀ and PV), ``n_q`` per rank.
* **TP all-reduce**: two per decoder layer (after attention and after the MLP; Megatron-LM, Shoeybi et al. 2019,
  §3), each of ``T × hidden × activation bytes``; a ring moves ``2·(tp − 1)/tp`` of it over the GPU's link.
* **Layers**: the decoder layers a step runs through (all of them: the stages run one after the other), and of
  those the ones with routed experts (``config.json``'s MoE layer pattern), for the per-layer terms.
* **CUDA graphs**: vLLM captures graphs for steps of up to ``max_cudagraph_capture_size`` tokens, by default
  ``min(2 · max_num_seqs · (1 + num_speculative_tokens), 512, max_num_batched_tokens)``
  (``vllm/config/vllm.py`` ``VllmConfig._set_cudagraph_sizes``, v0.24.0); a step with more tokens (a large prefill
  chunk) has its kernels launched one by one from the host. ``enforce_eager`` captures none (0 here).
* **Pipeline parallelism** is modelled as the stages running one after the other within a step (no micro-batch
  overlap), so PP adds no per-step speed: it lets a larger model fit.

Link bandwidths per direction (datasheets): NVLink 2: 150 GB/s (V100), NVLink 3: 300 GB/s (A100), NVLink 4:
450 GB/s (H100/H200), NVLink 5: 900 GB/s (B200/GB200); PCIe x16 Gen3/4/5: 16/32/64 GB/s (PCI-SIG base
specifications); AMD MI300-series Infinity Fabric: 7 links × 64 GB/s = 448 GB/s (AMD CDNA 3 white paper).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from planner.capacity.engines.common import resolve
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.capacity.weights import DTYPE_BYTES, pp_layer_ranges, weights_bytes_per_rank
from planner.catalog.gpus import GPU
from planner.catalog.model_spec import ModelSpec
from planner.catalog.params import count_params
from planner.errors import InvalidParameterError
from planner.units import GB

__all__ = ["AttentionGroup", "StepShape", "host_link_bytes_per_s", "link_bytes_per_s", "peak_flops", "step_shape"]

#: (pattern in the catalog's ``interconnect`` text, bytes/s per direction), first match wins.
_LINKS: tuple[tuple[str, float], ...] = (
    (r"NVLink 5", 900 * GB),
    (r"NVLink 4", 450 * GB),
    (r"NVLink 3", 300 * GB),
    (r"NVLink 2", 150 * GB),
    (r"Infinity Fabric|XGMI|xGMI", 448 * GB),
    (r"(\d+) GB/s per direction", 0.0),  # read from the text
    (r"PCIe Gen6", 128 * GB),
    (r"PCIe Gen5", 64 * GB),
    (r"PCIe Gen4", 32 * GB),
    (r"PCIe Gen3", 16 * GB),
)
#: Parameter counts per model: a sizing search shapes one model on a hundred GPUs × parallelisms, and counting is
#: most of a shape's cost.
_count_params = functools.lru_cache(maxsize=64)(count_params)
#: Link assumed when the catalog says nothing: PCIe Gen4 x16.
DEFAULT_LINK_BYTES_PER_S = 32 * GB
#: Weight quantizations whose matmuls run on FP8 tensor cores (W8A8); the others dequantize to 16-bit.
_FP8_COMPUTE = frozenset({"fp8", "fbgemm_fp8", "modelopt", "compressed-tensors-fp8"})


@dataclass(frozen=True)
class AttentionGroup:
    """Decoder layers of one attention type, summed over the pipeline stages.

    Attributes:
        kind: ``full``, ``sliding`` or ``chunked``.
        window_tokens: the window (or chunk) a layer attends to; None for full attention.
        num_layers: layers of this kind in the model.
        kv_bytes_per_token_layer: KV bytes one token occupies in one such layer, on one GPU.
    """

    kind: str
    window_tokens: int | None
    num_layers: int
    kv_bytes_per_token_layer: float


@dataclass(frozen=True)
class StepShape:
    """Per-GPU quantities one engine step of a deployment involves (formulas in the module docstring).

    Attributes:
        model_id / gpu_id: what was planned.
        tensor_parallel_size / pipeline_parallel_size: the parallelism.
        dense_weight_bytes: weights every step reads, on one GPU of each stage, summed over stages, bytes.
        expert_bytes: routed experts on one GPU of each stage, summed over stages, bytes (0 for dense models).
        num_experts / experts_per_token: routing (0 / 0 for dense models).
        linear_flops_per_token: matmul FLOPs of one token through the decoder layers, per GPU, summed over stages.
        lm_head_flops_per_token: FLOPs of the LM head for one sampled token, per GPU.
        attn_flops_per_token_ctx: attention FLOPs per query token per context token per layer, per GPU.
        groups: the attention groups (their KV bytes per token per layer, per GPU).
        allreduce_bytes_per_token: bytes one token adds to one all-reduce (hidden × activation bytes); 0 at TP 1.
        allreduces_per_step: all-reduce calls per step (2 per layer at TP > 1, else 0).
        memory_bandwidth_bytes_per_s: the GPU's datasheet memory bandwidth.
        peak_flops: the GPU's dense tensor throughput for the weights' compute dtype, FLOP/s.
        link_bytes_per_s: the GPU's link bandwidth per direction (for the all-reduce).
        block_size / num_gpu_blocks / max_num_seqs / max_num_batched_tokens / max_model_len: the engine's KV pool
            and scheduler limits, as planned.
        num_layers: decoder layers a step runs through (all stages).
        num_moe_layers: those of them with routed experts (0 for dense models).
        cudagraph_max_tokens: most tokens of a step that runs as a CUDA graph (0: none does, ``enforce_eager``).
        async_scheduling: the engine schedules each step while the one before it runs (vLLM's asynchronous
            scheduling, on by default in v0.24.0 except with a draft-model or n-gram drafter:
            ``vllm/config/vllm.py`` ``VllmConfig.__post_init__``), so a request that reaches a busy engine waits for
            the step under way and the one already scheduled after it.
        mla: the model caches a multi-head latent attention latent (DeepSeek-V2/V3).
        fp8_weights: its matmuls run on FP8 weights (:func:`peak_flops`).
        moe_routing_exponent: how independently a step's tokens pick experts: ``T`` tokens reach the experts
            ``T ** moe_routing_exponent`` independent tokens would (module docstring). 1 (the default) is independent
            uniform routing; a calibration fits less for a model whose tokens keep to a few experts.
    """

    model_id: str
    gpu_id: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    dense_weight_bytes: float
    expert_bytes: float
    num_experts: int
    experts_per_token: int
    linear_flops_per_token: float
    lm_head_flops_per_token: float
    attn_flops_per_token_ctx: float
    groups: tuple[AttentionGroup, ...]
    allreduce_bytes_per_token: float
    allreduces_per_step: int
    memory_bandwidth_bytes_per_s: float
    peak_flops: float
    link_bytes_per_s: float
    block_size: int
    num_gpu_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    num_layers: int = 0
    num_moe_layers: int = 0
    cudagraph_max_tokens: int = 512
    async_scheduling: bool = True
    mla: bool = False
    fp8_weights: bool = False
    moe_routing_exponent: float = 1.0

    @functools.cached_property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one token adds on one GPU when every layer keeps it (full attention), summed over stages."""
        return sum(g.kv_bytes_per_token_layer * g.num_layers for g in self.groups)

    @functools.cached_property
    def kv_bytes_by_group(self) -> np.ndarray:
        """KV bytes per token of each group (all its layers), on one GPU: ``(G,)``."""
        return np.array([g.kv_bytes_per_token_layer * g.num_layers for g in self.groups], dtype=float)

    @functools.cached_property
    def kv_bytes_by_group_list(self) -> list[float]:
        """:attr:`kv_bytes_by_group` as plain floats."""
        return self.kv_bytes_by_group.tolist()

    @functools.cached_property
    def layers_by_group_list(self) -> list[float]:
        """:attr:`layers_by_group` as plain floats."""
        return self.layers_by_group.tolist()

    @functools.cached_property
    def layers_by_group(self) -> np.ndarray:
        """Layers of each group: ``(G,)``."""
        return np.array([g.num_layers for g in self.groups], dtype=float)


def link_bytes_per_s(gpu: GPU) -> float:
    """Per-direction bandwidth of the GPU's scale-up link, bytes/s (table in the module docstring)."""
    text = gpu.interconnect or ""
    for pattern, value in _LINKS:
        m = re.search(pattern, text)
        if m:
            return float(m.group(1)) * GB if value == 0.0 else value
    return DEFAULT_LINK_BYTES_PER_S


def host_link_bytes_per_s(gpu: GPU) -> float:
    """Per-direction bandwidth of the GPU's PCIe link to its host (and its NICs), bytes/s: the PCIe rows of the table
    in the module docstring; PCIe Gen4 x16 when the catalog names none."""
    text = gpu.interconnect or ""
    for pattern, value in _LINKS:
        if pattern.startswith("PCIe") and re.search(pattern, text):
            return value
    return DEFAULT_LINK_BYTES_PER_S


def peak_flops(gpu: GPU, quantization: str) -> float:
    """Dense tensor FLOP/s the step's matmuls run at: FP8 for W8A8 FP8 weights, else BF16 (FP16 where BF16 is absent).

    Raises:
        InvalidParameterError: the catalog has no TFLOPS figure for this GPU.
    """
    tflops = None
    if quantization in _FP8_COMPUTE:
        tflops = gpu.fp8_tflops
    tflops = tflops or gpu.bf16_tflops or gpu.fp16_tflops
    if not tflops:
        raise InvalidParameterError("gpu", gpu.name, "a GPU with a TFLOPS figure in the catalog to predict latency")
    return tflops * 1e12


def step_shape(plan: Plan, spec: ModelSpec | None = None) -> StepShape:
    """The per-GPU step quantities of a planned vLLM deployment.

    Args:
        plan: a plan that fits (``plan.pool`` set), from :func:`planner.capacity.plan.plan`.
        spec: the model, when it was given to the planner instead of resolved from ``plan.scenario.model``.

    Returns:
        The shape.

    Raises:
        InvalidParameterError: the plan does not fit (no KV pool), or the GPU lacks a bandwidth or TFLOPS figure.
    """
    if plan.pool is None or not plan.fits or plan.num_gpu_blocks is None:
        raise InvalidParameterError("plan", plan.model_id, "a configuration that fits (a KV cache to schedule)")
    s = plan.scenario
    r = resolve(s, spec)
    spec, gpu = r.spec, r.gpu
    if not gpu.memory_bandwidth_bytes_per_s:
        raise InvalidParameterError("gpu", gpu.name, "a GPU with a memory bandwidth figure in the catalog")
    tp, pp = s.tensor_parallel_size, s.pipeline_parallel_size
    dense = experts = 0.0
    for stage in range(pp):
        split = weights_bytes_per_rank(spec, method=r.quantization, dtype=r.dtype, tp=tp, pp=pp, stage=stage)
        # A tied LM head multiplies by the embedding table itself, so every step reads it in full.
        gathered = 0.0 if spec.tie_word_embeddings else split.embedding_bytes
        dense += split.total_bytes - gathered - split.experts_bytes
        experts += split.experts_bytes
    counts = _count_params(spec)
    lm_head_params = spec.vocab_size * spec.hidden_size
    body_active = counts.active - counts.embedding - counts.lm_head - counts.vision
    kv_layer = plan.pool.page_bytes / plan.pool.block_size
    by_kind: dict[tuple[str, int | None], int] = {}
    for first, last in pp_layer_ranges(spec.num_layers, pp):
        for i in range(first, last):
            kind = spec.layer_attention[i] if spec.layer_attention else "full"
            window = None
            if kind == "sliding":
                window = spec.sliding_window
            elif kind == "chunked":
                window = spec.attention_chunk_size
            key = (kind if window else "full", window)
            by_kind[key] = by_kind.get(key, 0) + 1
    groups = tuple(AttentionGroup(k, w, n, kv_layer) for (k, w), n in sorted(by_kind.items(), key=str))
    q_heads_rank = spec.num_attention_heads / tp
    act_bytes = DTYPE_BYTES[r.dtype]
    max_num_seqs = plan.max_num_seqs or 256
    max_num_batched_tokens = plan.max_num_batched_tokens or 8192
    return StepShape(
        model_id=plan.model_id,
        gpu_id=gpu.id,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        dense_weight_bytes=dense,
        expert_bytes=experts,
        num_experts=spec.num_experts,
        experts_per_token=spec.num_experts_per_tok if spec.num_experts else 0,
        linear_flops_per_token=2.0 * body_active / tp,
        lm_head_flops_per_token=2.0 * lm_head_params / tp,
        attn_flops_per_token_ctx=2.0 * q_heads_rank * (spec.head_dim + spec.v_head_dim),
        groups=groups,
        allreduce_bytes_per_token=spec.hidden_size * act_bytes if tp > 1 else 0.0,
        allreduces_per_step=2 * spec.num_layers if tp > 1 else 0,
        memory_bandwidth_bytes_per_s=float(gpu.memory_bandwidth_bytes_per_s),
        peak_flops=peak_flops(gpu, r.quantization),
        link_bytes_per_s=link_bytes_per_s(gpu),
        block_size=plan.block_size,
        num_gpu_blocks=plan.num_gpu_blocks,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=plan.max_model_len,
        num_layers=spec.num_layers,
        num_moe_layers=sum(spec.moe_layers) if spec.num_experts else 0,
        cudagraph_max_tokens=0 if s.enforce_eager else min(2 * max_num_seqs, 512, max_num_batched_tokens),
        async_scheduling=_async_scheduling(s),
        mla=spec.is_mla,
        fp8_weights=r.quantization in _FP8_COMPUTE,
    )


#: Speculative methods whose drafter turns vLLM 0.24.0's asynchronous scheduling off (``vllm/config/vllm.py``: only
#: the EAGLE family, MTP and the GPU n-gram proposer keep it).
_SYNC_SPEC_METHODS = frozenset({"draft_model", "ngram"})


def _async_scheduling(scenario: Scenario) -> bool:
    """Whether vLLM schedules this deployment's steps one ahead (:attr:`StepShape.async_scheduling`)."""
    spec = scenario.speculative_config
    return spec is None or spec.method not in _SYNC_SPEC_METHODS
