"""planner.demo.planned: a request's tokens come when the planned engine's steps end, on a scripted clock.

The engine here is a hand-built one: 5 ms from the request to the engine, then every step takes 10 ms and gives each
request one token (its first with the prefill), so token k of a request added at t = 5 ms is out at 5 + 10 k ms.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from planner.demo import routes
from planner.demo.planned import engine_loop
from planner.demo.state import STATE
from planner.demo.wire import Conn
from tests.unit.demo.conftest import Writer, _parse


class StepEngine:
    """One token per request per 10 ms step; refuses prompts over 100 tokens as vLLM would (ValueError)."""

    def __init__(self) -> None:
        self.requests: dict[int, list[int]] = {}  # rid -> [tokens sent, tokens wanted]
        self.added: list[tuple[int, int]] = []
        self.dropped: list[int] = []
        self.next_rid = 0

    busy = property(lambda self: bool(self.requests))
    running = property(lambda self: len(self.requests))
    waiting = property(lambda self: 0)
    kv_usage = property(lambda self: 0.0)
    preemptions = property(lambda self: 0)
    request_overhead_s = property(lambda self: 0.005)

    def request_in_s(self, prompt_tokens: int) -> float:
        return 0.005

    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        if prompt_tokens > 100:
            raise ValueError(f"This model's maximum context length is 100 tokens; the prompt has {prompt_tokens}")
        self.added.append((prompt_tokens, output_tokens))
        self.next_rid += 1
        self.requests[self.next_rid] = [0, output_tokens]
        return self.next_rid

    def drop(self, rid: int) -> None:
        self.dropped.append(rid)
        self.requests.pop(rid, None)

    def step(self) -> tuple[float, list[tuple[int, int, bool]]]:
        out = []
        for rid, state in list(self.requests.items()):
            state[0] += 1
            done = state[0] == state[1]
            out.append((rid, state[0], done))
            if done:
                del self.requests[rid]
        return 0.010, out


def _play(clock, body: dict) -> tuple:
    engine = StepEngine()
    STATE.engine = engine
    raw = json.dumps(body).encode()
    request = f"POST /v1/completions HTTP/1.1\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw

    async def run() -> Writer:
        STATE.wake = asyncio.Event()
        loop_task = asyncio.create_task(engine_loop())
        reader = asyncio.StreamReader()
        reader.feed_data(request)
        reader.feed_eof()
        writer = Writer(clock)
        await routes.one_request(Conn(reader, writer))  # type: ignore[arg-type]
        loop_task.cancel()
        return writer

    start = clock.now()
    writer = asyncio.run(run())
    return _parse(writer.pieces, writer.transport.aborted, start), engine


def test_tokens_come_at_the_end_of_each_step(clock) -> None:
    response, engine = _play(clock, {"prompt": [1] * 40, "max_tokens": 3, "stream": True})
    events = [(t, e) for t, e in response.events if isinstance(e, dict)]
    assert [t for t, _ in events] == pytest.approx([0.015, 0.025, 0.035])
    assert [e["choices"][0]["text"] for _, e in events] == ["t1 ", "t2 ", "t3 "]
    assert [e["choices"][0]["finish_reason"] for _, e in events] == [None, None, "length"]
    assert engine.added == [(40, 3)] and engine.dropped == [] and STATE.generation_tokens == 3
    assert STATE.prompt_tokens == 40


def test_the_prefix_cache_shortens_what_the_engine_prefills(clock) -> None:
    STATE.prefix_caching = True
    _play(clock, {"prompt": list(range(40)), "max_tokens": 1})
    _, engine = _play(clock, {"prompt": list(range(40)), "max_tokens": 1})
    assert engine.added == [(40 - 32, 1)]  # 2 of its 2 full blocks hit ((40 − 1) // 16 = 2): 8 tokens left


def test_a_prompt_too_long_for_the_deployment_is_a_400(clock) -> None:
    response, engine = _play(clock, {"prompt": [1] * 101, "max_tokens": 3})
    assert response.status == 400 and response.json["error"]["message"].startswith("This model's maximum context")
    assert engine.added == []


def test_a_whole_answer_when_its_last_step_ends(clock) -> None:
    response, _ = _play(clock, {"prompt": [1] * 10, "max_tokens": 4})
    assert response.json["choices"][0]["text"] == "t1 t2 t3 t4 " and response.done_s == pytest.approx(0.045)
