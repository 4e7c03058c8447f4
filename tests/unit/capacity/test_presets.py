"""Tests of planner.capacity.presets: the article's four scenarios reproduced exactly, and its recipes.

Golden values: the article's published results for scenario 1 (RTX 4090 24 GB, Llama 3.1 8B, int4
weights, fp16 KV, 8,192 tokens: 131,072 B/token, 153,802 tokens, 18 requests) and scenario 4 (H100
80 GB, Llama 3.1 70B, int4 weights, fp8 KV, 8,192 tokens: 163,840 B/token, 300,834 tokens, 36 requests);
scenarios 2 and 3 worked by hand with the article's function (below).
"""

from __future__ import annotations

import pytest

from planner.capacity.plan import plan
from planner.capacity.presets import ARTICLE_CASES, article_scenarios, presets, recipes, scenario_from_advice
from planner.capacity.scenario import Scenario, validate
from planner.errors import InvalidParameterError
from planner.links.budget import MAX_SCENARIOS


@pytest.mark.parametrize(
    ("index", "bytes_per_token", "tokens", "requests"),
    [
        (0, 131_072, 153_802, 18),
        # 2: A100 80 GB, 8B fp16, fp8 KV, 16,384: weights 8e9 × 2 B; KV 2 × 32 × 8 × 128 × 1 = 65,536 B/token;
        # tokens = int((80 − 1.5) GiB / 65,536 − 16e9 / 65,536) = int(1,286,144 − 244,140.625) = 1,042,003;
        # requests 1,042,003 // 16,384 = 63
        (1, 65_536, 1_042_003, 63),
        # 3: A100 80 GB, 8B int4, fp8 KV, 65,536: int(1,286,144 − 4e9 / 65,536) = int(1,286,144 − 61,035.16) =
        # 1,225,108; requests // 65,536 = 18
        (2, 65_536, 1_225_108, 18),
        (3, 163_840, 300_834, 36),
    ],
)
def test_article_engine_reproduces_published_scenarios(index, bytes_per_token, tokens, requests):
    result = plan(article_scenarios("article")[index])
    assert result.kv_bytes_per_token == bytes_per_token
    assert result.kv_cache_tokens == tokens
    assert result.max_concurrency == requests
    assert result.fits


def test_scenarios_carry_the_articles_names():
    assert [c.title for c in ARTICLE_CASES] == [
        "Article 1: Personal Server",
        "Article 2: Production",
        "Article 3: Long Context Agent",
        "Article 4: Large Model",
    ]
    assert not any("reconstructed" in p.description for p in presets())


def test_vllm_mapping_of_article_scenarios():
    s1, s2, s3, s4 = article_scenarios("vllm")
    # Scenario 1's int4 Llama 3.1 8B is planned as the real AWQ export (its config carries the scheme).
    assert (s1.model, s1.quantization, s1.kv_cache_dtype, s1.max_model_len) == (
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        None,
        "auto",
        8192,
    )
    assert (s2.gpu, s2.quantization, s2.kv_cache_dtype, s2.max_model_len) == ("a100-sxm4-80gb", None, "fp8", 16384)
    assert (s3.model, s3.kv_cache_dtype, s3.max_model_len) == (
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        "fp8",
        65536,
    )
    assert (s4.gpu, s4.quantization, s4.kv_cache_dtype) == ("h100-sxm-80gb", "awq", "fp8")


def test_article_scenarios_rejects_other_engines():
    with pytest.raises(InvalidParameterError):
        article_scenarios("tgi")


@pytest.mark.parametrize("preset", presets(), ids=lambda p: p.key)
def test_every_preset_is_valid_and_plans(preset):
    assert 1 <= len(preset.scenarios) <= MAX_SCENARIOS
    assert len(preset.labels) == len(preset.scenarios)
    for s in preset.scenarios:
        plan(validate(s))


def test_recipes_are_the_articles():
    personal, production, agent = recipes()
    (qwen,) = personal.scenarios
    assert (qwen.model, qwen.kv_cache_dtype) == ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "auto")
    # Qwen2.5-7B: 28 layers × 4 KV heads × 128 × 2 (K, V) × 2 B (fp16 KV) = 57,344 B per token
    assert plan(qwen).kv_bytes_per_token == 57_344
    small, large = production.scenarios
    assert small.model == "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4" and large.tensor_parallel_size == 4
    for s in (small, large):
        assert s.kv_cache_dtype == "fp8"
        assert s.speculative_config.to_json() == {
            "method": "draft_model",
            "model": "meta-llama/Llama-3.2-1B-Instruct",
            "num_speculative_tokens": 5,
        }
    # 70B at TP 4, fp8: 80 layers × 2 KV heads × 128 × 2 × 1 B = 40,960, + the 1B draft's 16 × 2 × 64 × 2 × 1 = 4,096
    assert plan(large).kv_bytes_per_token == 45_056
    v32, dms = agent.scenarios
    # DeepSeek-V3.2, fp8: 61 × (656 fp8_ds_mla + 132 indexer) = 48,068 B per token on each GPU
    assert (v32.model, v32.kv_cache_dtype, plan(v32).kv_bytes_per_token) == ("deepseek-ai/DeepSeek-V3.2", "fp8", 48_068)
    # Llama 3.1 8B fp8 KV (65,536 B) under a what-if ratio of 8: 8,192 B
    assert (dms.kv_compression_ratio, plan(dms).kv_bytes_per_token) == (8.0, 8_192)
    assert all(plan(s).fits for r in recipes() for s in r.scenarios)


def test_scenario_from_advice_applies_only_the_change():
    original = Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100-sxm-80gb")
    result = plan(original)
    assert not result.fits and result.advice
    for advice in result.advice:
        changed = scenario_from_advice(original, result, advice)
        assert changed.engine_version is None  # the resolved default is not pinned
        assert plan(changed).fits


def test_scenario_from_advice_keeps_article_gpu_memory_from_catalog():
    original = Scenario(engine="article", model="meta-llama/Llama-3.1-8B-Instruct", gpu="t4")
    result = plan(original)
    gpu_advice = [a for a in result.advice if a.change.startswith("a bigger GPU")]
    assert gpu_advice
    changed = scenario_from_advice(original, result, gpu_advice[0])
    assert changed.gpu != original.gpu and changed.gpu_memory_gb is None
