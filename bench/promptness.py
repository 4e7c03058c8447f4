"""How promptly the clients give up: the durations the tests no longer assert (house style rule 21: a duration is a
benchmark figure, never an assertion), printed against their targets.

Each case runs against a local server on 127.0.0.1 (the timed demo server, ``python -m planner.demo``, or a port
nothing listens on) and prints the wall time it took, its target and the outcome the tests assert instead:

* a request timeout of 0.3 s against a server that never answers (``[mode=hang]``), openai and huggingface_hub
  clients (target 2 s; tests/integration/serving/test_clients.py asserts the "timeout" record);
* a connection refused, the same clients and discovery (target 2 s; the "connect" record, the unhealthy endpoint);
* a load run whose duration cap (0.4 s) ends two 3 s requests in flight (target 2.5 s);
* a load run cancelled with four 5 s requests in flight, and one cancelled during its warm-up (targets 4 s, 2 s);
* the /metrics scraper stopped between two scrapes 1 s apart (target 0.5 s).

Usage: ``python bench/promptness.py``; exits 0. Figures on a busy shared machine are longer than on a quiet one.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.loadtest.runner import run_load  # noqa: E402
from planner.loadtest.settings import LoadSettings  # noqa: E402
from planner.serving.backends import stream_request  # noqa: E402
from planner.serving.discovery import discover  # noqa: E402
from planner.serving.endpoints import Endpoint  # noqa: E402
from planner.serving.requests import ChatRequest  # noqa: E402
from planner.serving.server_metrics import scrape_metrics  # noqa: E402
from tests.servers.timed_sse import TimedServer  # noqa: E402


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def _timed(coro) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = await coro
    return time.perf_counter() - t0, out


async def _cancel_in_flight(url: str) -> tuple[float, object]:
    stop = asyncio.Event()
    set_at: list[float] = []

    def in_flight(_t_s: float, n: int) -> None:
        if n == 4 and not stop.is_set():
            set_at.append(time.perf_counter())
            stop.set()

    spec = LoadSettings(num_prompts=4, prompts=("x [ttft_ms=5000]",))
    result = await run_load(Endpoint("t", "vllm", url), spec, on_in_flight=in_flight, stop=stop)
    return time.perf_counter() - set_at[0], result.stopped


async def _cancel_warmup(url: str) -> tuple[float, object]:
    stop = asyncio.Event()
    spec = LoadSettings(num_prompts=3, num_warmups=1, prompts=("x [ttft_ms=5000]",), output_len=2)
    task = asyncio.create_task(run_load(Endpoint("t", "vllm", url), spec, stop=stop))
    await asyncio.sleep(0.3)
    t0 = time.perf_counter()
    stop.set()
    result = await task
    return time.perf_counter() - t0, result.stopped


async def _scraper_stop(url: str) -> tuple[float, object]:
    stop = asyncio.Event()
    task = asyncio.create_task(
        scrape_metrics(
            Endpoint("v", "vllm", url), interval_s=1.0, stop=stop, on_sample=lambda _: None, start=time.perf_counter()
        )
    )
    await asyncio.sleep(0.3)  # the first scrape is done; the scraper waits for the next one
    t0 = time.perf_counter()
    stop.set()
    reason = await task
    return time.perf_counter() - t0, reason


def main() -> int:
    closed = _closed_port_url()
    rows: list[tuple[str, float, float, object]] = []
    with TimedServer() as server:
        url = server.url
        for backend in ("openai", "huggingface_hub"):
            ep = Endpoint("t", "vllm", url, model="timed-model")
            s, rec = asyncio.run(
                _timed(stream_request(ep, ChatRequest("x [mode=hang]"), timeout_s=0.3, backend=backend))
            )
            rows.append((f"timeout 0.3 s, {backend}", s, 2.0, rec.error_kind))
            gone = Endpoint("gone", "vllm", closed, model="m")
            s, rec = asyncio.run(_timed(stream_request(gone, ChatRequest("x"), timeout_s=2, backend=backend)))
            rows.append((f"connection refused, {backend}", s, 2.0, rec.error_kind))
        s, info = asyncio.run(_timed(discover(Endpoint("x", "vllm", closed), 2)))
        rows.append(("connection refused, discovery", s, 2.0, "unhealthy" if not info.healthy else "healthy"))
        spec = LoadSettings(num_prompts=6, max_concurrency=2, duration_s=0.4, prompts=("x [ttft_ms=3000] [tokens=2]",))
        s, result = asyncio.run(_timed(run_load(Endpoint("t", "vllm", url), spec)))
        rows.append(("duration cap 0.4 s, 3 s requests", s, 2.5, result.stopped))
        s, stopped = asyncio.run(_cancel_in_flight(url))
        rows.append(("cancel, 4 requests in flight", s, 4.0, stopped))
        s, stopped = asyncio.run(_cancel_warmup(url))
        rows.append(("cancel during the warm-up", s, 2.0, stopped))
        s, reason = asyncio.run(_scraper_stop(url))
        rows.append(("scraper stop between scrapes", s, 0.5, "stopped" if reason is None else reason))
    print(f"{'case':<36} {'took s':>7} {'target s':>9}  outcome")
    for name, took, target, outcome in rows:
        flag = "" if took < target else "  (over target)"
        print(f"{name:<36} {took:>7.3f} {target:>9.1f}  {outcome}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
