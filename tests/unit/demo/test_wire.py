"""planner.demo.wire: the bytes of a head, a JSON body, a chunk, an SSE event and the end of a chunked body."""

from __future__ import annotations

import asyncio

from planner.demo.wire import Conn
from tests.unit.demo.conftest import ScriptedClock, Writer


def _written(calls) -> bytes:
    writer = Writer(ScriptedClock())

    async def run() -> None:
        conn = Conn(asyncio.StreamReader(), writer)  # type: ignore[arg-type]
        for name, *args in calls:
            await getattr(conn, name)(*args)

    asyncio.run(run())
    return b"".join(p for _, p in writer.pieces)


def test_json_response() -> None:
    assert _written([("json", 404, {"a": 1})]) == (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n" + b'{"a": 1}'
    )
    assert _written([("json", 200, None)]).endswith(b"Content-Length: 0\r\n\r\n")
    assert _written([("json", 418, {})]).startswith(b"HTTP/1.1 418 Status\r\n")  # a status it has no reason for


def test_chunked_events_and_the_end() -> None:
    data = _written([("event", {"x": 1}), ("event", "[DONE]"), ("end",)])
    # "data: {\"x\": 1}\n\n" is 16 bytes (0x10), "data: [DONE]\n\n" 14 (0xe)
    assert data == b'10\r\ndata: {"x": 1}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n'
