"""Plan dispatch and the advice search (every suggestion is re-planned and must fit)."""

from __future__ import annotations

import pytest

from planner.capacity.plan import plan, plan_many
from planner.capacity.scenario import Scenario
from planner.catalog.models import quantized_exports
from planner.errors import InvalidParameterError


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100"),
        Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"),
        Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", max_model_len=131072),
        Scenario(engine="tgi", model="meta-llama/Llama-3.1-70B-Instruct", gpu="l40s"),
        Scenario(engine="article", model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"),
    ],
)
def test_every_advice_fits_when_replanned(scenario: Scenario) -> None:
    result = plan(scenario)
    assert not result.fits
    assert result.advice, "a scenario that does not fit should come with a way to make it fit"
    for advice in result.advice:
        assert plan(advice.scenario, advise=False).fits, advice.change


def test_advice_prefers_fewer_gpus() -> None:
    gpus = [a.num_gpus for a in plan(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100")).advice]
    assert gpus == sorted(gpus)


def test_advice_names_real_exports_from_the_catalog() -> None:
    result = plan(Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h200-sxm-141gb", max_model_len=131072))
    assert not result.fits  # 131 GiB of bf16 weights on one H200
    assert any("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic" in a.change for a in result.advice)


def test_quantized_exports_match_architecture() -> None:
    assert [m.id for m in quantized_exports("meta-llama/Llama-3.1-8B-Instruct")] == [
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"
    ]
    assert {m.id for m in quantized_exports("Qwen/Qwen2.5-7B-Instruct")} == {
        "Qwen/Qwen2.5-7B-Instruct-AWQ",
        "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
    }
    assert quantized_exports("no/such-model") == ()


def test_plan_many_keeps_errors_in_place() -> None:
    results = plan_many([Scenario(), Scenario(pipeline_parallel_size=64)])
    assert results[0].fits
    assert isinstance(results[1], InvalidParameterError)


# Llama-3.1-8B-Instruct on one A10 (24 GiB), vLLM with no version: the KV memory runs from 3.46 GiB in v0.14 to 4.32
# GiB in v0.28 (tests/unit/capacity/test_version_range.py's mechanisms). At 2 MiB a block (16 tokens × 32 layers × 8
# KV heads × 128 × 2 (K, V) × 2 B) that is 3.4617 GiB // 2 MiB = 1,772 blocks = 28,352 tokens in v0.14 and 2,210
# blocks = 35,360 tokens in v0.28.
A10_NO_VERSION = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="a10")


def test_no_version_advice_fits_the_worst_version_in_use() -> None:
    from planner.capacity.version_range import versions_in_use

    result = plan(A10_NO_VERSION)
    assert not result.fits
    assert result.version_range is not None
    assert result.version_range.low.kv_cache_tokens == 28_352
    # 28,352 // 1,024 × 1,024 = 27 × 1,024 = 27,648, not v0.28's 35,360 → 34,816, which v0.14 refuses
    assert result.advice[0].change == "--max-model-len 27648"
    assert result.advice[0].max_concurrency == pytest.approx(28_352 / 27_648, abs=1e-6)  # the worst version's
    for advice in result.advice:
        for version in versions_in_use():
            assert plan(advice.scenario.with_changes(engine_version=version), advise=False).fits, (advice, version)


def test_no_version_some_refuse_is_a_warning_naming_them() -> None:
    from planner.capacity.verdict import verdict

    # 34,816 tokens: 2,176 blocks, more than v0.10–v0.21 have, fewer than v0.24+'s 2,210
    result = plan(A10_NO_VERSION.with_changes(max_model_len=34_816))
    assert result.fits  # the newest version's figures
    said = verdict(result)
    assert said.level == "warning"
    assert "vLLM 0.10.0, 0.11.0, 0.14.0, 0.17.0, 0.18.0, 0.21.0 would not start it" in said.text
    assert "it starts in 0.24.0, 0.27.0, 0.28.0" in said.text
    assert result.advice and result.advice[0].change == "--max-model-len 27648"
    pinned = plan(A10_NO_VERSION.with_changes(max_model_len=34_816, engine_version="0.28.0"))
    assert verdict(pinned).level == "fits" and not pinned.advice


@pytest.mark.parametrize("engine", ["vllm", "tgi"])
def test_target_beyond_the_models_limit_has_no_concurrency(engine: str) -> None:
    from planner.capacity.verdict import verdict

    # Llama-3.1-8B's max_position_embeddings is 131,072
    base = Scenario(engine=engine, model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_model_len=8192)
    beyond = plan(base.with_changes(target_context=1_000_000))
    assert beyond.fits and beyond.max_concurrency_at_target is None
    assert any("beyond the model's limit of 131,072 tokens" in n for n in beyond.notes)
    said = verdict(beyond)
    assert said.level == "warning" and "not at the target context 1,000,000" in said.text
    at_limit = plan(base.with_changes(target_context=131_072))
    assert at_limit.max_concurrency_at_target is not None and verdict(at_limit).level == "fits"


def test_tgi_advice_speaks_the_launchers_flags_and_skips_fp8_where_it_cannot_run() -> None:
    from planner.catalog.gpus import get_gpu

    # text-generation-launcher (launcher/src/main.rs): --kv-cache-dtype fp8_e4m3fn|fp8_e5m2, --quantize fp8
    result = plan(Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4"))
    changes = [a.change for a in result.advice]
    assert changes and not [c for c in changes if "--quantization" in c or "--kv-cache-dtype fp8 " in c + " "]
    assert "--kv-cache-dtype fp8_e4m3fn + a bigger GPU: NVIDIA A100 40GB SXM4" in changes
    for advice in result.advice:
        if advice.scenario.quantization == "fp8":
            assert get_gpu(advice.scenario.gpu).fp8_support, advice.change  # never FP8 weights on a V100
