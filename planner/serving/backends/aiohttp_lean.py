"""The ``aiohttp`` backend: the load test's lean path, for every endpoint kind and route.

Why: the SDK path costs ~320–400 µs of client CPU per streamed chunk, over half of it building a pydantic
``ChatCompletionChunk`` per event (``openai._models.construct_type``) that the SDK backend
(:mod:`planner.serving.backends.openai_sdk`) dumps back to a dict, and its default ``httpx2`` pool never holds more than
100 streams open. This path sends the request with ``aiohttp`` (the client ``vllm bench serve`` uses:
``vllm/benchmarks/lib/endpoint_request_func.py``, one ``ClientSession`` on a ``TCPConnector`` without a connection cap),
reads the body with ``response.content.readany()``, splits events with :class:`planner.serving.streaming.SSEDecoder`,
parses each with ``json.loads`` and feeds the dict to the same :class:`planner.serving.streaming.StreamRecorder`, so
every field of the :class:`planner.serving.streaming.RequestRecord` means what it means on the SDK path.

Cost (``bench/client_capacity.py`` against a zero-delay server, 2026-11-29, 2 cores shared with other jobs,
Python 3.11.7, aiohttp 3.14.5 with its C HTTP parser; 64-token answers = 37 token chunks; tables there): 34–39 µs
of client CPU per chunk at 200 streams (median 36 over 6 runs; 47–57 µs when the machine was contended), 41–52 µs
at 1,000 streams, 1,000 streams held open at once without errors in every run. The hand-rolled HTTP/1.1 client on
asyncio streams it replaced measured 28–35 µs (median 32) and 31–55 µs in the same interleaved runs: aiohttp costs
~4–9 µs more per chunk, within the 50 µs target, and removes ~170 lines of HTTP framing code (request writing,
head parsing, chunked decoding, gzip, keep-alive pool) from the project. Opening 1,000 connections at once costs it
more than it did the hand-rolled client (longest paced-phase TTFT 0.8–4.9 s against 0.5–2.7 s).

Timestamps:

* ``t_sent``: aiohttp's ``TraceConfig.on_request_start``, i.e. when the request is handed to the session, before a
  connection is taken from the pool or opened. The SDK path stamps it in an ``httpx2`` request hook, also before
  connecting, and ``vllm bench serve`` before ``session.post``: connection setup counts in TTFT on all three.
  (``on_request_headers_sent`` would be "request written" to the socket, but would take connection setup out of
  TTFT on this path only.)
* ``first_byte_s``: ``session.post`` returned, i.e. the response head was received and parsed (what
  ``on_request_end`` reports; the SDK path stamps it in an ``httpx2`` response hook); ``http_status`` its status.
* chunk times: ``time.perf_counter()`` after each payload is parsed (the SDK path stamps each SDK chunk);
* ``end_s``: the byte stream ended (the body after ``[DONE]`` is drained first, as the SDK does on HTTP/1.1, so
  the connection can be reused).

Failures get the ``error_kind`` and message the SDK path gives for the same cause: HTTP errors with the server's body
message via :func:`planner.serving.backends.base.body_message`, in-stream errors as ``message (type)``, ``timeout`` for
a connect or response-head wait over ``timeout_s`` ("no response within", ``aiohttp.ServerTimeoutError``) or no data
event for ``timeout_s`` once the stream started ("no stream data within"; SSE comments do not count, so a server sending
only keep-alive comments cannot hold a request for ever), ``connect``/``cut`` for a transport error before/after the
response head (``aiohttp.ClientConnectorError``, ``ServerDisconnectedError``...), a body cut mid-stream
(``aiohttp.ClientPayloadError``) worded as ``httpx2`` words it; only a refused connection's detail is worded by the OS
here (``[Errno 111] Connect call failed ...``) and by ``httpx2`` on the SDK path.

Proxies: ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY`` are honoured (with credentials in the proxy URL), read once per
client and host (:meth:`FastClient.route`) rather than by ``aiohttp``'s ``trust_env=True``, which looks them up
and reads ``~/.netrc`` in a worker thread on every request and so added ~1 ms to every TTFT. Redirects are not
followed (as on the SDK path). ``http`` and ``https`` (system CA store, via ``aiohttp``'s default SSL context).

The body is the :class:`~planner.serving.requests.WireRequest`'s, serialised once with ``json.dumps``; TGI's
``/generate_stream`` events (``data:`` without a space, no ``[DONE]``) go through the same decoder, so TGI load
tests need no per-request ``huggingface_hub`` client.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, ClassVar, NamedTuple
from urllib.parse import urlsplit

import aiohttp

from planner.serving.backends.base import Backend, body_message, transport_failure
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.requests import WireRequest
from planner.serving.streaming import SSEDecoder, StreamRecorder

__all__ = ["KEEPALIVE_S", "Aiohttp", "FastClient", "fast_client"]

#: Idle keep-alive connections older than this are not reused (aiohttp's default is 15 s): uvicorn (vLLM, SGLang)
#: closes idle connections after 5 s (``timeout_keep_alive``), and a request written on a connection the server is
#: closing fails (aiohttp does not retry a POST).
KEEPALIVE_S = 4.0
_CLOSED = "peer closed connection without sending complete message body"


async def _stamp_sent(_session: aiohttp.ClientSession, context: SimpleNamespace, _params: Any) -> None:
    recorder = context.trace_request_ctx
    if recorder is not None:
        recorder.sent(time.perf_counter())


class _Route(NamedTuple):
    proxy: str | None
    headers: dict[str, str]
    connect_headers: dict[str, str] | None


class FastClient:
    """One ``aiohttp.ClientSession`` for :func:`stream_openai_fast`, shared by every request of a load test.

    No connection cap (``TCPConnector(limit=0)``): a load test's concurrency is set by its own semaphore, and a pool cap
    would queue requests inside the client and hide that wait in TTFT (``httpx2``'s default pool, which
    :func:`planner.serving.backends.openai_sdk.openai_client` uses, holds 100 connections and keeps 20 alive). Each open
    stream holds one socket, so the process's open-file limit (``ulimit -n``, often 1024) bounds it; past it, new
    requests fail as ``connect`` with "Too many open files". The session is created on first use, inside the running
    event loop (``aiohttp`` requires one); use the client from one event loop only.

    Args:
        timeout_s: Longest wait to connect (``sock_connect``), and for the response head and each next read
            (``sock_read``), seconds.
        authorization: Value of the ``Authorization`` header.

    Attributes:
        connections_opened: TCP connections this client has opened so far (keep-alive reuse keeps it low).
    """

    def __init__(self, *, timeout_s: float, authorization: str) -> None:
        self.timeout_s = timeout_s
        self.authorization = authorization
        self.connections_opened = 0
        self._session: aiohttp.ClientSession | None = None
        self._routes: dict[tuple[str, str], _Route] = {}

    def route(self, url: str) -> _Route:
        """Proxy and headers for a request to ``url``, worked out on the first request to its scheme and host.

        Returns the ``proxy`` argument (credentials removed, None = direct), the request's headers
        (``Authorization``, plus ``Proxy-Authorization`` for a plain-HTTP proxy, which reads the request itself)
        and the ``CONNECT`` request's headers (``Proxy-Authorization`` for an ``https`` target).

        Proxies come from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``), read once per scheme and
        host with the standard library functions ``aiohttp``'s ``trust_env`` uses (``urllib.request.getproxies``,
        ``proxy_bypass``). ``trust_env=True`` itself would redo that lookup, and read ``~/.netrc``, in a worker
        thread on every request after the send stamp: +0.8–1.1 ms of TTFT per request here (median of 200
        keep-alive requests), more when many requests queue for the thread pool.
        """
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "")
        route = self._routes.get(key)
        if route is None:
            found = None if urllib.request.proxy_bypass(key[1]) else urllib.request.getproxies().get(key[0])
            headers, connect_headers = {"Authorization": self.authorization}, None
            if found:
                proxy = urlsplit(found)
                if proxy.username is not None:
                    login = {"Proxy-Authorization": aiohttp.encode_basic_auth(proxy.username, proxy.password or "")}
                    if parts.scheme == "https":
                        connect_headers = login
                    else:
                        headers.update(login)
                    found = proxy._replace(netloc=proxy.netloc.rpartition("@")[2]).geturl()
            route = self._routes[key] = _Route(found or None, headers, connect_headers)
        return route

    def session(self) -> aiohttp.ClientSession:
        """The shared session (created on the first call, in the running event loop)."""
        if self._session is None:
            trace = aiohttp.TraceConfig()
            trace.on_request_start.append(_stamp_sent)
            trace.on_connection_create_end.append(self._opened)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout_s, sock_read=self.timeout_s),
                # Authorization goes on each request (see route): aiohttp also sends a session's default headers
                # to a proxy, turning Authorization into Proxy-Authorization, which would hand it the API key.
                headers={"Content-Type": "application/json", "User-Agent": "llm-serving-planner"},
                trust_env=False,  # proxies from the environment: see route
                trace_configs=[trace],
            )
        return self._session

    async def _opened(self, _session: aiohttp.ClientSession, _context: SimpleNamespace, _params: Any) -> None:
        self.connections_opened += 1

    async def close(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def fast_client(endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None) -> FastClient:
    """A :class:`FastClient` for ``endpoint``: bearer token = its API key (or ``EMPTY``, as the SDK path sends).

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    return FastClient(timeout_s=timeout_s, authorization=f"Bearer {api_key(endpoint, secrets) or 'EMPTY'}")


class Aiohttp(Backend):
    """Streams every route of every kind through one shared :class:`FastClient` (``aiohttp``)."""

    name: ClassVar[str] = "aiohttp"
    kinds: ClassVar[tuple[str, ...]] = ("vllm", "sglang", "llamacpp", "openai", "tgi")
    routes: ClassVar[tuple[str, ...]] = ("chat", "completions", "generate_stream")

    def make_client(self, endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None) -> FastClient:
        return fast_client(endpoint, timeout_s=timeout_s, secrets=secrets)

    def owns(self, client: Any) -> bool:
        return isinstance(client, FastClient)

    async def send(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        recorder: StreamRecorder,
        *,
        client: FastClient,
        timeout_s: float,
    ) -> None:
        recorder.sent()  # restamped by _stamp_sent when aiohttp takes the request; building it is client overhead
        url = wire.url(endpoint.base_url)
        shown = endpoint.openai_base_url if wire.route != "generate_stream" else endpoint.base_url
        response: aiohttp.ClientResponse | None = None
        try:
            route = client.route(url)
            post = client.session().post(
                url,
                data=json.dumps(wire.body).encode(),
                headers=route.headers,
                allow_redirects=False,
                proxy=route.proxy,
                proxy_headers=route.connect_headers,
                trace_request_ctx=recorder,
            )
            async with post as response:
                recorder.first_byte(time.perf_counter(), http_status=response.status)
                if response.status >= 400:
                    text = (await response.read()).decode("utf-8", "replace")
                    message = body_message(text) or f"status {response.status}"
                    recorder.fail("http", f"HTTP {response.status}: {message}", http_status=response.status)
                else:
                    await _read_events(response.content, recorder, timeout_s)
        except TimeoutError:  # before the ClientError/OSError clauses: aiohttp.ServerTimeoutError is both
            # Worded as the SDK path words it: a wait for the response vs. for the next event of a started stream.
            streaming = response is not None and response.status < 400
            what = "stream data" if streaming else "response"
            recorder.fail("timeout", f"no {what} within {timeout_s:g} s from {shown}")
        except aiohttp.ClientPayloadError as exc:
            transport_failure(recorder, shown, _cut_detail(exc, response))
        except aiohttp.ClientConnectorError as exc:
            transport_failure(recorder, shown, exc.os_error)
        except (aiohttp.ClientError, OSError) as exc:  # ServerDisconnectedError, InvalidURL, a reset connection...
            transport_failure(recorder, shown, exc)
        except ValueError as exc:  # a payload that is not JSON
            recorder.fail("in_stream", f"malformed stream payload: {exc}")


def _cut_detail(exc: aiohttp.ClientPayloadError, response: aiohttp.ClientResponse | None) -> BaseException:
    """A cut body's error, worded as ``httpx2`` (the SDK path) words it, so both paths record the same message."""
    if response is None:
        return exc
    if "chunked" in response.headers.get("Transfer-Encoding", "").lower():
        return ConnectionError(f"{_CLOSED} (incomplete chunked read)")
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and response.headers.get("Content-Encoding", "identity").lower() in ("identity", ""):
        return ConnectionError(f"{_CLOSED} (received {response.content.total_bytes} bytes, expected {length})")
    return exc


async def _read_events(content: aiohttp.StreamReader, recorder: StreamRecorder, idle_s: float) -> None:
    """Feed every ``data:`` payload to ``recorder`` until an in-stream error; tell it ``[DONE]`` arrived, drain the
    body after it, then tell it the body ended.

    Raises:
        TimeoutError: no data event for ``idle_s`` seconds. aiohttp's ``sock_read`` restarts on every byte, so
            a server sending only ``: keep-alive`` comments would hold the request open for ever; this timer, like the
            SDK backends' (:func:`planner.serving.backends.base.items_within`), restarts only when an event is parsed.
    """
    decoder = SSEDecoder()
    loads, perf_counter, readany = json.loads, time.perf_counter, content.readany
    now = asyncio.get_running_loop().time
    async with asyncio.timeout(idle_s) as idle:
        while raw := await readany():
            if decoder.done:
                continue  # drain after [DONE] so the connection can be reused, as the SDK does on HTTP/1.1
            events = decoder.feed(raw)
            for data in events:
                if recorder.payload(_object(loads(data)), perf_counter()).is_error:
                    return
            if decoder.done:
                recorder.terminated()
            if events:
                idle.reschedule(now() + idle_s)
    for data in decoder.close():
        if recorder.payload(_object(loads(data)), perf_counter()).is_error:
            return
    recorder.eof()


def _object(parsed: Any) -> dict[str, Any]:
    if not isinstance(parsed, dict):  # json.loads gives a dict for every JSON object; cheaper than an ABC check
        raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
    return parsed
