"""A minimal zero-delay OpenAI/vLLM streaming server, so a client self-test measures the CLIENT, not the server.

The timed server (``planner/demo/``) builds and JSON-encodes every chunk, awaits ``drain()`` per chunk
and spins to hit its timeline: at zero delay one such process writes a few thousand chunks per second, which is
below what one client process parses. This one answers a streamed chat request with one pre-encoded response
(built once per ``(tokens, continuous_usage_stats, include_usage)`` from the timed server's own chunk builder, so
the bytes on the wire are the same shape: role chunk, token chunks of 1, 2, 1, 3, ... tokens, usage chunk,
``[DONE]``, one HTTP chunk per SSE event) written with a single ``transport.write``.

Paced mode, for holding many streams open at once: ``[tick_ms=T]`` in the prompt sends the head and role chunk at
once, then one token chunk per tick of ``T`` ms (one timer per process writes the next chunk of every paced stream,
so a thousand streams cost the server one write each per tick).

Routes: ``GET /health``, ``GET /v1/models`` (``max_model_len`` 4096), ``POST /v1/chat/completions`` (``stream``
only; ``[tokens=N]`` in the prompt, default ``max_tokens``). HTTP/1.1 keep-alive, no TLS.

Run: ``python bench/zero_delay_server.py --port 0`` prints ``PORT <n>`` once listening; :class:`ZeroDelayServers`
starts several processes (the client can then be loaded from more than one server core).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.demo.payloads import chat_chunk, usage_of  # noqa: E402
from planner.demo.script import chunk_sizes, token_text  # noqa: E402
from planner.demo.state import MAX_MODEL_LEN, MODEL_ID  # noqa: E402

__all__ = ["ZeroDelayServers", "stream_body", "stream_pieces"]

_TOKENS = re.compile(rb"\[tokens=(\d+)\]")
_TICK = re.compile(rb"\[tick_ms=(\d+(?:\.\d+)?)\]")
_PIECES: dict[tuple[int, bool, bool], tuple[bytes, ...]] = {}


def _http_chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def stream_pieces(n_tokens: int, continuous: bool, include_usage: bool) -> tuple[bytes, ...]:
    """The HTTP response of a streamed answer of ``n_tokens`` tokens in send order, cached.

    Piece 0 is the head and the role chunk; piece ``j`` (1-based) the ``j``-th token chunk; the last piece also
    carries the usage chunk, ``[DONE]`` and the chunked-body terminator.
    """
    key = (n_tokens, continuous, include_usage)
    if key not in _PIECES:
        role = chat_chunk({"role": "assistant", "content": ""}, None, usage_of(0) if continuous else None)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        pieces = [head + _http_chunk(f"data: {json.dumps(role)}\n\n")]
        sent = 0
        for size in chunk_sizes(n_tokens):
            text = "".join(token_text(k) for k in range(sent + 1, sent + size + 1))
            sent += size
            event = chat_chunk(
                {"content": text}, "length" if sent == n_tokens else None, usage_of(sent) if continuous else None
            )
            pieces.append(_http_chunk(f"data: {json.dumps(event)}\n\n"))
        tail = _http_chunk(f"data: {json.dumps({**chat_chunk({}, None, usage_of(n_tokens)), 'choices': []})}\n\n")
        pieces[-1] += (tail if include_usage else b"") + _http_chunk("data: [DONE]\n\n") + b"0\r\n\r\n"
        _PIECES[key] = tuple(pieces)
    return _PIECES[key]


def stream_body(n_tokens: int, continuous: bool, include_usage: bool) -> bytes:
    """The whole HTTP response (head and chunked body) of a streamed answer, as one block."""
    return b"".join(stream_pieces(n_tokens, continuous, include_usage))


class _Pacer:
    """Writes the next piece of every paced stream once per tick (one timer for all streams of the process)."""

    def __init__(self) -> None:
        self.streams: dict[float, list[list]] = {}

    def add(self, transport: asyncio.Transport, pieces: tuple[bytes, ...], tick_s: float) -> None:
        transport.write(pieces[0])
        if tick_s not in self.streams:
            self.streams[tick_s] = []
            asyncio.get_running_loop().call_later(tick_s, self._tick, tick_s)
        self.streams[tick_s].append([transport, pieces, 1])

    def _tick(self, tick_s: float) -> None:
        alive = []
        for entry in self.streams[tick_s]:
            transport, pieces, index = entry
            if transport.is_closing():
                continue
            transport.write(pieces[index])
            entry[2] = index + 1
            if entry[2] < len(pieces):
                alive.append(entry)
        if alive:
            self.streams[tick_s] = alive
            asyncio.get_running_loop().call_later(tick_s, self._tick, tick_s)
        else:
            del self.streams[tick_s]


_PACER = _Pacer()


def _json_response(status: int, body: object) -> bytes:
    data = json.dumps(body).encode()
    reason = "OK" if status == 200 else "Not Found"
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
        + data
    )


_MODELS = _json_response(
    200,
    {
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "owned_by": "vllm", "max_model_len": MAX_MODEL_LEN}],
    },
)


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self._buffer[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self._buffer) < end + 4 + length:
                return
            body = self._buffer[end + 4 : end + 4 + length]
            self._buffer = self._buffer[end + 4 + length :]
            method, target, _ = head.split("\r\n", 1)[0].split(" ", 2)
            assert self._transport is not None
            path = target.split("?", 1)[0].rstrip("/")
            if method == "POST" and path == "/v1/chat/completions":
                self._chat(body)
            else:
                self._transport.write(self._answer(method, path))

    def _chat(self, raw: bytes) -> None:
        assert self._transport is not None
        body = json.loads(raw)
        found = _TOKENS.search(raw)
        n = int(found.group(1)) if found else int(body.get("max_tokens") or 12)
        options = body.get("stream_options") or {}
        pieces = stream_pieces(n, bool(options.get("continuous_usage_stats")), bool(options.get("include_usage")))
        tick = _TICK.search(raw)
        if tick is None:
            self._transport.write(b"".join(pieces))
        else:
            _PACER.add(self._transport, pieces, float(tick.group(1)) / 1000)

    @staticmethod
    def _answer(method: str, path: str) -> bytes:
        if method == "GET" and path == "/v1/models":
            return _MODELS
        if method == "GET" and path == "/health":
            return b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        return _json_response(404, {"error": {"message": f"no route {method} {path}"}})


async def _serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Protocol, "127.0.0.1", port, backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


class ZeroDelayServers:
    """Start ``count`` zero-delay server processes on ephemeral ports; a context manager.

    Attributes:
        urls: ``http://127.0.0.1:<port>`` of each process once started.
    """

    def __init__(self, count: int = 1) -> None:
        self.count = count
        self.urls: list[str] = []
        self._procs: list[subprocess.Popen[str]] = []

    @property
    def pids(self) -> list[int]:
        """Process ids of the running servers."""
        return [proc.pid for proc in self._procs]

    def __enter__(self) -> ZeroDelayServers:
        for _ in range(self.count):
            proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--port", "0"], stdout=subprocess.PIPE, text=True
            )
            self._procs.append(proc)
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("PORT "):
                self.__exit__(None, None, None)
                raise RuntimeError(f"zero-delay server did not start: {line!r}")
            self.urls.append(f"http://127.0.0.1:{int(line.split()[1])}")
        deadline = time.monotonic() + 10
        for url in self.urls:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/health", timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError(f"zero-delay server at {url} did not become healthy")
                time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port))


if __name__ == "__main__":
    main()
