"""The demo server in process: a fresh state, a scripted clock, and requests played through its routes on an
in-memory connection (no socket), each byte it writes stamped with the scripted time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from planner.demo import routes
from planner.demo.state import STATE
from planner.demo.wire import Conn

#: Where the scripted clock starts (any value: the routes only use differences).
T0 = 100.0
#: Event-loop turns a sleeper yields before the scripted clock jumps (a token's hand-over and write take a few).
_SETTLE = 20


class ScriptedClock:
    """The demo server's clock, scripted: sleeping moves time forward at once (never back)."""

    def __init__(self) -> None:
        self.t = T0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_800_000_000.0 + self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await self.sleep_until(self.t + seconds)

    async def sleep_until(self, target: float) -> None:
        # let every other task that is ready run at the current time first (a request writing the tokens of the
        # step that just ended), then jump: time moves only when the others wait too
        for _ in range(_SETTLE):
            await asyncio.sleep(0)
        self.t = max(self.t, target)


class Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class Writer:
    """What the server writes, each piece with the scripted time it was written at."""

    def __init__(self, clock: ScriptedClock) -> None:
        self.clock = clock
        self.pieces: list[tuple[float, bytes]] = []
        self.transport = Transport()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.pieces.append((self.clock.now(), data))

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str) -> None:
        return None


@dataclass
class Response:
    """A response as the server wrote it: status, headers, the body, and each chunk with its time (seconds after the
    request was sent, on the scripted clock)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    aborted: bool = False
    #: when the last byte was written, seconds after the request was sent
    done_s: float = 0.0

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def events(self) -> list[tuple[float, Any]]:
        """``(seconds after the request was sent, payload)`` of every SSE event (``data:`` with or without a space,
        JSON decoded)."""
        out = []
        for t, chunk in self.chunks:
            for block in chunk.decode().split("\n\n"):
                if block.startswith("data:"):
                    text = block[5:].strip()
                    out.append((round(t, 9), text if text == "[DONE]" else json.loads(text)))
        return out


def _parse(pieces: list[tuple[float, bytes]], aborted: bool, start: float) -> Response:
    data = b"".join(p for _, p in pieces)
    if not data:  # nothing written (the connection was closed, or dropped before the head)
        return Response(0, {}, aborted=aborted)
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    done_s = round(pieces[-1][0] - start, 9) if pieces else 0.0
    response = Response(int(status_line.split()[1]), headers, aborted=aborted, done_s=done_s)
    if headers.get("transfer-encoding") == "chunked":
        # the head is one piece; every chunk after it is one write (Conn.chunk) or the terminator
        for t, piece in pieces[1:]:
            if piece == b"0\r\n\r\n":
                break
            size, _, payload = piece.partition(b"\r\n")
            response.chunks.append((t - start, payload[: int(size, 16)]))
    else:
        response.body = rest
    return response


@pytest.fixture
def clock() -> Iterator[ScriptedClock]:
    """A fresh demo server state on a scripted clock, reset again after the test."""
    STATE.reset()
    STATE.clock = ScriptedClock()
    yield STATE.clock
    STATE.reset()


@pytest.fixture
def send(clock: ScriptedClock):
    """``send(method, path, body=None)``: one request played through the routes; its :class:`Response`."""

    def play(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Response:
        raw = b"" if body is None else json.dumps(body).encode()
        lines = [f"{method} {path} HTTP/1.1", "Host: demo", f"Content-Length: {len(raw)}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode() + raw

        async def run() -> Writer:
            reader = asyncio.StreamReader()
            reader.feed_data(request)
            reader.feed_eof()
            writer = Writer(clock)
            await routes.one_request(Conn(reader, writer))  # type: ignore[arg-type]
            return writer

        start = clock.now()
        writer = asyncio.run(run())
        return _parse(writer.pieces, writer.transport.aborted, start)

    return play
