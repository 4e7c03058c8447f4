"""Which HTTP client the load path runs on: the client CPU per streamed event of ``aiohttp`` (the load test's lean
path, :mod:`planner.serving.backends.aiohttp_lean`) and ``httpx2`` (the client the openai and huggingface_hub SDKs run
on, and that discovery and ``/metrics`` use), each doing the same minimal work: read the SSE lines of a streamed chat
answer and count its ``data:`` events.

Server: ``bench/zero_delay_server.py`` in its own process (64 tokens per answer: role chunk, 37 token chunks, usage
chunk, ``[DONE]`` = 40 events). ``--streams`` concurrent streams each send ``--per-stream`` requests on one client
(no connection cap); the two clients take turns, in both orders, ``--rounds`` times. CPU µs/event = this process's CPU
time (``time.process_time()``; the server runs in another) ÷ events received.

Measured 2026-12-03 on the project's 2-core machine shared with other jobs (load average ~3.8), Python 3.11, aiohttp
3.14.5, httpx2 2.16.2, 200 streams × 3 requests = 24,000 events a round, 6 rounds each:

    client    CPU µs/event min / median / max
    aiohttp   8.7 / 9.2 / 9.9
    httpx2    44.2 / 46.5 / 48.3

``httpx2`` spends ~37 µs more per event before any of the project's own parsing, close to the whole 50 µs per chunk
the load path is allowed at 200 streams (``bench/client_capacity.py``: the lean path measures ~42 µs all told), so
the load path stays on aiohttp while discovery and ``/metrics`` (a few requests a run) share the SDKs' ``httpx2``.

Usage: ``python bench/http_clients.py [--streams 200] [--per-stream 3] [--rounds 6]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import aiohttp
import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.zero_delay_server import ZeroDelayServers  # noqa: E402

TOKENS = 64


def _body() -> dict:
    return {
        "model": "timed-model",
        "messages": [{"role": "user", "content": f"cap [tokens={TOKENS}]"}],
        "max_tokens": TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


async def _aiohttp(url: str, streams: int, per_stream: int) -> int:
    events = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one() -> None:
            nonlocal events
            for _ in range(per_stream):
                async with session.post(url + "/v1/chat/completions", json=_body()) as response:
                    async for line in response.content:
                        events += line.startswith(b"data:")

        await asyncio.gather(*(one() for _ in range(streams)))
    return events


async def _httpx2(url: str, streams: int, per_stream: int) -> int:
    events = 0
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:

        async def one() -> None:
            nonlocal events
            for _ in range(per_stream):
                async with client.stream("POST", url + "/v1/chat/completions", json=_body()) as response:
                    async for line in response.aiter_lines():
                        events += line.startswith("data:")

        await asyncio.gather(*(one() for _ in range(streams)))
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200, help="concurrent streams")
    parser.add_argument("--per-stream", type=int, default=3, help="requests per stream")
    parser.add_argument("--rounds", type=int, default=6, help="turns of each client (alternating order)")
    args = parser.parse_args()
    clients = {"aiohttp": _aiohttp, "httpx2": _httpx2}
    figures: dict[str, list[float]] = {name: [] for name in clients}
    with ZeroDelayServers(1) as servers:
        for turn in range(args.rounds):
            for name in sorted(clients, reverse=bool(turn % 2)):
                cpu0, t0 = time.process_time(), time.perf_counter()
                events = asyncio.run(clients[name](servers.urls[0], args.streams, args.per_stream))
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
                figures[name].append(cpu / max(events, 1) * 1e6)
                per_event = figures[name][-1]
                print(f"{name:8} {events:7,d} events  {per_event:6.1f} µs/event  wall {wall:5.2f} s", flush=True)
    print("client    CPU µs/event min / median / max")
    for name, values in figures.items():
        values.sort()
        print(f"{name:8}  {values[0]:.1f} / {values[len(values) // 2]:.1f} / {values[-1]:.1f}")


if __name__ == "__main__":
    main()
