"""The step-time model and the step shape against figures worked out by hand from config.json values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.catalog.gpus import get_gpu
from planner.errors import InvalidParameterError
from planner.predict.shape import link_bytes_per_s, step_shape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, step_time_s

CEILINGS = Path(__file__).resolve().parents[3] / "bench/data/measured/h200_ceilings.json"


#: Coefficients for the worked examples (the arithmetic of the formula, not the fitted defaults).
HAND = StepCoefficients(
    step_overhead_s=0.22e-3,
    seq_overhead_s=8e-6,
    layer_overhead_s=26e-6,
    moe_layer_overhead_s=28e-6,
    weight_read_efficiency=0.84,
    kv_read_efficiency=0.95,
    decode_matmul_fraction=0.64,
    prefill_efficiency=0.61,
    eager_layer_s=0.97e-3,
    eager_moe_layer_s=0.57e-3,
)


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
    # One step at batch 1 with 1,024 tokens of context, coefficients HAND, H200 (4.8 TB/s, 989.4 TFLOPS):
    # weights 15.00985e9 / (4.8e12 · 0.84)                  = 3.72268 ms
    # KV (1024 read + 1 written) · 131,072 / (4.8e12 · 0.95) = 0.02946 ms
    # matmuls 0.64 · (13.9586e9 + 1.0507e9) / 989.4e12     = 0.00971 ms
    # 32 layers · 26 µs                                     = 0.832 ms
    # + 0.22 ms per step + 8 µs per sequence                = 4.8219 ms
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    assert step_time_s(shape, HAND, n_decode=1, decode_ctx=1024) == pytest.approx(4.8219e-3, rel=1e-3)


def test_default_coefficients_against_the_h200_decode_steps() -> None:
    # The bare CUDA-graph decode steps the defaults were fitted to beside the server runs (no host overhead in a
    # bare step): all within 10% (bench/default_coefficients.py weighs them with 80 server runs of six models; the
    # worst, batch 1 at 1k tokens, is 8% long: a server's step pays per-layer costs a bare graph of matmuls does not).
    bare = StepCoefficients(step_overhead_s=0.0, seq_overhead_s=0.0)
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    for s in json.loads(CEILINGS.read_text())["decode_steps"]:
        predicted = step_time_s(shape, bare, n_decode=s["batch"], decode_ctx=s["batch"] * s["kv_len"])
        assert predicted == pytest.approx(s["step_s"], rel=0.10), s


def test_moe_reads_only_the_experts_its_tokens_reach() -> None:
    # Qwen3-30B-A3B: 128 experts, 8 per token. One token reaches 8/128 = 6.25% of them; 16 tokens reach
    # 1 − (120/128)^16 = 64.38% in expectation (uniform routing). With no per-sequence or matmul term, the two
    # steps differ by the expert bytes read only (the per-layer terms are the same in both).
    shape = _shape("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert (shape.num_experts, shape.experts_per_token) == (128, 8)
    only_bytes = StepCoefficients(seq_overhead_s=0.0, decode_matmul_fraction=0.0)
    one = step_time_s(shape, only_bytes, n_decode=1, decode_ctx=1)
    sixteen = step_time_s(shape, only_bytes, n_decode=16, decode_ctx=16)
    bw = 4.8e12 * only_bytes.weight_read_efficiency
    assert sixteen - one == pytest.approx(shape.expert_bytes * (0.6438 - 0.0625) / bw, rel=0.01)


def test_layers_and_moe_layers_by_hand() -> None:
    # Qwen3-30B-A3B: 48 layers, every one with routed experts (decoder_sparse_step 1, no mlp_only_layers).
    moe = _shape("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert (moe.num_layers, moe.num_moe_layers) == (48, 48)
    # DeepSeek-V2-Lite: 27 layers, the first dense (first_k_dense_replace 1): 26 MoE layers.
    lite = _shape("deepseek-ai/DeepSeek-V2-Lite-Chat")
    assert (lite.num_layers, lite.num_moe_layers) == (27, 26)
    dense = _shape("meta-llama/Llama-3.1-8B-Instruct")
    assert (dense.num_layers, dense.num_moe_layers) == (32, 0)
    # With HAND every step of the MoE pays 48 · 26 µs + 48 · 28 µs = 2.592 ms of per-layer time, the dense 8B
    # 32 · 26 µs.
    from planner.predict.step_time import TERMS, step_features

    coef = HAND.vector()
    for shape, seconds in ((moe, 2.592e-3), (dense, 0.832e-3)):
        f = step_features(shape, n_decode=np.array([1.0]), decode_ctx=np.ones((1, len(shape.groups))))[0]
        per_layer = [TERMS.index("layer"), TERMS.index("moe_layer")]
        assert f[per_layer] @ coef[per_layer] == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("kw", "tokens"),
    [
        ({}, 512),  # min(2 · 256, 512, 8192)
        ({"max_num_seqs": 64}, 128),  # min(2 · 64, 512, 8192)
        ({"max_num_batched_tokens": 256, "max_num_seqs": 256}, 256),  # min(512, 512, 256)
        ({"enforce_eager": True}, 0),
    ],
)
def test_cuda_graph_capture_size_as_vllm_0_24_sets_it(kw, tokens) -> None:
    # vllm/config/vllm.py VllmConfig._set_cudagraph_sizes (v0.24.0):
    # min(max_num_seqs · (1 + num_speculative_tokens) · 2, 512), then at most max_num_batched_tokens.
    base = {"max_num_seqs": 256, "max_num_batched_tokens": 8192} | kw
    s = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", max_model_len=8192, **base)
    assert step_shape(plan(s)).cudagraph_max_tokens == tokens


def test_a_step_past_the_graph_size_takes_the_longer_of_gpu_and_launches() -> None:
    # Llama-3.1-8B: a 529-token prefill (a 512-token prompt with a chat template) runs without a CUDA graph.
    # GPU: weights 15.00985e9 / (4.8e12 · 0.84) = 3.723 ms, matmuls 529 · 13.9586e9 / (989.4e12 · 0.61) = 12.235 ms,
    # attention 529 · 265 pairs · 32 layers · 16,384 / (989.4e12 · 0.61) = 0.122 ms, the 1 sampled token's LM head
    # 0.64 · 1.0507e9 / 989.4e12 = 0.0007 ms, KV writes 529 · 131,072 / 4.56e12 = 0.0152 ms, layers 0.832 ms:
    # 16.93 ms. Launching 32 layers at 0.97 ms each: 31.04 ms, the longer. Plus 0.22 ms + 1 sequence · 8 µs.
    shape = _shape("meta-llama/Llama-3.1-8B-Instruct")
    eager = step_time_s(shape, HAND, n_decode=0, decode_ctx=0, prefill_tokens=529, prefill_attn=529 * 265)
    assert eager == pytest.approx(31.04e-3 + 0.228e-3, rel=2e-3)
    # The same prompt of 512 tokens fits the graph: the GPU's time alone.
    graphed = step_time_s(shape, HAND, n_decode=0, decode_ctx=0, prefill_tokens=512, prefill_attn=512 * 256.5)
    assert graphed < 17e-3
    # Qwen2.5-32B: a 2,048-token prefill is GPU-bound (its matmuls alone take 2048 · 2 · 31.2e9 / 603.5e12 ≈ 0.21 s
    # against 64 · 0.97 ms = 62 ms of launches).
    big = _shape("Qwen/Qwen2.5-32B-Instruct")
    t = step_time_s(big, HAND, n_decode=0, decode_ctx=0, prefill_tokens=2048, prefill_attn=2048 * 1024.5)
    assert 0.2 < t < 0.25


def test_critical_path_keeps_the_longer_part() -> None:
    from planner.predict.step_time import TERMS, critical_path

    coef = HAND.vector()
    row = np.zeros((2, len(TERMS)))
    row[:, TERMS.index("step")] = 1.0
    row[:, TERMS.index("weights")] = [1e-3, 50e-3]  # 1 ms and 50 ms of reads at datasheet bandwidth
    row[:, TERMS.index("eager_layer")] = 10  # 10 layers launched: 9.7 ms
    bound = critical_path(row, coef)
    assert bound[0] @ coef == pytest.approx(0.22e-3 + 9.7e-3)  # host-bound: the launches
    assert bound[1] @ coef == pytest.approx(0.22e-3 + 50e-3 / 0.84)  # GPU-bound: the reads


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


@pytest.mark.parametrize(
    "model", ["meta-llama/Llama-3.1-8B-Instruct", "google/gemma-2-9b-it", "Qwen/Qwen3-30B-A3B-Instruct-2507"]
)
@pytest.mark.parametrize(("n_decode", "prefill"), [(0, 529), (17, 0), (200, 4000), (3, 100)])
def test_one_step_row_equals_the_vectorised_features(model, n_decode, prefill) -> None:
    # step_row is the simulator's one-step path; it must give step_features' row (and critical_path's).
    from planner.predict.step_time import critical_path, step_features, step_row

    shape = _shape(model)
    g = len(shape.groups)
    dec = [1000.0 * n_decode + 7 * i for i in range(g)]
    attn = [prefill * (prefill + 1) / 2 - i for i in range(g)] if prefill else None
    ctx = [11.0 * i for i in range(g)] if prefill else None
    row = step_row(
        shape,
        n_decode=n_decode,
        decode_ctx=dec,
        prefill_tokens=prefill,
        prefill_attn=attn,
        prefill_ctx=ctx,
        n_sampled=n_decode + 1,
        n_seqs=n_decode + 1,
    )
    vec = step_features(
        shape,
        n_decode=np.array([float(n_decode)]),
        decode_ctx=np.array([dec]),
        prefill_tokens=np.array([float(prefill)]) if prefill else None,
        prefill_attn=np.array([attn]) if prefill else None,
        prefill_ctx=np.array([ctx]) if prefill else None,
        n_sampled=np.array([n_decode + 1.0]),
        n_seqs=np.array([n_decode + 1.0]),
    )[0]
    assert row == pytest.approx(vec, rel=1e-12, abs=1e-18)
    coef = DEFAULT_COEFFICIENTS.vector()
    bound = step_row(
        shape,
        n_decode=n_decode,
        decode_ctx=dec,
        prefill_tokens=prefill,
        prefill_attn=attn,
        prefill_ctx=ctx,
        n_sampled=n_decode + 1,
        n_seqs=n_decode + 1,
        coef=coef,
    )
    assert bound == pytest.approx(critical_path(vec[None, :], coef)[0], rel=1e-12, abs=1e-18)


def test_correlated_routing_reaches_fewer_experts() -> None:
    # Mixtral-8x7B: 8 experts, 2 per token. 8 independent tokens reach 1 - (6/8)^8 = 89.99% of them; with routing
    # exponent 0.5 they count as 8^0.5 = 2.8284 tokens: 1 - 0.75^2.8284 = 1 - exp(2.8284 · ln 0.75) = 55.678%.
    from dataclasses import replace

    from planner.predict.step_time import TERMS, step_features

    shape = _shape("mistralai/Mixtral-8x7B-Instruct-v0.1")
    col = TERMS.index("weights")
    bw = shape.memory_bandwidth_bytes_per_s
    for alpha, share in ((1.0, 0.899887), (0.5, 0.556782)):
        s = replace(shape, moe_routing_exponent=alpha)
        f = step_features(s, n_decode=np.array([8.0]), decode_ctx=np.full((1, len(s.groups)), 8.0))[0]
        assert f[col] * bw == pytest.approx(s.dense_weight_bytes + s.expert_bytes * share, rel=1e-4)
