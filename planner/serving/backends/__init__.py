"""The registry of client backends and the one request path every caller takes: :func:`stream_request`.

Backends (one module per client library, one interface: :class:`~planner.serving.backends.base.Backend`):

* ``openai`` (:mod:`~planner.serving.backends.openai_sdk`): the ``openai`` SDK, Live Compare's client for every
  OpenAI-compatible kind;
* ``huggingface_hub`` (:mod:`~planner.serving.backends.hf_hub`): ``AsyncInferenceClient``, Live Compare's client for
  TGI (Messages API, or the native ``/generate_stream``);
* ``aiohttp`` (:mod:`~planner.serving.backends.aiohttp_lean`): the lean path that carries load tests, for every kind.

:func:`stream_request` resolves the model and checks the context once, builds the body once
(:func:`planner.serving.requests.build_request`), hands it to the backend, retries once without
``continuous_usage_stats`` when a server refuses it with HTTP 400, and records a cancellation, so every backend
gives the same :class:`~planner.serving.streaming.RequestRecord` for the same cause.

May import the rest of :mod:`planner.serving` and :mod:`planner.errors`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from planner.errors import InvalidParameterError
from planner.serving.backends.aiohttp_lean import Aiohttp
from planner.serving.backends.base import Backend
from planner.serving.backends.hf_hub import HuggingFaceHub
from planner.serving.backends.openai_sdk import OpenAISDK
from planner.serving.discovery import EndpointInfo, discover
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest, build_request, check_context
from planner.serving.streaming import RequestRecord, StreamRecorder, StreamUpdate

__all__ = [
    "BACKENDS",
    "LOAD_BACKEND",
    "Backend",
    "OnEvent",
    "compare_backend",
    "get_backend",
    "make_client",
    "stream_request",
]

OnEvent = Callable[[StreamUpdate], None]

#: Every backend by name.
BACKENDS: dict[str, Backend] = {b.name: b for b in (OpenAISDK(), HuggingFaceHub(), Aiohttp())}
#: The backend of load tests (page, CLI and tests alike).
LOAD_BACKEND = "aiohttp"


def compare_backend(kind: str) -> str:
    """Live Compare's backend for an endpoint kind: ``huggingface_hub`` for TGI, ``openai`` for the others."""
    return "huggingface_hub" if kind == "tgi" else "openai"


def get_backend(name: str | None, kind: str) -> Backend:
    """The backend called ``name`` (None = :func:`compare_backend` of ``kind``), checked to serve ``kind``.

    Raises:
        InvalidParameterError: no backend has that name, or it does not serve ``kind``.
    """
    name = compare_backend(kind) if name is None else name
    backend = BACKENDS.get(name)
    if backend is None:
        raise InvalidParameterError("backend", name, ", ".join(BACKENDS))
    if kind not in backend.kinds:
        raise InvalidParameterError("backend", name, f"a backend for {kind}: {compare_backend(kind)} or aiohttp")
    return backend


def make_client(
    endpoint: Endpoint, *, backend: str | None = None, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> Any:
    """A reusable client of ``backend`` for ``endpoint``; close it with ``await client.close()``.

    Raises:
        InvalidParameterError: see :func:`get_backend`.
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    return get_backend(backend, endpoint.kind).make_client(endpoint, timeout_s=timeout_s, secrets=secrets)


async def stream_request(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    backend: str | None = None,
    route: str | None = None,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: Any = None,
) -> RequestRecord:
    """Stream one request to ``endpoint`` with ``backend`` and record its timeline.

    Never raises for a request failure: a refused connection, a timeout, an HTTP 4xx/5xx (with the server's own
    message), an in-stream error on a 200 response or a stream cut before its end come back as a record with
    ``ok=False``, a one-line ``error`` and an ``error_kind``.

    Args:
        endpoint: Where to send it; ``endpoint.model`` None = use ``info.model`` or discover it (not for TGI).
        request: Prompt and sampling parameters.
        timeout_s: Longest wait to connect, for the response head, and for each next data event, seconds.
        backend: A name of :data:`BACKENDS`; None = Live Compare's for the kind (:func:`compare_backend`).
        route: ``chat``, ``completions`` or ``generate_stream`` (TGI); None = ``completions`` for a token-id
            prompt, else ``chat``.
        on_event: Called in the event loop with a :class:`~planner.serving.streaming.StreamUpdate` per token chunk
            and at the end (also for a request that was never sent).
        info: Discovery result (model, context limit), when already known.
        prompt_tokens: Prompt length in tokens when known, for the context check.
        secrets: Optional mapping holding the API key.
        client: A client from :func:`make_client` for the same backend to reuse; None = a new one for this request
            (its connection setup then counts in TTFT, as in ``vllm bench serve``).

    Returns:
        The request's record; ``error_kind`` one of ``connect``, ``timeout``, ``http``, ``in_stream``, ``cut``,
        ``context_length``, ``cancelled`` on failure.

    Raises:
        InvalidParameterError: an unknown backend or route, a route the backend cannot send, ``client`` of another
            backend, or a token-id prompt where the kind takes none.
        MissingAPIKeyError: the endpoint's API-key variable is not set.
        asyncio.CancelledError: the task was cancelled (the ``cancelled`` record was delivered to ``on_event``).

    Example:
        >>> rec = await stream_request(ep, ChatRequest("Hi", max_tokens=16), timeout_s=30)  # doctest: +SKIP
    """
    chosen = get_backend(backend, endpoint.kind)
    if client is not None and not chosen.owns(client):
        raise InvalidParameterError("client", type(client).__name__, f"a client from make_client for {chosen.name}")
    wire = build_request(endpoint.kind, request, model=endpoint.model, route=route)  # validates the route
    if wire.route not in chosen.routes:
        raise InvalidParameterError("route", wire.route, f"one of {', '.join(chosen.routes)} for {chosen.name}")
    recorder = StreamRecorder(endpoint.name, one_token_per_chunk=endpoint.kind == "llamacpp")
    model = await _resolve_model(endpoint, request, recorder, timeout_s, info, prompt_tokens, secrets, on_event)
    if recorder.failure is not None:
        return _finish(recorder, on_event)
    recorder.model = model
    wire = build_request(endpoint.kind, request, model=model, route=route)
    own = client is None
    if own:
        client = chosen.make_client(endpoint, timeout_s=timeout_s, secrets=secrets)
    try:
        while True:
            recorder.on_event = on_event
            try:
                await chosen.send(endpoint, wire, recorder, client=client, timeout_s=timeout_s)
            except asyncio.CancelledError:
                recorder.fail("cancelled", "cancelled")
                recorder.record()  # reports the cancelled record to on_event
                raise
            failure = recorder.failure
            refused = failure is not None and failure[2] == 400 and "continuous_usage_stats" in failure[1]
            if not (wire.continuous_usage and refused):
                return recorder.record()
            # The server refuses per-chunk usage: ask again without it (the failed attempt is not reported).
            wire = wire.without_continuous_usage()
            recorder = StreamRecorder(endpoint.name, one_token_per_chunk=endpoint.kind == "llamacpp", model=model)
    finally:
        if own:
            await client.close()


async def _resolve_model(
    endpoint: Endpoint,
    request: ChatRequest,
    recorder: StreamRecorder,
    timeout_s: float,
    info: EndpointInfo | None,
    prompt_tokens: int | None,
    secrets: Mapping[str, Any] | None,
    on_event: OnEvent | None,
) -> str | None:
    """The model to request; fails ``recorder`` when there is none or the request cannot fit the context.

    A cancel during discovery still leaves a ``cancelled`` record (reported to ``on_event``) before it propagates.
    """
    need_model = endpoint.kind != "tgi"  # TGI serves one model and ignores the field
    model = endpoint.model or (info.model if info is not None else None)
    if need_model and model is None and info is None:
        try:
            info = await discover(endpoint, timeout_s, secrets=secrets)
        except asyncio.CancelledError:
            recorder.fail("cancelled", "cancelled before it was sent")
            _finish(recorder, on_event)
            raise
        model = info.model
    if need_model and model is None:
        recorder.sent()
        reason = info.error if info is not None and info.error else "no model given and none discovered"
        kind = "timeout" if "timed out" in reason else ("connect" if "cannot connect" in reason else "http")
        recorder.fail(kind, reason)
        return None
    problem = check_context(request, info, prompt_tokens)
    if problem is not None:
        recorder.sent()
        recorder.fail("context_length", problem)
    return model


def _finish(recorder: StreamRecorder, on_event: OnEvent | None) -> RequestRecord:
    """Build the record of a request that was never sent, and report it."""
    record = recorder.record()
    if on_event is not None:
        on_event(StreamUpdate(record.endpoint, "end", 0.0, record=record))
    return record
