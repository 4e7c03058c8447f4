"""vLLM's KV-cache budget, reproduced per GPU and per version.

Per GPU (``vllm/v1/worker/gpu_worker.py::determine_available_memory``; V0
``vllm/worker/worker.py::determine_num_available_blocks``)::

    kv_cache_memory = total_memory × gpu_memory_utilization
                      − weights − activation_peak − non_torch − cuda_graph_estimate

* ``total_memory`` is what the CUDA driver reports (``torch.cuda.mem_get_info()[1]``), from the GPU catalog.
* ``weights`` is :func:`planner.capacity.weights.weights_bytes_per_rank` ("Model loading took").
* ``activation_peak``, ``non_torch`` and ``cuda_graph_estimate`` are counted mechanism by mechanism in
  :mod:`planner.capacity.engines.vllm_memory`: the profile run's forward of ``max_num_batched_tokens`` tokens
  (with the fused-MoE workspaces), the dummy sampler run over ``min(max_num_seqs, max_num_batched_tokens)`` rows
  by its code path, NCCL's ring buffers by interconnect, and the CUDA-graph pool by capture sizes. The few
  constants fitted to logs are in :mod:`planner.capacity.engines.vllm_fitted`, each with its records.

:data:`VERSION_PROFILES` says which mechanism each vLLM version has, and since when (engine files and PRs cited per
profile). The KV memory is then laid out in blocks as :mod:`planner.capacity.kv_cache` describes; the GPU with the
fewest blocks sets the count for all (``unify_kv_cache_configs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from planner import display
from planner.capacity.engines.common import resolve
from planner.capacity.engines.vllm_fitted import fitted
from planner.capacity.engines.vllm_memory import (
    V2_RUNNER_ARCHITECTURES,
    CustomAllReduce,
    NonTorch,
    cuda_graph_sizes,
    custom_all_reduce,
    dense_forward_bytes,
    moe_workspace_bytes,
    non_torch,
    sampler_bytes_per_logit,
)
from planner.capacity.kv_cache import (
    KVPool,
    build_pool,
    indexer_bytes_per_token,
    kv_dtype_bytes,
    kv_groups,
    kv_heads_per_rank,
    page_bytes_per_layer,
)
from planner.capacity.kv_layout import KvLayout, build_kv_layout, kv_bytes_per_token_model
from planner.capacity.result import Formula, MemoryTerms, Plan
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.capacity.speculative import DraftMemory, draft_memory, runs_on_v1_runner
from planner.capacity.topology import Topology, place
from planner.capacity.weights import pp_layer_ranges, weights_bytes_per_rank
from planner.catalog.gpus import GPU
from planner.catalog.hub import resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.units import DTYPE_BYTES, GIB, ceil_div

__all__ = [
    "AUTO_MAX_MODEL_LEN_SINCE",
    "NEWEST_VERSION",
    "VERSION_PROFILES",
    "VLLMProfile",
    "accepts_max_model_len_auto",
    "default_limits",
    "plan_vllm",
    "profile_for",
    "runner_for",
    "version_key",
]

#: Default block size on CUDA (``vllm/config/cache.py``).
DEFAULT_BLOCK_SIZE = 16
#: DeepSeek-V3.2's sparse MLA kernels page by 64 tokens: FlashMLA-sparse supports only 64
#: (``FlashMLASparseBackend.get_supported_kernel_block_sizes``, ``vllm/v1/attention/backends/mla/flashmla_sparse.py``),
#: so the default 16 becomes 64 (``AttentionBackend.get_preferred_block_size``, ``vllm/v1/attention/backend.py``,
#: vLLM 0.24.0).
SPARSE_MLA_BLOCK_SIZE = 64
#: Device memory from which vLLM picks its larger scheduler defaults, unless the GPU is an A100
#: (``EngineArgs.get_batch_defaults``, ``vllm/engine/arg_utils.py``, v0.24.0: ``device_memory >= 70 GiB and "a100"
#: not in device_name``).
LARGE_GPU_BYTES = 70 * GIB
#: The ≥160 GiB tier of PR #51726 (max_num_batched_tokens 16384).
HUGE_GPU_BYTES = 160 * GIB
#: Above this context V0 turns chunked prefill on (at 2048 batched tokens) unless told otherwise (vLLM PR #6666,
#: v0.5.3: "enable chunked prefill by default for long context (>32K) models").
V0_LONG_CONTEXT_TOKENS = 32768


@dataclass(frozen=True)
class VLLMProfile:
    """Which memory mechanisms a vLLM version has.

    Attributes:
        name: lowest version the profile applies to.
        since: that version as a tuple.
        arch: ``v0`` or ``v1`` engine.
        sampler_path: the dummy sampler run's code path on the V1 model runner (or V0's), one of
            :data:`planner.capacity.engines.vllm_memory.SAMPLER_PATHS`.
        non_torch_base: the fitted constant of non-torch memory at TP 1.
        nvls_extra: NVSwitch systems with NVLink SHARP show the fitted extra non-torch memory at TP > 1.
        long_context_chunked: V0 turns chunked prefill on above 32k context.
        hybrid_kv: sliding-window layers get their own KV groups (hybrid KV cache manager).
        cuda_graph_constant: the fitted per-graph-and-layer pool when the CUDA-graph estimate comes out of the budget,
            ``None`` when it does not.
        tokens_from_concurrency: "GPU KV cache size" printed as ``int(concurrency × max_model_len)``.
        huge_gpu_tier: ≥160 GiB GPUs default to 16384 batched tokens.
        moe_workspace_persistent: the fused-MoE workspaces stay allocated after the forward (so they add to the
            sampler's peak).
        v2_runner: the architectures of ``V2_RUNNER_ARCHITECTURES`` run on the V2 model runner.
        source: where the profile's change comes from.
    """

    name: str
    since: tuple[int, ...]
    arch: str
    sampler_path: str
    non_torch_base: str
    nvls_extra: bool
    long_context_chunked: bool
    hybrid_kv: bool
    cuda_graph_constant: str | None
    tokens_from_concurrency: bool
    huge_gpu_tier: bool
    moe_workspace_persistent: bool
    v2_runner: bool
    source: str

    @property
    def cuda_graph_subtracted(self) -> bool:
        """The CUDA-graph estimate comes out of the budget (v0.21+, V1 runner)."""
        return self.cuda_graph_constant is not None


_V0_OLD = VLLMProfile(
    name="0.5",
    since=(0, 0, 0),
    arch="v0",
    sampler_path="v0_sort",
    non_torch_base="non_torch_tp1_v063",
    nvls_extra=False,
    long_context_chunked=False,
    hybrid_kv=False,
    cuda_graph_constant=None,
    tokens_from_concurrency=False,
    huge_gpu_tier=False,
    moe_workspace_persistent=False,
    v2_runner=False,
    source="V0 before v0.5.3: max_num_batched_tokens = max(max_model_len, 2048) at any context "
    "(vllm/config.py SchedulerConfig); peak-torch accounting of v0.6.3/0.6.4 (ids 1, 2)",
)
_V0_CHUNKED = replace(
    _V0_OLD,
    name="0.5.3",
    since=(0, 5, 3),
    long_context_chunked=True,
    source="chunked prefill on by default above 32k context (vLLM PR #6666, v0.5.3)",
)
_V0 = replace(
    _V0_CHUNKED,
    name="0.6.5",
    since=(0, 6, 5),
    non_torch_base="non_torch_tp1_v0",
    source="V0 memory_profiling (PRs #10511, #12126): non-torch 0.09-0.26 GiB at TP 1 (ids 16, 55, 56)",
)
_V1_EARLY = replace(
    _V0,
    name="0.8",
    since=(0, 8, 0),
    arch="v1",
    sampler_path="v1_sort",
    non_torch_base="non_torch_tp1_v1",
    source="V1 engine default from v0.8.0; FlashInfer top-k/top-p off by default for FlashInfer >= 0.2.3 "
    "(vLLM PR #14815), so the sampler sorts",
)
_V1_HYBRID = replace(
    _V1_EARLY,
    name="0.10",
    since=(0, 10, 0),
    hybrid_kv=True,
    sampler_path="v1_flashinfer",
    source="hybrid KV-cache manager; FlashInfer top-k/top-p sampler on by default with flashinfer-python a "
    "dependency (turned off by vLLM PR #26859, after v0.11.0)",
)
_V1_SORT = replace(
    _V1_HYBRID,
    name="0.11",
    since=(0, 11, 0),
    sampler_path="v1_sort",
    source="the sampler sorts again: v0.11.0 logs (ids 28-37) show the sort path's 38 B per logit; PR #26859",
)
_V1_WORKSPACE = replace(
    _V1_SORT,
    name="0.14",
    since=(0, 14, 0),
    moe_workspace_persistent=True,
    source="fused-MoE workspaces from the worker's WorkspaceManager, kept between layers (vllm/v1/worker/"
    "workspace.py; PR #31531, merged 2026-01-15)",
)
_V1_TRITON = replace(
    _V1_WORKSPACE,
    name="0.17",
    since=(0, 17, 0),
    sampler_path="v1_triton",
    source="in-place Triton top-k/top-p: activation fell at v0.17.0 (ids 50-52)",
)
_V1_NCCL = replace(
    _V1_TRITON,
    name="0.18",
    since=(0, 18, 0),
    non_torch_base="non_torch_tp1_v018",
    nvls_extra=True,
    source="v0.18/v0.19 logs: non-torch 0.25 GiB at TP 1, 2.07-2.13 GiB at TP 2-4 on H100 SXM (ids 38-45, 52)",
)
_V1_GRAPHS = replace(
    _V1_NCCL,
    name="0.21",
    since=(0, 21, 0),
    cuda_graph_constant="graph_bytes_per_layer_graph_v021",
    source="CUDA-graph memory estimate on by default since v0.21.0 (PR #30515; 'default since v0.21.0' in the "
    "v0.24.0 log)",
)
_V1_RUNNER2 = replace(
    _V1_GRAPHS,
    name="0.24",
    since=(0, 24, 0),
    cuda_graph_constant="graph_bytes_per_layer_graph_v024",
    tokens_from_concurrency=True,
    v2_runner=True,
    source="vLLM 0.24.0 source: the V2 model runner by default for Llama, Mistral, Qwen3, DeepSeek-V2, Qwen2-MoE "
    "and Granite-MoE (DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES); 'GPU KV cache size' = max_concurrency × "
    "max_model_len (kv_cache_utils.py); CUDA graphs estimated as the largest first capture plus one graph per "
    "further size (gpu_model_runner.py::profile_cudagraph_memory)",
)
#: Oldest to newest; a version uses the last profile whose ``since`` it reaches. Each profile states only what
#: changed from the one before.
VERSION_PROFILES: tuple[VLLMProfile, ...] = (
    _V0_OLD,
    _V0_CHUNKED,
    _V0,
    _V1_EARLY,
    _V1_HYBRID,
    _V1_SORT,
    _V1_WORKSPACE,
    _V1_TRITON,
    _V1_NCCL,
    _V1_GRAPHS,
    _V1_RUNNER2,
    replace(
        _V1_RUNNER2,
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


def version_key(version: str | None) -> tuple[int, int, int]:
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
    key = version_key(version)
    # "0.8.2 (V0 fallback)", "0.9.0-v0": versions 0.8-0.10 could still run the V0 engine.
    force_v0 = re.search(r"\bv0\b(?!\.)", text, re.IGNORECASE) is not None
    chosen = VERSION_PROFILES[0]
    for profile in VERSION_PROFILES:
        if key >= profile.since and not (force_v0 and profile.arch == "v1"):
            chosen = profile
    return chosen


def runner_for(profile: VLLMProfile, spec: ModelSpec) -> str:
    """The model runner vLLM uses for ``spec``: ``v0``, ``v1`` or ``v2`` (``VllmConfig.use_v2_model_runner``)."""
    if profile.arch == "v0":
        return "v0"
    return "v2" if profile.v2_runner and spec.architecture in V2_RUNNER_ARCHITECTURES else "v1"


def accepts_max_model_len_auto(version: str | None) -> bool:
    """Whether ``vllm serve`` of ``version`` takes ``--max-model-len auto`` (v0.12+, :data:`AUTO_MAX_MODEL_LEN_SINCE`).

    Args:
        version: a vLLM version string (``"0.19.0"``); ``None`` or ``latest`` = :data:`NEWEST_VERSION`.
    """
    return version_key(version) >= AUTO_MAX_MODEL_LEN_SINCE


def default_limits(
    profile: VLLMProfile, *, total_bytes: float, gpu_id: str, max_model_len: int, entry_point: str = "serve"
) -> tuple[int, int]:
    """vLLM's default ``(max_num_seqs, max_num_batched_tokens)`` for ``vllm serve`` or ``vllm.LLM``.

    V1 from v0.10 (``EngineArgs.get_batch_defaults``, ``vllm/engine/arg_utils.py``, v0.24.0): on GPUs of at least
    70 GiB that are not A100s 1024 sequences and 8192 batched tokens for ``vllm serve`` (usage context
    OPENAI_API_SERVER), 1024 and 16384 for ``vllm.LLM`` (LLM_CLASS); otherwise 256 sequences and 2048 / 8192;
    from the ≥160 GiB tier on, 16384 batched tokens on such GPUs for both. V1 v0.8/v0.9
    (``_override_v1_engine_args``, vLLM PR #11061): 1024 sequences, 2048 batched tokens for the server and 8192 for
    ``LLM``, on every GPU (log id 6, L40S v0.8.4, is within 4% only with 1024). V0: 256 sequences and
    ``max(max_model_len, 2048)`` batched tokens without chunked prefill, which V0 turns on (at 2048) above 32k
    context from v0.5.3.
    """
    if profile.arch == "v0":
        if profile.long_context_chunked and max_model_len > V0_LONG_CONTEXT_TOKENS:
            return 256, 2048
        return 256, max(max_model_len, 2048)
    llm = entry_point == "llm"
    if not profile.hybrid_kv:
        return 1024, 8192 if llm else 2048
    if total_bytes >= LARGE_GPU_BYTES and "a100" not in gpu_id:
        if profile.huge_gpu_tier and total_bytes >= HUGE_GPU_BYTES:
            return 1024, 16384
        return 1024, 16384 if llm else 8192
    return 256, 8192 if llm else 2048


@dataclass(frozen=True)
class _Activation:
    """The profile run's peak and its two candidates, bytes."""

    peak: float
    forward: float
    sampler: float
    moe_workspace: float
    rows: int
    bytes_per_logit: float


def _activation(
    spec: ModelSpec,
    profile: VLLMProfile,
    runner: str,
    *,
    tokens: int,
    max_num_seqs: int,
    tp: int,
    act_bytes: float,
    fp8_activations: bool,
    last_stage: bool,
) -> _Activation:
    """The profile run's activation peak on one rank (:mod:`planner.capacity.engines.vllm_memory`)."""
    moe = moe_workspace_bytes(spec, tokens, tp, act_bytes, fp8_activations=fp8_activations)
    forward = dense_forward_bytes(spec, tokens, tp, act_bytes)
    if spec.is_moe:
        forward = max(forward, tokens * 2 * spec.hidden_size * act_bytes + moe)
    rows = min(max_num_seqs, tokens)
    per_logit = sampler_bytes_per_logit("v2" if runner == "v2" else profile.sampler_path, act_bytes)
    sampler = 0.0
    if last_stage:
        kept = moe if profile.moe_workspace_persistent else 0.0
        sampler = rows * spec.vocab_size * per_logit + tokens * spec.hidden_size * act_bytes + kept
    return _Activation(max(forward, sampler), forward, sampler, moe, rows, per_logit)


@dataclass(frozen=True)
class _Stage:
    stage: int
    weights: float
    activation: _Activation
    non_torch: NonTorch
    cuda_graph: float
    available: float
    pool: KVPool
    layer_range: tuple[int, int]


def _fp8_activations(spec: ModelSpec, quantization: str) -> bool:
    """FP8 checkpoints and ``--quantization fp8`` quantize the MoE input activations to FP8."""
    return quantization == "fp8" or spec.quant.method == "fp8"


def _all_reduce_text(car: CustomAllReduce, tp: int) -> str | None:
    if tp == 1:
        return None
    if car.enabled:
        return (
            f"vLLM's custom all-reduce ({car.reason}; {car.buffer_bytes / 2**20:.0f} MiB of IPC buffers per GPU, set "
            "up before the profiling baseline, so outside the KV budget) for small tensors, NCCL for the rest"
        )
    return f"NCCL only: custom all-reduce off ({car.reason})"


def plan_vllm(scenario: Scenario, spec: ModelSpec | None = None, gpu: GPU | None = None) -> Plan:
    """Plan ``scenario`` as vLLM would size it at start-up.

    The steps, each a function of this module: the model, GPU, version profile and the limits vLLM resolves before
    it sizes memory (:func:`_setup`); each pipeline stage's memory and KV pool (:func:`_stages`), the stage with the
    fewest blocks limiting; ``--max-model-len auto`` fitted to that pool (:func:`_fit_auto`); the KV tokens and
    concurrency as this version reports them (:func:`_capacity`); why vLLM would refuse to start, if it would
    (:func:`_reason`); and the plan with its notes, KV layout and formulas.

    Args:
        scenario: the scenario (``engine`` is ignored; vLLM rules apply).
        spec: a model to use instead of looking ``scenario.model`` up in the catalog.
        gpu: a GPU to use instead of the scenario's (e.g. a catalog GPU with the memory a log reports).

    Returns:
        The plan of the GPU with the fewest KV blocks; ``fits`` is False when vLLM would refuse to
        start (weights over budget, no KV memory, a full-length request not fitting, bad TP).

    Raises:
        PlannerError subclasses for unknown models, GPUs or bad settings.
    """
    setup = _setup(scenario, spec, gpu)
    spec, profile = setup.spec, setup.profile
    stages = _stages(setup)
    limiting = min(stages, key=lambda s: (s.pool.num_blocks, s.available))
    pool = limiting.pool
    max_len, by_memory, estimated, auto_note = _fit_auto(setup, pool)
    tokens, concurrency, per_request_blocks = _capacity(profile, pool, setup.block, max_len)
    reason = _refusal(spec, setup.tp, max_len)
    refused = reason is not None
    if not refused:  # the memory checks do not apply to a configuration vLLM rejects before loading
        reason = _reason(setup, limiting, pool, max_len, estimated, per_request_blocks)
    terms = MemoryTerms(
        total_bytes=setup.total,
        budget_bytes=setup.budget,
        weights_bytes=limiting.weights,
        activation_bytes=limiting.activation.peak,
        non_torch_bytes=limiting.non_torch.total_bytes,
        cuda_graph_bytes=limiting.cuda_graph,
        kv_cache_bytes=max(0.0, limiting.available),
        unused_bytes=max(0.0, setup.total - setup.budget),
    )
    notes = [*setup.notes, *([auto_note] if auto_note else [])]
    notes += _notes(profile, setup.runner, scenario, spec, setup.gpu, setup.topology, setup.tp)
    notes += _speculative_notes(scenario, spec, setup.draft, setup.runner, runner_for(profile, spec))
    target = scenario.target_context
    formulas = _formulas(
        profile,
        setup.runner,
        setup.total,
        scenario,
        limiting,
        setup.page,
        pool,
        tokens,
        concurrency,
        max_len,
        setup.mnbt,
        spec,
        graphs=setup.graphs if setup.subtract_graphs else 0,
        draft=setup.draft,
    )
    tp, pp = setup.tp, setup.pp
    return Plan(
        scenario=setup.resolved,
        engine_label=f"vLLM {setup.version} ({profile.arch.upper()} accounting of {profile.name}+)",
        model_id=spec.model_id,
        gpu_name=setup.gpu.name,
        num_gpus=tp * pp,
        per_gpu=terms,
        weights_total_bytes=sum(s.weights for s in stages) * tp,
        kv_cache_total_bytes=sum(max(0.0, st.available) for st in stages) * tp,
        kv_bytes_per_token=pool.bytes_per_token,
        kv_bytes_per_token_model=kv_bytes_per_token_model(spec, pool.bytes_per_token, tp=tp, pp=pp),
        block_size=setup.block,
        model_max_position_embeddings=spec.max_position_embeddings,
        kv_needed_for_max_len_bytes=float(per_request_blocks * (setup.page * pool.group_size + setup.draft_page)),
        max_num_seqs=setup.max_num_seqs,
        max_num_batched_tokens=setup.mnbt,
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
        kv_layout=_layout(setup, pool, limiting, max_len, by_memory),
        model_runner=setup.runner,
        topology=setup.topology,
    )


@dataclass(frozen=True)
class _Setup:
    """What vLLM resolves before it sizes memory: the model, GPU and dtypes, the version's profile and model runner,
    the parallelism and its placement, the scheduler limits and block size, and the per-GPU memory terms that do not
    depend on the pipeline stage (bytes).

    ``max_len`` is the scenario's ``max_model_len``, or the model's limit under ``auto`` (memory is sized there, then
    the length is fitted: :func:`_fit_auto`); ``resolved`` keeps ``auto`` and names the version.
    """

    spec: ModelSpec
    gpu: GPU
    dtype: str
    quantization: str
    profile: VLLMProfile
    runner: str
    tp: int
    pp: int
    auto: bool
    max_len: int
    max_num_seqs: int
    mnbt: int
    block: int
    version: str
    resolved: Scenario
    topology: Topology
    total: float
    budget: float
    act_bytes: float
    page: int
    draft: DraftMemory | None
    draft_page: int
    non_torch: NonTorch
    graphs: int
    subtract_graphs: bool
    notes: tuple[str, ...]


def _setup(scenario: Scenario, spec: ModelSpec | None, gpu: GPU | None) -> _Setup:
    """Resolve ``scenario`` into :class:`_Setup` (vLLM's defaults for every limit left unset).

    Raises:
        PlannerError subclasses for unknown models, GPUs or bad settings; InvalidParameterError for a pipeline
        deeper than the model's layers.
    """
    r = resolve(scenario, spec, gpu)
    spec, gpu = r.spec, r.gpu
    profile = profile_for(scenario.engine_version)
    runner = runner_for(profile, spec)
    spec_cfg = scenario.speculative_config
    if runner == "v2" and spec_cfg is not None and runs_on_v1_runner(spec_cfg):
        runner = "v1"
    tp, pp = scenario.tensor_parallel_size, scenario.pipeline_parallel_size
    if pp > spec.num_layers:
        raise InvalidParameterError("pipeline_parallel_size", pp, f"at most the model's {spec.num_layers} layers")
    notes: list[str] = list(spec.assumptions)
    auto = scenario.max_model_len == MAX_MODEL_LEN_AUTO
    # auto sizes the memory at the model's own limit, then fits the length into it (_auto_fit_max_model_len)
    max_len = spec.max_position_embeddings if auto else scenario.max_model_len or spec.max_position_embeddings
    total = float(gpu.memory_total_bytes)
    seqs_default, mnbt_default = default_limits(
        profile, total_bytes=total, gpu_id=gpu.id, max_model_len=max_len, entry_point=scenario.entry_point
    )
    max_num_seqs = scenario.max_num_seqs or seqs_default
    mnbt = scenario.max_num_batched_tokens or mnbt_default
    block = scenario.block_size or (SPARSE_MLA_BLOCK_SIZE if spec.index_head_dim else DEFAULT_BLOCK_SIZE)
    version = NEWEST_VERSION if scenario.engine_version in (None, "", "latest") else scenario.engine_version
    # auto stays auto in the resolved scenario (advice and links keep it); the plan's max_model_len is the number
    resolved = replace(scenario, max_model_len=scenario.max_model_len if auto else max_len, engine_version=version)
    if version_key(version) < (0, 6, 3):
        notes.append(
            f"vLLM {version} predates the oldest accounting modelled (v0.6.3's peak torch memory); planned with it"
        )
    placement = place(tp, pp, gpu)
    car = custom_all_reduce(tp, gpu, spans_nodes=placement.tp_spans_nodes)
    kv_bytes = kv_dtype_bytes(scenario.kv_cache_dtype, r.dtype)
    page = page_bytes_per_layer(spec, tp=tp, block_size=block, dtype_bytes=kv_bytes)
    draft = _draft(scenario, spec, r.dtype, r.quantization, kv_bytes, tp, block)
    draft_page = draft.kv_page_bytes if draft else 0
    ratio = scenario.kv_compression_ratio
    if ratio:
        # a what-if, not an engine setting: every cached byte divided by the ratio
        page, draft_page = int(page / ratio), int(draft_page / ratio)
    nt = non_torch(
        base=profile.non_torch_base,
        tp=tp,
        pp=pp,
        gpu=gpu,
        v0_init_buffers=profile.arch == "v0",
        nvls_extra=profile.nvls_extra,
    )
    piecewise, full = cuda_graph_sizes(max_num_seqs, mnbt)
    return _Setup(
        spec=spec,
        gpu=gpu,
        dtype=r.dtype,
        quantization=r.quantization,
        profile=profile,
        runner=runner,
        tp=tp,
        pp=pp,
        auto=auto,
        max_len=max_len,
        max_num_seqs=max_num_seqs,
        mnbt=mnbt,
        block=block,
        version=version,
        resolved=resolved,
        topology=replace(placement, all_reduce=_all_reduce_text(car, tp)),
        total=total,
        budget=total * scenario.gpu_memory_utilization,
        act_bytes=DTYPE_BYTES[r.dtype],
        page=page,
        draft=draft,
        draft_page=draft_page,
        non_torch=nt,
        graphs=len(piecewise) + len(full),
        subtract_graphs=profile.cuda_graph_subtracted and not scenario.enforce_eager and runner != "v2",
        notes=tuple(notes),
    )


def _stages(setup: _Setup) -> list[_Stage]:
    """Each pipeline stage's memory on one of its GPUs: weights (the drafter's beside the last stage, where tokens
    are sampled), the profile run's activation peak, non-torch memory, the CUDA-graph estimate where this version
    subtracts it, what is left for the KV cache, and the block pool that leaves."""
    spec, profile = setup.spec, setup.profile
    pp = setup.pp
    stages = []
    for stage, layer_range in enumerate(pp_layer_ranges(spec.num_layers, pp)):
        weights = weights_bytes_per_rank(
            spec, method=setup.quantization, dtype=setup.dtype, tp=setup.tp, pp=pp, stage=stage
        ).total_bytes
        if setup.draft is not None and stage == pp - 1:  # the drafter is loaded beside the last stage (sampling)
            weights += setup.draft.weights_bytes
        activation = _activation(
            spec,
            profile,
            setup.runner,
            tokens=setup.mnbt,
            max_num_seqs=setup.max_num_seqs,
            tp=setup.tp,
            act_bytes=setup.act_bytes,
            fp8_activations=_fp8_activations(spec, setup.quantization),
            last_stage=stage == pp - 1,
        )
        n_layers = layer_range[1] - layer_range[0]
        graph = 0.0
        if setup.subtract_graphs and profile.cuda_graph_constant is not None:
            graph = fitted(profile.cuda_graph_constant) * n_layers * setup.graphs
        available = setup.budget - weights - activation.peak - setup.non_torch.total_bytes - graph
        groups = kv_groups(spec, layer_range, hybrid=profile.hybrid_kv)
        pool = build_pool(
            groups,
            available_bytes=available,
            page_bytes=setup.page,
            block_size=setup.block,
            max_num_batched_tokens=setup.mnbt,
            extra_page_bytes=setup.draft_page,
        )
        stages.append(_Stage(stage, weights, activation, setup.non_torch, graph, available, pool, layer_range))
    return stages


def _fit_auto(setup: _Setup, pool: KVPool) -> tuple[int, int, int, str | None]:
    """``(max_len, longest by memory, estimated max_model_len, note)``: the longest one request can have in
    ``pool`` (by memory, and capped at the model's limit); under ``--max-model-len auto`` that length becomes
    ``max_len`` (when one fits), with a note saying so (vLLM v0.12+ ``_auto_fit_max_model_len``)."""
    spec = setup.spec
    by_memory = _estimate_max_len(pool, setup.profile, setup.max_len) if pool.num_blocks else 0
    estimated = min(by_memory, spec.max_position_embeddings)
    if not (setup.auto and estimated > 0):
        return setup.max_len, by_memory, estimated, None
    if estimated < spec.max_position_embeddings:
        how = f"the longest one request can have in the KV cache, below the model's {spec.max_position_embeddings:,}"
    else:
        how = "the model's full context fits"
    note = f"--max-model-len auto resolved to {estimated:,} tokens: {how} (vLLM v0.12+ _auto_fit_max_model_len)"
    return estimated, by_memory, estimated, note


def _capacity(profile: VLLMProfile, pool: KVPool, block: int, max_len: int) -> tuple[int, float, int]:
    """``(KV tokens, max concurrency, blocks per request)`` at ``max_len`` as this version reports them: V0 counts
    blocks × block size and divides by the length; V1 asks the pool (per KV-cache group), and the versions that
    print tokens as concurrency × length do so."""
    if profile.arch == "v0":
        tokens = pool.num_blocks * block
        return tokens, tokens / max_len, ceil_div(max_len, block)
    concurrency = pool.concurrency_at(max_len)
    tokens = int(concurrency * max_len) if profile.tokens_from_concurrency else pool.tokens
    return tokens, concurrency, pool.blocks_per_request(max_len)


def _reason(
    setup: _Setup, limiting: _Stage, pool: KVPool, max_len: int, estimated: int, per_request_blocks: int
) -> str | None:
    """Why vLLM would not start with this memory (the first that applies: weights over the budget, nothing left for
    the KV cache, ``auto`` finding no length, one full-length request not fitting); None when it starts."""
    budget = setup.budget
    if limiting.weights > budget:
        return (
            f"the weights alone ({display.gib(limiting.weights)} per GPU) exceed the "
            f"{display.gib(budget)} budget (total × gpu_memory_utilization)"
        )
    if limiting.available <= 0:
        return (
            f"no memory is left for the KV cache: weights, activation and overheads take "
            f"{display.gib(budget - limiting.available)} of the {display.gib(budget)} budget"
        )
    if setup.auto and estimated == 0:
        return (
            f"--max-model-len auto finds no length that fits: the {display.gib(limiting.available)} of KV cache "
            "holds less than one token of every KV-cache group"
        )
    if pool.num_blocks < per_request_blocks:
        need = per_request_blocks * (setup.page * pool.group_size + setup.draft_page)
        return (
            f"one request of max_model_len {max_len:,} tokens needs {display.gib(need)} of KV cache, more than "
            f"the {display.gib(limiting.available)} available; the longest that fits is about {estimated:,} tokens"
        )
    return None


def _layout(setup: _Setup, pool: KVPool, limiting: _Stage, max_len: int, by_memory: int) -> KvLayout:
    """The plan's KV layout in the engine's terms (:func:`planner.capacity.kv_layout.build_kv_layout`), with the rule
    by which this version turns blocks into the "GPU KV cache size" tokens."""
    profile = setup.profile
    if profile.arch == "v0":
        tokens_rule = "v0_blocks"
    else:
        tokens_rule = "concurrency_times_len" if profile.tokens_from_concurrency else "blocks_over_groups"
    return build_kv_layout(
        setup.spec,
        pool,
        layer_range=limiting.layer_range,
        engine_version=setup.version,
        engine_arch=profile.arch,
        hybrid_kv_cache_manager=profile.hybrid_kv,
        kv_tokens_rule=tokens_rule,
        tp=setup.tp,
        pp=setup.pp,
        max_model_len=max_len,
        longest_by_memory_tokens=by_memory,
    )


def _draft(
    scenario: Scenario, spec: ModelSpec, dtype: str, quantization: str, kv_bytes: float, tp: int, block: int
) -> DraftMemory | None:
    """The speculative draft's memory on one GPU, ``None`` without speculative decoding."""
    if scenario.speculative_config is None:
        return None
    return draft_memory(
        scenario.speculative_config,
        spec,
        dtype=dtype,
        target_quantization=quantization,
        kv_dtype_bytes=kv_bytes,
        tp=tp,
        block_size=block,
        resolve=lambda model_id: resolve_model(model_id).spec,
    )


def _speculative_notes(
    scenario: Scenario, spec: ModelSpec, draft: DraftMemory | None, runner: str, default_runner: str
) -> list[str]:
    """What the plan assumes about speculative decoding, KV compression and DeepSeek-V3.2's indexer."""
    notes: list[str] = []
    cfg = scenario.speculative_config
    if cfg is not None and draft is not None:
        notes.append(
            f"speculative decoding ({cfg.describe()}): {draft.description}; its weights "
            f"({display.gib(draft.weights_bytes)} per GPU) are in the weights term and its {draft.num_layers} "
            "layer(s) add "
            f"{draft.kv_bytes_per_token:,.0f} B per token to every KV block (vLLM 0.24.0 puts the draft's KV-cache "
            "specs in the target's KV-cache groups)"
        )
        if runner != default_runner:
            notes.append(
                f"vLLM's V2 model runner does not run speculative method {cfg.method!r}: the V1 model runner is used "
                "(and its CUDA-graph estimate comes out of the budget)"
            )
        if cfg.method == "mtp" and spec.index_head_dim:
            notes.append("DeepSeek-V3.2 with MTP: vLLM 0.24.0 runs it eager (no CUDA graphs; speculative.py FIXME)")
    if spec.index_head_dim:
        notes.append(
            f"DeepSeek-V3.2 sparse attention (DSA, index_topk {spec.index_topk}): every layer also caches the "
            f"lightning indexer's keys, {spec.index_head_dim} fp8 values + a float32 scale = "
            f"{spec.index_head_dim + spec.index_head_dim // 128 * 4} B per token, in the KV bytes per token "
            "(vllm/model_executor/models/deepseek_v2.py DeepseekV32IndexerCache)"
        )
    if scenario.kv_compression_ratio:
        notes.append(
            f"what-if — not an engine setting: KV bytes divided by {scenario.kv_compression_ratio:g} for a KV-cache "
            "compression method (DMS, KVTC-style) no engine ships; the launch command cannot carry it"
        )
    return notes


def _notes(
    profile: VLLMProfile,
    runner: str,
    scenario: Scenario,
    spec: ModelSpec,
    gpu: GPU,
    topology: Topology,
    tp: int,
) -> list[str]:
    """Caveats of a vLLM plan, each naming the mechanism."""
    notes: list[str] = []
    if version_key(scenario.engine_version)[:2] > version_key(NEWEST_VERSION)[:2]:  # a patch release: same accounting
        # accepted (a newer release is most likely accounted as the newest known one), but said, so it is no surprise
        notes.append(
            f"vLLM {scenario.engine_version} is newer than the newest version the planner knows ({NEWEST_VERSION}, "
            f"versions known: {VERSION_PROFILES[0].name} to {NEWEST_VERSION}); planned with {NEWEST_VERSION}'s "
            "memory accounting"
        )
    if topology.warning:
        notes.append(topology.warning)
    if topology.tp_spans_nodes:
        notes.append(
            "non-torch memory is planned as within one node: the buffers NCCL sets up for the network between nodes "
            "are not modelled"
        )
    if profile.arch == "v1" and not scenario.enforce_eager:
        if runner == "v2":
            notes.append(
                f"{spec.architecture} runs on vLLM's V2 model runner, which estimates no CUDA-graph memory "
                "(profile_cudagraph_memory returns 0): the graph pool (0.5-1 GiB) comes out of the 1 − "
                "gpu_memory_utilization headroom"
            )
        elif not profile.cuda_graph_subtracted:
            notes.append(
                f"vLLM {profile.name}+ captures CUDA graphs after sizing the KV cache, so their pool "
                "(0.1-1.9 GiB) comes out of the 1 − gpu_memory_utilization headroom"
            )
    if tp > 1 and gpu.link is None:
        notes.append(
            "interconnect unknown (custom GPU): NCCL buffers planned as over PCIe; between NVSwitch-connected "
            "Hopper or later GPUs vLLM v0.18+ takes about 1.8 GiB more per GPU"
        )
    if scenario.entry_point == "llm":
        notes.append("entry point vllm.LLM: the offline class's scheduler defaults (usage context LLM_CLASS)")
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
    return notes


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
    if spec.is_mla and spec.index_head_dim:
        indexer = indexer_bytes_per_token(spec)
        latent = page / pool.block_size - indexer
        return (
            f"{pool.block_size} tokens × ({latent:g} B MLA latent"
            + (" in fp8_ds_mla" if latent < 2 * ((spec.kv_lora_rank or 0) + (spec.qk_rope_head_dim or 0)) else "")
            + f" + {indexer} B indexer keys)"
        )
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
    runner: str,
    total: float,
    s: Scenario,
    st: _Stage,
    page: int,
    pool: KVPool,
    tokens: int,
    concurrency: float,
    max_len: int,
    mnbt: int,
    spec: ModelSpec,
    *,
    graphs: int,
    draft: DraftMemory | None = None,
) -> tuple[Formula, ...]:
    src = (
        "vllm/v1/worker/gpu_worker.py::determine_available_memory"
        if profile.arch == "v1"
        else "vllm/worker/worker.py::determine_num_available_blocks"
    )
    budget = total * s.gpu_memory_utilization
    act = st.activation
    runner_name = {"v0": "V0 model runner", "v1": "V1 model runner", "v2": "V2 model runner"}[runner]
    forward = f"forward {mnbt:,} tokens {display.gib(act.forward)}"
    if act.moe_workspace:
        forward += f" (fused-MoE workspaces {display.gib(act.moe_workspace)})"
    sampler = (
        f"sampler {act.rows:,} rows × {spec.vocab_size:,} vocab × {act.bytes_per_logit:.1f} B + hidden states"
        + (" + MoE workspaces kept" if profile.moe_workspace_persistent and act.moe_workspace else "")
        + f" {display.gib(act.sampler)}"
    )
    lines = [
        Formula("Requested memory", f"{display.gib(total)} × {s.gpu_memory_utilization:.2f}", display.gib(budget), src),
        Formula(
            "Activation peak",
            f"max({forward}, {sampler}) on the {runner_name}",
            display.gib(act.peak),
            "profile_run / _dummy_sampler_run (planner/capacity/engines/vllm_memory.py)",
        ),
        Formula(
            "Non-torch memory",
            " + ".join(f"{what} {display.gib(value)}" for what, value in st.non_torch.parts),
            display.gib(st.non_torch.total_bytes),
            "vllm/utils/mem_utils.py::memory_profiling (non_torch_increase)",
        ),
    ]
    if graphs:
        per = fitted(profile.cuda_graph_constant) if profile.cuda_graph_constant else 0.0
        layers = st.layer_range[1] - st.layer_range[0]
        lines.append(
            Formula(
                "CUDA-graph estimate",
                f"{graphs} graphs × {layers} layers × {per / 1024:,.0f} KiB",
                display.gib(st.cuda_graph),
                "gpu_model_runner.py::profile_cudagraph_memory (v0.21+)",
            )
        )
    if draft is not None:
        lines.append(
            Formula(
                "Speculative draft",
                f"weights {display.gib(draft.weights_bytes)} (in the weights term) + {draft.num_layers} layer(s) × KV "
                f"= {draft.kv_page_bytes:,} B per {pool.block_size}-token block",
                f"{draft.kv_bytes_per_token:,.0f} B/token",
                "vllm/v1/spec_decode/draft_model.py, eagle.py; vllm/config/speculative.py (vLLM 0.24.0)",
            )
        )
    lines += [
        Formula(
            "KV cache memory",
            f"{display.gib(budget)} − {display.gib(st.weights)} weights − {display.gib(act.peak)} activation − "
            f"{display.gib(st.non_torch.total_bytes)} non-torch − {display.gib(st.cuda_graph)} CUDA graphs",
            display.gib(max(0.0, st.available)),
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
            f"{display.gib(max(0.0, st.available))} // ({page:,} B × {pool.group_size} layers per pool"
            + (f" + {pool.extra_page_bytes:,} B of the draft's layers" if pool.extra_page_bytes else "")
            + ")",
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
