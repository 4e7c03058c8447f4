"""The KV-cache layout of a vLLM plan in the engine's own terms: KV-cache groups, attention types, windows, pages.

How vLLM V1 lays the KV cache out (``vllm/v1/core/kv_cache_utils.py::get_kv_cache_groups`` and
``get_kv_cache_config_from_groups``, ``vllm/v1/kv_cache_interface.py``, v0.10–v0.24):

* A model whose layers all cache the same way (every layer full attention, as Llama) forms one KV-cache group of
  every layer of the GPU: a block id is ``block_size`` tokens of every layer.
* A hybrid model under the hybrid KV-cache manager (``_get_kv_cache_groups_uniform_page_size``) has its layers
  grouped by attention type into groups of ``group_size`` layers, the smallest per-type layer count (gemma-3: 40
  sliding-window and 8 full layers make 5 + 1 groups of 8), the last group of a type padded when the type does not
  divide. ``group_size`` memory pools are each shared by one layer of every group, so a block id is one page in
  ``group_size`` layers, and each group keeps its own block table: a token occupies a slot in a block of every
  group that still holds it.
* Without the hybrid manager (vLLM V1 before v0.10 in :data:`planner.capacity.engines.vllm.VERSION_PROFILES`, V0,
  or ``--disable-hybrid-kv-cache-manager``) ``unify_hybrid_kv_cache_specs`` turns sliding-window layers into full
  attention: every layer keeps every token of the request.
* One request of ``max_model_len`` tokens takes, in each group (``KVCacheSpec.max_memory_usage_bytes``):
  ``cdiv(max_model_len, block_size)`` blocks for full attention, and ``cdiv(min(window − 1 +
  max_num_batched_tokens, max_model_len), block_size) + 1`` for a sliding window (``SlidingWindowSpec``: the window
  plus one prefill chunk, and one more block because the window need not start on a block boundary).

:class:`KvLayout` is built by :func:`planner.capacity.engines.vllm.plan_vllm` from the numbers it plans with and
travels on :attr:`planner.capacity.result.Plan.kv_layout`; :mod:`planner.capacity.explain` turns it into sentences.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from planner.capacity.kv_cache import KVPool, indexer_bytes_per_token, kv_heads_per_rank
from planner.catalog.model_spec import ModelSpec
from planner.units import ceil_div

__all__ = ["KvGroupType", "KvLayout", "build_kv_layout", "kv_bytes_per_token_model"]

#: How a version prints "GPU KV cache size" (:attr:`KvLayout.kv_tokens_rule`).
KV_TOKENS_RULES = ("v0_blocks", "blocks_over_groups", "concurrency_times_len")


@dataclass(frozen=True)
class KvGroupType:
    """The KV-cache groups of one attention type on the limiting GPU, as the engine caches them.

    Attributes:
        attention: ``full``, ``sliding`` (sliding window) or ``chunked`` (chunked local attention).
        window_tokens: the window or chunk, tokens; None for full attention.
        num_layers: layers of this type on the GPU.
        num_groups: KV-cache groups they form, ``cdiv(num_layers, group_size)``.
        padding_layers: empty layer slots the last group is padded with, ``num_groups · group_size − num_layers``.
        tokens_per_request: tokens one request of ``max_model_len`` keeps in each of these groups: ``max_model_len``
            for full attention, ``min(window − 1 + max_num_batched_tokens, max_model_len)`` for a window.
        blocks_per_request: blocks that request takes in each of these groups, ``cdiv(tokens_per_request,
            block_size)``, plus one for a window.
        kv_bytes_per_token_per_gpu: bytes one token adds in these layers on one GPU while they keep it,
            ``page_bytes_per_layer / block_size × num_layers``.
    """

    attention: str
    window_tokens: int | None
    num_layers: int
    num_groups: int
    padding_layers: int
    tokens_per_request: int
    blocks_per_request: int
    kv_bytes_per_token_per_gpu: float


@dataclass(frozen=True)
class KvLayout:
    """The paged KV cache of the limiting GPU, with the figures that explain its tokens, blocks and concurrency.

    Per GPU unless the name says ``model`` or ``all_gpus``. Bytes are bytes, lengths are tokens.

    Attributes:
        engine_version: the vLLM version planned.
        engine_arch: ``v0`` or ``v1``.
        hybrid_kv_cache_manager: the version groups layers by attention type (sliding windows keep only the window).
        layers_cached_as_full: sliding-window or chunked layers of the GPU that the version caches as full
            attention (no hybrid manager); 0 otherwise.
        block_size_tokens: tokens per block (``--block-size``).
        page_bytes_per_layer: one block of one layer, ``block_size · kv_heads_per_gpu · (head_dim + v_head_dim) ·
            dtype bytes`` (MLA: ``block_size · (kv_lora_rank + qk_rope_head_dim) · dtype bytes``).
        group_size_layers: layers per KV-cache group (all the GPU's layers for a uniform model).
        block_bytes: one block id across the pool, ``page_bytes_per_layer · group_size_layers``: the unit the KV
            memory is divided into.
        num_kv_cache_groups: KV-cache groups, each with its own block table.
        group_types: the groups by attention type.
        num_layers_per_gpu: decoder layers on the GPU (its pipeline stage).
        num_layers_model: decoder layers of the model.
        kv_heads_per_gpu: KV heads each GPU caches, ``max(1, num_kv_heads // tp)`` (1 latent for MLA).
        num_kv_heads_model: KV heads of the model (1 latent for MLA).
        kv_heads_replicated: TP exceeds the KV heads, so each head is cached on ``tp / num_kv_heads`` GPUs.
        is_mla: multi-head latent attention (one latent vector per token and layer, on every TP rank).
        tensor_parallel_size / pipeline_parallel_size: TP and PP.
        kv_bytes_per_token_per_gpu: KV bytes one token adds on the GPU if every layer kept it (the planner's
            "KV bytes per token"; sliding-window layers stop adding once their window is full).
        kv_bytes_per_token_model: the same for the whole model, each distinct K/V counted once.
        kv_bytes_per_token_all_gpus: what all the GPUs store per token, replicas included
            (``kv_bytes_per_token_per_gpu · tp · pp``); above ``kv_bytes_per_token_model`` when heads are
            replicated.
        max_model_len: the context limit planned (tokens; ``auto`` resolved).
        max_num_batched_tokens: the prefill chunk a sliding window keeps beside its window.
        blocks_per_request: blocks one request of ``max_model_len`` takes over all groups.
        kv_bytes_per_request_per_gpu: ``blocks_per_request · page_bytes_per_layer · group_size_layers``, vLLM's
            "X GiB KV cache is needed" at start-up.
        draft_bytes_per_token_per_gpu: of ``kv_bytes_per_token_per_gpu``, what a speculative draft's layers add
            (0 without one).
        indexer_bytes_per_token_per_layer: DeepSeek-V3.2's sparse-attention indexer keys in each layer's page
            (:func:`planner.capacity.kv_cache.indexer_bytes_per_token`; 0 for other models).
        longest_by_memory_tokens: the longest request the KV memory holds, before the model's
            ``max_position_embeddings`` caps it (vLLM's bisection, ``estimate_max_model_len``).
        kv_tokens_rule: how the version prints "GPU KV cache size": ``v0_blocks`` (``num_blocks · block_size``),
            ``blocks_over_groups`` (``num_blocks // num_kv_cache_groups · block_size``) or ``concurrency_times_len``
            (``int(max_concurrency · max_model_len)``, vLLM #51041).
    """

    engine_version: str
    engine_arch: str
    hybrid_kv_cache_manager: bool
    layers_cached_as_full: int
    block_size_tokens: int
    page_bytes_per_layer: int
    group_size_layers: int
    block_bytes: int
    num_kv_cache_groups: int
    group_types: tuple[KvGroupType, ...]
    num_layers_per_gpu: int
    num_layers_model: int
    kv_heads_per_gpu: int
    num_kv_heads_model: int
    kv_heads_replicated: bool
    is_mla: bool
    tensor_parallel_size: int
    pipeline_parallel_size: int
    kv_bytes_per_token_per_gpu: float
    kv_bytes_per_token_model: float
    kv_bytes_per_token_all_gpus: float
    max_model_len: int
    max_num_batched_tokens: int
    blocks_per_request: int
    kv_bytes_per_request_per_gpu: float
    longest_by_memory_tokens: int
    kv_tokens_rule: str
    draft_bytes_per_token_per_gpu: float = 0.0
    indexer_bytes_per_token_per_layer: int = 0

    @property
    def is_hybrid(self) -> bool:
        """The GPU's layers form groups of more than one attention type."""
        return len(self.group_types) > 1

    def to_json(self) -> dict[str, object]:
        """The layout as a JSON-ready dict (field names as above; ``group_types`` a list of dicts)."""
        return asdict(self)


def kv_bytes_per_token_model(spec: ModelSpec, per_gpu_bytes: float, *, tp: int, pp: int) -> float:
    """KV bytes one token adds across the whole model, each distinct K/V counted once.

    ``per_gpu_bytes`` (the limiting stage's) times PP, times the TP ranks that hold distinct heads: all ``tp`` of
    them while TP ≤ the KV heads, ``num_kv_heads / kv_heads_per_rank`` once heads are replicated (vLLM
    ``get_num_kv_heads``), one for MLA (every rank holds the same latent).

    Args:
        spec: the model.
        per_gpu_bytes: KV bytes per token on one GPU, every layer of its stage counted.
        tp: tensor-parallel size.
        pp: pipeline-parallel size.
    """
    if spec.is_mla:
        return per_gpu_bytes * pp
    distinct_ranks = min(tp, spec.num_kv_heads // kv_heads_per_rank(spec.num_kv_heads, tp))
    return per_gpu_bytes * distinct_ranks * pp


def build_kv_layout(
    spec: ModelSpec,
    pool: KVPool,
    *,
    layer_range: tuple[int, int],
    engine_version: str,
    engine_arch: str,
    hybrid_kv_cache_manager: bool,
    kv_tokens_rule: str,
    tp: int,
    pp: int,
    max_model_len: int,
    longest_by_memory_tokens: int,
) -> KvLayout:
    """The layout of ``pool`` (the limiting GPU's) at ``max_model_len``, from the numbers the plan used.

    Args:
        spec: the model.
        pool: the limiting GPU's pool (:func:`planner.capacity.kv_cache.build_pool`).
        layer_range: (first, last + 1) layers of that GPU's pipeline stage.
        engine_version: the vLLM version planned.
        engine_arch: ``v0`` or ``v1``.
        hybrid_kv_cache_manager: the version has the hybrid KV-cache manager.
        kv_tokens_rule: one of :data:`KV_TOKENS_RULES`.
        tp: tensor-parallel size.
        pp: pipeline-parallel size.
        max_model_len: context limit, tokens (``auto`` resolved).
        longest_by_memory_tokens: the longest request the pool holds, before the model's limit.

    Returns:
        The layout.
    """
    types = []
    for group in pool.groups:
        n_groups = ceil_div(group.num_layers, pool.group_size)
        types.append(
            KvGroupType(
                attention=group.kind,
                window_tokens=group.window_tokens,
                num_layers=group.num_layers,
                num_groups=n_groups,
                padding_layers=n_groups * pool.group_size - group.num_layers,
                tokens_per_request=pool.tokens_kept(group, max_model_len),
                blocks_per_request=pool.blocks_per_group(group, max_model_len),
                kv_bytes_per_token_per_gpu=pool.page_bytes / pool.block_size * group.num_layers,
            )
        )
    stage_kinds = spec.layer_attention[layer_range[0] : layer_range[1]]
    per_gpu = pool.bytes_per_token
    blocks_per_request = pool.blocks_per_request(max_model_len)
    return KvLayout(
        engine_version=engine_version,
        engine_arch=engine_arch,
        hybrid_kv_cache_manager=hybrid_kv_cache_manager,
        layers_cached_as_full=0 if hybrid_kv_cache_manager else sum(kind != "full" for kind in stage_kinds),
        block_size_tokens=pool.block_size,
        page_bytes_per_layer=pool.page_bytes,
        group_size_layers=pool.group_size,
        block_bytes=pool.page_bytes * pool.group_size,
        num_kv_cache_groups=pool.num_kv_groups,
        group_types=tuple(types),
        num_layers_per_gpu=len(stage_kinds),
        num_layers_model=spec.num_layers,
        kv_heads_per_gpu=1 if spec.is_mla else kv_heads_per_rank(spec.num_kv_heads, tp),
        num_kv_heads_model=1 if spec.is_mla else spec.num_kv_heads,
        kv_heads_replicated=not spec.is_mla and tp > spec.num_kv_heads,
        is_mla=spec.is_mla,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        kv_bytes_per_token_per_gpu=per_gpu,
        kv_bytes_per_token_model=kv_bytes_per_token_model(spec, per_gpu, tp=tp, pp=pp),
        kv_bytes_per_token_all_gpus=per_gpu * tp * pp,
        max_model_len=max_model_len,
        max_num_batched_tokens=pool.max_num_batched_tokens,
        blocks_per_request=blocks_per_request,
        kv_bytes_per_request_per_gpu=float(blocks_per_request * pool.page_bytes * pool.group_size),
        longest_by_memory_tokens=longest_by_memory_tokens,
        kv_tokens_rule=kv_tokens_rule,
        draft_bytes_per_token_per_gpu=pool.extra_page_bytes / pool.block_size,
        indexer_bytes_per_token_per_layer=indexer_bytes_per_token(spec),
    )
