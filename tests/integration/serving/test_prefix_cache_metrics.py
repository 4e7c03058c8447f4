"""The prefix-cache counters over the wire: the demo server's cache counts and reset, and reset on kinds without the
route.
"""

from __future__ import annotations

import asyncio

import httpx

from planner.serving.endpoints import Endpoint
from planner.serving.server_metrics import (
    ServerSample,
    fetch_sample,
    prefix_cache_stats,
    reset_prefix_cache,
)
from tests.servers.timed_sse import TimedServer


def test_demo_server_cache_counts_and_resets():
    with TimedServer(tokenizer="bytes", prefix_caching=True) as server:
        ep = Endpoint("demo", "vllm", server.url)

        def send(prompt: list[int]) -> None:
            body = {"prompt": prompt, "max_tokens": 1, "stream": False, "model": "m"}
            httpx.post(server.url + "/v1/completions", json=body, timeout=10).raise_for_status()

        async def counters() -> ServerSample:
            return await fetch_sample(ep, start=0.0)

        prefix = list(range(64))  # 4 blocks of 16
        first = asyncio.run(counters())
        send([*prefix, 1000, 1001])  # 66 tokens: nothing cached
        send([*prefix, 2000, 2001])  # the 4 prefix blocks hit: 64 tokens
        send(prefix)  # the whole prompt cached, but the last token is computed: 3 blocks hit
        stats = prefix_cache_stats(first, asyncio.run(counters()), "vllm")
        assert (stats.queries_tokens, stats.hits_tokens) == (66 + 66 + 64, 64 + 48)
        assert asyncio.run(reset_prefix_cache(ep)) is None
        mid = asyncio.run(counters())
        send([*prefix, 3000])
        stats = prefix_cache_stats(mid, asyncio.run(counters()), "vllm")
        assert (stats.queries_tokens, stats.hits_tokens) == (65, 0)


def test_reset_on_kinds_without_a_route(closed_port_url):
    assert "has no prefix-cache reset route" in asyncio.run(reset_prefix_cache(Endpoint("t", "tgi", closed_port_url)))
    refused = asyncio.run(reset_prefix_cache(Endpoint("v", "vllm", closed_port_url)))
    assert refused is not None and "\n" not in refused
