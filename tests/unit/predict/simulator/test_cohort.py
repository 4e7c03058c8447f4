"""The decode cohort: its totals against counts worked by hand, and its fast paths against the plain ones."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from planner.loadtest.settings import LoadSettings
from planner.predict.shape import AttentionGroup
from planner.predict.simulator import cohort as cohort_module
from planner.predict.simulator import simulate
from planner.predict.simulator.blocks import BlockPool
from planner.predict.simulator.cohort import DecodeCohort
from planner.predict.step_time import DEFAULT_COEFFICIENTS
from tests.unit.predict.conftest import tiny_shape


def _windowed(**kwargs):
    return replace(
        tiny_shape(**kwargs),
        groups=(AttentionGroup("full", None, 1, 1.0), AttentionGroup("sliding", 32, 1, 1.0)),
    )


def test_totals_and_block_needs_worked_by_hand() -> None:
    # blocks of 4 tokens; a full group and a 32-token window (at most ceil(31 / 4) + 1 = 9 blocks)
    shape = _windowed(block_size=4)
    cohort = DecodeCohort(shape, BlockPool(shape))
    cohort.join(0, computed=8, generated=1, out_len=5)  # its next token is the 9th: a new block in both groups
    cohort.join(1, computed=30, generated=3, out_len=10)  # 31st token: within its 8th block of 4
    assert (cohort.size, cohort.ctx) == (2, 9 + 31)
    assert cohort.ctx_by_group() == [40, 9 + 31]  # both still inside the window
    assert cohort.block_need() == 2
    assert cohort.advance() == []
    # now 9 and 31 computed: request 1's 32nd token fills its 8th block, no new one; nobody needs a block
    assert cohort.ctx_by_group() == [42, 10 + 32]
    assert cohort.block_need() == 0
    assert cohort.advance() == []
    # request 1 at 32 computed: its 33rd token needs a 9th block in both groups; it now reads the whole window
    assert cohort.ctx_by_group() == [44, 11 + 32]
    assert cohort.block_need() == 2
    assert cohort.advance() == []
    # request 0 has its 5th token after 4 steps (generated 1 -> 5): it finishes at the 4th
    assert cohort.advance() == [0]
    assert cohort.leave(0) == (8 + 4, 5)
    # request 1: 30 + 4 computed, 3 + 4 generated
    assert (cohort.size, cohort.ctx) == (1, 35)
    assert cohort.members() == [(1, 34, 7)]


def _workload(shape, n: int, cap: int | None, rate: float) -> tuple:
    settings = LoadSettings(
        num_prompts=n,
        max_concurrency=cap,
        request_rate=rate,
        input_len=300,
        output_len=400,
        range_ratio=0.5,
        duration_s=None,
    )
    return shape, settings


WORKLOADS = {
    "few_long": _workload(tiny_shape(), 12, 2, math.inf),
    "windowed_open": _workload(_windowed(), 40, None, 4.0),
    "eager_tight_pool": _workload(replace(tiny_shape(blocks=180, mnbt=256), cudagraph_max_tokens=4), 30, 8, math.inf),
}


@pytest.mark.parametrize("name", WORKLOADS)
def test_long_stretches_in_numpy_give_the_loop_to_the_bit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    shape, settings = WORKLOADS[name]
    coef = DEFAULT_COEFFICIENTS
    monkeypatch.setattr(cohort_module, "_VECTOR_STEPS", 10**9)
    loop = simulate(shape, settings, coef)
    monkeypatch.setattr(cohort_module, "_VECTOR_STEPS", 2)
    vectorized = simulate(shape, settings, coef)
    assert vectorized.num_steps == loop.num_steps
    assert vectorized.e2e_s.tolist() == loop.e2e_s.tolist()
    assert vectorized.ttft_s.tolist() == loop.ttft_s.tolist()
    assert vectorized.peak_kv_blocks == loop.peak_kv_blocks


@pytest.mark.parametrize("name", WORKLOADS)
def test_the_cohort_gives_what_request_by_request_steps_give(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every step scheduled request by request (vLLM's algorithm written out, ContinuousBatching.step) against the
    # event-driven path. The steps must be the same; the clock may differ in its last bits (each step's time added
    # to it one by one rather than summed over a stretch first), so times compare at 1e-12 of the run's length.
    from planner.predict.simulator.continuous import ContinuousBatching

    shape, settings = WORKLOADS[name]
    fast = simulate(shape, settings)
    monkeypatch.setattr(DecodeCohort, "run", lambda self, engine, width, arrival_s: (0, []))
    monkeypatch.setattr(ContinuousBatching, "_step_with_chunks", lambda self: False)
    plain = simulate(shape, settings)
    assert (plain.num_steps, plain.preemptions, plain.peak_kv_blocks) == (
        fast.num_steps,
        fast.preemptions,
        fast.peak_kv_blocks,
    )
    clock = 1e-12 * float(np.nanmax(plain.sent_s + plain.e2e_s))
    np.testing.assert_allclose(fast.ttft_s, plain.ttft_s, rtol=0, atol=clock)
    np.testing.assert_allclose(fast.e2e_s, plain.e2e_s, rtol=0, atol=clock)
    np.testing.assert_allclose(fast.tpot_features, plain.tpot_features, rtol=1e-9)
