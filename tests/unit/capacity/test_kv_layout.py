"""Golden KV layouts of vLLM plans, worked out by hand from each model's config.json.

Formulas (vLLM ``vllm/v1/core/kv_cache_utils.py`` and ``vllm/v1/kv_cache_interface.py``, v0.10–v0.24):

* page of one layer = block_size (16) × KV heads per GPU × (head_dim + v_head_dim) × 2 B (bf16);
  KV heads per GPU = max(1, num_key_value_heads // TP) (``ModelConfig.get_num_kv_heads``).
* hybrid models: layers grouped by attention type into groups of the smallest per-type layer count
  (``_get_kv_cache_groups_uniform_page_size``); a block id = one page in each layer of a group.
* blocks one request of L tokens takes per group (``max_memory_usage_bytes``): cdiv(L, 16) for full attention,
  cdiv(min(window − 1 + max_num_batched_tokens, L), 16) + 1 for a sliding window.
* concurrency = num_blocks / blocks per request (``get_max_concurrency_for_kv_cache_config``); "GPU KV cache size"
  = int(concurrency × L) from v0.24 (vLLM 0.24.0 ``kv_cache_utils.py``), num_blocks // groups × 16 before.

Config values are the catalog's (``planner/catalog/data/models_reference.json`` / ``models_serving.json``, each with
its source). Every scenario runs on one H100 80GB SXM at gpu_memory_utilization 0.9, where vLLM's default
max_num_batched_tokens is 8,192 (``EngineArgs._set_default_args``: ≥ 70 GiB and not an A100).

The number of blocks follows from the KV memory, which is the planner's estimate of weights, activation and
overheads; it is quoted (issue 11 quoted gemma-2-9b's 19,187, before issue 16 counted the activation, non-torch and
CUDA-graph terms by mechanism) and every other figure is derived from it by hand.
Integers are exact; concurrency within 0.005.
"""

from __future__ import annotations

import pytest

from planner.capacity.engines.vllm import plan_vllm
from planner.capacity.scenario import Scenario

H100 = "h100-sxm-80gb"
CONCURRENCY_ABS = 0.005
#: The golden scenarios (test_explain.py explains the same ones).
GEMMA_2_9B = Scenario(model="google/gemma-2-9b", gpu=H100, max_model_len=8192, engine_version="0.28.0")
GPT_OSS_20B = Scenario(model="openai/gpt-oss-20b", gpu=H100, max_model_len=16_000, engine_version="0.28.0")
LLAMA_70B_TP16 = Scenario(
    model="meta-llama/Llama-3.1-70B", gpu=H100, tensor_parallel_size=16, max_model_len=8192, engine_version="0.28.0"
)


def _types(plan):
    return {g.attention: g for g in plan.kv_layout.group_types}


def test_gemma_2_9b_two_groups_of_21() -> None:
    # google/gemma-2-9b config.json: 42 layers alternating sliding window (4096) / full, 8 KV heads, head_dim 256.
    plan = plan_vllm(GEMMA_2_9B)
    layout = plan.kv_layout
    assert layout.hybrid_kv_cache_manager and layout.layers_cached_as_full == 0
    assert layout.page_bytes_per_layer == 16 * 8 * (256 + 256) * 2 == 131_072
    assert layout.group_size_layers == 21  # min(21 sliding, 21 full)
    assert layout.num_kv_cache_groups == 2
    assert layout.block_bytes == 131_072 * 21 == 2_752_512
    sliding, full = _types(plan)["sliding"], _types(plan)["full"]
    assert (sliding.window_tokens, sliding.num_layers, sliding.num_groups) == (4096, 21, 1)
    assert (full.window_tokens, full.num_layers, full.num_groups) == (None, 21, 1)
    # sliding: min(4096 - 1 + 8192, 8192) = 8192 tokens -> cdiv(8192, 16) + 1 = 513 blocks; full: 8192 / 16 = 512
    assert (sliding.tokens_per_request, sliding.blocks_per_request) == (8192, 513)
    assert (full.tokens_per_request, full.blocks_per_request) == (8192, 512)
    assert layout.blocks_per_request == 513 + 512 == 1025
    assert layout.kv_bytes_per_request_per_gpu == 1025 * 2_752_512 == 2_821_324_800
    # per GPU: 42 layers x 8 heads x 512 x 2 B; each type half of it; TP 1 so the whole model is the same
    assert layout.kv_bytes_per_token_per_gpu == 42 * 8 * 512 * 2 == 344_064
    assert sliding.kv_bytes_per_token_per_gpu == full.kv_bytes_per_token_per_gpu == 172_032
    assert layout.kv_bytes_per_token_model == layout.kv_bytes_per_token_all_gpus == 344_064
    # the planner's figure: 19,187 in issue 11; 19,345 since issue 16 counts the CUDA-graph estimate of v0.24+ by
    # capture sizes (102 graphs x 42 layers x 132 KiB = 0.54 GiB, not 42 x 21 MiB = 0.86 GiB)
    assert plan.num_gpu_blocks == 19_345
    assert plan.max_concurrency == pytest.approx(19_345 / 1025, abs=CONCURRENCY_ABS)  # 18.87x
    assert plan.kv_cache_tokens == 154_609  # int(19345 x 8192 / 1025) = int(154,609.06), vLLM >= 0.24
    assert layout.kv_tokens_rule == "concurrency_times_len"
    # longest by memory: past 4095 + 8192 = 12,287 tokens the sliding group holds cdiv(12287, 16) + 1 = 769 blocks,
    # so cdiv(L, 16) <= 19345 - 769 = 18,576 -> L = 18,576 x 16 = 297,216; the model's 8,192 caps it
    assert layout.longest_by_memory_tokens == 297_216
    assert plan.estimated_max_model_len == 8192


@pytest.mark.parametrize(
    ("version", "hybrid", "groups", "group_size", "blocks", "per_request", "tokens"),
    [
        # v0.9: no hybrid manager; unify_hybrid_kv_cache_specs caches the 40 sliding layers as full attention:
        # one group of 48 layers, blocks of 131,072 x 48 = 6,291,456 B; a 131,072-token request: 131072 / 16 = 8,192
        # blocks; tokens 6,626 x 16 = 106,016
        ("0.9.0", False, 1, 48, 6_626, 8_192, 106_016),
        # v0.11 (the hybrid manager came in v0.10, whose FlashInfer sampler also changes the memory; v0.11 samples
        # as v0.9 does): 40 sliding (window 1024) + 8 full -> groups of 8: 5 sliding + 1 full = 6, blocks of
        # 1,048,576 B; sliding keeps min(1023 + 8192, 131072) = 9,215 tokens -> cdiv(9215, 16) + 1 = 577 blocks in
        # each of 5; full 8,192 -> 5 x 577 + 8192 = 11,077; tokens 39,714 // 6 x 16 = 6,619 x 16 = 105,904
        ("0.11.0", True, 6, 8, 39_714, 11_077, 105_904),
    ],
)
def test_gemma_3_12b_before_and_after_the_hybrid_allocator(
    version: str, hybrid: bool, groups: int, group_size: int, blocks: int, per_request: int, tokens: int
) -> None:
    # google/gemma-3-12b-it text_config: 48 layers, sliding_window_pattern 6 (5 local + 1 global: 40 sliding, 8 full),
    # sliding_window 1024, 8 KV heads, head_dim 256, max_position_embeddings 131,072 (the default max_model_len).
    plan = plan_vllm(Scenario(model="google/gemma-3-12b-it", gpu=H100, engine_version=version))
    layout = plan.kv_layout
    assert plan.max_model_len == 131_072
    assert layout.hybrid_kv_cache_manager is hybrid
    assert layout.layers_cached_as_full == (0 if hybrid else 40)
    assert (layout.num_kv_cache_groups, layout.group_size_layers) == (groups, group_size)
    assert layout.block_bytes == 131_072 * group_size
    assert layout.kv_bytes_per_token_per_gpu == 48 * 8 * 512 * 2 == 393_216
    assert plan.num_gpu_blocks == blocks  # the planner's figure (38.8 GiB of KV in both versions)
    assert layout.blocks_per_request == per_request
    assert plan.kv_cache_tokens == tokens
    assert plan.max_concurrency == pytest.approx(blocks / per_request, abs=CONCURRENCY_ABS)  # 0.81x, 3.58x


def test_gpt_oss_20b_alternating_sliding_and_full() -> None:
    # openai/gpt-oss-20b config.json: 24 layers, layer_types alternating sliding_attention / full_attention (12 + 12),
    # sliding_window 128, 8 KV heads, head_dim 64; no torch_dtype, so bf16 is assumed (2 B).
    plan = plan_vllm(GPT_OSS_20B)
    layout = plan.kv_layout
    assert layout.page_bytes_per_layer == 16 * 8 * (64 + 64) * 2 == 32_768
    assert (layout.num_kv_cache_groups, layout.group_size_layers) == (2, 12)
    assert layout.block_bytes == 32_768 * 12 == 393_216
    sliding, full = _types(plan)["sliding"], _types(plan)["full"]
    # the window caps the sliding group: min(128 - 1 + 8192, 16000) = 8,319 tokens -> cdiv(8319, 16) + 1 = 521 blocks
    assert (sliding.tokens_per_request, sliding.blocks_per_request) == (8_319, 521)
    assert (full.tokens_per_request, full.blocks_per_request) == (16_000, 1_000)  # 16000 / 16
    assert layout.blocks_per_request == 1_521
    assert layout.kv_bytes_per_token_per_gpu == 24 * 8 * 128 * 2 == 49_152
    assert sliding.kv_bytes_per_token_per_gpu == 12 * 8 * 128 * 2 == 24_576
    assert plan.num_gpu_blocks == 147_071  # the planner's figure
    assert plan.max_concurrency == pytest.approx(147_071 / 1_521, abs=CONCURRENCY_ABS)  # 96.69x
    assert plan.kv_cache_tokens == 1_547_097  # int(147071 x 16000 / 1521) = int(1,547,097.96)
    # what a 16,000-token request really takes per token per GPU: 1521 x 393,216 B / 16000 = 37,380.1 B
    assert layout.kv_bytes_per_request_per_gpu / 16_000 == pytest.approx(37_380.1, abs=0.1)


def test_llama_3_1_70b_tp16_replicates_kv_heads() -> None:
    # meta-llama/Llama-3.1-70B config.json: 80 layers, 64 heads, 8 KV heads, head_dim 8192 / 64 = 128, bf16.
    # TP 16 > 8 KV heads: each GPU keeps max(1, 8 // 16) = 1 head, each head cached on 16 / 8 = 2 GPUs.
    plan = plan_vllm(LLAMA_70B_TP16)
    layout = plan.kv_layout
    assert layout.kv_heads_per_gpu == 1 and layout.num_kv_heads_model == 8 and layout.kv_heads_replicated
    assert layout.page_bytes_per_layer == 16 * 1 * (128 + 128) * 2 == 8_192
    assert (layout.num_kv_cache_groups, layout.group_size_layers) == (1, 80)
    assert layout.kv_bytes_per_token_per_gpu == 80 * 1 * 256 * 2 == 40_960
    assert layout.kv_bytes_per_token_model == 80 * 8 * 256 * 2 == 327_680  # distinct K/V, each head once
    assert layout.kv_bytes_per_token_all_gpus == 16 * 40_960 == 655_360  # every head stored twice
    assert plan.kv_bytes_per_token_model == 327_680
    assert layout.blocks_per_request == 8192 // 16 == 512
    assert plan.num_gpu_blocks == 98_210  # the planner's figure
    assert plan.max_concurrency == pytest.approx(98_210 / 512, abs=CONCURRENCY_ABS)  # 191.82x
    assert plan.kv_cache_tokens == 98_210 * 16 == 1_571_360  # one group: int(concurrency x 8192) = blocks x 16
    # past TP 8 the per-GPU figure stops shrinking: at TP 8 each GPU also keeps 8 // 8 = 1 head
    tp8 = plan_vllm(plan.scenario.with_changes(tensor_parallel_size=8))
    assert tp8.kv_layout.kv_bytes_per_token_per_gpu == 40_960
    assert tp8.kv_layout.kv_bytes_per_token_model == tp8.kv_layout.kv_bytes_per_token_all_gpus == 327_680


def test_tgi_plans_carry_no_vllm_layout() -> None:
    from planner.capacity.engines.tgi import plan_tgi

    assert plan_tgi(Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100)).kv_layout is None
