"""planner.compare.worker: the Live Compare child's work, with the compare run replaced at the boundary: every
stream update goes out as an ``event``, then the result; a stop cancels the streams in flight."""

from __future__ import annotations

import asyncio

from planner.compare import worker
from planner.compare.run import CompareResult
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest

ENDPOINTS = (Endpoint("a", "vllm", "http://127.0.0.1:9"),)
REQUEST = ChatRequest("hi")


def _play(monkeypatch, run_compare, stop_after: float | None = None) -> list[tuple]:
    monkeypatch.setattr(worker, "run_compare", run_compare)
    emitted: list[tuple] = []

    async def main() -> None:
        stop = asyncio.Event()
        if stop_after is not None:
            asyncio.get_running_loop().call_soon(stop.set)
        await worker._work((ENDPOINTS, REQUEST, 2, 5.0, {"KEY": "x"}), lambda *m: emitted.append(m), stop)

    asyncio.run(main())
    return emitted


def test_updates_then_the_result(monkeypatch) -> None:
    asked = {}

    async def run_compare(endpoints, request, *, repeat, timeout_s, on_event, secrets):
        asked.update(endpoints=endpoints, request=request, repeat=repeat, timeout_s=timeout_s, secrets=secrets)
        on_event("update 1")
        on_event("update 2")
        return CompareResult(request, (), ())

    emitted = _play(monkeypatch, run_compare)
    assert emitted == [("event", "update 1"), ("event", "update 2"), ("result", CompareResult(REQUEST, (), ()))]
    assert asked == {"endpoints": ENDPOINTS, "request": REQUEST, "repeat": 2, "timeout_s": 5.0, "secrets": {"KEY": "x"}}


def test_a_stop_cancels_the_run(monkeypatch) -> None:
    cancelled = []

    async def run_compare(endpoints, request, *, repeat, timeout_s, on_event, secrets):
        on_event("started")
        try:
            await asyncio.Event().wait()  # a stream that never ends
        except asyncio.CancelledError:
            cancelled.append(True)  # the real run turns its streams into "cancelled" records here
            raise

    emitted = _play(monkeypatch, run_compare, stop_after=0)
    assert emitted == [("event", "started")] and cancelled == [True]  # no result after a cancel
