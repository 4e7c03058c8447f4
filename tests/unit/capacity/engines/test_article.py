"""The article's design_memory_budget, reproduced exactly (issue 2 quotes scenarios 1 and 4)."""

from __future__ import annotations

import pytest

from planner.capacity.engines.article import design_memory_budget, plan_article
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError


def test_scenario_1_rtx_4090_llama_8b_int4() -> None:
    b = design_memory_budget(
        params_b=8,
        num_layers=32,
        num_kv_heads=8,
        head_dim=128,
        gpu_memory_gb=24,
        weight_quant="int4",
        kv_quant="fp16",
        target_context=8192,
    )
    assert (b.kv_bytes_per_token, b.total_tokens, b.concurrent_requests) == (131_072, 153_802, 18)


def test_scenario_4_h100_llama_70b_int4_fp8_kv() -> None:
    b = design_memory_budget(
        params_b=70,
        num_layers=80,
        num_kv_heads=8,
        head_dim=128,
        gpu_memory_gb=80,
        weight_quant="int4",
        kv_quant="fp8",
        target_context=8192,
    )
    assert (b.kv_bytes_per_token, b.total_tokens, b.concurrent_requests) == (163_840, 300_834, 36)


def test_catalog_inputs_reproduce_scenario_1() -> None:
    plan = plan_article(
        Scenario(
            engine="article",
            model="meta-llama/Llama-3.1-8B-Instruct",
            gpu="rtx-4090",
            weight_quant="int4",
            kv_quant="fp16",
            target_context=8192,
        )
    )
    assert (plan.kv_bytes_per_token, plan.kv_cache_tokens, plan.max_concurrency) == (131_072, 153_802, 18)


def test_catalog_inputs_reproduce_scenario_4() -> None:
    plan = plan_article(
        Scenario(
            engine="article",
            model="meta-llama/Llama-3.1-70B-Instruct",
            gpu="h100",
            weight_quant="int4",
            kv_quant="fp8",
            target_context=8192,
        )
    )
    assert (plan.kv_bytes_per_token, plan.kv_cache_tokens, plan.max_concurrency) == (163_840, 300_834, 36)


def test_overflow_does_not_fit() -> None:
    plan = plan_article(
        Scenario(
            engine="article",
            params_b=70,
            num_layers=80,
            num_kv_heads=8,
            head_dim=128,
            gpu_memory_gb=24,
            weight_quant="fp16",
        )
    )
    assert not plan.fits and plan.kv_cache_tokens == 0


@pytest.mark.parametrize("bad", [{"weight_quant": "int3"}, {"params_b": -1}, {"gpu_memory_gb": float("nan")}])
def test_bad_inputs(bad: dict) -> None:
    args = dict(params_b=8, num_layers=32, num_kv_heads=8, head_dim=128, gpu_memory_gb=24)
    args.update(bad)
    with pytest.raises(InvalidParameterError):
        design_memory_budget(**args)


def test_given_model_and_typed_gpu_size_need_no_catalog() -> None:
    # A pasted config and the article's own "24 GB" work without a catalog model or GPU.
    from planner.catalog.models import get_model

    spec = get_model("meta-llama/Llama-3.1-8B-Instruct").spec
    plan = plan_article(
        Scenario(
            engine="article",
            model="uploaded-config/x-1",
            gpu="custom",
            params_b=8,
            gpu_memory_gb=24,
            weight_quant="int4",
            target_context=8192,
        ),
        spec,
    )
    assert (plan.kv_bytes_per_token, plan.kv_cache_tokens, plan.max_concurrency) == (131_072, 153_802, 18)
