"""The maximum-rate search's steps on a server model worked out by hand (no sockets): the rate found, the number of
runs, the answers when nothing meets the SLOs and when everything does, and the one-line errors of its settings."""

from __future__ import annotations

import asyncio
import math

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.max_rate import MaxRateSpec, find_max_rate, next_level
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import LoadSettings
from planner.loadtest.worker import Job, JobOutcome
from planner.metrics.benchmark import metrics_from_samples
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint

ENDPOINT = Endpoint(name="model", kind="vllm", base_url="http://127.0.0.1:9")
BASE = LoadSettings(num_prompts=40, input_len=16, output_len=16, ignore_eos=True, burstiness=math.inf)


def _server(capacity: float, ttft_s: float = 0.05, window_s: float = 3.0):
    """A server that serves ``capacity`` req/s with a first token after ``ttft_s``; past its capacity the queue grows
    for the run's ``window_s`` seconds, so the last request waits ``(rate / capacity − 1) · window_s``. A burst is
    measured at its capacity with the queue of every request at once."""

    async def run(job: Job) -> JobOutcome:
        s = job.settings
        rate = s.request_rate
        n = s.num_prompts
        if math.isinf(rate):
            waits = [k / capacity for k in range(n)]
            served = capacity
        else:
            late = max(0.0, rate / capacity - 1.0) * window_s
            waits = [late * k / (n - 1) for k in range(n)]
            served = min(rate, capacity)
        ttft = [ttft_s + w for w in waits]
        metrics = metrics_from_samples(
            ttft_s=ttft,
            e2e_s=[t + 0.15 for t in ttft],
            output_tokens=[16] * n,
            input_tokens=[16] * n,
            itl_s=[0.01] * n,
            duration_s=n / served,
        )
        return JobOutcome(job, LoadResult(ENDPOINT.name, s, (), (), metrics, n / served))

    return run


def _search(spec: MaxRateSpec, capacity: float, **kwargs) -> object:
    return asyncio.run(find_max_rate(ENDPOINT, spec, run_step=_server(capacity, **kwargs)))


def test_finds_the_capacity_within_the_tolerance() -> None:
    # SLO 150 ms with a 50 ms first token: a rate r over capacity c makes the last request wait (r/c − 1) · 3 s,
    # which passes 100 ms at r = c · (1 + 0.1/3) = 1.033 c. So the answer lies in [c, 1.033 c].
    spec = MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=150"]), tolerance=0.05, probe_s=3.0)
    result = _search(spec, 20.0)
    assert 20.0 <= result.value <= 20.0 * 1.0334
    assert len(result.steps) <= spec.max_steps and result.stopped == "tolerance"
    assert math.isinf(result.steps[0].level) and not result.steps[0].met  # the ceiling: a burst
    assert result.steps[1].level == pytest.approx(20.0)  # then the burst's measured throughput
    assert result.limit is not None and result.limit.level > result.value
    assert (result.limit.level - result.value) <= 0.05 * result.limit.level
    assert result.answer.startswith("Highest request_rate meeting ttft_p99_ms=150: ")


def test_a_tight_slo_lowers_the_rate() -> None:
    # 250 ms of TTFT allowed: up to r = c · (1 + 0.2/3) = 1.067 c
    loose = _search(MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=250"]), tolerance=0.02, max_steps=12), 10.0).value
    tight = _search(MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=70"]), tolerance=0.02, max_steps=12), 10.0).value
    assert tight < loose <= 10.0 * (1 + 0.2 / 3)
    assert tight == pytest.approx(10.0 * (1 + 0.02 / 3), rel=0.03)


def test_a_floor_nothing_meets_stops_early_and_says_what_binds() -> None:
    # a 50 ms first token against a 20 ms SLO: at any rate TTFT ≥ 50 ms
    spec = MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=20", "tpot_p99_ms=50"]))
    result = _search(spec, 20.0)
    assert result.best is None and result.stopped == "nothing meets"
    assert len(result.steps) == 3  # burst, the ceiling's rate, half of it: TTFT did not move
    assert "ttft_p99_ms binds (2.50× its limit)" in result.answer


def test_everything_meets_is_unbounded() -> None:
    result = _search(MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=60000"])), 20.0)
    assert result.stopped == "unbounded" and len(result.steps) == 1
    assert "no limit found" in result.answer


def test_concurrency_search_gives_integers() -> None:
    spec = MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=150"]), variable="max_concurrency")
    levels = [spec.level_settings(lv).max_concurrency for lv in (math.inf, 7.6, 1.0)]
    assert levels == [40, 7, 1]
    assert spec.level_settings(8.0).num_prompts == 40 and spec.level_settings(32.0).num_prompts == 128


def test_rate_steps_last_about_probe_s() -> None:
    spec = MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=150"]), probe_s=10.0, step_duration_s=30.0)
    s = spec.level_settings(12.5)
    assert s.num_prompts == 125 and s.request_rate == 12.5 and s.duration_s == 30.0
    assert spec.level_settings(1.0).num_prompts == 40  # never fewer than the base's num_prompts


def test_first_level_is_a_burst() -> None:
    spec = MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=150"]))
    assert next_level(spec, []) == (math.inf, None)


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("variable", "rps", "request_rate or max_concurrency"),
        ("max_steps", 1, "an integer from 2 to 30"),
        ("tolerance", 0.0, "a fraction in [0.001, 0.5]"),
        ("probe_s", -1.0, "seconds in (0, 3600]"),
    ],
)
def test_bad_search_settings_name_the_field(field: str, value: object, accepted: str) -> None:
    with pytest.raises(InvalidParameterError) as err:
        MaxRateSpec(BASE, parse_slos(["ttft_p99_ms=150"]), **{field: value})
    assert err.value.name == field and err.value.accepted == accepted
