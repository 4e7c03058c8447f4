"""planner.sizing.bounds on a deployment whose step time is worked out by hand.

The deployment is the simulator tests' one-layer model (tests/unit/predict/conftest.py) with bandwidths and FLOP/s
so large that bytes and FLOPs cost nothing, and a step model with two terms left: 10 ms per step and 1 ms per
sequence in it; a request reaches the engine 5 ms after it is sent and nothing is added after a token. A request
of 100 prompt tokens and 11 output tokens alone: one prefill step (10 + 1 = 11 ms; 100 ≤ 8,192 batched tokens),
then 10 decode steps of 11 ms:

* TTFT = 5 + 11 = 16 ms, TPOT = 11 ms, E2EL = 16 + 10 × 11 = 126 ms, every ITL percentile 11 ms;
* the fixed part of a step ``s`` = 10 ms; the work a request adds over its life ``w`` = 11 steps × 1 ms = 11 ms;
* with ``max_num_seqs`` 10 (no KV pool given, so it alone bounds the batch): steps per request
  max((11 − 1) / 10, 100 / 8,192) = 1, so λ_fluid = 1 / (s · 1 + w) = 1 / 21 ms = 47.62 req/s.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from planner.metrics.slo import parse_slo
from planner.predict.step_time import StepCoefficients
from planner.sizing.bounds import bounds
from planner.sizing.estimate import SloEnds
from tests.unit.predict.conftest import tiny_shape

SHAPE = replace(tiny_shape(max_num_seqs=10), memory_bandwidth_bytes_per_s=1e30, peak_flops=1e30, link_bytes_per_s=1e30)
COEF = StepCoefficients(
    step_overhead_s=0.010, seq_overhead_s=0.001, layer_overhead_s=0.0, moe_layer_overhead_s=0.0,
    fp8_layer_overhead_s=0.0, mla_layer_overhead_s=0.0, eager_layer_s=0.0, eager_moe_layer_s=0.0,
    allreduce_latency_s=0.0, request_overhead_s=0.005, request_overhead_per_token_s=0.0, response_overhead_s=0.0,
)  # fmt: skip
NO_POOL = SimpleNamespace(pool=None)


def _bounds(ends: SloEnds | None = None, **changes):
    return bounds(NO_POOL, replace(SHAPE, **changes), COEF, input_len=100, output_len=11, ends=ends)  # type: ignore[arg-type]


def test_a_request_alone_and_the_fluid_rate() -> None:
    b = _bounds()
    assert (b.ttft_s, b.tpot_s, b.e2el_s) == pytest.approx((0.016, 0.011, 0.126))
    assert (b.itl_p50_s, b.itl_p90_s, b.itl_p99_s) == pytest.approx((0.011, 0.011, 0.011))
    assert (b.fixed_step_s, b.work_per_request_s, b.max_batch) == (pytest.approx(0.010), pytest.approx(0.011), 10)
    assert b.fluid_rate == pytest.approx(1 / 0.021) and b.rate_bound == b.fluid_rate and b.binding == "throughput"
    assert b.floor_s(parse_slo("ttft_p99_ms=500")) == b.ttft_s and b.floor_s(parse_slo("itl_p90_ms=50")) == b.itl_p90_s


def test_a_smaller_batch_means_more_steps_per_request() -> None:
    # max_num_seqs 2: (11 − 1) / 2 = 5 decode steps' fixed part per request: 1 / (5 × 10 + 11 ms) = 16.39 req/s
    assert _bounds(max_num_seqs=2).fluid_rate == pytest.approx(1 / 0.061)


def test_slos_lower_the_bound() -> None:
    tpot = parse_slo("tpot_p99_ms=15")
    # when every step decodes, the mean step is s / (1 − λ·w): ≤ 15 ms for λ ≤ (1 − 10 / 15) / 11 ms = 30.30 req/s
    b = _bounds(SloEnds(slos=(tpot,), high=(1.0,)))
    assert (b.rate_bound, b.binding) == (pytest.approx((1 - 10 / 15) / 0.011), tpot.key)
    # E2EL 136 ms: (136 − 16) / 10 = 12 ms a decode step: (1 − 10 / 12) / 11 ms = 15.15 req/s
    e2el = parse_slo("e2el_p99_ms=136")
    assert _bounds(SloEnds(slos=(tpot, e2el), high=(1.0, 1.0))).rate_bound == pytest.approx((1 - 10 / 12) / 0.011)
    # a limit under the fixed step: no rate meets it
    assert _bounds(SloEnds(slos=(parse_slo("tpot_p50_ms=9"),), high=(1.0,))).rate_bound == 0.0
    # TTFT SLOs bound nothing here: queueing sets them, the simulation checks them
    assert _bounds(SloEnds(slos=(parse_slo("ttft_p99_ms=1"),), high=(1.0,))).binding == "throughput"


def test_the_pessimistic_end_of_the_band() -> None:
    # a high ratio of 1.25 checks 15 ms as 12 ms: (1 − 10 / 12) / 11 ms; the throughput's low end 0.8 of 47.62
    ends = SloEnds(estimate="pessimistic", slos=(parse_slo("tpot_p99_ms=15"),), high=(1.25,), throughput_low=0.8)
    assert _bounds(ends).rate_bound == pytest.approx((1 - 10 / 12) / 0.011)
    assert _bounds(SloEnds(estimate="pessimistic", throughput_low=0.8)).rate_bound == pytest.approx(0.8 / 0.021)
