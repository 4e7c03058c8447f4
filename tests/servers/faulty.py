"""A server that fails on purpose, on every route the clients use, for the failing-server matrix.

:class:`FaultyServer` runs an asyncio server on an ephemeral 127.0.0.1 port in a background thread (a context
manager). It speaks just enough HTTP/1.1 for the ``openai`` and ``huggingface_hub`` clients, and counts the
requests it has read (``hits``) and the ``Authorization`` headers it saw (``authorizations``).

The failure is chosen by a path prefix ``/m/NAME`` on the base URL (``http://127.0.0.1:<port>/m/cut``, so endpoints
sharing one prompt can fail differently), else by ``[mode=NAME]`` in the prompt (chat routes: any message; TGI
native: ``inputs``), as in ``planner/demo/``:

* ``ok``: two token chunks ``"f1 "``, ``"f2 "`` and a proper end (``finish_reason`` + ``[DONE]`` on chat routes;
  ``generated_text`` + ``details`` on the native route);
* ``hang``: reads the request and never answers;
* ``hang_mid``: sends the headers and the first token chunk, then nothing more (the read timeout must end it);
* ``http422``: HTTP 422 with a TGI-style body ``{"error": ..., "error_type": "validation"}``;
* ``http503``: HTTP 503 with a plain-text body;
* ``not_json``: one token chunk, then an event whose data is not JSON;
* ``no_prefix``: one token chunk, then JSON lines without the ``data:`` prefix (ignored per the SSE spec), then
  the body ends with no terminator;
* ``truncated_json``: one token chunk, then an event holding a JSON object cut in the middle, then the end;
* ``error_vllm``: one token chunk, then vLLM's in-stream error ``{"error": {"message", "type", "code"}}`` and
  ``[DONE]`` on HTTP 200 (on the native route: TGI's ``{"error": str, "error_type"}``);
* ``error_tgi``: one token chunk, then TGI's chat in-stream error ``{"error": {"message", "http_status_code"}}``
  and ``[DONE]`` (on the native route: TGI's ``{"error": str, "error_type": "overloaded"}``);
* ``cut``: one token chunk, then the connection is dropped mid chunked body;
* ``trickle``: one token chunk, then an SSE comment (``: keep-alive``) every 0.25 s for :data:`TRICKLE_S` seconds,
  then the end with no terminator (a server that never stalls long enough for a read timeout yet never progresses).

Two modes answer every route of a ``/m/<mode>`` base URL (discovery included), for the endpoint-safety tests:

* ``redirect``: HTTP 307 to :attr:`FaultyServer.redirect_to` plus the same path (a server steering the client
  elsewhere, e.g. to a cloud-metadata address);
* ``echo_auth``: HTTP 401 whose body quotes the ``Authorization`` header it received (a careless server that
  echoes the API key in its error message).

Every message the server puts in an error body starts with ``FAULTY`` so tests can find it in a record.

Routes: ``GET /health``, ``/v1/models`` (``max_model_len`` 4096), ``/info``; ``POST /v1/chat/completions``,
``POST /`` and ``/generate_stream``; ``/tokenize`` and everything else 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from typing import Any

__all__ = [
    "HTTP422_MESSAGE",
    "HTTP503_MESSAGE",
    "MODES",
    "ROUTE_MODES",
    "STREAM_ERROR_MESSAGE",
    "TRICKLE_S",
    "FaultyServer",
]

MODES = (
    "ok",
    "hang",
    "hang_mid",
    "http422",
    "http503",
    "not_json",
    "no_prefix",
    "truncated_json",
    "error_vllm",
    "error_tgi",
    "cut",
    "trickle",
)
#: How long mode ``trickle`` keeps the connection busy, seconds.
TRICKLE_S = 3.0
#: Modes that answer every route (see the module docstring).
ROUTE_MODES = ("redirect", "echo_auth")
MODEL_ID = "faulty-model"
HTTP422_MESSAGE = "FAULTY-422 Input validation error: `temperature` must be strictly positive"
HTTP503_MESSAGE = "FAULTY-503 upstream overloaded, try again later"
STREAM_ERROR_MESSAGE = "FAULTY-STREAM engine failed mid-generation"
_REASONS = {
    200: "OK",
    307: "Temporary Redirect",
    401: "Unauthorized",
    404: "Not Found",
    422: "Unprocessable Entity",
    503: "Service Unavailable",
}


def _mode(text: str) -> str:
    found = re.search(r"\[mode=(\w+)\]", text)
    return found.group(1) if found else "ok"


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def request(self) -> tuple[str, str, dict[str, str], bytes]:
        """The next request: method, target, headers (names lower-cased) and body."""
        head = await self.reader.readuntil(b"\r\n\r\n")
        request_line, *lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
        length = int(headers.get("content-length", "0"))
        return method, target, headers, await self.reader.readexactly(length) if length else b""

    async def head(self, status: int, headers: dict[str, str]) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", *(f"{k}: {v}" for k, v in headers.items())]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def body(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        await self.head(status, {"Content-Type": content_type, "Content-Length": str(len(data))})
        self.writer.write(data)
        await self.writer.drain()

    async def chunk(self, text: str) -> None:
        data = text.encode()
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()

    async def event(self, payload: Any) -> None:
        await self.chunk(f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n")

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def wait_for_close(self) -> None:
        with contextlib.suppress(Exception):
            await self.reader.read()


def _chat_chunk(content: str, finish: str | None = None) -> dict:
    return {
        "id": "chatcmpl-faulty",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": finish}],
    }


def _native_event(k: int, last: bool) -> dict:
    return {
        "index": k,
        "token": {"id": k, "text": f"f{k} ", "logprob": -0.1, "special": False},
        "generated_text": "f1 f2 " if last else None,
        "details": {"finish_reason": "length", "generated_tokens": 2, "seed": None} if last else None,
    }


async def _stream(conn: _Conn, mode: str, *, native: bool) -> bool:
    """Answer one streamed request in ``mode``. Returns False when the connection must not be reused."""
    if mode == "hang":
        await conn.wait_for_close()
        return False
    if mode == "http422":
        await conn.body(422, json.dumps({"error": HTTP422_MESSAGE, "error_type": "validation"}).encode())
        return True
    if mode == "http503":
        await conn.body(503, HTTP503_MESSAGE.encode(), "text/plain")
        return True
    await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    await conn.event(_native_event(1, False) if native else _chat_chunk("f1 "))
    if mode == "ok":
        await conn.event(_native_event(2, True) if native else _chat_chunk("f2 ", "length"))
        if not native:
            await conn.event("[DONE]")
    elif mode == "hang_mid":
        await conn.wait_for_close()
        return False
    elif mode == "not_json":
        await conn.event("this is not json {")
    elif mode == "no_prefix":
        await conn.chunk(json.dumps(_chat_chunk("f2 ", "length")) + "\n\n")
    elif mode == "truncated_json":
        await conn.chunk('data: {"choices": [{"index": 0, "delta": {"content": "f2\n\n')
    elif mode in ("error_vllm", "error_tgi"):
        if native:
            error_type = "generation" if mode == "error_vllm" else "overloaded"
            await conn.event({"error": STREAM_ERROR_MESSAGE, "error_type": error_type})
        else:
            if mode == "error_vllm":
                err = {"message": STREAM_ERROR_MESSAGE, "type": "InternalServerError", "param": None, "code": 500}
            else:
                err = {"message": STREAM_ERROR_MESSAGE, "http_status_code": 422}
            await conn.event({"error": err})
            await conn.event("[DONE]")
    elif mode == "cut":
        conn.writer.transport.abort()
        return False
    elif mode == "trickle":
        deadline = asyncio.get_running_loop().time() + TRICKLE_S
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.25)
            await conn.chunk(": keep-alive\n\n")
    await conn.end()
    return True


class FaultyServer:
    """The faulty server on an ephemeral 127.0.0.1 port, served from a background thread; a context manager.

    Attributes:
        url: ``http://127.0.0.1:<port>`` once started.
        hits: Requests read so far (every route).
        authorizations: The ``Authorization`` header of every request that had one.
        redirect_to: Where mode ``redirect`` sends the client (a URL without a trailing slash).
    """

    def __init__(self) -> None:
        self.url = ""
        self.redirect_to = "http://169.254.169.254"
        self.hits = 0
        self.authorizations: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    def __enter__(self) -> FaultyServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        ).result(timeout=10)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = _Conn(reader, writer)
        try:
            while await self._one(conn):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _one(self, conn: _Conn) -> bool:
        method, target, headers, raw = await conn.request()
        self.hits += 1
        if "authorization" in headers:
            self.authorizations.append(headers["authorization"])
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        path = target.split("?", 1)[0].rstrip("/") or "/"
        forced = re.match(r"^/m/(\w+)(/.*)?$", path)
        if forced is not None:
            path = forced.group(2) or "/"
            if forced.group(1) == "redirect":
                await conn.head(307, {"Location": self.redirect_to + path, "Content-Length": "0"})
                return True
            if forced.group(1) == "echo_auth":
                message = f"FAULTY invalid API key: {headers.get('authorization', '<none>')}"
                await conn.body(401, json.dumps({"error": {"message": message, "type": "auth"}}).encode())
                return True
        if method == "GET" and path == "/health":
            await conn.body(200, b"")
        elif method == "GET" and path == "/v1/models":
            model = {"id": MODEL_ID, "object": "model", "owned_by": "faulty", "max_model_len": 4096}
            await conn.body(200, json.dumps({"object": "list", "data": [model]}).encode())
        elif method == "GET" and path == "/info":
            info = {"model_id": MODEL_ID, "max_input_tokens": 4095, "max_total_tokens": 4096, "version": "0-faulty"}
            await conn.body(200, json.dumps(info).encode())
        elif method == "POST" and path == "/v1/chat/completions":
            prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
            mode = forced.group(1) if forced is not None else _mode(prompt)
            return await _stream(conn, mode, native=False)
        elif method == "POST" and path in ("/", "/generate_stream"):
            mode = forced.group(1) if forced is not None else _mode(str(body.get("inputs", "")))
            return await _stream(conn, mode, native=True)
        else:
            await conn.body(404, json.dumps({"error": f"FAULTY no route {method} {path}"}).encode())
        return True
