"""Tests of planner.catalog.presets: the article's scenarios 1 and 4 reproduced exactly.

Golden values: the article's published results for scenario 1 (RTX 4090 24 GB, Llama 3.1 8B, int4
weights, fp16 KV, 8,192 tokens: 131,072 B/token, 153,802 tokens, 18 requests) and scenario 4 (H100
80 GB, Llama 3.1 70B, int4 weights, fp8 KV, 8,192 tokens: 163,840 B/token, 300,834 tokens, 36 requests).
"""

from __future__ import annotations

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario, validate
from planner.catalog.presets import ARTICLE_CASES, article_scenarios, presets, recipes, scenario_from_advice
from planner.errors import InvalidParameterError
from planner.links.budget import MAX_SCENARIOS


@pytest.mark.parametrize(
    ("index", "bytes_per_token", "tokens", "requests"),
    [
        (0, 131_072, 153_802, 18),
        (3, 163_840, 300_834, 36),
    ],
)
def test_article_engine_reproduces_published_scenarios(index, bytes_per_token, tokens, requests):
    result = plan(article_scenarios("article")[index])
    assert result.kv_bytes_per_token == bytes_per_token
    assert result.kv_cache_tokens == tokens
    assert result.max_concurrency == requests
    assert result.fits


def test_reconstructed_scenarios_are_labelled():
    assert [c.reconstructed for c in ARTICLE_CASES] == [False, True, True, False]
    assert ARTICLE_CASES[1].title == "Article 2 (reconstructed)"
    assert all("reconstructed" in p.description for p in presets() if p.key in ("article-article", "article-vllm"))


def test_vllm_mapping_of_article_scenarios():
    s1, s2, s3, s4 = article_scenarios("vllm")
    # Scenario 1's int4 Llama 3.1 8B is planned as the real AWQ export (its config carries the scheme).
    assert (s1.model, s1.quantization, s1.kv_cache_dtype, s1.max_model_len) == (
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        None,
        "auto",
        8192,
    )
    assert (s2.quantization, s2.kv_cache_dtype, s2.max_model_len) == (None, "auto", 32768)
    assert (s3.quantization, s3.kv_cache_dtype) == ("int8", "fp8")
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


def test_recipes():
    personal, production, agent = (r.scenarios[0] for r in recipes())
    assert (personal.gpu, personal.max_model_len, personal.max_num_seqs) == ("rtx-4090", 8192, 16)
    assert (production.tensor_parallel_size, production.max_model_len) == (2, 16384)
    assert (agent.gpu, agent.max_model_len, agent.kv_cache_dtype) == ("h200-sxm-141gb", 131072, "fp8")
    assert all(plan(s).fits for s in (personal, production, agent))


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
