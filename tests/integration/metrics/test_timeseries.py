"""The time series of a real run against the timed server: its windows add up to the run."""

from __future__ import annotations

import asyncio

from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.metrics.timeseries import timeseries
from planner.serving.endpoints import Endpoint


def test_real_run_windows_add_up_to_the_run(timed_server):
    spec = LoadSettings(num_prompts=12, max_concurrency=4, prompts=("ts [ttft_ms=20] [itl_ms=5] [tokens=4]",))
    result = asyncio.run(run_load(Endpoint("t", "vllm", timed_server.url), spec))
    windows = timeseries(result.records, result.start_s, window_s=0.05, end_s=result.start_s + result.duration_s)
    assert sum(w.completed for w in windows) == result.metrics.completed == 12
    assert sum(w.output_tokens for w in windows) == result.metrics.total_output_tokens == 48
    assert sum(w.ttft_samples for w in windows) == result.metrics.ttft.count
