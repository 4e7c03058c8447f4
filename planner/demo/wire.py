"""The demo server's side of HTTP/1.1 on one connection: a status line and headers, a JSON body, chunked
transfer-encoding and SSE ``data:`` events (written by hand, so the timing of every chunk is the server's own)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["Conn"]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 422: "Unprocessable Entity", 500: "Error"}


class Conn:
    """One client connection: the request's reader and the response's writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def head(self, status: int, headers: dict[str, str]) -> None:
        """The status line and ``headers``."""
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def json(self, status: int, body: Any) -> None:
        """A whole JSON response (an empty body for ``None``)."""
        data = b"" if body is None else json.dumps(body).encode()
        await self.head(status, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        self.writer.write(data)
        await self.writer.drain()

    async def chunk(self, text: str) -> None:
        """One chunk of a chunked body."""
        data = text.encode()
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()

    async def event(self, payload: Any) -> None:
        """One SSE event, ``data: <payload>`` (a string as it is, anything else as JSON), in its own chunk."""
        await self.chunk(f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n")

    async def end(self) -> None:
        """The last (empty) chunk of a chunked body."""
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()
