"""The memory terms of vLLM's start-up accounting, counted from the engine's source by version.

vLLM sizes the KV cache as ``total × gpu_memory_utilization − weights − activation peak − non-torch − CUDA-graph
estimate`` (:mod:`planner.capacity.engines.vllm`). This module counts the three terms that are not weights, each
from what vLLM allocates:

**Activation peak** (the rise of ``torch.cuda.memory_stats()["allocated_bytes.all.peak"]`` during
``profile_run``). The profile run is one dummy forward of ``max_num_batched_tokens`` tokens, then, on the last
pipeline stage, a dummy sampler run over ``min(max_num_seqs, max_num_batched_tokens)`` rows of logits
(``vllm/v1/worker/gpu_model_runner.py::profile_run``, ``_dummy_sampler_run``; V0:
``vllm/worker/model_runner.py::profile_run``). The peak is the larger of

* the forward's widest moment: for a dense MLP ``T · (2h + (3i + qkv)/tp)`` elements (the layer's input and
  residual, the gate-up output, the activation output and the QKV projection); for a fused-MoE layer the
  input and residual plus the expert workspaces of :func:`moe_workspace_bytes`;
* the sampler's: ``rows × vocab × bytes_per_logit`` (:func:`sampler_bytes_per_logit`, by code path) plus the
  forward's hidden states ``T · h`` that stay alive through it, plus the MoE workspaces where vLLM keeps them
  allocated between layers (the ``WorkspaceManager`` of ``vllm/v1/worker/workspace.py``, v0.14+).

**Non-torch memory** (device memory used outside torch's allocator that appeared after the profiling
baseline, ``vllm/utils/mem_utils.py::memory_profiling``): CUDA modules loaded lazily by the first forward and
cuBLAS workspaces (a fitted figure at tensor parallelism 1), plus, at TP > 1, NCCL's buffers for the ring the
all-reduces use (:func:`nccl_buffer_bytes`; NCCL connects lazily, so they appear in the profile run), plus on
NVSwitch systems with NVLink SHARP from v0.18 a fitted surplus. vLLM's custom all-reduce
(:func:`custom_all_reduce`) sets up its IPC buffers before the baseline, so from v0.10 they come out of the
``1 − gpu_memory_utilization`` headroom, not the budget.

**CUDA-graph estimate** (``profile_cudagraph_memory``, subtracted from v0.21): a pool per captured graph and
layer times the graphs the capture sizes give (:func:`cuda_graph_sizes`).

Not in the budget: the CUDA context (a few hundred MiB per process) and NCCL's and the custom all-reduce's
init-time allocations exist before vLLM's profiling baseline (``init_snapshot``, taken after
``init_worker_distributed_environment`` in ``vllm/v1/worker/gpu_worker.py``), so from V1 v0.10 they only take from
the ``1 − gpu_memory_utilization`` headroom. Older accounting counted from process start: V0 v0.6.3/0.6.4's
``non_torch = used − torch allocated`` includes the context (the 0.35 GiB of logs 1 and 2), and V0 from v0.6.5 takes
its baseline before NCCL is set up (the fitted ``nvlink_extra_v0``). cuBLAS and cuBLASLt workspaces come from torch's
allocator (PyTorch's ``CUBLAS_WORKSPACE_CONFIG``), so they land in the activation peak or, with the CUDA modules the
first forward loads, in the fitted TP-1 non-torch figure.

Constants fitted to logs live in :mod:`planner.capacity.engines.vllm_fitted`, each with its records.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.engines.vllm_fitted import fitted
from planner.catalog.gpus import GPU
from planner.catalog.model_spec import ModelSpec
from planner.units import MIB

__all__ = [
    "CUSTOM_ALL_REDUCE_BUFFER_BYTES",
    "CUSTOM_ALL_REDUCE_WORLD_SIZES",
    "MAX_CUDAGRAPH_CAPTURE_SIZE",
    "NCCL_CHANNELS",
    "NCCL_CONNECTION_BYTES",
    "NCCL_CONNECTORS_PER_CHANNEL",
    "SAMPLER_PATHS",
    "V2_RUNNER_ARCHITECTURES",
    "CustomAllReduce",
    "NonTorch",
    "cuda_graph_sizes",
    "custom_all_reduce",
    "dense_forward_bytes",
    "moe_workspace_bytes",
    "nccl_buffer_bytes",
    "non_torch",
    "sampler_bytes_per_logit",
]

#: NCCL's SIMPLE-protocol buffer per connection: ``DEFAULT_BUFFSIZE`` = 1 << 22 (NCCL ``src/init.cc``,
#: ``NCCL_BUFFSIZE``).
NCCL_SIMPLE_BUFFER_BYTES = 1 << 22
#: NCCL's LL buffer: ``NCCL_LL_LINES_PER_THREAD`` 8 × ``NCCL_LL_MAX_NTHREADS`` 512 × ``NCCL_STEPS`` 8 × 16-byte
#: ``ncclLLFifoLine`` (NCCL ``src/include/device.h``).
NCCL_LL_BUFFER_BYTES = 8 * 512 * 8 * 16
#: NCCL's LL128 buffer: ``NCCL_LL128_ELEMS_PER_THREAD`` 120 × ``NCCL_LL128_MAX_NTHREADS`` 640 × ``NCCL_STEPS`` 8 ×
#: 8 bytes (NCCL ``src/include/device.h``).
NCCL_LL128_BUFFER_BYTES = 120 * 640 * 8 * 8
#: One NCCL connection's buffers, all three protocols: 9,633,792 B = 9.19 MiB (the "9.19 MiB per proxy connection"
#: seen pinned in host memory for network connections, tonyd2wild/DeepSeek-V4.1-Flash-vLLM-DGX-Spark#8).
NCCL_CONNECTION_BYTES = NCCL_SIMPLE_BUFFER_BYTES + NCCL_LL_BUFFER_BYTES + NCCL_LL128_BUFFER_BYTES
#: Connectors with buffers per channel and rank for the ring the all-reduces use: one receiving from the previous
#: rank, one sending to the next. Checked on v0.11 H100 TP 2 logs (ids 30, 36): 0.13 GiB at TP 1 +
#: 24 × 2 × 9.19 MiB = 0.56 GiB against 0.55 and 0.54 logged.
NCCL_CONNECTORS_PER_CHANNEL = 2
#: Collective channels NCCL builds, by ``GPU.link``, as NCCL logs them ("N coll channels"): 24 between NVLink-
#: connected data-centre GPUs (a 2-GPU NVLink node, "24 coll channels ... via P2P/direct pointer/read"), 12 on the
#: V100 NVLink mesh ("12 coll channels ... via P2P/CUMEM"), 2 over PCIe ("2 coll channels ... via P2P/CUMEM/read"
#: on 4 PCIe GPUs); public NCCL_DEBUG=INFO logs. ``xgmi`` (RCCL) is taken as NVSwitch-like, not verified; ``roce``
#: (Gaudi) does not use NCCL.
NCCL_CHANNELS: dict[str, int] = {"nvswitch": 24, "nvlink": 12, "xgmi": 24, "pcie": 2, "roce": 0}
#: World sizes vLLM's custom all-reduce supports (``CustomAllreduce._SUPPORTED_WORLD_SIZES``,
#: ``vllm/distributed/device_communicators/custom_all_reduce.py``, v0.24.0).
CUSTOM_ALL_REDUCE_WORLD_SIZES = (2, 4, 6, 8)
#: Device memory the custom all-reduce allocates per rank: the metadata-plus-scratch buffer and the IPC buffer of
#: ``max_size`` = 8 MiB each and the 8 MiB ``rank_data`` (``custom_all_reduce.py``, v0.24.0; ``meta_size`` is
#: a few KiB and left out).
CUSTOM_ALL_REDUCE_BUFFER_BYTES = 3 * 8 * MIB
#: Largest batch vLLM captures a CUDA graph for by default: ``min(max_num_seqs × 2, 512)``
#: (``vllm/config/vllm.py::_set_cudagraph_sizes``, v0.24.0).
MAX_CUDAGRAPH_CAPTURE_SIZE = 512
#: Architectures vLLM runs on its V2 model runner by default (``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``,
#: ``vllm/config/vllm.py``, v0.24.0): its profile run skips attention, its sampler keeps only the model-dtype and
#: fp32 logits, and it estimates no CUDA-graph memory (``GPUModelRunner.profile_cudagraph_memory`` returns 0,
#: ``vllm/v1/worker/gpu/model_runner.py``).
V2_RUNNER_ARCHITECTURES = frozenset(
    {
        "Qwen3ForCausalLM",
        "DeepseekV2ForCausalLM",
        "Qwen2MoeForCausalLM",
        "GraniteMoeForCausalLM",
        "LlamaForCausalLM",
        "MistralForCausalLM",
    }
)
#: The dummy sampler run's code paths, by version (:func:`sampler_bytes_per_logit`).
SAMPLER_PATHS = ("v0_sort", "v1_sort", "v1_flashinfer", "v1_triton", "v2")


def sampler_bytes_per_logit(path: str, act_bytes: float) -> float:
    """Peak bytes per element of the ``rows × vocab`` logits during the dummy sampler run.

    * ``v0_sort``: V0's sampler with the profile run's ``top_p=0.99, top_k=vocab-1`` sorts the vocabulary
      (fitted, :data:`~planner.capacity.engines.vllm_fitted.CONSTANTS` ``sampler_bytes_v0``, about 38.6 B).
    * ``v1_sort``: V1's PyTorch sort path (v0.8-v0.9, v0.11-v0.16; fitted ``sampler_bytes_v1_sort``, 38.4 B).
    * ``v1_flashinfer``: v0.10, whose FlashInfer top-k/top-p kernel was on by default (flashinfer-python a vLLM
      dependency; vLLM PR #26859 turned it off after v0.11.0): model-dtype logits, fp32 logits, FlashInfer's top-k
      masked logits and probabilities, ``act_bytes + 12``.
    * ``v1_triton``: v0.17+, the in-place Triton top-k/top-p, then softmax and exponential noise (fitted
      ``sampler_bytes_v1_triton``, 14.9 B; counted 14 B from ``vllm/v1/sample/sampler.py``, v0.24.0). From about
      v0.20 FlashInfer runs first but a second call warms the native path (vLLM PR #41375), so the peak stays.
    * ``v2``: the V2 runner's sampler (``vllm/v1/worker/gpu/sample/sampler.py``, v0.24.0) copies the logits to
      fp32 and samples in a Triton kernel (Gumbel-max); the dummy batch sets no top-k/top-p: ``act_bytes + 4``.

    Args:
        path: one of :data:`SAMPLER_PATHS`.
        act_bytes: bytes of the model dtype (the logits the LM head writes).

    Raises:
        KeyError: unknown path.
    """
    if path == "v2":
        return act_bytes + 4
    if path == "v1_flashinfer":
        return act_bytes + 12
    name = {"v0_sort": "sampler_bytes_v0", "v1_sort": "sampler_bytes_v1_sort", "v1_triton": "sampler_bytes_v1_triton"}
    return fitted(name[path])


def dense_forward_bytes(spec: ModelSpec, tokens: int, tp: int, act_bytes: float) -> float:
    """The dense forward's widest moment: ``T · (2h + (3i + qkv)/tp) · act_bytes``.

    The MLP's input and residual (``2h``, not sharded), its gate-up output (``2i/tp``) and activation output
    (``i/tp``), and the QKV projection (``(heads + 2·kv_heads) · head_dim / tp``) of the widest dense layer.
    For an MoE model the widest dense layer (DeepSeek's first layers), if any.
    """
    inter = max(spec.dense_intermediate_sizes or (spec.intermediate_size,))
    if spec.is_moe and not any(not moe for moe in spec.moe_layers):
        inter = 0
    qkv = (spec.num_attention_heads + 2 * spec.num_kv_heads) * spec.head_dim
    return tokens * (2 * spec.hidden_size + (3 * inter + qkv) / tp) * act_bytes


def moe_workspace_bytes(spec: ModelSpec, tokens: int, tp: int, act_bytes: float, *, fp8_activations: bool) -> float:
    """Fused-MoE scratch of one layer for ``tokens`` tokens, in bytes (0 for a dense model).

    The Triton experts (``vllm/model_executor/layers/fused_moe/experts/triton_moe.py::workspace_shapes``, v0.24.0)
    ask for ``workspace13 = M × topk × max(N/2, K)`` and ``workspace2 = M × topk × max(N, K)`` elements of the
    activation dtype, with ``N = 2 · moe_intermediate / tp`` (gate and up) and ``K = hidden``; the output shares
    workspace13 (``modular_kernel.py::_allocate_buffers``). ``K`` is not split by TP, so at TP 4 the workspaces
    stay as wide as at TP 1 while the dense formula shrinks. FP8 activations (block-FP8 and FP8 checkpoints) are
    quantized first: ``M × K`` and ``M × topk × N/2`` more bytes, one each. Shared experts add a dense MLP of
    ``3 · shared_intermediate / tp`` per token.
    """
    if not spec.is_moe:
        return 0.0
    n = 2 * spec.moe_intermediate_size / tp
    k = spec.hidden_size
    topk = spec.num_experts_per_tok
    workspaces = tokens * topk * (max(n / 2, k) + max(n, k)) * act_bytes
    quantized = tokens * (k + topk * n / 2) if fp8_activations else 0.0
    shared = tokens * 3 * spec.shared_expert_intermediate_size / tp * act_bytes
    return workspaces + quantized + shared


def cuda_graph_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The batch sizes vLLM captures CUDA graphs for: ``(piecewise, full)``.

    ``[1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)`` with ``max = min(max_num_seqs × 2, 512,
    max_num_batched_tokens)`` (``vllm/config/vllm.py::_set_cudagraph_sizes``, v0.24.0) for the piecewise graphs of
    mixed batches; FULL graphs (the default ``FULL_AND_PIECEWISE`` mode) for uniform decode batches of at most
    ``max_num_seqs`` requests. 256 sequences and 8192 tokens: 51 and 35, as vLLM 0.24.0 logs "PIECEWISE=51
    (largest=512), FULL=35 (largest=256)".
    """
    largest = min(max_num_seqs * 2, MAX_CUDAGRAPH_CAPTURE_SIZE, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= largest]
    sizes += list(range(8, min(largest + 1, 256), 8))
    sizes += list(range(256, largest + 1, 16))
    return tuple(sizes), tuple(s for s in sizes if s <= max_num_seqs)


@dataclass(frozen=True)
class CustomAllReduce:
    """Whether vLLM's custom all-reduce is set up for a TP group, and why.

    Attributes:
        enabled: it is set up (otherwise every all-reduce goes through NCCL).
        reason: the rule of ``custom_all_reduce.py`` that decided it, in words.
        buffer_bytes: its device buffers per rank (0 when off); allocated before vLLM's profiling baseline, so
            from v0.10 they come out of the ``1 − gpu_memory_utilization`` headroom.
    """

    enabled: bool
    reason: str
    buffer_bytes: float


def custom_all_reduce(tp: int, gpu: GPU, *, spans_nodes: bool) -> CustomAllReduce:
    """vLLM's custom all-reduce decision for a TP group of ``tp`` GPUs (``CustomAllreduce.__init__``,
    ``vllm/distributed/device_communicators/custom_all_reduce.py``, v0.24.0; the same rules since v0.5).

    Off at TP 1, for a group spanning nodes, for world sizes other than 2, 4, 6, 8, for more than two GPUs that
    are not all NVLink-connected ("not supported on more than two PCIe-only GPUs"), and without CUDA peer-to-peer.
    """
    if tp == 1:
        return CustomAllReduce(False, "TP 1: no all-reduce", 0.0)
    if spans_nodes:
        return CustomAllReduce(False, "the TP group spans nodes; NCCL all-reduces over the network", 0.0)
    if tp not in CUSTOM_ALL_REDUCE_WORLD_SIZES:
        return CustomAllReduce(False, f"world size {tp} is not one of 2, 4, 6, 8; NCCL all-reduces", 0.0)
    fully_connected = gpu.link in ("nvswitch", "xgmi")
    if tp > 2 and not fully_connected:
        return CustomAllReduce(False, f"{tp} GPUs without NVLink between every pair; NCCL all-reduces", 0.0)
    if gpu.p2p is False:
        return CustomAllReduce(False, "no CUDA peer-to-peer between the GPUs (GeForce drivers); NCCL all-reduces", 0.0)
    if gpu.link is None:
        return CustomAllReduce(False, "interconnect unknown (custom GPU): planned without it", 0.0)
    return CustomAllReduce(True, f"{tp} GPUs with peer-to-peer over {gpu.link}", float(CUSTOM_ALL_REDUCE_BUFFER_BYTES))


def nccl_buffer_bytes(tp: int, link: str | None) -> float:
    """NCCL's ring buffers per rank for a TP group: channels × connectors × one connection's buffers.

    ``NCCL_CHANNELS[link] × NCCL_CONNECTORS_PER_CHANNEL × NCCL_CONNECTION_BYTES``: 0.43 GiB with NVSwitch, 0.22 GiB
    on an NVLink mesh, 0.036 GiB over PCIe; 0 at TP 1. An unknown link is planned as PCIe.
    """
    if tp <= 1:
        return 0.0
    channels = NCCL_CHANNELS.get(link or "pcie", NCCL_CHANNELS["pcie"])
    return channels * NCCL_CONNECTORS_PER_CHANNEL * NCCL_CONNECTION_BYTES


@dataclass(frozen=True)
class NonTorch:
    """Non-torch memory of one rank and what it is made of.

    Attributes:
        total_bytes: the sum of ``parts``.
        parts: ``(what, bytes)`` pairs, each one mechanism.
    """

    total_bytes: float
    parts: tuple[tuple[str, float], ...]


def non_torch(*, base: str, tp: int, pp: int, gpu: GPU, v0_init_buffers: bool, nvls_extra: bool) -> NonTorch:
    """Non-torch memory a rank adds during the profile run (see the module docstring).

    Args:
        base: the fitted TP-1 constant of the version (``non_torch_tp1_v1``, ...).
        tp / pp: tensor and pipeline parallel sizes.
        gpu: the GPU (its ``link`` and ``nvls``).
        v0_init_buffers: V0 accounting, whose baseline precedes NCCL and custom all-reduce set-up (their
            init-time buffers on NVLink count: the fitted ``nvlink_extra_v0``).
        nvls_extra: v0.18+, where NVSwitch systems with NVLink SHARP show the fitted ``nvls_extra_v018``.
    """
    if tp == 1 and pp > 1:
        value = fitted("non_torch_pp_v018")
        return NonTorch(value, (("CUDA modules and workspaces, pipeline-parallel rank", value),))
    parts = [("CUDA modules loaded by the first forward, cuBLAS workspaces", fitted(base))]
    if tp > 1:
        link = gpu.link or "pcie"
        channels = NCCL_CHANNELS.get(link, NCCL_CHANNELS["pcie"])
        parts.append((f"NCCL ring buffers ({channels} channels over {link})", nccl_buffer_bytes(tp, gpu.link)))
        if v0_init_buffers and link in ("nvswitch", "nvlink", "xgmi"):
            parts.append(("NCCL and custom all-reduce buffers set up at init (V0)", fitted("nvlink_extra_v0")))
        if nvls_extra and gpu.nvls:
            parts.append(("NVLink SHARP and symmetric-memory all-reduce buffers", fitted("nvls_extra_v018")))
    return NonTorch(sum(v for _, v in parts), tuple(parts))
