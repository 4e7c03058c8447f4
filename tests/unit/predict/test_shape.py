"""planner.predict.shape: what one engine step touches on one GPU, worked by hand for Llama-3.1-8B on H100s.

Llama-3.1-8B-Instruct's config.json: vocab 128,256, hidden 4,096, 32 layers, 32 query heads and 8 KV heads of 128,
intermediate 14,336, untied embeddings, bf16; 8,030,261,248 parameters (tests/unit/cli/test_model.py works them
out), of which the embedding table and the LM head are 128,256 × 4,096 = 525,336,576 each.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.capacity.speculative import parse_speculative_config
from planner.catalog.gpus import custom_gpu, get_gpu
from planner.errors import InvalidParameterError
from planner.predict.shape import DEFAULT_LINK_BYTES_PER_S, AttentionGroup, link_bytes_per_s, peak_flops, step_shape
from planner.units import GB

LLAMA_8B = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_num_seqs=256)
PARAMS, TABLE, NORMS = 8_030_261_248, 525_336_576, 65 * 4096


@pytest.mark.parametrize("tp", [1, 2])
def test_llama_8b_on_h100s_by_hand(tp: int) -> None:
    shape = step_shape(plan(replace(LLAMA_8B, tensor_parallel_size=tp), advise=False))
    # weights read: all of them (bf16, 2 B each) less the input embedding table, which a step only gathers from;
    # TP splits the matrices, while every rank keeps the RMSNorm weights whole (2 per layer + the final one:
    # 65 × 4,096 = 266,240 parameters): (8,030,261,248 − 525,336,576 − 266,240) × 2 / tp + 266,240 × 2
    assert shape.dense_weight_bytes == (PARAMS - TABLE - NORMS) * 2 / tp + NORMS * 2
    assert shape.dense_weight_bytes == {1: 15_009_849_344, 2: 7_505_190_912}[tp]
    assert (shape.expert_bytes, shape.num_experts, shape.experts_per_token, shape.num_moe_layers) == (0, 0, 0, 0)
    # 2 FLOPs per parameter a token meets in the decoder layers: 2 × (8,030,261,248 − 2 × 525,336,576) / tp
    assert shape.linear_flops_per_token == 2 * (PARAMS - 2 * TABLE) / tp
    assert shape.lm_head_flops_per_token == 2 * TABLE / tp  # 1,050,673,152 at TP 1
    # QKᵀ and PV: 2 · n_q · (d_qk + d_v) = 2 × 32 × 256 = 16,384 per query token per context token per layer
    assert shape.attn_flops_per_token_ctx == 16_384 / tp
    # K and V of 8 / tp KV heads of 128 in bf16: 4,096 B per token per layer at TP 1, 131,072 over 32 layers
    assert shape.groups == (AttentionGroup("full", None, 32, 4096 / tp),)
    assert shape.kv_bytes_per_token == 131_072 / tp
    assert list(shape.kv_bytes_by_group) == [131_072 / tp] and shape.layers_by_group_list == [32.0]
    # two all-reduces per layer of hidden × 2 B per token, only when the layers are split
    assert (shape.allreduce_bytes_per_token, shape.allreduces_per_step) == ((0.0, 0) if tp == 1 else (8192.0, 64))
    # the catalog's H100 SXM: 3.35 TB/s, 989.4 dense BF16 TFLOPS, NVLink 4 at 450 GB/s per direction
    assert (shape.memory_bandwidth_bytes_per_s, shape.peak_flops, shape.link_bytes_per_s) == (3.35e12, 989.4e12,
                                                                                              450e9)  # fmt: skip
    # CUDA graphs up to min(2 × 256 sequences, 512, 8,192 batched tokens) tokens
    assert (shape.cudagraph_max_tokens, shape.async_scheduling, shape.mla, shape.fp8_weights) == (512, True, False,
                                                                                                  False)  # fmt: skip


def test_cuda_graph_sizes_and_scheduling() -> None:
    assert step_shape(plan(replace(LLAMA_8B, max_num_seqs=64), advise=False)).cudagraph_max_tokens == 128  # 2 × 64
    assert step_shape(plan(replace(LLAMA_8B, enforce_eager=True), advise=False)).cudagraph_max_tokens == 0
    # a draft model turns vLLM 0.24.0's asynchronous scheduling off; an EAGLE head keeps it
    draft = parse_speculative_config('{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", '
                                     '"num_speculative_tokens": 5}')  # fmt: skip
    assert step_shape(plan(replace(LLAMA_8B, speculative_config=draft), advise=False)).async_scheduling is False


def test_fp8_weights_run_at_fp8_tflops() -> None:
    shape = step_shape(plan(replace(LLAMA_8B, quantization="fp8"), advise=False))
    assert shape.fp8_weights and shape.peak_flops == get_gpu("h100").fp8_tflops * 1e12 == 1978.9e12


def test_links_read_off_the_catalog_text() -> None:
    assert link_bytes_per_s(get_gpu("mi300x")) == 448 * GB  # Infinity Fabric: 7 × 64 GB/s
    assert link_bytes_per_s(get_gpu("l40s")) == 32 * GB  # PCIe Gen4 x16
    assert link_bytes_per_s(get_gpu("h100-pcie-80gb")) == 64 * GB  # PCIe Gen5 x16 (the bridge is optional)
    text = replace(get_gpu("l40s"), interconnect="a fabric at 123 GB/s per direction")
    assert link_bytes_per_s(text) == 123 * GB
    assert link_bytes_per_s(custom_gpu(memory_gib=24)) == DEFAULT_LINK_BYTES_PER_S == 32 * GB


def test_a_gpu_without_figures_cannot_be_predicted() -> None:
    with pytest.raises(InvalidParameterError, match="TFLOPS"):
        peak_flops(custom_gpu(memory_gib=24), "none")
    assert peak_flops(custom_gpu(memory_gib=24, bf16_tflops=100.0), "fp8") == 100e12  # no FP8 figure: BF16's
    no_fit = plan(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"), advise=False)
    with pytest.raises(InvalidParameterError, match="a configuration that fits"):
        step_shape(no_fit)
