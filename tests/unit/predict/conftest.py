"""Hand-built deployments for the simulator's worked schedules."""

from __future__ import annotations

import numpy as np
import pytest

from planner.predict.shape import AttentionGroup, StepShape
from planner.predict.step_time import TERMS, StepCoefficients

#: Every step takes 10 ms, whatever it holds: the coefficient of the constant term only.
TEN_MS = np.array([0.010] + [0.0] * (len(TERMS) - 1))
#: A GPU that is "slower" than the defaults in every term the runs can see (what calibration must recover).
TRUTH = StepCoefficients(
    step_overhead_s=0.6e-3,
    seq_overhead_s=10e-6,
    weight_read_efficiency=0.60,
    kv_read_efficiency=0.80,
    decode_matmul_fraction=0.9,
    prefill_efficiency=0.55,
    request_overhead_s=25e-3,
)


def tiny_shape(
    *,
    blocks: int = 1000,
    block_size: int = 16,
    max_num_seqs: int = 256,
    mnbt: int = 8192,
    async_scheduling: bool = False,
) -> StepShape:
    """A one-layer model whose step time is whatever the coefficient vector says (all rates 1); synchronous
    scheduling unless asked (the worked schedules schedule each step when the one before it ends)."""
    return StepShape(
        model_id="tiny",
        gpu_id="test",
        tensor_parallel_size=1,
        pipeline_parallel_size=1,
        dense_weight_bytes=1.0,
        expert_bytes=0.0,
        num_experts=0,
        experts_per_token=0,
        linear_flops_per_token=1.0,
        lm_head_flops_per_token=0.0,
        attn_flops_per_token_ctx=0.0,
        groups=(AttentionGroup("full", None, 1, 1.0),),
        allreduce_bytes_per_token=0.0,
        allreduces_per_step=0,
        memory_bandwidth_bytes_per_s=1.0,
        peak_flops=1.0,
        link_bytes_per_s=1.0,
        block_size=block_size,
        num_gpu_blocks=blocks,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=mnbt,
        max_model_len=100_000,
        async_scheduling=async_scheduling,
    )


@pytest.fixture
def shape() -> StepShape:
    return tiny_shape()
