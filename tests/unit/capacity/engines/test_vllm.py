"""The vLLM engine model against public vLLM startup logs.

Golden values: bench/data/vllm_capacity_logs.json (record ids cited). Tolerances: 2% on the
per-GPU KV memory (the issue's accuracy target is a 5% median), 1% on tokens where the log gives them.
"""

from __future__ import annotations

import pytest

from planner.capacity.engines.vllm import NEWEST_VERSION, default_limits, plan_vllm, profile_for
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.units import GIB

H100 = "h100-sxm-80gb"

# (log id, scenario, logged "Available KV cache memory" GiB, logged tokens or None)
LOGS = [
    (
        38,
        Scenario(
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            engine_version="0.19.0",
        ),
        58.11,
        476_000,
    ),
    (
        43,
        Scenario(
            model="Qwen/Qwen2.5-7B-Instruct",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            engine_version="0.19.0",
        ),
        58.53,
        1_096_000,
    ),
    (
        46,
        Scenario(
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            kv_cache_dtype="fp8",
            engine_version="0.19.0",
        ),
        58.11,
        952_032,
    ),
    (
        48,
        Scenario(
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            dtype="float32",
            engine_version="0.19.0",
        ),
        42.80,
        175_296,
    ),
    (
        49,
        Scenario(
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            quantization="fp8",
            engine_version="0.19.0",
        ),
        64.61,
        None,
    ),
    (
        50,
        Scenario(
            model="Qwen/Qwen3-14B", gpu=H100, gpu_memory_utilization=0.95, max_model_len=8192, engine_version="0.15.0"
        ),
        41.94,
        None,
    ),
    (
        51,
        Scenario(
            model="Qwen/Qwen3-14B", gpu=H100, gpu_memory_utilization=0.95, max_model_len=8192, engine_version="0.17.0"
        ),
        45.34,
        None,
    ),
    (
        52,
        Scenario(
            model="Qwen/Qwen3-14B", gpu=H100, gpu_memory_utilization=0.95, max_model_len=8192, engine_version="0.18.0"
        ),
        45.23,
        None,
    ),
    (
        53,
        Scenario(
            model="google/gemma-3-12b-it",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            engine_version="0.19.0",
        ),
        47.72,
        130_304,
    ),
    (
        54,
        Scenario(
            model="google/gemma-2-9b-it",
            gpu=H100,
            gpu_memory_utilization=0.95,
            max_model_len=8192,
            engine_version="0.19.0",
        ),
        54.12,
        168_880,
    ),
    (
        28,
        Scenario(model="openai/gpt-oss-20b", gpu=H100, max_model_len=16000, block_size=128, engine_version="0.11.0"),
        50.28,
        None,
    ),
    (
        30,
        Scenario(
            model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
            gpu=H100,
            tensor_parallel_size=2,
            max_model_len=16000,
            block_size=128,
            engine_version="0.11.0",
        ),
        32.0,
        None,
    ),
    (
        33,
        Scenario(model="Qwen/Qwen3-0.6B", gpu=H100, max_model_len=16000, block_size=128, engine_version="0.11.0"),
        64.45,
        None,
    ),
    (
        36,
        Scenario(
            model="Qwen/Qwen3-32B",
            gpu=H100,
            tensor_parallel_size=2,
            max_model_len=16000,
            block_size=128,
            engine_version="0.11.0",
        ),
        34.49,
        None,
    ),
]


@pytest.mark.parametrize(("log_id", "scenario", "kv_gib", "tokens"), LOGS, ids=[f"log{x[0]}" for x in LOGS])
def test_kv_cache_matches_vllm_log(log_id: int, scenario: Scenario, kv_gib: float, tokens: int | None) -> None:
    plan = plan_vllm(scenario)
    assert plan.fits
    assert plan.per_gpu.kv_cache_bytes / GIB == pytest.approx(kv_gib, rel=0.02), f"log id {log_id}"
    if tokens is not None:
        assert plan.kv_cache_tokens == pytest.approx(tokens, rel=0.02), f"log id {log_id}"


def test_concurrency_matches_log_38() -> None:
    # "Maximum concurrency for 8,192 tokens per request: 58.11x" (log id 38).
    plan = plan_vllm(LOGS[0][1])
    assert plan.max_concurrency == pytest.approx(58.11, rel=0.01)


def test_hybrid_concurrency_matches_log_53() -> None:
    # gemma-3-12b-it: "Maximum concurrency for 8,192 tokens per request: 15.88x" (log id 53).
    plan = plan_vllm(LOGS[8][1])
    assert plan.max_concurrency == pytest.approx(15.88, rel=0.02)


def test_weights_over_budget_does_not_fit() -> None:
    # Log id 31: Llama-3.3-70B FP8 on one H100 at 0.9 -> "No available memory for the cache blocks".
    plan = plan_vllm(
        Scenario(
            model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
            gpu=H100,
            max_model_len=16000,
            block_size=128,
            engine_version="0.11.0",
        )
    )
    assert not plan.fits
    assert "no memory is left" in plan.reason or "exceed" in plan.reason


def test_v0_insufficient_kv_is_refused() -> None:
    # Log id 2 (v0.6.4, RTX 3090, max_model_len 29000): "The model's max seq len (29000) is larger than the
    # maximum number of tokens that can be stored in KV cache (23648)".
    plan = plan_vllm(
        Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-3090", max_model_len=29000, engine_version="0.6.4")
    )
    assert not plan.fits
    assert plan.kv_cache_tokens == pytest.approx(23_648, rel=0.08)


def test_activation_fell_at_v017() -> None:
    # Log ids 50 and 51: the same Qwen3-14B setup logged 5.64 GiB of activation in v0.15, 2.23 in v0.17.
    old = plan_vllm(LOGS[5][1]).per_gpu.activation_bytes / GIB
    new = plan_vllm(LOGS[6][1]).per_gpu.activation_bytes / GIB
    assert old == pytest.approx(5.64, rel=0.02)
    assert new == pytest.approx(2.23, rel=0.02)


def test_cuda_graphs_subtracted_from_v021() -> None:
    s = LOGS[0][1]
    before = plan_vllm(s.with_changes(engine_version="0.20.0"))
    after = plan_vllm(s.with_changes(engine_version="0.21.0"))
    eager = plan_vllm(s.with_changes(engine_version="0.21.0", enforce_eager=True))
    assert before.per_gpu.cuda_graph_bytes == 0
    assert after.per_gpu.cuda_graph_bytes > 0
    assert eager.per_gpu.cuda_graph_bytes == 0


def test_non_torch_grows_with_tp() -> None:
    # Log ids 38 and 39 (v0.19): non-torch 0.25 GiB at TP 1, 2.07 GiB at TP 2.
    tp1 = plan_vllm(LOGS[0][1])
    tp2 = plan_vllm(LOGS[0][1].with_changes(tensor_parallel_size=2))
    assert tp1.per_gpu.non_torch_bytes / GIB == pytest.approx(0.25, abs=0.02)
    assert tp2.per_gpu.non_torch_bytes / GIB == pytest.approx(2.07, abs=0.1)


def test_tp_must_divide_heads() -> None:
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, tensor_parallel_size=3))
    assert not plan.fits and "divisible" in plan.reason


def test_max_model_len_above_model_limit_refused() -> None:
    plan = plan_vllm(Scenario(model="google/gemma-2-9b-it", gpu=H100, max_model_len=65536))
    assert not plan.fits and "max_position_embeddings" in plan.reason


@pytest.mark.parametrize(
    ("version", "name", "arch"),
    [
        ("0.19.0", "0.18", "v1"),
        ("v0.11.0 (image)", "0.11", "v1"),
        ("0.10.2", "0.10", "v1"),
        ("0.8.2 (V0 fallback)", "0.6.5", "v0"),
        ("0.6.4", "0.5.3", "v0"),
        ("0.4.3", "0.5", "v0"),
        ("0.24.0", "0.24", "v1"),
        (None, "0.27", "v1"),
        ("latest", "0.27", "v1"),
    ],
)
def test_profile_for(version: str | None, name: str, arch: str) -> None:
    profile = profile_for(version)
    assert (profile.name, profile.arch) == (name, arch)


def test_profile_for_rejects_garbage() -> None:
    with pytest.raises(InvalidParameterError, match="engine_version"):
        profile_for("banana")


def test_default_limits_follow_gpu_memory() -> None:
    # vLLM arg_utils: >= 70 GiB and not an A100 -> 1024 seqs / 8192 tokens; otherwise 256 / 2048.
    profile = profile_for(NEWEST_VERSION)
    assert default_limits(profile, total_bytes=79.19 * GIB, gpu_id="h100-sxm-80gb", max_model_len=8192) == (1024, 8192)
    assert default_limits(profile, total_bytes=79.15 * GIB, gpu_id="a100-sxm4-80gb", max_model_len=8192) == (256, 2048)
    assert default_limits(profile, total_bytes=23.5 * GIB, gpu_id="rtx-4090", max_model_len=8192) == (256, 2048)


def test_more_pipeline_stages_than_layers_is_rejected() -> None:
    # vLLM cannot give every stage a layer; the planner names the parameter instead of crashing.
    with pytest.raises(InvalidParameterError, match="pipeline_parallel_size=33"):
        plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, pipeline_parallel_size=33))


def test_estimated_max_model_len_capped_at_model_limit() -> None:
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, max_model_len=8192))
    assert plan.estimated_max_model_len == 131_072  # max_position_embeddings of Llama 3.1


def test_total_kv_is_never_below_one_gpu() -> None:
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, tensor_parallel_size=2))
    assert plan.kv_cache_total_bytes == pytest.approx(2 * plan.per_gpu.kv_cache_bytes)


def test_unmodelled_old_version_is_noted() -> None:
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, engine_version="0.1.0"))
    assert any("predates" in note for note in plan.notes)


def test_kv_heads_must_split_over_tp() -> None:
    # vLLM: the KV heads must divide by TP (or TP by them, when it replicates them).
    from planner.catalog.hub import model_from_config

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 3072,
        "num_hidden_layers": 4,
        "num_attention_heads": 24,
        "num_key_value_heads": 6,
        "vocab_size": 1000,
        "intermediate_size": 8192,
        "max_position_embeddings": 4096,
    }
    spec = model_from_config(config).spec
    assert plan_vllm(Scenario(model="x/y", gpu=H100, tensor_parallel_size=3), spec).fits
    refused = plan_vllm(Scenario(model="x/y", gpu=H100, tensor_parallel_size=4), spec)
    assert not refused.fits and "KV heads" in refused.reason


def test_a_tensor_parallelism_vllm_refuses_is_reported_as_refused_with_the_fix():
    # Llama-3.1-8B: 32 attention heads, 8 KV heads (config.json). vLLM needs tp | 32, and 8 | tp or tp | 8:
    # 1, 2, 4, 8 divide both; 16 and 32 divide 32 and are multiples of 8 (KV heads replicated); 3 divides nothing.
    from planner.capacity.plan import plan

    result = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", tensor_parallel_size=3))
    assert not result.fits and result.refused
    assert result.reason == (
        "32 attention heads are not divisible by tensor_parallel_size 3; vLLM refuses to start: "
        "use --tensor-parallel-size 1, 2, 4, 8, 16, 32"
    )
    assert result.advice[0].change == "--tensor-parallel-size 1" and result.advice[0].num_gpus == 1
    fits = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", tensor_parallel_size=2))
    assert fits.fits and not fits.refused


# --- --max-model-len auto (-1): the largest length that fits, as vLLM v0.12+ _auto_fit_max_model_len resolves it -----


def test_auto_max_model_len_is_the_longest_that_fits() -> None:
    # Llama-3.1-8B-Instruct on an RTX 4090: 2,901 blocks (the planner's figure) of one full-attention group, so the
    # bisection's answer is 2,901 x 16 = 46,416 tokens, below the model's 131,072; at that length one request takes
    # all 2,901 blocks: concurrency 1.00x.
    from planner.capacity.scenario import MAX_MODEL_LEN_AUTO

    auto = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", max_model_len=MAX_MODEL_LEN_AUTO)
    plan = plan_vllm(auto)
    assert plan.fits and plan.max_model_len_auto
    assert plan.max_model_len == plan.estimated_max_model_len == 2_901 * 16 == 46_416
    assert plan.scenario.max_model_len == MAX_MODEL_LEN_AUTO  # the resolved scenario keeps auto (advice, links)
    assert plan.max_concurrency == pytest.approx(1.0, abs=0.001)
    assert any("auto resolved to 46,416 tokens" in note for note in plan.notes)


def test_auto_max_model_len_takes_the_model_limit_when_it_fits() -> None:
    # Llama-3.1-8B on an H100: the full 131,072 tokens fit ("Auto-fit max_model_len: full model context length fits")
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, max_model_len=-1))
    assert plan.fits and plan.max_model_len == 131_072
    assert any("the model's full context fits" in note for note in plan.notes)


def test_auto_max_model_len_with_weights_over_budget_does_not_fit() -> None:
    plan = plan_vllm(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090", max_model_len=-1))
    assert not plan.fits and "exceed" in plan.reason


@pytest.mark.parametrize(("version", "accepts"), [("0.11.2", False), ("0.12.0", True), ("0.19.0", True), (None, True)])
def test_versions_that_take_max_model_len_auto(version: str | None, accepts: bool) -> None:
    # vLLM PR #29431 (human_readable_int_or_auto), first released after v0.11.2
    from planner.capacity.engines.vllm import accepts_max_model_len_auto

    assert accepts_max_model_len_auto(version) is accepts


# --- issue 16: the mechanisms at plan level, worked out by hand ---------------------------------------------------


def test_70b_on_two_h100_at_the_newest_version() -> None:
    # Llama-3.3-70B-Instruct (h 8192, i 28672, 64 heads, 8 KV heads of 128, 80 layers) on 2 H100 SXM at 0.9:
    # budget 79.19 × 0.9 = 71.27 GiB; weights 65.71 GiB per GPU; the V2 model runner's forward peak
    # 8192 × (2·8192 + (3·28672 + 80·128) / 2) × 2 B = 1,056,964,608 B = 0.984 GiB (its sampler, 1024 × 128,256 × 6 B +
    # 8192 × 8192 × 2 B = 0.86 GiB, is smaller); non-torch 0.248 + 0.431 (NCCL ring, 24 channels) + 1.42 (NVLS) =
    # 2.10 GiB; no CUDA-graph estimate on the V2 runner. KV = 71.27 − 65.71 − 0.98 − 2.10 = 2.48 GiB, 163,840 B per
    # token per GPU: 1,016 blocks, 16,256 tokens. The model's 131,072 tokens need 20 GiB: does not fit, by 17.5 GiB
    # (not by 0.06 GiB, the CUDA-graph estimate and V1 sampler the V2 runner does not have).
    from planner.capacity.plan import plan

    # the version pinned: with none set, the advice must fit every version in use (tests/unit/capacity/test_plan.py)
    scenario = Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu=H100, tensor_parallel_size=2)
    result = plan(scenario.with_changes(engine_version="0.28.0"))
    assert result.per_gpu.activation_bytes == 1_056_964_608
    assert result.per_gpu.non_torch_bytes / GIB == pytest.approx(2.10, abs=0.005)
    assert result.per_gpu.cuda_graph_bytes == 0
    assert result.per_gpu.kv_cache_bytes / GIB == pytest.approx(2.48, abs=0.01)
    assert (result.num_gpu_blocks, result.kv_cache_tokens) == (1_016, 16_256)
    assert not result.fits and "needs 20.00 GiB of KV cache" in result.reason
    assert result.advice[0].change == "--max-model-len 15360"  # 16,256 rounded down to a multiple of 1,024


def test_tp_without_nvlink_takes_little_non_torch() -> None:
    # v0.19, TP 2: 0.248 GiB + NCCL's ring over PCIe, 2 channels × 2 × 9,633,792 B = 0.036 GiB, on L40S; on H100
    # SXM 0.248 + 0.431 + 1.42 = 2.10 GiB (logs 39, 44: 2.07, 2.06)
    base = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", max_model_len=8192, engine_version="0.19.0")
    l40s = plan_vllm(base.with_changes(gpu="l40s", tensor_parallel_size=2))
    h100 = plan_vllm(base.with_changes(gpu=H100, tensor_parallel_size=2))
    assert l40s.per_gpu.non_torch_bytes / GIB == pytest.approx(0.248 + 38_535_168 / GIB, abs=1e-6)
    assert h100.per_gpu.non_torch_bytes / GIB == pytest.approx(2.07, abs=0.05)


def test_v0_sampler_of_a_large_vocabulary_on_two_t4() -> None:
    # vLLM 0.4.3 (V0, no chunked prefill): 256 rows, max_num_batched_tokens = max(4096, 2048) = 4096. gemma-2-9b-it
    # (vocab 256,000, h 3584, fp16 on a T4): the sampler sorts the vocabulary, 256 × 256,000 × 38.59 B + 4096 × 3584
    # × 2 B = 2.56 GB = 2.38 GiB, where the forward is 4096 × (2·3584 + (3·14336 + 32·256) / 2) × 2 B = 0.25 GiB.
    result = plan_vllm(
        Scenario(
            model="google/gemma-2-9b-it", gpu="t4", tensor_parallel_size=2, max_model_len=4096, engine_version="0.4.3"
        )
    )
    assert (result.max_num_seqs, result.max_num_batched_tokens) == (256, 4096)
    sampler = 256 * 256_000 * (39.16 + 38.47 + 38.13) / 3 + 4096 * 3584 * 2
    assert result.per_gpu.activation_bytes == pytest.approx(sampler, rel=1e-9)
    assert result.per_gpu.activation_bytes / GIB == pytest.approx(2.38, abs=0.01)


@pytest.mark.parametrize(
    ("version", "max_model_len", "limits"),
    [
        ("0.4.3", 65_536, (256, 65_536)),  # no chunked prefill by default before v0.5.3: the whole context
        ("0.5.3", 65_536, (256, 2_048)),  # vLLM PR #6666: chunked prefill above 32k context, 2048 tokens
        ("0.5.3", 8_192, (256, 8_192)),
    ],
)
def test_v0_profile_batch(version: str, max_model_len: int, limits: tuple[int, int]) -> None:
    profile = profile_for(version)
    assert default_limits(profile, total_bytes=79.19 * GIB, gpu_id=H100, max_model_len=max_model_len) == limits


@pytest.mark.parametrize(
    ("version", "gpu", "total_gib", "entry", "limits"),
    [
        (None, H100, 79.19, "serve", (1024, 8192)),  # EngineArgs.get_batch_defaults, OPENAI_API_SERVER
        (None, H100, 79.19, "llm", (1024, 16384)),  # LLM_CLASS
        (None, "l4", 21.94, "llm", (256, 8192)),
        (None, "a100-sxm4-80gb", 79.15, "llm", (256, 8192)),  # "a100" not in device name
        ("0.8.4", "l40s", 44.43, "llm", (1024, 8192)),  # _override_v1_engine_args (PR #11061)
    ],
)
def test_default_limits_by_entry_point(
    version: str | None, gpu: str, total_gib: float, entry: str, limits: tuple[int, int]
) -> None:
    kwargs = {"total_bytes": total_gib * GIB, "gpu_id": gpu, "max_model_len": 8192, "entry_point": entry}
    assert default_limits(profile_for(version), **kwargs) == limits


def test_entry_point_llm_sizes_the_profile_run_and_pins_the_launch() -> None:
    from planner.capacity.launch import launch
    from planner.capacity.plan import plan

    result = plan(Scenario(model="Qwen/Qwen3-8B", gpu=H100, max_model_len=8192, entry_point="llm"), advise=False)
    assert (result.max_num_seqs, result.max_num_batched_tokens) == (1024, 16384)
    assert "--max-num-seqs 1024 --max-num-batched-tokens 16384" in launch(result).command
