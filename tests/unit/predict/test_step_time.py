"""The step-time model and the step shape against figures worked out by hand from config.json values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.catalog.gpus import get_gpu
from planner.errors import InvalidParameterError
from planner.predict.shape import link_bytes_per_s, step_shape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, step_time_s

CEILINGS = Path(__file__).resolve().parents[3] / "bench/data/measured/h200_ceilings.json"


def _shape(model: str, **kw):
    s = Scenario(
        model=model, gpu="h200-sxm-141gb", max_model_len=8192, max_num_seqs=256, max_num_batched_tokens=8192, **kw
    )
    return step_shape(plan(s))


def test_llama_8b_shape_by_hand() -> None:
    # meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, 32 q / 8 kv heads of 128, MLP 14336,
    # vocab 128256, untied. Per layer: q, o 4096² each; k, v 4096·1024 each; MLP 3·4096·14336:
    # 16,777,216·2 + 4,194,304·2 + 176,160,768 = 218,103,808 params; 32 layers = 6,979,321,856.
    # LM head 128,256·4096 = 525,336,576. Norms 65·4096 = 266,240. Read per step in bf16 (embedding excluded):
    # (6,979,321,856 + 525,336,576 + 266,240) · 2 = 15,009,849,344 bytes (h200_ceilings.json's
    # decode_weight_bytes is 15,009,316,864, without the norms).
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    assert shape.dense_weight_bytes == pytest.approx(15_009_849_344, rel=1e-4)
    assert shape.kv_bytes_per_token == 131_072  # 32 layers · 8 heads · 128 · 2 (K, V) · 2 bytes
    assert shape.linear_flops_per_token == pytest.approx(2 * 6_979_321_856, rel=1e-3)
    assert shape.lm_head_flops_per_token == pytest.approx(2 * 525_336_576)
    assert shape.attn_flops_per_token_ctx == 2 * 32 * (128 + 128)
    assert shape.allreduces_per_step == 0


def test_decode_step_by_hand() -> None:
    # One step at batch 1 with 1,024 tokens of context, default coefficients, H200 (4.8 TB/s, 989.4 TFLOPS):
    # weights 15.00985e9 / (4.8e12 · 0.69)               = 4.5319 ms
    # KV (1024 read + 1 written) · 131,072 / (4.8e12 · 0.95) = 0.02946 ms
    # matmuls 0.74 · (13.9586e9 + 1.0507e9) / 989.4e12  = 0.01122 ms
    # + 0.25 ms per step + 4 µs per sequence             = 4.8266 ms
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    assert step_time_s(shape, n_decode=1, decode_ctx=1024) == pytest.approx(4.8266e-3, rel=1e-3)


def test_default_coefficients_against_the_h200_decode_steps() -> None:
    # The decode steps the defaults were fitted to (bare CUDA-graph steps: no per-step or per-sequence overhead).
    bare = StepCoefficients(step_overhead_s=0.0, seq_overhead_s=0.0)
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    for s in json.loads(CEILINGS.read_text())["decode_steps"]:
        predicted = step_time_s(shape, bare, n_decode=s["batch"], decode_ctx=s["batch"] * s["kv_len"])
        assert predicted == pytest.approx(s["step_s"], rel=0.05), s


def test_moe_reads_only_the_experts_its_tokens_reach() -> None:
    # Qwen3-30B-A3B: 128 experts, 8 per token. One token reaches 8/128 = 6.25% of them; 16 tokens reach
    # 1 − (120/128)^16 = 64.38% in expectation (uniform routing).
    shape = _shape("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert (shape.num_experts, shape.experts_per_token) == (128, 8)
    one = step_time_s(shape, DEFAULT_COEFFICIENTS, n_decode=1, decode_ctx=1)
    sixteen = step_time_s(shape, DEFAULT_COEFFICIENTS, n_decode=16, decode_ctx=16)
    bw = 4.8e12 * 0.69
    assert sixteen - one == pytest.approx(shape.expert_bytes * (0.6438 - 0.0625) / bw, rel=0.02)


def test_sliding_window_groups() -> None:
    # gemma-2-9b: 42 layers alternating sliding (window 4096) and full attention.
    shape = _shape("google/gemma-2-9b-it")
    windows = sorted((g.window_tokens or 0, g.num_layers) for g in shape.groups)
    assert windows == [(0, 21), (4096, 21)]


def test_tensor_parallel_all_reduce() -> None:
    # Llama-3.1-8B at TP 2 on H200 (NVLink 4, 450 GB/s per direction): 2 all-reduces per layer = 64 per step,
    # each moving 2·(2−1)/2 · 4096 · 2 bytes per token.
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)
    assert shape.allreduces_per_step == 64
    assert shape.allreduce_bytes_per_token == 8192
    assert link_bytes_per_s(get_gpu("h200-sxm-141gb")) == 450e9
    assert link_bytes_per_s(get_gpu("rtx-4090")) == 32e9
    one = step_time_s(shape, n_decode=1, decode_ctx=1)
    assert shape.dense_weight_bytes == pytest.approx(15_009_849_344 / 2, rel=0.01)
    assert one > 64 * 8e-6  # the all-reduce latency alone


def test_coefficients_are_validated() -> None:
    with pytest.raises(InvalidParameterError, match="prefill_efficiency"):
        StepCoefficients(prefill_efficiency=0.0)
    with pytest.raises(InvalidParameterError, match="step_overhead_s"):
        StepCoefficients(step_overhead_s=-1.0)


def test_a_plan_that_does_not_fit_is_refused() -> None:
    p = plan(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"), advise=False)
    with pytest.raises(InvalidParameterError, match="fits"):
        step_shape(p)
