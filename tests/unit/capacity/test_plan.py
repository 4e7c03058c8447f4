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
