"""The one interface every client backend implements, and the failure wording they share.

A backend sends a :class:`~planner.serving.requests.WireRequest` (built once, by
:func:`planner.serving.requests.build_request`) with one client library, feeds every timestamp and parsed payload
to a :class:`~planner.serving.streaming.StreamRecorder`, and turns the library's exceptions into the recorder's
failure kinds (:data:`planner.serving.streaming.ERROR_KINDS`). It never raises for a request failure; only task
cancellation propagates (the orchestration in :mod:`planner.serving.backends` records it).

Failure wording is shared so that the same cause reads the same on every backend: HTTP errors as
``HTTP <status>: <server message>`` (:func:`body_message`), transport failures as ``cannot connect to <url>:
<detail>`` before the response head and ``stream from <url> cut: <detail>`` after it (:func:`transport_failure`),
and ``no response within`` / ``no stream data within <timeout> s from <url>`` for the two timeouts.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

import httpx2

from planner.errors import IdleTimeoutError, MalformedTextError
from planner.parsing import json_value
from planner.serving.endpoints import Endpoint
from planner.serving.requests import WireRequest
from planner.serving.streaming import SSEDecoder, StreamRecorder, one_line

__all__ = ["Backend", "body_message", "items_within", "transport_failure", "watch_for_done"]


class Backend(ABC):
    """A client library that streams requests to endpoints.

    Class attributes:
        name: Registry name (``openai``, ``huggingface_hub``, ``aiohttp``).
        kinds: Endpoint kinds it serves.
        routes: Routes (:data:`planner.serving.requests.ROUTES`) it can send.
    """

    name: ClassVar[str]
    kinds: ClassVar[tuple[str, ...]]
    routes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def make_client(self, endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None) -> Any:
        """A reusable client for ``endpoint``; close it with ``await client.close()``.

        Raises:
            MissingAPIKeyError: the endpoint's API-key variable is not set.
        """

    @abstractmethod
    def owns(self, client: Any) -> bool:
        """``client`` is of the type :meth:`make_client` returns."""

    @abstractmethod
    async def send(
        self, endpoint: Endpoint, wire: WireRequest, recorder: StreamRecorder, *, client: Any, timeout_s: float
    ) -> None:
        """Send ``wire`` and record the stream into ``recorder`` until it ends, fails or is cancelled.

        The recorder's ``sent`` is stamped when the request reaches the library's transport (request building is
        client overhead, not server latency), ``first_byte`` when the response head arrives, each payload when
        parsed. Failures are recorded with :meth:`StreamRecorder.fail`, never raised.

        Raises:
            asyncio.CancelledError: the task was cancelled (the caller records it).
        """


async def items_within(stream: Any, idle_s: float) -> AsyncIterator[Any]:
    """Yield ``stream``'s items, raising :class:`IdleTimeoutError` when the next one takes longer than ``idle_s``.

    The libraries' own read timeouts restart on every byte, so a server sending only ``: keep-alive`` comments
    would hold a request open for ever; this timer restarts only on a parsed data event.
    """
    iterator = stream.__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle_s):
                item = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise IdleTimeoutError from None
        yield item


def body_message(body: Any) -> str:
    """The server's message from an error body: vLLM nested/flat, TGI ``{"error": str}``, or raw text."""
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json_value(text, name="error body", accepted="JSON")
        except MalformedTextError:
            return one_line(text)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            msg = err.get("message") or err.get("detail")
            etype = err.get("type") or err.get("error_type") or body.get("error_type")
        else:
            msg, etype = err, body.get("error_type")
        if isinstance(msg, list | dict):
            msg = json.dumps(msg)
        text = one_line(msg or "")
        return f"{text} ({etype})" if etype and text and str(etype) not in text else text
    return one_line(body) if body is not None else ""


def watch_for_done(response: httpx2.Response, recorder: StreamRecorder) -> None:
    """Tell ``recorder`` when ``response``'s body carries ``data: [DONE]`` (call from an ``httpx2`` response hook).

    Why: the SDKs end their iteration at ``[DONE]`` and also when the body just ends, and do not say which, so a
    stream that ends with ``[DONE]`` but no finish reason (several OpenAI-compatible servers and proxies end so)
    would look cut. The decoded body (after any ``Content-Encoding``) passes through the same
    :class:`~planner.serving.streaming.SSEDecoder` the ``aiohttp`` backend reads with, as the SDK pulls it;
    :meth:`~planner.serving.streaming.StreamRecorder.terminated` is called once it has seen ``[DONE]``, so every
    backend ends a stream on the same event. ``response.aiter_bytes`` is what both SDKs read the body through
    (``openai.AsyncStream._iter_events``; ``huggingface_hub`` via ``aiter_lines`` → ``aiter_text``).
    """
    read = response.aiter_bytes
    decoder = SSEDecoder()

    async def tapped(chunk_size: int | None = None) -> AsyncIterator[bytes]:
        async for part in read(chunk_size):
            if not decoder.done:
                decoder.feed(part)
                if decoder.done:
                    recorder.terminated()
            yield part

    response.aiter_bytes = tapped  # type: ignore[method-assign]


def transport_failure(recorder: StreamRecorder, url: str, cause: BaseException) -> None:
    """Record a transport error: ``connect`` before the response head arrived, ``cut`` after it."""
    detail = one_line(cause) or f"{type(cause).__name__}: connection closed"
    if recorder.record_started:
        recorder.fail("cut", f"stream from {url} cut: {detail}")
    else:
        recorder.fail("connect", f"cannot connect to {url}: {detail}")
