"""KV-cache geometry: bytes per token, paged blocks, KV tokens and max concurrency.

Formulas follow vLLM (``vllm/v1/core/kv_cache_utils.py`` and ``vllm/v1/kv_cache_interface.py``, v0.10–v0.24):

* KV heads per rank ``max(1, n_kv // tp)`` (``ModelConfig.get_num_kv_heads``): heads are replicated,
  not split, once TP exceeds their count.
* Page of one layer for ``block_size`` tokens (``vllm/v1/kv_cache_interface.py``):
  ``block_size · kv_heads_per_rank · (head_size_k + head_size_v) · dtype_bytes`` for MHA/GQA/MQA;
  ``block_size · (kv_lora_rank + qk_rope_head_dim) · dtype_bytes`` for MLA, on every TP rank.
* Uniform models: ``num_blocks = available // (page · layers)``; "GPU KV cache size" is
  ``num_blocks · block_size`` tokens.
* Hybrid sliding-window models (``_get_kv_cache_config_uniform_page_size``): layers are grouped by
  attention type into groups of ``group_size`` = the smallest per-type layer count; the groups share
  ``group_size`` pools, so ``num_blocks = available // (page · group_size)`` and the reported tokens
  are ``num_blocks // num_groups · block_size``.
* Max concurrency (``get_max_concurrency_for_kv_cache_config``): ``num_blocks`` over the blocks one
  request of ``max_model_len`` needs per pool: ``cdiv(len, block)`` for full attention,
  ``cdiv(min(window − 1 + max_num_batched_tokens, len), block) + 1`` for a sliding window.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.units import DTYPE_BYTES, ceil_div

__all__ = [
    "KV_CACHE_DTYPES",
    "KVGroup",
    "KVPool",
    "indexer_bytes_per_token",
    "kv_dtype_bytes",
    "kv_groups",
    "kv_heads_per_rank",
    "mla_bytes_per_token",
    "page_bytes_per_layer",
]

#: ``--kv-cache-dtype`` values vLLM accepts (``vllm/config/cache.py``, CacheDType).
KV_CACHE_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype: str) -> float:
    """Bytes per cached element.

    Args:
        kv_cache_dtype: ``auto`` (the model dtype, so fp32 under ``--dtype float32``), a 16-bit dtype,
            or one of the fp8 formats (1 byte).
        model_dtype: the dtype the engine runs the model in.

    Raises:
        InvalidParameterError: ``kv_cache_dtype`` is not one of :data:`KV_CACHE_DTYPES`.
    """
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InvalidParameterError("kv_cache_dtype", kv_cache_dtype, "one of " + ", ".join(KV_CACHE_DTYPES))
    if kv_cache_dtype == "auto":
        return DTYPE_BYTES[model_dtype]
    return DTYPE_BYTES[kv_cache_dtype]


def kv_heads_per_rank(num_kv_heads: int, tp: int) -> int:
    """KV heads each tensor-parallel rank caches: ``max(1, n_kv // tp)`` (vLLM ``get_num_kv_heads``)."""
    return max(1, num_kv_heads // tp)


#: Elements of DeepSeek-V3.2's fp8 caches that share one float32 scale: the indexer's keys
#: (``Indexer.quant_block_size``, ``vllm/model_executor/models/deepseek_v2.py``) and the latent of ``fp8_ds_mla``.
FP8_SCALE_BLOCK = 128


def mla_bytes_per_token(spec: ModelSpec, dtype_bytes: float) -> float:
    """One MLA layer's cached bytes per token: ``(kv_lora_rank + qk_rope_head_dim) · dtype_bytes``; for DeepSeek-V3.2
    (``index_head_dim`` set) under an fp8 KV cache the ``fp8_ds_mla`` layout: the latent in fp8 with one float32
    scale per 128, the rope part kept in bf16: 512 + 16 + 128 = 656 B (``MLAAttentionSpec.real_page_size_bytes``,
    ``vllm/v1/kv_cache_interface.py``, and ``flashmla_sparse.py``, vLLM 0.24.0)."""
    latent, rope = spec.kv_lora_rank or 0, spec.qk_rope_head_dim or 0
    if spec.index_head_dim and dtype_bytes == 1:
        return latent + latent // FP8_SCALE_BLOCK * 4 + rope * 2
    return (latent + rope) * dtype_bytes


def indexer_bytes_per_token(spec: ModelSpec) -> int:
    """DeepSeek-V3.2's lightning-indexer key cache per token per layer: ``index_head_dim`` fp8 values and one float32
    scale per 128 of them, stored as uint8 whatever ``--kv-cache-dtype`` says: 128 + 4 = 132 B
    (``DeepseekV32IndexerCache(head_dim=head_dim + head_dim // quant_block_size * 4, dtype=torch.uint8)``,
    ``vllm/model_executor/models/deepseek_v2.py``, vLLM 0.24.0); 0 for other models."""
    if not spec.index_head_dim:
        return 0
    return spec.index_head_dim + spec.index_head_dim // FP8_SCALE_BLOCK * 4


def page_bytes_per_layer(spec: ModelSpec, *, tp: int, block_size: int, dtype_bytes: float) -> int:
    """Bytes of one layer's KV page holding ``block_size`` tokens on one TP rank.

    MLA: :func:`mla_bytes_per_token` plus, on DeepSeek-V3.2, :func:`indexer_bytes_per_token` (the indexer's cache
    is an ``MLAAttentionSpec`` of its own in the same KV-cache group, so its page adds to the layer's).
    """
    if spec.is_mla:
        return int(block_size * (mla_bytes_per_token(spec, dtype_bytes) + indexer_bytes_per_token(spec)))
    heads = kv_heads_per_rank(spec.num_kv_heads, tp)
    return int(block_size * heads * (spec.head_dim + spec.v_head_dim) * dtype_bytes)


@dataclass(frozen=True)
class KVGroup:
    """Layers of one attention type on a rank.

    Attributes:
        kind: ``full``, ``sliding`` or ``chunked``.
        window_tokens: sliding window or chunk size; ``None`` for full attention.
        num_layers: layers of this kind on the rank.
    """

    kind: str
    window_tokens: int | None
    num_layers: int


def kv_groups(spec: ModelSpec, layer_range: tuple[int, int], *, hybrid: bool = True) -> tuple[KVGroup, ...]:
    """Group the layers of ``layer_range`` by attention type.

    Args:
        spec: the model.
        layer_range: (first, last+1) layers held by the rank.
        hybrid: ``False`` treats every layer as full attention, as vLLM V0 and
            ``--disable-hybrid-kv-cache-manager`` do.
    """
    counts: dict[str, int] = {}
    for kind in spec.layer_attention[layer_range[0] : layer_range[1]]:
        kind = kind if hybrid else "full"
        counts[kind] = counts.get(kind, 0) + 1
    groups = []
    for kind, n in counts.items():
        window = None
        if kind == "sliding":
            window = spec.sliding_window
        elif kind == "chunked":
            window = spec.attention_chunk_size
        groups.append(KVGroup(kind, window, n))
    return tuple(groups)


@dataclass(frozen=True)
class KVPool:
    """The paged KV cache of one GPU, as vLLM V1 lays it out.

    Attributes:
        block_size: tokens per block.
        page_bytes: bytes of one layer's page (one block of one layer).
        groups: the attention-type groups on this rank.
        group_size: layers sharing one pool (all layers for uniform models).
        num_blocks: blocks per pool ("num_gpu_blocks").
        max_num_batched_tokens: prefill chunk, which bounds what a sliding window must keep.
        extra_page_bytes: bytes every block id also holds for a speculative draft's layers (their KV-cache specs
            join the target's groups in vLLM 0.24.0, :mod:`planner.capacity.speculative`); 0 without a draft.
    """

    block_size: int
    page_bytes: int
    groups: tuple[KVGroup, ...]
    group_size: int
    num_blocks: int
    max_num_batched_tokens: int
    extra_page_bytes: int = 0

    @property
    def num_kv_groups(self) -> int:
        """KV-cache groups: ``ceil(layers_of_type / group_size)`` summed over types."""
        return sum(ceil_div(g.num_layers, self.group_size) for g in self.groups)

    @property
    def bytes_per_token(self) -> float:
        """KV bytes one token adds on this rank if every layer cached it (full attention)."""
        layers = sum(g.num_layers for g in self.groups)
        return (self.page_bytes * layers + self.extra_page_bytes) / self.block_size

    @property
    def tokens(self) -> int:
        """ "GPU KV cache size" in tokens: ``num_blocks // num_kv_groups · block_size``."""
        return self.num_blocks // max(1, self.num_kv_groups) * self.block_size

    def tokens_kept(self, group: KVGroup, context_tokens: int) -> int:
        """Tokens one request of ``context_tokens`` keeps in each KV-cache group of ``group``'s type.

        All of them for full attention; ``min(window − 1 + max_num_batched_tokens, context_tokens)`` for a sliding
        window or chunk (``SlidingWindowSpec.max_memory_usage_bytes``: the window plus one prefill chunk).
        """
        if group.window_tokens is None:
            return context_tokens
        return min(group.window_tokens - 1 + self.max_num_batched_tokens, context_tokens)

    def blocks_per_group(self, group: KVGroup, context_tokens: int) -> int:
        """Blocks one request of ``context_tokens`` takes in each KV-cache group of ``group``'s type.

        ``cdiv(tokens_kept, block_size)``, plus one for a window, which need not start on a block boundary.
        """
        need = ceil_div(self.tokens_kept(group, context_tokens), self.block_size)
        return need if group.window_tokens is None else need + 1

    def blocks_per_request(self, context_tokens: int) -> int:
        """Blocks (per pool) one request of ``context_tokens`` occupies across all groups."""
        return sum(
            ceil_div(g.num_layers, self.group_size) * self.blocks_per_group(g, context_tokens) for g in self.groups
        )

    def concurrency_at(self, context_tokens: int) -> float:
        """Requests of ``context_tokens`` each that fit at once (vLLM's "Maximum concurrency")."""
        return self.num_blocks / self.blocks_per_request(context_tokens)


def build_pool(
    groups: tuple[KVGroup, ...],
    *,
    available_bytes: float,
    page_bytes: int,
    block_size: int,
    max_num_batched_tokens: int,
    extra_page_bytes: int = 0,
) -> KVPool:
    """Lay out ``available_bytes`` of KV memory in blocks as vLLM V1 does (see module docstring).

    Args:
        groups: attention-type groups of the rank (from :func:`kv_groups`).
        available_bytes: KV memory of the rank; negative is treated as zero.
        page_bytes: one layer's page (from :func:`page_bytes_per_layer`).
        block_size: tokens per block.
        max_num_batched_tokens: prefill chunk size.
        extra_page_bytes: a speculative draft's bytes per block id (its layers' pages together).
    """
    # Uniform models keep one pool per layer; hybrid ones share pools of the smallest group.
    group_size = min((g.num_layers for g in groups), default=1)
    block_bytes = page_bytes * group_size + extra_page_bytes
    blocks = int(max(0.0, available_bytes) // block_bytes) if page_bytes else 0
    return KVPool(block_size, page_bytes, groups, group_size, blocks, max_num_batched_tokens, extra_page_bytes)


__all__ += ["build_pool"]
