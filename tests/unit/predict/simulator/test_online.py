"""The online form: the demo server's step-by-step use, worked by hand (every step 10 ms)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.errors import InvalidParameterError
from planner.predict.shape import AttentionGroup
from planner.predict.simulator import OnlineScheduler
from planner.predict.step_time import StepCoefficients
from tests.unit.predict.conftest import tiny_shape

#: every step 10 ms whatever it holds: only the per-step constant, on a shape that reads and computes nothing
TEN_MS_STEPS = StepCoefficients(step_overhead_s=0.010, seq_overhead_s=0.0, layer_overhead_s=0.0)
SHAPE = replace(
    tiny_shape(block_size=4, blocks=10),
    dense_weight_bytes=0.0,
    linear_flops_per_token=0.0,
    groups=(AttentionGroup("full", None, 1, 0.0),),
)


def test_tokens_step_by_step() -> None:
    engine = OnlineScheduler(SHAPE, TEN_MS_STEPS)
    a = engine.add(10, 3)
    assert engine.step() == (pytest.approx(0.010), [(a, 1, False)])  # A's prefill and first token
    b = engine.add(6, 2)
    assert engine.waiting == 1 and engine.running == 1
    assert engine.step() == (pytest.approx(0.010), [(a, 2, False), (b, 1, False)])
    assert engine.step() == (pytest.approx(0.010), [(a, 3, True), (b, 2, True)])
    assert not engine.busy and engine.step() == (0.0, [])
    assert engine.kv_usage == 0.0  # every block back


def test_a_dropped_request_frees_its_blocks() -> None:
    engine = OnlineScheduler(SHAPE, TEN_MS_STEPS)
    c = engine.add(12, 20)  # 32 tokens at most: 8 blocks of 4, the pool has 10
    engine.step()  # its 12 prompt tokens computed: 3 blocks
    assert engine.kv_usage == pytest.approx(0.3)
    engine.drop(c)
    assert not engine.busy and engine.kv_usage == 0.0


def test_requests_it_cannot_hold() -> None:
    engine = OnlineScheduler(SHAPE, TEN_MS_STEPS)
    with pytest.raises(InvalidParameterError, match="KV cache"):
        engine.add(40, 10)  # 50 tokens: 13 blocks of 4, the pool has 10
    with pytest.raises(InvalidParameterError, match="at least 1"):
        engine.add(0, 5)
