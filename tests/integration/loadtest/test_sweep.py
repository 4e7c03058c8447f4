"""Concurrency sweeps run against the timed server and llama.cpp (the levels and the knee without a server are in
tests/unit/loadtest/test_sweep.py).
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.sweep import SweepPoint, find_knee
from planner.loadtest.worker import JobQueue, plan_jobs
from planner.serving.endpoints import Endpoint

# Long enough that client and scheduling overheads on a busy machine stay small next to each request's time.
STEADY = "sweep [ttft_ms=100] [itl_ms=20] [tokens=4]"


def _ep(url: str, kind: str = "vllm") -> Endpoint:
    return Endpoint(name="t", kind=kind, base_url=url)


# --- runs against the timed server (through the job queue the page and the CLI use) --------------------------------
def _sweep(endpoint: Endpoint, settings: LoadSettings) -> tuple[list, list]:
    """Run a sweep as the page and the CLI do; returns (outcomes, emitted messages)."""
    messages: list[tuple] = []
    jobs = plan_jobs([endpoint], settings, settings.prompts)
    queue = JobQueue(jobs, started=datetime(2026, 12, 1), scrape=False, emit=lambda *m: messages.append(m))
    return list(asyncio.run(queue.run())), messages


def test_sweep_runs_each_level_at_its_concurrency(timed_server):
    sweep = SweepSettings(sweep_max=4, prompts_per_level=4)
    settings = LoadSettings(mode="sweep", sweep=sweep, prompts=(STEADY,), dataset_name="custom", output_len=4)
    outcomes, messages = _sweep(_ep(timed_server.url), settings)
    points = [SweepPoint.of(o.job.level, o.result) for o in outcomes]
    assert [p.concurrency for p in points] == [1, 2, 4]
    assert [o.result.max_in_flight for o in outcomes] == [1, 2, 4]
    assert all((p.completed, p.failed) == (4, 0) for p in points)
    level, seen = 0, []
    for kind, *payload in messages:
        if kind == "job":
            level = outcomes[payload[0]].job.level
        elif kind == "progress":
            seen.append((level, payload[0].completed))
    assert seen == [(c, k) for c in (1, 2, 4) for k in range(1, 5)]
    # the timed server has no capacity limit: every doubling doubles the throughput, so there is no knee
    rates = [p.output_throughput for p in points]
    assert (
        rates[0] < rates[1] < rates[2]
        and find_knee([(p.concurrency, r) for p, r in zip(points, rates, strict=True)]) is None
    )
    assert all(o.result.stopped is None for o in outcomes)
    assert all(p.ttft_median_s >= 0.1 and p.tpot_median_s is not None for p in points)


# --- a short real sweep --------------------------------------------------------------------------------------------
def test_llamacpp_sweep_with_exact_input_lengths(llama_url):
    # every level (no stop at saturation: llama-cpp-python serves one request at a time, saturated at 1)
    sweep = SweepSettings(sweep_max=4, sweep_stop=False, prompts_per_level=2)
    settings = LoadSettings(mode="sweep", sweep=sweep, input_len=24, output_len=8, timeout_s=60)
    outcomes, _ = _sweep(_ep(llama_url, "llamacpp"), settings)
    points = [SweepPoint.of(o.job.level, o.result) for o in outcomes]
    assert [(p.concurrency, p.completed, p.failed) for p in points] == [(1, 2, 0), (2, 2, 0), (4, 2, 0)]
    for level in (o.result for o in outcomes):
        assert 0 < level.metrics.total_output_tokens <= 2 * 8
        # llama-cpp-python's /extras/tokenize counted every prompt (and the warm-up's): exactly 24 tokens each
        cal = level.input_calibration
        assert (cal.method, cal.total, cal.counted, cal.exact) == ("exact", 3, 3, 3)
        # llama-cpp-python streams no usage, so the run's input tokens are those counts (its text-only count; the
        # gemma chat template adds 8 more to the server's usage.prompt_tokens, measured with a non-streamed call)
        assert [r.prompt_tokens for r in level.records] == [None, None] and level.input_tokens == (24, 24)
