"""TGI's warm-up token budget against a public TGI log."""

from __future__ import annotations

import pytest

from planner.capacity.engines.tgi import plan_tgi, wiggle_room
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError


def test_a10g_llama_31_8b_tgi_22() -> None:
    # TGI log id 62 (bench/data/vllm_capacity_logs.json): TGI 2.2.0 on an A10G with default launcher
    # settings logged "Setting max batch total tokens to 19056". 5% tolerance: the warm-up peak is modelled.
    plan = plan_tgi(
        Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu="a10g", engine_version="2.2.0")
    )
    assert plan.fits
    assert plan.kv_cache_tokens == pytest.approx(19_056, rel=0.05)
    assert plan.max_model_len == 4096  # "Default `max_total_tokens` to 4096"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.2.0", ("fraction_of_free", 0.95)),
        ("2.4.0", ("reserve_of_total", 0.95)),
        ("3.3.7", ("reserve_of_total", 0.90)),
    ],
)
def test_wiggle_room_by_version(version: str, expected: tuple[str, float]) -> None:
    # capacity_accounting.md section 2: 0.95 x free before v2.3, TGI_WIGGLE_ROOM 0.95 in v2.3-3.0, 0.90 in v3.3.
    assert wiggle_room(version) == expected


def test_launcher_checks() -> None:
    # The launcher refuses these before loading anything, so they are bad input, not a plan.
    base = Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100")
    with pytest.raises(InvalidParameterError, match="max_input_tokens=8192"):
        plan_tgi(base.with_changes(max_input_tokens=8192, max_total_tokens=4096))
    with pytest.raises(InvalidParameterError, match="max_batch_prefill_tokens=100"):
        plan_tgi(
            base.with_changes(
                engine_version="2.2.0", max_input_tokens=1000, max_total_tokens=4096, max_batch_prefill_tokens=100
            )
        )
    # TGI 3 chunks long prefills, so a prefill budget below the longest input is allowed.
    assert plan_tgi(base.with_changes(max_input_tokens=1000, max_total_tokens=4096, max_batch_prefill_tokens=100))


def test_no_kv_cache_when_weights_do_not_fit() -> None:
    plan = plan_tgi(Scenario(engine="tgi", model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100"))
    assert not plan.fits
    assert (plan.kv_cache_tokens, plan.max_concurrency, plan.per_gpu.kv_cache_bytes) == (0, 0, 0)


def test_fp8_kv_doubles_budget() -> None:
    base = Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_total_tokens=8192)
    bf16 = plan_tgi(base)
    fp8 = plan_tgi(base.with_changes(kv_cache_dtype="fp8"))
    assert fp8.kv_cache_tokens == pytest.approx(2 * bf16.kv_cache_tokens, rel=0.05)


def test_warmup_blocks_alone_can_serve() -> None:
    # TGI adds the warm-up batch's blocks back (num_blocks = free // block + warmup_blocks), so a model that
    # leaves no free memory after warm-up still starts when those blocks cover --max-total-tokens.
    plan = plan_tgi(Scenario(engine="tgi", model="Qwen/Qwen3-30B-A3B", gpu="h100", max_model_len=16384))
    assert plan.fits
    assert plan.kv_cache_tokens >= plan.max_model_len


def test_warmup_out_of_memory_does_not_fit() -> None:
    plan = plan_tgi(
        Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", max_total_tokens=131072)
    )
    assert not plan.fits and "warm-up prefill" in plan.reason
