"""A step's seconds from plain numbers against the step-time module's rows (a second implementation of the same
formula): ``critical_path(step_features(...)) @ coef``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from planner.predict.shape import AttentionGroup
from planner.predict.simulator.cost import Drafter, StepCost
from planner.predict.step_time import DEFAULT_COEFFICIENTS, critical_path, step_features
from tests.unit.predict.conftest import tiny_shape

SHAPES = {
    "dense": tiny_shape(),
    "moe_tp_window": replace(
        tiny_shape(),
        num_experts=64,
        experts_per_token=8,
        expert_bytes=3e9,
        num_layers=24,
        num_moe_layers=24,
        tensor_parallel_size=2,
        allreduces_per_step=48,
        allreduce_bytes_per_token=4096.0,
        link_bytes_per_s=4.5e11,
        memory_bandwidth_bytes_per_s=4.8e12,
        peak_flops=9.9e14,
        attn_flops_per_token_ctx=1e5,
        lm_head_flops_per_token=1e9,
        linear_flops_per_token=6e9,
        dense_weight_bytes=2e9,
        groups=(AttentionGroup("full", None, 12, 2048.0), AttentionGroup("sliding", 1024, 12, 2048.0)),
        cudagraph_max_tokens=64,
        fp8_weights=True,
    ),
}
#: (n_decode, n_sampled, n_seqs, decode context per group, prefill tokens, prefill attention per group, prefill
#: context per group): a decode step, a chunked prefill beside decodes, one past the CUDA-graph size
STEPS = [
    (8, 8, 8, (9000.0, 7000.0), 0, (0.0, 0.0), (0.0, 0.0)),
    (30, 31, 32, (40_000.0, 25_000.0), 700, (300_000.0, 250_000.0), (1500.0, 1024.0)),
    (2, 3, 3, (300.0, 300.0), 2000, (2.1e6, 1.5e6), (0.0, 0.0)),
]


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("step", STEPS)
def test_seconds_match_the_step_time_rows(name: str, step: tuple) -> None:
    shape = SHAPES[name]
    g = len(shape.groups)
    n_dec, n_samp, n_seqs, dec, pre, attn, ctx = (x if isinstance(x, int) else x[:g] for x in step)
    coef = DEFAULT_COEFFICIENTS.vector()
    row = step_features(
        shape,
        n_decode=np.array([float(n_dec)]),
        decode_ctx=np.array([dec]),
        prefill_tokens=np.array([float(pre)]),
        prefill_attn=np.array([attn]),
        prefill_ctx=np.array([ctx]),
        n_sampled=np.array([float(n_samp)]),
        n_seqs=np.array([float(n_seqs)]),
    )
    expected = float(critical_path(row, coef)[0] @ coef)
    cost = StepCost(shape, coef, DEFAULT_COEFFICIENTS.allreduce_latency_s)
    reads = [d + c for d, c in zip(dec, ctx, strict=True)]
    assert cost.seconds(n_dec, n_samp, n_seqs, reads, pre, cost.attention_s(attn)) == pytest.approx(expected, rel=1e-12)


def test_the_drafter_adds_its_forwards() -> None:
    # every term but the per-step constant is zero (10 ms a forward): k = 3 forwards of 10 ms plus 1 ms of host each
    coef = np.zeros(13)
    coef[0] = 0.010
    drafter = Drafter(3, tiny_shape(), 0.001, coef, 8e-6)
    assert drafter.seconds(4, 5000.0) == pytest.approx(3 * 0.010 + 3 * 0.001)
    assert Drafter(3, None, 0.001, coef, 8e-6).seconds(4, 5000.0) == pytest.approx(0.003)  # n-gram: host only
