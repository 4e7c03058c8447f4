"""vLLM's KV-cache budget, reproduced per GPU and per version.

Per GPU (``vllm/v1/worker/gpu_worker.py::determine_available_memory``; V0
``vllm/worker/worker.py::determine_num_available_blocks``)::

    kv_cache_memory = total_memory × gpu_memory_utilization
                      − weights − activation_peak − non_torch − cuda_graph_estimate

* ``total_memory`` is what the CUDA driver reports (``torch.cuda.mem_get_info()[1]``), from the GPU
  catalog.
* ``weights`` is :func:`planner.capacity.weights.weights_bytes_per_rank` ("Model loading took").
* ``activation_peak`` is the rise of torch's peak allocation during the profile run. Two mechanisms
  set it: the dummy forward of ``max_num_batched_tokens`` tokens (its widest live tensors are the MLP's,
  ``T · (2h + 3i/tp + qkv/tp)`` elements), and the dummy sampler run over
  ``min(max_num_seqs, max_num_batched_tokens)`` rows of fp32 logits (``S · V · 4`` bytes, times a
  version factor for the copies the sampler makes). In V1 the larger one is the peak. The sampler
  runs on the last pipeline stage only. The factors are fitted to the logs: in v0.10–v0.16 the peak
  was 9.7 × ``S·V·4`` for five models of 0.6B–120B on H100 (ids 32, 33, 35, 28, 30; each within 2%),
  in v0.17+ 3.85 × (ids 38, 43, 51, 54; within 3%).
* ``non_torch`` is CUDA context, NCCL and custom all-reduce buffers: about 0.13 GiB at TP 1 and
  0.55 GiB at TP > 1 up to v0.17, 0.25 GiB and 2.1 GiB from v0.18 (ids 36, 39, 40, 52), 0.07 GiB with
  pipeline parallelism alone (ids 41, 42).
* ``cuda_graph_estimate`` is subtracted from v0.21 on (PR #30515, on by default since v0.21.0); its
  size grows with the layers captured: 21 MiB per layer, fitted to the estimates vLLM v0.19 logged for
  gemma-3-12b (1.02 GiB, 48 layers) and gemma-2-9b (0.84 GiB, 42 layers), ids 53 and 54.

The KV memory is then laid out in blocks as :mod:`planner.capacity.kv_cache` describes; the GPU with the
fewest blocks sets the count for all (``unify_kv_cache_configs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from planner.capacity.engines.common import fmt_gib, resolve
from planner.capacity.kv_cache import (
    KVPool,
    build_pool,
    kv_dtype_bytes,
    kv_groups,
    kv_heads_per_rank,
    page_bytes_per_layer,
)
from planner.capacity.kv_layout import build_kv_layout, kv_bytes_per_token_model
from planner.capacity.result import Formula, MemoryTerms, Plan
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.capacity.weights import pp_layer_ranges, weights_bytes_per_rank
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.units import DTYPE_BYTES, GIB, MIB, ceil_div

__all__ = [
    "AUTO_MAX_MODEL_LEN_SINCE",
    "NEWEST_VERSION",
    "VERSION_PROFILES",
    "VLLMProfile",
    "accepts_max_model_len_auto",
    "default_limits",
    "plan_vllm",
    "profile_for",
]

#: Bytes of one fp32 logit.
_LOGIT_BYTES = 4
#: CUDA-graph pool per captured layer, v0.21+ estimate (see module docstring).
CUDA_GRAPH_BYTES_PER_LAYER = 21 * MIB
#: Default block size on CUDA (``vllm/config/cache.py``).
DEFAULT_BLOCK_SIZE = 16
#: Device memory from which vLLM picks its larger scheduler defaults, unless the GPU is an A100
#: (``arg_utils.py::_set_default_args``; quoted in vLLM #53961).
LARGE_GPU_BYTES = 70 * GIB
#: The ≥160 GiB tier of PR #51726 (max_num_batched_tokens 16384).
HUGE_GPU_BYTES = 160 * GIB


@dataclass(frozen=True)
class VLLMProfile:
    """Version-dependent terms of vLLM's memory accounting.

    Attributes:
        name: lowest version the profile applies to.
        since: that version as a tuple.
        arch: ``v0`` or ``v1`` engine.
        sampler_factor: multiple of ``S · V · 4`` bytes the sampler warm-up peaks at.
        activation_is_max: V1 keeps the larger of forward and sampler peaks; V0 adds them.
        non_torch_tp1_bytes / non_torch_tp_bytes / non_torch_pp_bytes: non-torch memory at TP 1,
            TP > 1, and PP > 1 with TP 1.
        hybrid_kv: sliding-window layers get their own KV groups (hybrid KV cache manager).
        cuda_graph_subtracted: the CUDA-graph estimate comes out of the budget.
        tokens_from_concurrency: "GPU KV cache size" printed as ``int(concurrency × max_model_len)``.
        huge_gpu_tier: ≥160 GiB GPUs default to 16384 batched tokens.
        source: where the figures come from.
    """

    name: str
    since: tuple[int, ...]
    arch: str
    sampler_factor: float
    activation_is_max: bool
    non_torch_tp1_bytes: float
    non_torch_tp_bytes: float
    non_torch_pp_bytes: float
    hybrid_kv: bool
    cuda_graph_subtracted: bool
    tokens_from_concurrency: bool
    huge_gpu_tier: bool
    source: str


_V0 = VLLMProfile(
    name="0.6.5",
    since=(0, 6, 5),
    arch="v0",
    sampler_factor=1.0,
    activation_is_max=False,
    non_torch_tp1_bytes=0.20 * GIB,
    non_torch_tp_bytes=1.8 * GIB,
    non_torch_pp_bytes=0.07 * GIB,
    hybrid_kv=False,
    cuda_graph_subtracted=False,
    tokens_from_concurrency=False,
    huge_gpu_tier=False,
    source="V0 memory_profiling (PR #10511); non-torch 0.09-0.26 GiB in ids 16, 55, 56",
)
_V1_EARLY = replace(
    _V0,
    name="0.8",
    since=(0, 8, 0),
    arch="v1",
    sampler_factor=9.7,
    activation_is_max=True,
    non_torch_tp1_bytes=0.13 * GIB,
    non_torch_tp_bytes=0.55 * GIB,
    source="V1 engine default from v0.8.0",
)
_V1_HYBRID = replace(
    _V1_EARLY,
    name="0.10",
    since=(0, 10, 0),
    hybrid_kv=True,
    source="v0.11 DEBUG logs (ids 28-37): activation 9.7 x S·V·4, non-torch 0.13 / 0.55 GiB",
)
_V1_LEAN_SAMPLER = replace(
    _V1_HYBRID, name="0.17", since=(0, 17, 0), sampler_factor=3.85, source="activation fell at v0.17.0 (ids 50-52)"
)
_V1_NCCL = replace(
    _V1_LEAN_SAMPLER,
    name="0.18",
    since=(0, 18, 0),
    non_torch_tp1_bytes=0.25 * GIB,
    non_torch_tp_bytes=2.1 * GIB,
    source="v0.18/v0.19 logs: non-torch 0.25 GiB at TP 1, 2.07-2.13 GiB at TP 2-4 (ids 38-45, 52)",
)
_V1_GRAPHS = replace(
    _V1_NCCL,
    name="0.21",
    since=(0, 21, 0),
    cuda_graph_subtracted=True,
    source="CUDA-graph memory estimate on by default since v0.21.0 (PR #30515; v0.27.1 log)",
)
_V1_DERIVED_TOKENS = replace(
    _V1_GRAPHS,
    name="0.26",
    since=(0, 26, 0),
    tokens_from_concurrency=True,
    source="_report_kv_cache_config prints int(max_concurrency x max_model_len) (vLLM #51041)",
)
#: Oldest to newest; a version uses the last profile whose ``since`` it reaches. Each profile states
#: only what changed from the one before.
VERSION_PROFILES: tuple[VLLMProfile, ...] = (
    replace(
        _V0,
        name="0.6.3",
        since=(0, 0, 0),
        non_torch_tp1_bytes=0.35 * GIB,
        source="V0 peak-torch accounting of v0.6.3/0.6.4 (ids 1, 2)",
    ),
    _V0,
    _V1_EARLY,
    _V1_HYBRID,
    _V1_LEAN_SAMPLER,
    _V1_NCCL,
    _V1_GRAPHS,
    _V1_DERIVED_TOKENS,
    replace(
        _V1_DERIVED_TOKENS,
        name="0.27",
        since=(0, 27, 0),
        huge_gpu_tier=True,
        source="≥160 GiB default tier (PR #51726; release assumed v0.27)",
    ),
)
#: The newest vLLM version whose behaviour the planner models (log id 60 is v0.28.0).
NEWEST_VERSION = "0.28.0"
#: First vLLM version whose ``--max-model-len`` takes ``auto``/``-1`` (PR #29431, opened 2025-11-25 after v0.11.2:
#: ``human_readable_int_or_auto`` in ``vllm/engine/arg_utils.py``, ``_auto_fit_max_model_len`` in
#: ``vllm/v1/core/kv_cache_utils.py``). Older versions take a number only.
AUTO_MAX_MODEL_LEN_SINCE = (0, 12, 0)


def _version_key(version: str | None) -> tuple[int, int, int]:
    """``"0.19.0"`` → ``(0, 19, 0)``; ``None`` or ``latest`` → :data:`NEWEST_VERSION`'s.

    Raises:
        InvalidParameterError: the string holds no ``major.minor`` version.
    """
    text = NEWEST_VERSION if version in (None, "", "latest") else str(version)
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        raise InvalidParameterError("engine_version", version, "a vLLM version such as 0.19.0, or latest")
    major, minor, patch = (int(g) for g in match.groups(default="0"))
    return major, minor, patch


def profile_for(version: str | None) -> VLLMProfile:
    """The accounting profile of a vLLM version string (``"0.19.0"``, ``"v0.11"``, ``None`` = newest).

    Raises:
        InvalidParameterError: the string holds no ``major.minor`` version.
    """
    text = NEWEST_VERSION if version in (None, "", "latest") else str(version)
    key = _version_key(version)
    # "0.8.2 (V0 fallback)", "0.9.0-v0": versions 0.8-0.10 could still run the V0 engine.
    force_v0 = re.search(r"\bv0\b(?!\.)", text, re.IGNORECASE) is not None
    chosen = VERSION_PROFILES[0]
    for profile in VERSION_PROFILES:
        if key >= profile.since and not (force_v0 and profile.arch == "v1"):
            chosen = profile
    return chosen


def accepts_max_model_len_auto(version: str | None) -> bool:
    """Whether ``vllm serve`` of ``version`` takes ``--max-model-len auto`` (v0.12+, :data:`AUTO_MAX_MODEL_LEN_SINCE`).

    Args:
        version: a vLLM version string (``"0.19.0"``); ``None`` or ``latest`` = :data:`NEWEST_VERSION`.
    """
    return _version_key(version) >= AUTO_MAX_MODEL_LEN_SINCE


def default_limits(profile: VLLMProfile, *, total_bytes: float, gpu_id: str, max_model_len: int) -> tuple[int, int]:
    """vLLM's default ``(max_num_seqs, max_num_batched_tokens)`` for ``vllm serve``.

    V1 v0.8/v0.9: 1024 / 2048 everywhere. V1 (``EngineArgs._set_default_args``, OPENAI_API_SERVER
    context): 1024 / 8192 on GPUs of at least
    70 GiB that are not A100s, 256 / 2048 otherwise; from the ≥160 GiB tier on, 16384 batched tokens on
    such GPUs. V0: 256 sequences and ``max(max_model_len, 2048)`` batched tokens without chunked
    prefill, which V0 enables (at 2048) only above 32k context.
    """
    if profile.arch == "v0":
        return 256, (2048 if max_model_len > 32768 else max(max_model_len, 2048))
    if not profile.hybrid_kv:
        # V1 before the memory-based split (v0.8/v0.9): 1024 sequences and 2048 batched tokens for
        # the API server on every GPU; log id 6 (L40S, v0.8.4) is within 4% only with 1024.
        return 1024, 2048
    if total_bytes >= LARGE_GPU_BYTES and "a100" not in gpu_id:
        if profile.huge_gpu_tier and total_bytes >= HUGE_GPU_BYTES:
            return 1024, 16384
        return 1024, 8192
    return 256, 2048


def _forward_peak_bytes(spec: ModelSpec, tokens: int, tp: int, act_bytes: float) -> float:
    if spec.is_moe:
        inter = spec.num_experts_per_tok * spec.moe_intermediate_size + spec.shared_expert_intermediate_size
    else:
        inter = max(spec.dense_intermediate_sizes or (spec.intermediate_size,))
    qkv = (spec.num_attention_heads + 2 * spec.num_kv_heads) * spec.head_dim
    return tokens * (2 * spec.hidden_size + (3 * inter + qkv) / tp) * act_bytes


@dataclass(frozen=True)
class _Stage:
    stage: int
    weights: float
    activation: float
    non_torch: float
    cuda_graph: float
    available: float
    pool: KVPool
    layer_range: tuple[int, int]


def plan_vllm(scenario: Scenario, spec: ModelSpec | None = None) -> Plan:
    """Plan ``scenario`` as vLLM would size it at start-up.

    Args:
        scenario: the scenario (``engine`` is ignored; vLLM rules apply).
        spec: a model to use instead of looking ``scenario.model`` up in the catalog.

    Returns:
        The plan of the GPU with the fewest KV blocks; ``fits`` is False when vLLM would refuse to
        start (weights over budget, no KV memory, a full-length request not fitting, bad TP).

    Raises:
        PlannerError subclasses for unknown models, GPUs or bad settings.
    """
    r = resolve(scenario, spec)
    spec, gpu = r.spec, r.gpu
    profile = profile_for(scenario.engine_version)
    tp, pp = scenario.tensor_parallel_size, scenario.pipeline_parallel_size
    if pp > spec.num_layers:
        raise InvalidParameterError("pipeline_parallel_size", pp, f"at most the model's {spec.num_layers} layers")
    notes: list[str] = list(spec.assumptions)
    auto = scenario.max_model_len == MAX_MODEL_LEN_AUTO
    # auto sizes the memory at the model's own limit, then fits the length into it (_auto_fit_max_model_len)
    max_len = spec.max_position_embeddings if auto else scenario.max_model_len or spec.max_position_embeddings
    total = float(gpu.memory_total_bytes)
    seqs_default, mnbt_default = default_limits(profile, total_bytes=total, gpu_id=gpu.id, max_model_len=max_len)
    max_num_seqs = scenario.max_num_seqs or seqs_default
    mnbt = scenario.max_num_batched_tokens or mnbt_default
    block = scenario.block_size or DEFAULT_BLOCK_SIZE
    version = NEWEST_VERSION if scenario.engine_version in (None, "", "latest") else scenario.engine_version
    # auto stays auto in the resolved scenario (advice and links keep it); the plan's max_model_len is the number
    resolved = replace(scenario, max_model_len=scenario.max_model_len if auto else max_len, engine_version=version)
    if profile is VERSION_PROFILES[0] and not version.startswith("0.6"):
        notes.append(f"vLLM {version} predates the oldest accounting modelled (v0.6.3); planned with v0.6.3's rules")
    kv_bytes = kv_dtype_bytes(scenario.kv_cache_dtype, r.dtype)
    act_bytes = DTYPE_BYTES[r.dtype]
    budget = total * scenario.gpu_memory_utilization
    page = page_bytes_per_layer(spec, tp=tp, block_size=block, dtype_bytes=kv_bytes)
    stages = []
    for stage, layer_range in enumerate(pp_layer_ranges(spec.num_layers, pp)):
        weights = weights_bytes_per_rank(
            spec, method=r.quantization, dtype=r.dtype, tp=tp, pp=pp, stage=stage
        ).total_bytes
        forward = _forward_peak_bytes(spec, mnbt, tp, act_bytes)
        sampler = 0.0
        if stage == pp - 1:
            sampler = profile.sampler_factor * min(max_num_seqs, mnbt) * spec.vocab_size * _LOGIT_BYTES
        activation = max(forward, sampler) if profile.activation_is_max else forward + sampler
        if tp > 1:
            non_torch = profile.non_torch_tp_bytes
        elif pp > 1:
            non_torch = profile.non_torch_pp_bytes
        else:
            non_torch = profile.non_torch_tp1_bytes
        n_layers = layer_range[1] - layer_range[0]
        graph = 0.0
        if profile.cuda_graph_subtracted and not scenario.enforce_eager:
            graph = CUDA_GRAPH_BYTES_PER_LAYER * n_layers
        available = budget - weights - activation - non_torch - graph
        groups = kv_groups(spec, layer_range, hybrid=profile.hybrid_kv)
        pool = build_pool(
            groups, available_bytes=available, page_bytes=page, block_size=block, max_num_batched_tokens=mnbt
        )
        stages.append(_Stage(stage, weights, activation, non_torch, graph, available, pool, layer_range))
    limiting = min(stages, key=lambda s: (s.pool.num_blocks, s.available))
    pool = limiting.pool
    by_memory = _estimate_max_len(pool, profile, max_len) if pool.num_blocks else 0
    estimated = min(by_memory, spec.max_position_embeddings)
    if auto and estimated > 0:
        max_len = estimated
        if estimated < spec.max_position_embeddings:
            how = (
                f"the longest one request can have in the KV cache, below the model's {spec.max_position_embeddings:,}"
            )
        else:
            how = "the model's full context fits"
        notes.append(
            f"--max-model-len auto resolved to {max_len:,} tokens: {how} (vLLM v0.12+ _auto_fit_max_model_len)"
        )

    if profile.arch == "v0":
        tokens = pool.num_blocks * block
        concurrency = tokens / max_len
        per_request_blocks = ceil_div(max_len, block)
    else:
        concurrency = pool.concurrency_at(max_len)
        tokens = int(concurrency * max_len) if profile.tokens_from_concurrency else pool.tokens
        per_request_blocks = pool.blocks_per_request(max_len)

    reason = _refusal(spec, tp, max_len)
    refused = reason is not None
    if refused:
        pass  # the memory checks below do not apply to a configuration vLLM rejects before loading
    elif limiting.weights > budget:
        reason = (
            f"the weights alone ({fmt_gib(limiting.weights)} per GPU) exceed the "
            f"{fmt_gib(budget)} budget (total × gpu_memory_utilization)"
        )
    elif limiting.available <= 0:
        reason = (
            f"no memory is left for the KV cache: weights, activation and overheads take "
            f"{fmt_gib(budget - limiting.available)} of the {fmt_gib(budget)} budget"
        )
    elif auto and estimated == 0:
        reason = (
            f"--max-model-len auto finds no length that fits: the {fmt_gib(limiting.available)} of KV cache "
            "holds less than one token of every KV-cache group"
        )
    elif pool.num_blocks < per_request_blocks:
        need = per_request_blocks * page * pool.group_size
        reason = (
            f"one request of max_model_len {max_len:,} tokens needs {fmt_gib(need)} of KV cache, more than "
            f"the {fmt_gib(limiting.available)} available; the longest that fits is about {estimated:,} tokens"
        )

    terms = MemoryTerms(
        total_bytes=total,
        budget_bytes=budget,
        weights_bytes=limiting.weights,
        activation_bytes=limiting.activation,
        non_torch_bytes=limiting.non_torch,
        cuda_graph_bytes=limiting.cuda_graph,
        kv_cache_bytes=max(0.0, limiting.available),
        unused_bytes=max(0.0, total - budget),
    )
    if profile.arch == "v1" and not profile.cuda_graph_subtracted and not scenario.enforce_eager:
        notes.append(
            f"vLLM {profile.name}+ captures CUDA graphs after sizing the KV cache, so their pool "
            "(0.1-1.9 GiB) comes out of the 1 − gpu_memory_utilization headroom"
        )
    if spec.vision_params:
        notes.append(
            "multimodal model: the vision tower's weights are counted; its encoder profile run can "
            "raise the activation peak above the estimate"
        )
    if tp > spec.num_kv_heads and not spec.is_mla:
        notes.append(
            f"TP {tp} exceeds the {spec.num_kv_heads} KV heads: each GPU keeps one KV head "
            "(replicated), so KV per token does not shrink further"
        )
    target = scenario.target_context
    if profile.arch == "v0":
        tokens_rule = "v0_blocks"
    else:
        tokens_rule = "concurrency_times_len" if profile.tokens_from_concurrency else "blocks_over_groups"
    layout = build_kv_layout(
        spec,
        pool,
        layer_range=limiting.layer_range,
        engine_version=version,
        engine_arch=profile.arch,
        hybrid_kv_cache_manager=profile.hybrid_kv,
        kv_tokens_rule=tokens_rule,
        tp=tp,
        pp=pp,
        max_model_len=max_len,
        longest_by_memory_tokens=by_memory,
    )
    formulas = _formulas(
        profile, total, scenario, limiting, page, pool, tokens, concurrency, max_len, mnbt, max_num_seqs, spec
    )
    return Plan(
        scenario=resolved,
        engine_label=f"vLLM {resolved.engine_version} ({profile.arch.upper()} accounting of {profile.name}+)",
        model_id=spec.model_id,
        gpu_name=gpu.name,
        num_gpus=tp * pp,
        per_gpu=terms,
        weights_total_bytes=sum(s.weights for s in stages) * tp,
        kv_cache_total_bytes=sum(max(0.0, st.available) for st in stages) * tp,
        kv_bytes_per_token=pool.bytes_per_token,
        kv_bytes_per_token_model=kv_bytes_per_token_model(spec, pool.bytes_per_token, tp=tp, pp=pp),
        block_size=block,
        model_max_position_embeddings=spec.max_position_embeddings,
        kv_needed_for_max_len_bytes=float(per_request_blocks * page * pool.group_size),
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=mnbt,
        num_gpu_blocks=pool.num_blocks,
        kv_cache_tokens=tokens,
        max_model_len=max_len,
        max_concurrency=concurrency,
        max_concurrency_at_target=pool.concurrency_at(target) if target else None,
        estimated_max_model_len=estimated,
        fits=reason is None,
        reason=reason,
        formulas=formulas,
        notes=tuple(notes),
        pool=pool,
        refused=refused,
        kv_layout=layout,
    )


def _refusal(spec: ModelSpec, tp: int, max_len: int) -> str | None:
    """Why vLLM rejects the configuration before it loads anything, with the fix; None when it accepts it.

    Checks of ``vllm/config/parallel.py`` and ``vllm/config/model.py`` (v0.10–v0.24): the attention heads must be
    divisible by ``tensor_parallel_size``, the KV heads split over it (or replicated), and ``max_model_len`` within
    the model's ``max_position_embeddings``.
    """
    valid = ", ".join(str(n) for n in (1, 2, 4, 8, 16, 32, 64) if _tp_ok(spec, n))
    if spec.num_attention_heads % tp:
        return (
            f"{spec.num_attention_heads} attention heads are not divisible by tensor_parallel_size {tp}; "
            f"vLLM refuses to start: use --tensor-parallel-size {valid}"
        )
    if not _tp_ok(spec, tp):
        return (
            f"{spec.num_kv_heads} KV heads cannot be split over tensor_parallel_size {tp} (vLLM needs one to divide "
            f"the other); vLLM refuses to start: use --tensor-parallel-size {valid}"
        )
    if max_len > spec.max_position_embeddings:
        return (
            f"max_model_len {max_len:,} exceeds the model's max_position_embeddings "
            f"{spec.max_position_embeddings:,}; vLLM refuses it: use --max-model-len {spec.max_position_embeddings} "
            "or less"
        )
    return None


def _tp_ok(spec: ModelSpec, tp: int) -> bool:
    """vLLM accepts ``tp``: it divides the attention heads, and the KV heads divide it or it divides them (MLA has one
    latent KV head, replicated)."""
    if spec.num_attention_heads % tp:
        return False
    if spec.is_mla:
        return True
    return spec.num_kv_heads % tp == 0 if tp <= spec.num_kv_heads else tp % spec.num_kv_heads == 0


def _estimate_max_len(pool: KVPool, profile: VLLMProfile, max_len: int) -> int:
    """Longest context one request can have in ``pool`` (vLLM ``estimate_max_model_len``, a bisection)."""
    if profile.arch == "v0":
        return pool.num_blocks * pool.block_size
    low, high = 0, max(max_len, pool.num_blocks * pool.block_size)
    while low < high:
        mid = (low + high + 1) // 2
        if pool.blocks_per_request(mid) <= pool.num_blocks:
            low = mid
        else:
            high = mid - 1
    return low


def _page_expression(spec: ModelSpec, pool: KVPool, page: int, tp: int) -> str:
    if spec.is_mla:
        width = (spec.kv_lora_rank or 0) + (spec.qk_rope_head_dim or 0)
        return (
            f"{pool.block_size} tokens × ({spec.kv_lora_rank} + {spec.qk_rope_head_dim}) latent × "
            f"{page / (pool.block_size * width):g} B"
        )
    heads = kv_heads_per_rank(spec.num_kv_heads, tp)
    dtype_bytes = page / (pool.block_size * heads * (spec.head_dim + spec.v_head_dim))
    return (
        f"{pool.block_size} tokens × {heads} KV heads/GPU × ({spec.head_dim} + {spec.v_head_dim}) dims × "
        f"{dtype_bytes:g} B"
    )


def _formulas(
    profile: VLLMProfile,
    total: float,
    s: Scenario,
    st: _Stage,
    page: int,
    pool: KVPool,
    tokens: int,
    concurrency: float,
    max_len: int,
    mnbt: int,
    seqs: int,
    spec: ModelSpec,
) -> tuple[Formula, ...]:
    src = (
        "vllm/v1/worker/gpu_worker.py::determine_available_memory"
        if profile.arch == "v1"
        else "vllm/worker/worker.py::determine_num_available_blocks"
    )
    budget = total * s.gpu_memory_utilization
    lines = [
        Formula("Requested memory", f"{fmt_gib(total)} × {s.gpu_memory_utilization:.2f}", fmt_gib(budget), src),
        Formula(
            "Activation peak",
            f"max(forward {mnbt:,} tokens, sampler {profile.sampler_factor} × {min(seqs, mnbt):,} seqs × "
            f"{spec.vocab_size:,} vocab × 4 B)"
            if profile.activation_is_max
            else f"forward {mnbt:,} tokens + sampler {min(seqs, mnbt):,} seqs × {spec.vocab_size:,} × 4 B",
            fmt_gib(st.activation),
            "profile_run / _dummy_sampler_run",
        ),
        Formula(
            "KV cache memory",
            f"{fmt_gib(budget)} − {fmt_gib(st.weights)} weights − {fmt_gib(st.activation)} activation − "
            f"{fmt_gib(st.non_torch)} non-torch − {fmt_gib(st.cuda_graph)} CUDA graphs",
            fmt_gib(max(0.0, st.available)),
            src,
        ),
        Formula(
            "Page per layer",
            _page_expression(spec, pool, page, s.tensor_parallel_size),
            f"{page:,} B",
            "vllm/v1/kv_cache_interface.py",
        ),
        Formula(
            "GPU blocks",
            f"{fmt_gib(max(0.0, st.available))} // ({page:,} B × {pool.group_size} layers per pool)",
            f"{pool.num_blocks:,}",
            "vllm/v1/core/kv_cache_utils.py",
        ),
        Formula(
            "GPU KV cache size",
            f"{pool.num_blocks:,} // {pool.num_kv_groups} groups × {pool.block_size}"
            if not profile.tokens_from_concurrency
            else f"int({concurrency:.2f} × {max_len:,})",
            f"{tokens:,} tokens",
            "vllm/v1/core/kv_cache_utils.py::_report_kv_cache_config",
        ),
        Formula(
            "Maximum concurrency",
            f"{pool.num_blocks:,} blocks / {pool.blocks_per_request(max_len):,} blocks per {max_len:,}-token request",
            f"{concurrency:.2f}x",
            "get_max_concurrency_for_kv_cache_config",
        ),
    ]
    return tuple(lines)
