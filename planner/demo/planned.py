"""The demo server's planned mode: chat and completions answered when the planned engine's steps end.

``python -m planner demo-server --model M --gpu G`` plays a deployment :mod:`planner.predict` simulates: each request
joins a :class:`~planner.demo.state.PlannedEngine` (the online scheduler), :func:`engine_loop` steps it in real time
and hands each request its tokens as the steps that make them end.
"""

from __future__ import annotations

import asyncio

from planner.demo.payloads import answer_chunk, chat_chunk, usage_of, whole_answer
from planner.demo.prefix_cache import cache_prompt
from planner.demo.script import answer_tokens, prompt_tokens, token_text
from planner.demo.state import STATE
from planner.demo.wire import Conn

__all__ = ["engine_loop", "planned_answer"]


async def planned_answer(conn: Conn, body: dict) -> None:
    """A chat or completions request in planned mode: its tokens come when the planned engine's steps end."""
    engine = STATE.engine
    assert engine is not None and STATE.wake is not None
    completions = "prompt" in body
    n_prompt = prompt_tokens(body)
    n, last_finish = answer_tokens(body, {}, body.get("max_tokens"), n_prompt)
    cached = min(cache_prompt(body), n_prompt - 1)  # the engine prefills only what the prefix cache does not hold
    await STATE.clock.sleep(engine.request_in_s(n_prompt))  # HTTP, parsing, tokenization before the engine sees it
    try:
        rid = engine.add(n_prompt - max(0, cached), n)
    except ValueError as exc:  # too long for the planned deployment: vLLM answers 400 too
        await conn.json(400, {"error": {"message": str(exc), "type": "BadRequestError", "param": None, "code": 400}})
        return
    queue: asyncio.Queue[tuple[int, bool]] = asyncio.Queue()
    STATE.queues[rid] = queue
    STATE.wake.set()
    stream = bool(body.get("stream"))
    options = body.get("stream_options") or {}
    continuous = bool(options.get("continuous_usage_stats"))
    done = False
    try:
        if stream:
            await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
            if not completions:
                await conn.event(
                    chat_chunk(
                        {"role": "assistant", "content": ""}, None, usage_of(0, n_prompt) if continuous else None
                    )
                )
        while not done:
            count, done = await queue.get()
            STATE.generation_tokens += 1
            if not stream:
                continue
            finish = last_finish if done else None
            usage = usage_of(count, n_prompt) if continuous else None
            await conn.event(answer_chunk(completions, token_text(count), finish, usage))
        if not stream:
            await conn.json(200, whole_answer(completions, n, n_prompt, last_finish))
            return
        if options.get("include_usage"):
            await conn.event({**answer_chunk(completions, "", None, usage_of(n, n_prompt)), "choices": []})
        await conn.event("[DONE]")
        await conn.end()
    finally:
        STATE.queues.pop(rid, None)
        if not done:
            engine.drop(rid)


async def engine_loop() -> None:
    """Step the planned engine in real time: sleep each step's duration, then hand out its tokens."""
    engine, wake = STATE.engine, STATE.wake
    assert engine is not None and wake is not None
    step_end: float | None = None  # when the engine's current step ends, on the clock's scale
    while True:
        if not engine.busy:
            wake.clear()
            await wake.wait()
            step_end = None
            continue
        seconds, tokens = engine.step()
        now = STATE.clock.now()
        # Steps follow each other on the engine's own clock, so a late wake-up is not added to every later step;
        # a clock more than a step behind (the loop was starved) starts again from now.
        step_end = now + seconds if step_end is None or step_end < now - seconds else step_end + seconds
        await STATE.clock.sleep_until(step_end)
        for rid, count, done in tokens:
            queue = STATE.queues.get(rid)
            if queue is not None:
                queue.put_nowait((count, done))
