"""The demo server's routes: one request read off the connection, recorded and answered by its path.

``GET /health``, ``/v1/models``, ``/version``, ``/info`` (TGI), ``/metrics``; ``POST /v1/chat/completions`` and
``/v1/completions`` (streamed or not, timed by :mod:`planner.demo.script`, or by the planned engine in planned mode),
``/`` and ``/generate_stream`` (TGI's native stream), ``/tokenize`` (with ``--tokenizer bytes``),
``/reset_prefix_cache``; ``GET``/``DELETE /_recorded`` (the requests received so far).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from planner.demo.metrics import metrics_text
from planner.demo.payloads import answer_chunk, chat_chunk, usage_of, whole_answer
from planner.demo.planned import planned_answer
from planner.demo.prefix_cache import prefill_s
from planner.demo.script import answer_tokens, chunk_sizes, count_drafts, gap, options, prompt_tokens, token_text
from planner.demo.state import (
    CONTEXT_ERROR,
    IN_STREAM_ERROR,
    MAX_RECORDED,
    MODEL_ID,
    PROMPT_TOKENS,
    SERVER_ERROR,
    STATE,
    TGI_STREAM_ERROR,
)
from planner.demo.wire import Conn

__all__ = ["chat", "generate_stream", "handle", "one_request"]


async def chat(conn: Conn, body: dict, t0: float) -> None:
    """``/v1/chat/completions`` and ``/v1/completions`` timed by the script (:mod:`planner.demo.script`), from
    ``t0`` (the request parsed, or admitted under ``--max-num-seqs``), in the prompt's ``mode``."""
    if "prompt" in body:  # /v1/completions
        prompt = body["prompt"] if isinstance(body["prompt"], str) else ""
    else:
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    opts = options(prompt)
    mode = opts.get("mode", "ok")
    n_prompt = prompt_tokens(body)
    n, last_finish = answer_tokens(body, opts, body.get("max_tokens"), n_prompt)
    completions = "prompt" in body
    ttft = float(opts.get("ttft_ms", STATE.ttft_ms)) / 1000
    itl = float(opts.get("itl_ms", STATE.itl_ms)) / 1000
    stream_options = body.get("stream_options") or {}
    continuous = bool(stream_options.get("continuous_usage_stats"))
    include_usage = bool(stream_options.get("include_usage"))
    if mode == "hang":
        with contextlib.suppress(Exception):
            await conn.reader.read()  # until the client gives up and closes
        conn.writer.close()
        return
    if mode == "http400":
        await conn.json(
            400, {"error": {"message": CONTEXT_ERROR, "type": "BadRequestError", "param": None, "code": 400}}
        )
        return
    if mode == "http400_flat":
        body400 = {"object": "error", "message": CONTEXT_ERROR, "type": "BadRequestError", "param": None, "code": 400}
        await conn.json(400, body400)
        return
    if mode == "http500":
        await conn.json(500, {"error": {"message": SERVER_ERROR, "type": "InternalServerError", "code": 500}})
        return
    if mode == "reject_continuous" and continuous:
        msg = "stream_options.continuous_usage_stats is not supported"
        await conn.json(400, {"error": {"message": msg, "type": "BadRequestError", "code": 400}})
        return
    count_drafts(n)
    if not body.get("stream"):
        await STATE.clock.sleep_until(t0 + ttft + itl * (n - 1))
        STATE.generation_tokens += n
        await conn.json(200, whole_answer(completions, n, n_prompt, last_finish))
        return
    due = t0 + ttft
    await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    if not completions:
        await conn.event(
            chat_chunk({"role": "assistant", "content": ""}, None, usage_of(0, n_prompt) if continuous else None)
        )
    sent = 0
    for j, size in enumerate(chunk_sizes(n)):
        if mode in ("error", "tgi_error") and j == 2:
            if mode == "error":
                err = {"error": {"message": IN_STREAM_ERROR, "type": "InternalServerError", "param": None, "code": 500}}
            else:
                err = {"error": {"message": TGI_STREAM_ERROR, "http_status_code": 422}}
            await conn.event(err)
            await conn.event("[DONE]")
            await conn.end()
            return
        if mode == "cut" and j == 3:
            conn.writer.transport.abort()
            return
        for _ in range(size - 1 if sent == 0 else size):  # the first token is due at t0 + ttft
            due += gap(itl)
        await STATE.clock.sleep_until(due)
        text = "".join(token_text(k) for k in range(sent + 1, sent + size + 1))
        sent += size
        STATE.generation_tokens += size
        finish = last_finish if sent == n else None
        usage = usage_of(sent, n_prompt) if continuous else None
        await conn.event(answer_chunk(completions, text, finish, usage))
    if include_usage:
        await conn.event({**answer_chunk(completions, "", None, usage_of(n, n_prompt)), "choices": []})
    await conn.event("[DONE]")
    await conn.end()


async def generate_stream(conn: Conn, body: dict, t0: float) -> None:
    """TGI ``/generate_stream``: one token per event, the last with ``generated_text`` and ``details``."""
    opts = options(str(body.get("inputs", "")))
    params = body.get("parameters") or {}
    n, _ = answer_tokens({}, opts, params.get("max_new_tokens"), PROMPT_TOKENS)
    ttft = float(opts.get("ttft_ms", STATE.ttft_ms)) / 1000
    itl = float(opts.get("itl_ms", STATE.itl_ms)) / 1000
    await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    if opts.get("mode") == "error":
        await conn.chunk('data:{"error":"Model is overloaded","error_type":"overloaded"}\n\n')
        await conn.end()
        return
    due = t0 + ttft
    for k in range(1, n + 1):
        if k > 1:
            due += gap(itl)
        await STATE.clock.sleep_until(due)
        STATE.generation_tokens += 1
        last = k == n
        event = {
            "index": k,
            "token": {"id": k, "text": token_text(k), "logprob": -0.5, "special": False},
            "generated_text": "".join(token_text(i) for i in range(1, n + 1)) if last else None,
            "details": {"finish_reason": "length", "generated_tokens": n, "seed": None, "input_length": PROMPT_TOKENS}
            if last and params.get("details")
            else None,
        }
        await conn.chunk("data:" + json.dumps(event) + "\n\n")  # old TGI framing: no space after "data:"
    await conn.end()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Serve requests on one keep-alive connection until the client closes it."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = Conn(reader, writer)
    try:
        while not writer.is_closing():
            await one_request(conn)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def one_request(conn: Conn) -> None:
    """Read one request from ``conn``, record it and answer it by its route (404 for any other)."""
    head = await conn.reader.readuntil(b"\r\n\r\n")
    t0 = STATE.clock.now()
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
    length = int(headers.get("content-length", "0"))
    raw = await conn.reader.readexactly(length) if length else b""
    path = target.split("?", 1)[0].rstrip("/") or "/"
    entry: dict[str, Any] = {}
    if path != "/_recorded":
        entry = {"method": method, "path": path, "headers": headers, "body": raw.decode("utf-8", "replace")}
        entry["received_s"] = STATE.clock.wall()
        STATE.recorded = [*STATE.recorded[-(MAX_RECORDED - 1) :], entry]
    body = json.loads(raw) if raw else {}
    if path == "/_recorded":
        if method == "DELETE":
            STATE.recorded = []
        await conn.json(200, STATE.recorded)
    elif method == "POST" and path == "/reset_prefix_cache":
        STATE.blocks.clear()
        await conn.json(200, None)
    elif method == "POST" and path == "/tokenize" and STATE.tokenizer == "bytes":
        count = prompt_tokens(body)
        await conn.json(200, {"count": count, "max_model_len": STATE.max_model_len, "tokens": list(range(count))})
    elif method == "GET" and path == "/health":
        await conn.json(200, None)
    elif method == "GET" and path == "/v1/models":
        model = {
            "id": STATE.model_id,
            "object": "model",
            "owned_by": "vllm",
            "root": STATE.model_id,
            "max_model_len": STATE.max_model_len,
        }
        await conn.json(200, {"object": "list", "data": [model]})
    elif method == "GET" and path == "/version":
        await conn.json(200, {"version": "0.0.0-timed"})
    elif method == "GET" and path == "/info":
        info = {"model_id": MODEL_ID, "max_input_tokens": 4095, "max_total_tokens": 4096, "version": "3.3.6-timed"}
        await conn.json(200, info)
    elif method == "GET" and path == "/metrics":
        data = metrics_text()
        await conn.head(200, {"Content-Type": CONTENT_TYPE_LATEST, "Content-Length": str(len(data))})
        conn.writer.write(data)
        await conn.writer.drain()
    elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions") and STATE.engine is not None:
        STATE.prompt_tokens += prompt_tokens(body)
        try:
            await planned_answer(conn, body)
        finally:
            entry["finished_s"] = STATE.clock.wall()
    elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions", "/", "/generate_stream"):
        if STATE.slots is not None:
            # A scheduler with max_num_seqs slots: a request waits for one, and its timeline starts when admitted.
            STATE.waiting += 1
            try:
                await STATE.slots.acquire()
            finally:
                STATE.waiting -= 1
            t0 = STATE.clock.now()
        STATE.running += 1
        STATE.prompt_tokens += prompt_tokens(body) if path.startswith("/v1/") else PROMPT_TOKENS
        if path.startswith("/v1/"):
            t0 += prefill_s(body)
        try:
            if path in ("/v1/chat/completions", "/v1/completions"):
                await chat(conn, body, t0)
            else:
                await generate_stream(conn, body, t0)
        finally:
            STATE.running -= 1
            entry["finished_s"] = STATE.clock.wall()
            if STATE.slots is not None:
                STATE.slots.release()
    else:
        await conn.json(404, {"error": {"message": f"no route {method} {path}", "type": "NotFoundError"}})
