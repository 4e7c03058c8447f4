"""A measured run against the timed server round-trips through a vLLM ``--save-result`` file."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import datetime

import pytest

from planner.loadtest.results import (
    import_runs,
    saved_run,
    to_vllm_file,
)
from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.serving.endpoints import Endpoint


def test_measured_run_round_trips_through_the_vllm_file(timed_server):
    endpoint = Endpoint(name="timed", kind="vllm", base_url=timed_server.url)
    spec = LoadSettings(
        num_prompts=4, max_concurrency=2, output_len=5, prompts=("hi [tokens=5] [ttft_ms=20] [itl_ms=5]",)
    )
    result = asyncio.run(run_load(endpoint, spec))
    run = saved_run(result, "timed · c=2", started=datetime(2026, 11, 29, 10, 15, 0))
    assert run.date == "20261129-101500"
    assert [r.output_tokens for r in run.requests] == [5, 5, 5, 5]
    text = json.dumps(to_vllm_file(run))
    assert "Infinity" not in text  # strict JSON: an infinite rate is written "inf"
    (back,) = import_runs(text, "ours.json")
    assert back.source == "imported" and back.label == "timed · c=2" and back.endpoint == "timed"
    assert back.request_rate == math.inf and back.max_concurrency == 2 and back.stopped is None
    assert back.metrics.completed == 4 and back.metrics.total_output_tokens == 20
    assert back.metrics.ttft.median_s == pytest.approx(run.metrics.ttft.median_s)
    assert [r.output_tokens for r in back.requests] == [5, 5, 5, 5]
