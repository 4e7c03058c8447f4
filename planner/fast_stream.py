"""A lean streamed-chat path for load tests: HTTP/1.1 on asyncio streams instead of the ``openai`` SDK.

Why (``bench/client_capacity.py`` against a zero-delay server, 2026-11-29, 2 shared cores, 64-token answers of 37
token chunks): the SDK path costs ~320–400 µs of client CPU per streamed chunk, over half of it building a pydantic
``ChatCompletionChunk`` per event (``openai._models.construct_type``) that :func:`planner.clients.stream_openai`
dumps back to a dict, and its default ``httpx2`` pool never holds more than 100 streams open. Raw ``httpx2``
streaming still costs ~110 µs per chunk at 200 streams (``httpcore2``'s pool scans every connection on every
request; ``h11`` runs its event machinery per HTTP chunk). This path costs ~25–35 µs per chunk at 1–500 streams
and holds 1,000 streams open without errors. It writes the request itself, decodes the chunked body with
``bytes.find``, splits events with :class:`planner.streaming.SSEDecoder`, parses each with ``json.loads`` and feeds
the dict to the same :class:`planner.streaming.StreamRecorder`, so every field of the
:class:`planner.streaming.RequestRecord` means what it means on the SDK path:

* ``t_sent``: restamped just before the request is handed to the connection (the SDK path stamps it in an
  ``httpx2`` request hook, i.e. before connecting too);
* ``first_byte_s``: response headers received; ``http_status`` their status;
* chunk times: ``time.perf_counter()`` after each payload is parsed (the SDK path stamps each SDK chunk);
* ``end_s``: the byte stream ended (the body after ``[DONE]`` is drained first, as the SDK does on HTTP/1.1);
* failures: the same ``error_kind`` and message for the same cause (HTTP errors with the server's body message
  via :func:`planner.clients._body_message`, in-stream errors as ``message (type)``, timeouts, malformed
  payloads, cut bodies worded as ``httpx2`` words them); only a refused connection's detail is worded by the OS
  here (``[Errno 111] Connect call failed ...``) and by ``httpx2`` on the SDK path.

Scope: ``http`` and ``https`` (system CA store), HTTP/1.1 keep-alive, chunked / ``Content-Length`` /
close-delimited bodies, ``gzip``/``deflate`` encodings. Proxy variables (``HTTP_PROXY``...) are not read; use the
SDK path (:func:`planner.clients.stream_chat`) behind a proxy.

:func:`stream_chat` and :func:`make_client` have the signatures of :func:`planner.clients.stream_chat` and
:func:`planner.clients.make_client` (``ChatRequest`` is re-exported), so a caller switches by its import line.
``tgi`` endpoints are passed through to the ``huggingface_hub`` path unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from huggingface_hub import AsyncInferenceClient

from planner import clients
from planner.clients import ChatRequest, OnEvent
from planner.discovery import EndpointInfo
from planner.endpoints import Endpoint, api_key
from planner.errors import InvalidParameterError
from planner.streaming import RequestRecord, SSEDecoder, StreamRecorder

__all__ = ["ChatRequest", "FastClient", "fast_client", "make_client", "stream_chat", "stream_openai_fast"]

#: Idle keep-alive connections older than this are not reused: uvicorn (vLLM, SGLang) closes idle connections
#: after 5 s (``timeout_keep_alive``), and a request written on a connection the server is closing fails.
KEEPALIVE_S = 4.0
_READ_BYTES = 1 << 16
_CLOSED = "peer closed connection without sending complete message body"


class _ProtocolError(ConnectionError):
    """The server broke HTTP/1.1 framing or closed the connection mid-response."""


class _Conn:
    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        return not (self.reader.at_eof() or self.writer.is_closing()) and now - self.idle_since < KEEPALIVE_S


class FastClient:
    """Keep-alive HTTP/1.1 connections for :func:`stream_openai_fast`, shared by every request of a load test.

    No connection cap: a load test's concurrency is set by its own semaphore, and a pool cap would queue
    requests inside the client and hide that wait in TTFT (``httpx2``'s default pool, which
    :func:`planner.clients.openai_client` uses, holds 100 connections and keeps 20 alive). Each open stream holds one
    socket, so the process's open-file limit (``ulimit -n``, often 1024) bounds it; past it, new requests fail as
    ``connect`` with "Too many open files".

    Args:
        timeout_s: Longest wait to connect and for each next read, seconds.
        authorization: Value of the ``Authorization`` header.
    """

    def __init__(self, *, timeout_s: float, authorization: str) -> None:
        self.timeout_s = timeout_s
        self.authorization = authorization
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def acquire(self, scheme: str, host: str, port: int) -> _Conn:
        """An idle live connection to ``(scheme, host, port)``, or a new one."""
        idle = self._idle.get((scheme, host, port))
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.usable(now):
                return conn
            conn.writer.close()
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl
        reader, writer = await asyncio.open_connection(host, port, ssl=context, limit=_READ_BYTES)
        return _Conn(reader, writer)

    def release(self, scheme: str, host: str, port: int, conn: _Conn) -> None:
        """Keep ``conn`` for reuse (its response was read to the end)."""
        conn.idle_since = time.monotonic()
        self._idle.setdefault((scheme, host, port), []).append(conn)

    async def close(self) -> None:
        """Close every idle connection (requests in flight close their own)."""
        conns = [c for idle in self._idle.values() for c in idle]
        self._idle.clear()
        for conn in conns:
            conn.writer.close()
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.writer.wait_closed()


def fast_client(endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None) -> FastClient:
    """A :class:`FastClient` for ``endpoint``: bearer token = its API key (or ``EMPTY``, as the SDK path sends).

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    return FastClient(timeout_s=timeout_s, authorization=f"Bearer {api_key(endpoint, secrets) or 'EMPTY'}")


def make_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> FastClient | AsyncInferenceClient:
    """The reusable client :func:`stream_chat` uses for ``endpoint.kind``; close it with ``await client.close()``."""
    if endpoint.kind == "tgi":
        return clients.tgi_client(endpoint, timeout_s=timeout_s, secrets=secrets)
    return fast_client(endpoint, timeout_s=timeout_s, secrets=secrets)


async def stream_chat(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: FastClient | AsyncInferenceClient | None = None,
) -> RequestRecord:
    """Drop-in for :func:`planner.clients.stream_chat`: OpenAI-compatible kinds take the lean path.

    Arguments and result as :func:`planner.clients.stream_openai`; ``client`` must come from :func:`make_client`
    for the same endpoint. ``tgi`` goes to :func:`planner.clients.stream_tgi`.

    Raises:
        InvalidParameterError: ``client`` is not the kind :func:`make_client` returns for this endpoint.
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    common = dict(timeout_s=timeout_s, on_event=on_event, info=info, prompt_tokens=prompt_tokens, secrets=secrets)
    if endpoint.kind == "tgi":
        return await clients.stream_chat(endpoint, request, client=client, **common)
    if client is not None and not isinstance(client, FastClient):
        accepted = f"a FastClient from make_client for a {endpoint.kind} endpoint"
        raise InvalidParameterError("client", type(client).__name__, accepted)
    return await stream_openai_fast(endpoint, request, client=client, **common)


async def stream_openai_fast(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: FastClient | None = None,
) -> RequestRecord:
    """Stream one chat completion on the lean path, recorded as :func:`~planner.clients.stream_openai` records it.

    Sends the body the SDK path sends (``messages``, ``model``, ``stream: true``, ``stream_options.include_usage``
    plus ``continuous_usage_stats`` on vLLM/SGLang, the set sampling parameters) to
    ``{endpoint.openai_base_url}/chat/completions``; a 400 naming ``continuous_usage_stats`` is retried once
    without it.

    Args:
        endpoint, request, on_event, info, prompt_tokens, secrets: As for :func:`planner.clients.stream_openai`.
        timeout_s: Longest wait to connect and receive the response head, and for each next read, seconds.
        client: A client from :func:`fast_client` to reuse; None = a new one for this request (its connection
            setup then counts in TTFT).

    Returns:
        The request's record, as :func:`planner.clients.stream_openai` returns it (``ok=False`` with an
        ``error_kind`` from :data:`planner.streaming.ERROR_KINDS` on failure).

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
        asyncio.CancelledError: the task was cancelled (the ``cancelled`` record was delivered to ``on_event``).

    Example:
        >>> rec = await stream_openai_fast(ep, ChatRequest("Hi", max_tokens=16), timeout_s=30)  # doctest: +SKIP
    """
    http = fast_client(endpoint, timeout_s=timeout_s, secrets=secrets) if client is None else client
    continuous = endpoint.kind in clients._CONTINUOUS_USAGE_KINDS
    try:
        args = (endpoint, request, http, timeout_s, on_event, info, prompt_tokens, secrets)
        record, retry = await _once(*args, continuous=continuous)
        if retry:
            record, _ = await _once(*args, continuous=False)
        return record
    finally:
        if client is None:
            await http.close()


async def _once(
    endpoint: Endpoint,
    request: ChatRequest,
    http: FastClient,
    timeout_s: float,
    on_event: OnEvent | None,
    info: EndpointInfo | None,
    prompt_tokens: int | None,
    secrets: Mapping[str, Any] | None,
    *,
    continuous: bool,
) -> tuple[RequestRecord, bool]:
    """One attempt. Returns the record and whether to retry without ``continuous_usage_stats``."""
    recorder = StreamRecorder(endpoint.name, one_token_per_chunk=endpoint.kind == "llamacpp")
    known = {"info": info, "prompt_tokens": prompt_tokens, "secrets": secrets}
    prepared = await clients._prepare(endpoint, request, recorder, timeout_s=timeout_s, need_model=True, **known)
    if prepared is None:
        return clients._finish(recorder, on_event), False
    recorder.on_event = on_event
    recorder.sent()  # restamped when the request is handed to the connection; building it is client overhead
    options: dict[str, Any] = {"include_usage": True}
    if continuous:
        options["continuous_usage_stats"] = True
    body = {
        "messages": request.messages(),
        "model": prepared[0] or "default",
        "stream": True,
        "stream_options": options,
        **request.sampling(),
    }
    url = endpoint.openai_base_url
    target = urlsplit(url + "/chat/completions")
    scheme = target.scheme
    host = target.hostname or ""
    port = target.port or (443 if scheme == "https" else 80)
    data = json.dumps(body).encode()
    path = target.path + (f"?{target.query}" if target.query else "")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {target.netloc.rpartition('@')[2]}\r\nAccept: */*\r\n"
        f"Content-Type: application/json\r\nAuthorization: {http.authorization}\r\n"
        f"User-Agent: llm-serving-planner\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode()
    conn: _Conn | None = None
    reusable = retry = False
    try:
        recorder.sent(time.perf_counter())
        async with asyncio.timeout(timeout_s):
            conn = await http.acquire(scheme, host, port)
            conn.writer.write(head + data)
            status, headers = _parse_head(await conn.reader.readuntil(b"\r\n\r\n"))
        recorder.first_byte(time.perf_counter(), http_status=status)
        response = _Body(conn.reader, headers, timeout_s)
        if status >= 400:
            text = b"".join([part async for part in response]).decode("utf-8", "replace")
            message = clients._body_message(text) or f"status {status}"
            retry = continuous and status == 400 and "continuous_usage_stats" in message
            if retry:
                recorder.on_event = None  # the retry reports instead
            recorder.fail("http", f"HTTP {status}: {message}", http_status=status)
        else:
            await _read_events(response, recorder)
        reusable = response.complete and "close" not in headers.get("connection", "").lower()
    except TimeoutError:  # before OSError: TimeoutError is one
        recorder.fail("timeout", f"no response within {timeout_s:g} s from {url}")
    except (OSError, EOFError, asyncio.LimitOverrunError) as exc:
        # clients._connection_failure reads the transport error from __cause__, as the SDK wraps it.
        wrapped = ConnectionError()
        wrapped.__cause__ = exc if str(exc) else _ProtocolError(f"{type(exc).__name__}: connection closed")
        clients._connection_failure(recorder, url, wrapped)
    except ValueError as exc:  # a payload that is not JSON
        recorder.fail("in_stream", f"malformed stream payload: {exc}")
    except asyncio.CancelledError:
        _cancelled(recorder)
        raise
    finally:
        if conn is not None:
            if reusable:
                http.release(scheme, host, port, conn)
            else:
                conn.writer.close()
    return recorder.record(), retry


def _cancelled(recorder: StreamRecorder) -> RequestRecord:
    """Fail ``recorder`` as cancelled and build its record now, which reports it to ``on_event``."""
    recorder.fail("cancelled", "cancelled")
    return recorder.record()


def _parse_head(raw: bytes) -> tuple[int, dict[str, str]]:
    """Status code and lower-cased headers of a response head (``raw`` ends with the blank line)."""
    status_line, *lines = raw.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise _ProtocolError(f"not an HTTP/1.x response: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(parts[1]), headers


class _Dechunker:
    """Incremental decoder of an HTTP/1.1 chunked body (RFC 9112 §7.1): chunk extensions and trailers skipped."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data_left = 0
        self._crlf_left = 0
        self._trailer = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buf = self._buffer + data if self._buffer else data
        out: list[bytes] = []
        i, n = 0, len(buf)
        while not self.done:
            if self._data_left:
                take = min(self._data_left, n - i)
                out.append(buf[i : i + take])
                i += take
                self._data_left -= take
                if self._data_left:
                    break
                self._crlf_left = 2
            if self._crlf_left:
                take = min(self._crlf_left, n - i)
                i += take
                self._crlf_left -= take
                if self._crlf_left:
                    break
            end = buf.find(b"\r\n", i)
            if end < 0:
                break
            line = buf[i:end]
            i = end + 2
            if self._trailer:
                self.done = not line  # trailer fields end with an empty line
                continue
            try:
                size = int(line.split(b";", 1)[0], 16)
            except ValueError:
                raise _ProtocolError(f"malformed chunk size line {line[:40]!r}") from None
            if size == 0:
                self._trailer = True
            self._data_left = size
        self._buffer = buf[i:]
        return b"".join(out)


class _Body:
    """The decoded body of a response: iterate for byte blocks; ``complete`` once it was read to its end."""

    def __init__(self, reader: asyncio.StreamReader, headers: Mapping[str, str], timeout_s: float) -> None:
        self._reader = reader
        self._timeout_s = timeout_s
        self._dechunker = _Dechunker() if "chunked" in headers.get("transfer-encoding", "").lower() else None
        length = headers.get("content-length")
        self._left = int(length) if self._dechunker is None and length is not None else None
        self._length = self._left
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", "deflate", ""):
            raise _ProtocolError(f"unsupported Content-Encoding {encoding!r}")
        # wbits 32+: zlib or gzip header detected automatically
        self._inflate = zlib.decompressobj(32 + zlib.MAX_WBITS) if encoding in ("gzip", "deflate") else None
        self.complete = self._left == 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reader, timeout_s, dechunker = self._reader, self._timeout_s, self._dechunker
        while not self.complete:
            async with asyncio.timeout(timeout_s):
                data = await reader.read(_READ_BYTES if self._left is None else min(_READ_BYTES, self._left))
            if not data:
                # worded as httpx2 words it, so both paths record the same message
                if dechunker is not None:
                    raise _ProtocolError(f"{_CLOSED} (incomplete chunked read)")
                if self._left is not None:
                    got = self._length - self._left
                    raise _ProtocolError(f"{_CLOSED} (received {got} bytes, expected {self._length})")
                self.complete = True  # close-delimited body
                break
            if dechunker is not None:
                data = dechunker.feed(data)
                self.complete = dechunker.done
            elif self._left is not None:
                self._left -= len(data)
                self.complete = self._left == 0
            if self._inflate is not None:
                data = self._inflate.decompress(data)
            if data:
                yield data


async def _read_events(body: _Body, recorder: StreamRecorder) -> None:
    """Feed every ``data:`` payload to ``recorder`` until an in-stream error; drain the body after ``[DONE]``."""
    decoder = SSEDecoder()
    loads, perf_counter = json.loads, time.perf_counter
    async for raw in body:
        if decoder.done:
            continue  # drain after [DONE] so the connection can be reused, as the SDK does on HTTP/1.1
        for data in decoder.feed(raw):
            if recorder.payload(_object(loads(data)), perf_counter()).is_error:
                return
    for data in decoder.close():
        if recorder.payload(_object(loads(data)), perf_counter()).is_error:
            return
    recorder.eof()


def _object(parsed: Any) -> dict[str, Any]:
    if not isinstance(parsed, dict):  # json.loads gives a dict for every JSON object; cheaper than an ABC check
        raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
    return parsed
