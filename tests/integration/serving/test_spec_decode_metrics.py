"""The demo server serves vLLM's speculative-decoding counters over the wire."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from planner.serving.endpoints import Endpoint
from planner.serving.server_metrics import (
    fetch_sample,
    spec_decode_stats,
)
from tests.servers.timed_sse import TimedServer


def test_demo_server_serves_spec_counters_over_the_wire():
    # k = 3, 2 accepted per draft: an answer of 10 tokens is the prefill's token, then ceil(9 / 3) = 3 drafts
    with TimedServer(flags=("--num-speculative-tokens", "3", "--spec-accepted-per-draft", "2")) as server:
        ep = Endpoint("demo", "vllm", server.url)
        first = asyncio.run(fetch_sample(ep, start=0.0))
        for _ in range(2):
            body = {"prompt": "hi", "max_tokens": 10, "ignore_eos": True, "stream": False, "model": "m"}
            httpx.post(server.url + "/v1/completions", json=body, timeout=10).raise_for_status()
        stats = spec_decode_stats(first, asyncio.run(fetch_sample(ep, start=0.0)))
    assert (stats.num_drafts, stats.num_draft_tokens, stats.num_accepted_tokens) == (6, 18, 12)
    assert stats.accepted_per_pos == (6, 6, 0)
    assert stats.mean_acceptance_length == 3.0 and stats.acceptance_rate == pytest.approx(2 / 3)
