"""Measure how accurately the real client path measures TTFT, ITL and TPOT.

It starts the timed SSE server (``planner/demo/``, its own process: first token 150 ms after it has
read the request, then 20 ms per token, tokens grouped 1, 2, 1, 3, ... per chunk), sends N requests through
every backend of ``planner.serving.backends`` (openai SDK, huggingface_hub chat and TGI-native, aiohttp), and
prints per client: metric, truth, measured median, error in ms.

TTFT is shown twice: as a user sees it (from "sent", including request building and loopback delivery) and as
TTFT − first byte (the server sends its response headers the moment it has read the request, so this isolates
the server's 150 ms from the transport cost).

Usage: ``python bench/measurement_accuracy.py [-n 20]``; exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.metrics.latency import compute_metrics  # noqa: E402
from planner.serving.backends import make_client, stream_request  # noqa: E402
from planner.serving.endpoints import Endpoint  # noqa: E402
from planner.serving.requests import ChatRequest  # noqa: E402
from tests.servers.timed_sse import TimedServer  # noqa: E402

#: client label -> (backend, route)
CLIENTS = {
    "openai": ("openai", "chat"),
    "hf-chat": ("huggingface_hub", "chat"),
    "hf-native": ("huggingface_hub", "generate_stream"),
    "aiohttp": ("aiohttp", "chat"),
}


TTFT_MS, ITL_MS = 150.0, 20.0


async def _run(url: str, n: int, which: str) -> list:
    backend, route = CLIENTS[which]
    ep = Endpoint("timed", "tgi" if route == "generate_stream" else "vllm", url, model="timed-model")
    client = make_client(ep, backend=backend, timeout_s=10)

    async def call():
        return await stream_request(ep, ChatRequest("bench"), timeout_s=10, backend=backend, route=route, client=client)

    try:
        await call()  # warm-up (lazy imports, connection), not counted
        return [await call() for _ in range(n)]
    finally:
        await client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="client measurement accuracy against the timed server")
    parser.add_argument("-n", type=int, default=20, help="requests per client (default 20)")
    args = parser.parse_args()
    print(f"{'client':10} {'metric':22} {'truth ms':>9} {'median ms':>10} {'error ms':>9} {'n':>5}")
    with TimedServer() as server:
        for which in CLIENTS:
            records = asyncio.run(_run(server.url, args.n, which))
            metrics = [compute_metrics(r) for r in records if r.ok]
            rows = [
                ("TTFT (from sent)", TTFT_MS, [m.ttft_s for m in metrics]),
                ("TTFT - first byte", TTFT_MS, [r.first_token_s - r.first_byte_s for r in records if r.ok]),
                ("ITL (per token)", ITL_MS, [x for m in metrics for x in m.itl_token_s]),
                ("TPOT", ITL_MS, [m.tpot_s for m in metrics]),
            ]
            for name, truth, values in rows:
                median = statistics.median(values) * 1000
                print(f"{which:10} {name:22} {truth:9.1f} {median:10.2f} {median - truth:+9.2f} {len(values):5d}")
            failed = len(records) - len(metrics)
            if failed:
                print(f"{which:10} {failed} request(s) failed: {records[0].error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
