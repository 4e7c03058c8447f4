"""planner.sizing.probe: how many requests a probe sends and measures, and one replica simulated at a request rate,
on a deployment timed by hand (tests/unit/sizing/test_bounds.py: 10 ms a step + 1 ms a sequence, 5 ms to the
engine; 100 prompt tokens, 11 output tokens: alone, TTFT 16 ms and TPOT 11 ms)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from planner.metrics.benchmark import metrics_from_samples
from planner.sizing.probe import PROBE_MAX_REQUESTS, PROBE_MIN_MEASURED, Probe, probe, probe_load, probe_requests
from tests.unit.sizing.test_bounds import COEF, SHAPE


@pytest.mark.parametrize(
    ("rate", "warmup_s", "measure_s", "counts"),
    [
        (1.0, 0.0, 0.0, (0, 100)),  # at least 100 measured: a p99 between the slowest two
        (2.0, 10.0, 60.0, (20, 120)),  # ⌈2 × 10⌉, ⌈2 × 60⌉
        (10.0, 10.0, 60.0, (43, 257)),  # 100 + 600 > 300: measured int(600 × 300/700) = 257, warm-up 300 − 257
        (50.0, 100.0, 1.0, (200, 100)),  # 5,000 + 100: the measured keep their 100, the warm-up gets the rest
    ],
)
def test_probe_requests(rate: float, warmup_s: float, measure_s: float, counts: tuple[int, int]) -> None:
    warm, measured = probe_requests(rate, warmup_s, measure_s)
    assert warm + measured <= PROBE_MAX_REQUESTS and measured >= PROBE_MIN_MEASURED
    assert (warm, measured) == counts


def test_probe_load_is_open_loop_with_ignore_eos() -> None:
    load = probe_load(rate=4.0, input_len=100, output_len=11, burstiness=math.inf, num_prompts=20)
    assert (load.request_rate, load.max_concurrency, load.num_prompts, load.duration_s) == (4.0, None, 20, None)
    assert (load.input_len, load.output_len, load.ignore_eos, load.burstiness) == (100, 11, True, math.inf)


def test_a_replica_that_keeps_up_serves_each_request_alone() -> None:
    # one request a second, evenly spaced (burstiness inf): each is alone in the engine, as worked out by hand
    p = probe(SHAPE, COEF, rate=1.0, input_len=100, output_len=11, burstiness=math.inf)
    assert (p.warmup, p.num_prompts, p.queue_growth, p.kv_saturated) == (0, 100, 0, False)
    assert p.metrics.ttft.p99_s == pytest.approx(0.016) and p.metrics.tpot.median_s == pytest.approx(0.011)
    assert p.keeps_up and p.tokens_per_s_per_user == pytest.approx(1 / 0.011)
    assert p.mean_running == pytest.approx(1.0)


def test_a_replica_past_its_capacity_has_a_growing_queue() -> None:
    # 500 req/s against one that holds at most 10 sequences in steps of 10 + 10 × 1 = 20 ms, 11 steps a request:
    # about 10 / (11 × 20 ms) = 45 req/s at best; the queue grows through the measured span
    p = probe(SHAPE, COEF, rate=500.0, input_len=100, output_len=11, burstiness=math.inf)
    assert p.queue_growth > 3 and not p.keeps_up


def _probe(queue_growth: int, num_prompts: int, tpot_s: float | None) -> Probe:
    metrics = metrics_from_samples(ttft_s=[0.1], e2e_s=[0.1 + 10 * (tpot_s or 0)], output_tokens=[11 if tpot_s else 1],
                                   input_tokens=[100], itl_s=[], duration_s=1.0)  # fmt: skip
    return Probe(1.0, 0, num_prompts, metrics, queue_growth, False, 1.0)


def test_keeps_up_allows_3_percent_of_the_measured_or_3_requests() -> None:
    assert _probe(3, 100, 0.01).keeps_up and not _probe(4, 100, 0.01).keeps_up  # max(3, 3% of 100)
    assert _probe(6, 200, 0.01).keeps_up and not _probe(7, 200, 0.01).keeps_up  # 3% of 200
    assert _probe(0, 100, 0.02).tokens_per_s_per_user == pytest.approx(50.0)
    assert _probe(0, 100, None).tokens_per_s_per_user is None  # one-token answers: no TPOT
    assert replace(_probe(0, 100, 0.02), rate=2.0).rate == 2.0
