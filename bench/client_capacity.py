"""How much load the planner's own client can drive: a client self-test (benchmark_clients.md §10.9).

It starts the timed SSE server (``tests/servers/timed_sse.py``, its own process) with ZERO delays (first token and
every next token ready at once), then runs :func:`planner.loadtest.run_load` closed-loop at growing concurrency and
prints per level:

* streams: the most requests in flight at once (sustained = it reaches the cap) and how many completed;
* chunks/s: token-bearing chunks received per second of wall time, over every request;
* tokens/s: output tokens per second (the server groups tokens 1, 2, 1, 3, ... per chunk);
* ITL median / p99 ms: with a zero-delay server every chunk gap is added latency of the client, the loopback and
  the server's own loop (an upper bound on what the client adds per chunk);
* TTFT median ms: request building, connection and parsing up to the first chunk.

Both processes share the machine's cores, so these are lower bounds of the client's real capacity. With zero
delays the server never needs to wait, so it writes each stream whole before its loop serves the next one: TTFT
grows with the cap because streams queue at the SERVER; chunks/s is the rate of the whole pipeline (one client
event loop parsing, one server loop writing). Example run (2026-11, this container): 64 streams in flight, all
completed, ~3,200 chunks/s (~5,500 tokens/s), ITL median 0.2 ms / p99 0.4 ms at every cap.

Usage: ``python bench/client_capacity.py [--levels 1 8 32 64] [--requests-per-stream 4] [--tokens 64]``; exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.endpoints import Endpoint  # noqa: E402
from planner.loadtest import LoadSpec, run_load  # noqa: E402
from tests.servers.timed_sse import TimedServer  # noqa: E402


def _fmt(value: float | None, scale: float = 1000.0) -> str:
    return "n/a" if value is None else f"{value * scale:,.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description="client capacity against a zero-delay streaming server")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 32, 64], help="concurrency levels")
    parser.add_argument("--requests-per-stream", type=int, default=4, help="requests per concurrent stream")
    parser.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    args = parser.parse_args()
    prompt = f"capacity [ttft_ms=0] [itl_ms=0] [tokens={args.tokens}]"
    header = (
        f"{'cap':>5} {'streams':>8} {'ok':>9} {'chunks/s':>10} {'tokens/s':>10} "
        f"{'ITL med ms':>11} {'ITL p99 ms':>11} {'TTFT med ms':>12}"
    )
    print(header)
    with TimedServer() as server:
        endpoint = Endpoint("timed", "vllm", server.url, model="timed-model")
        for level in args.levels:
            spec = LoadSpec(
                num_prompts=level * args.requests_per_stream,
                max_concurrency=level,
                num_warmups=min(level, 4),
                prompts=(prompt,),
                output_len=args.tokens,
                timeout_s=30,
            )
            result = asyncio.run(run_load(endpoint, spec))
            m = result.metrics
            chunks = sum(len(r.chunks) for r in result.records if r.ok)
            print(
                f"{level:>5} {result.max_in_flight:>8} {f'{m.completed}/{spec.num_prompts}':>9} "
                f"{chunks / result.duration_s:>10,.0f} {m.output_throughput:>10,.0f} "
                f"{_fmt(m.itl.median_s if m.itl else None):>11} {_fmt(m.itl.p99_s if m.itl else None):>11} "
                f"{_fmt(m.ttft.median_s if m.ttft else None):>12}"
            )
    print("zero-delay server: ITL = added latency per chunk (client + loopback + server loop); shared cores;")
    print("TTFT grows with the cap because the zero-delay server writes one stream whole before the next")
    return 0


if __name__ == "__main__":
    sys.exit(main())
