"""Streamed chat requests against vLLM, TGI, SGLang, llama.cpp and other OpenAI-compatible servers.

The request functions never raise for request failures: a refused connection, a timeout, an HTTP 4xx/5xx (with the
server's own message from the body), an in-stream error on a 200 response, or a stream cut before its end all come
back as a :class:`~planner.serving.streaming.RequestRecord` with ``ok=False``, a one-line ``error`` and an
``error_kind``.
Only configuration errors (:class:`~planner.errors.PlannerError`, e.g. a missing API key) and task cancellation
propagate; a cancelled request still delivers its ``cancelled`` record to ``on_event`` first.

Both clients are built with retries off (the openai SDK retries twice by default, which hides failures and
inflates latency; benchmark_clients.md §10.14) and explicit timeouts. Note: openai 3.x and huggingface_hub 2.x run
on the ``httpx2`` package, so the SDK's ``http_client`` and ``Timeout`` are ``httpx2`` objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from huggingface_hub import AsyncInferenceClient
from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError, TextGenerationError

from planner.errors import InvalidParameterError
from planner.serving.discovery import EndpointInfo, discover
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.streaming import RequestRecord, StreamRecorder, StreamUpdate, one_line

__all__ = [
    "ChatRequest",
    "check_context",
    "make_client",
    "openai_client",
    "stream_chat",
    "stream_openai",
    "stream_tgi",
    "tgi_client",
]

OnEvent = Callable[[StreamUpdate], None]

# Kinds that accept (and honour) stream_options.continuous_usage_stats (protocols.md §5.6).
_CONTINUOUS_USAGE_KINDS = ("vllm", "sglang")


@dataclass(frozen=True)
class ChatRequest:
    """One chat prompt and its sampling parameters. None = leave the server default.

    Attributes:
        prompt: User message.
        system: System prompt; None = no system message.
        temperature: Sampling temperature (≥ 0).
        top_p: Nucleus sampling mass, in (0, 1].
        max_tokens: Output token limit (≥ 1).
        stop: Stop strings.
        seed: Sampling seed.

    Raises:
        InvalidParameterError: a value is out of range.
    """

    prompt: str
    system: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise InvalidParameterError("prompt", self.prompt, "a non-empty string")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InvalidParameterError("max_tokens", self.max_tokens, "an integer ≥ 1")
        if self.temperature is not None and not self.temperature >= 0:
            raise InvalidParameterError("temperature", self.temperature, "a number ≥ 0")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise InvalidParameterError("top_p", self.top_p, "a number in (0, 1]")
        object.__setattr__(self, "stop", tuple(self.stop))

    def messages(self) -> list[dict[str, str]]:
        """The OpenAI ``messages`` list: optional system message, then the user prompt."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        return [*out, {"role": "user", "content": self.prompt}]

    def sampling(self) -> dict[str, Any]:
        """The OpenAI sampling parameters that are set (``max_tokens`` always)."""
        params: dict[str, Any] = {"max_tokens": self.max_tokens}
        for name in ("temperature", "top_p", "seed"):
            if getattr(self, name) is not None:
                params[name] = getattr(self, name)
        if self.stop:
            params["stop"] = list(self.stop)
        return params


def check_context(request: ChatRequest, info: EndpointInfo | None, prompt_tokens: int | None = None) -> str | None:
    """Check a request against the endpoint's known context limits before sending it.

    Rule: ``prompt_tokens + max_tokens ≤ max_model_len_tokens`` (vLLM ``max_model_len``, TGI ``max_total_tokens``)
    and ``prompt_tokens ≤ max_input_tokens`` (TGI). An unknown prompt length counts as 0, so only requests that
    certainly exceed the limit are refused.

    Returns:
        A one-line reason when the request cannot fit; None when it may fit or no limit is known.
    """
    if info is None:
        return None
    n_prompt = prompt_tokens or 0
    limit = info.max_model_len_tokens
    if limit is not None and n_prompt + request.max_tokens > limit:
        given = f"{n_prompt} prompt + " if prompt_tokens is not None else ""
        return (
            f"{info.endpoint}: {given}{request.max_tokens} max_tokens exceeds the context limit of {limit} tokens; "
            "lower max_tokens"
        )
    if info.max_input_tokens is not None and prompt_tokens is not None and prompt_tokens > info.max_input_tokens:
        return f"{info.endpoint}: prompt of {prompt_tokens} tokens exceeds max_input_tokens={info.max_input_tokens}"
    return None


# Recorders of in-flight requests by request id, so a shared client's response hook can stamp the first byte.
_IN_FLIGHT: dict[str, StreamRecorder] = {}
_IDS = itertools.count()
_ID_HEADER = "x-planner-request-id"


async def _sent_hook(request: httpx2.Request) -> None:
    # "Request sent" is when the HTTP request reaches the transport: the SDK's own request building before it
    # is client overhead, not server latency, and would otherwise inflate TTFT by a few milliseconds.
    recorder = _IN_FLIGHT.get(request.headers.get(_ID_HEADER, ""))
    if recorder is not None:
        recorder.sent(time.perf_counter())


async def _first_byte_hook(response: httpx2.Response) -> None:
    recorder = _IN_FLIGHT.get(response.request.headers.get(_ID_HEADER, ""))
    if recorder is not None:
        recorder.first_byte(time.perf_counter(), http_status=response.status_code)


def openai_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> openai.AsyncOpenAI:
    """An ``openai.AsyncOpenAI`` for ``endpoint`` to reuse across requests (one connection pool, no TLS redo).

    Retries are off (``max_retries=0``), every timeout is ``timeout_s``, and its ``httpx2`` client carries the
    hooks that stamp each request's send time (when it reaches the transport) and first byte. Close it with
    ``await client.close()``.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    timeout = httpx2.Timeout(timeout_s)
    http = httpx2.AsyncClient(timeout=timeout, event_hooks={"request": [_sent_hook], "response": [_first_byte_hook]})
    return openai.AsyncOpenAI(
        base_url=endpoint.openai_base_url,
        api_key=api_key(endpoint, secrets) or "EMPTY",
        max_retries=0,
        timeout=timeout,
        http_client=http,
    )


def tgi_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> AsyncInferenceClient:
    """A ``huggingface_hub.AsyncInferenceClient`` for ``endpoint`` to reuse across requests.

    Close it with ``await client.close()``.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    return AsyncInferenceClient(base_url=endpoint.base_url, api_key=api_key(endpoint, secrets), timeout=timeout_s)


def _body_message(body: Any) -> str:
    """The server's message from an error body: vLLM nested/flat, TGI ``{"error": str}``, or raw text."""
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
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


async def _prepare(
    endpoint: Endpoint,
    request: ChatRequest,
    recorder: StreamRecorder,
    *,
    timeout_s: float,
    info: EndpointInfo | None,
    prompt_tokens: int | None,
    secrets: Mapping[str, Any] | None,
    need_model: bool,
    on_event: OnEvent | None = None,
) -> tuple[str | None, EndpointInfo | None] | None:
    """Resolve the model and check the context. Returns None (after failing the recorder) when not sendable.

    A cancel during discovery still leaves a "cancelled" record (reported to ``on_event``) before it propagates.
    """
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
        return None
    recorder.model = model
    return model, info


async def stream_openai(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: openai.AsyncOpenAI | None = None,
) -> RequestRecord:
    """Stream one chat completion through the ``openai`` SDK and record its timeline.

    Sends ``stream=True`` and ``stream_options={"include_usage": true}`` (plus ``continuous_usage_stats`` on vLLM
    and SGLang, which gives exact tokens per chunk; if such a server answers 400 naming it, the request is retried
    once without it). The first byte is stamped by an ``httpx2`` response event hook, payloads are normalized by
    :func:`planner.serving.streaming.normalize_payload` (reasoning fields come through the SDK chunks' ``model_extra``).

    Args:
        endpoint: Where to send it; ``endpoint.model`` None = use ``info.model`` or discover it.
        request: Prompt and sampling parameters.
        timeout_s: Longest wait to connect and for each next byte, seconds.
        on_event: Called in the event loop with a :class:`~planner.serving.streaming.StreamUpdate` per token chunk and
            at the end.
        info: Discovery result (model, context limit), when already known.
        prompt_tokens: Prompt length in tokens when known, for the context check.
        secrets: Optional mapping holding the API key.
        client: A client from :func:`openai_client` to reuse; None = a new one for this request (its connection
            setup then counts in TTFT, as in ``vllm bench serve``).

    Returns:
        The request's record; ``ok=False`` with ``error_kind`` in ``connect``, ``timeout``, ``http``,
        ``in_stream``, ``cut``, ``context_length``, ``cancelled`` on failure.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
        asyncio.CancelledError: the task was cancelled (the ``cancelled`` record was delivered to ``on_event``).

    Example:
        >>> rec = await stream_openai(ep, ChatRequest("Hi", max_tokens=16), timeout_s=30)  # doctest: +SKIP
    """
    continuous = endpoint.kind in _CONTINUOUS_USAGE_KINDS
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = openai_client(endpoint, timeout_s=timeout_s, secrets=secrets)
            stack.push_async_callback(client.close)
        while True:
            record, retry = await _stream_openai_once(
                endpoint,
                request,
                timeout_s=timeout_s,
                on_event=on_event,
                info=info,
                prompt_tokens=prompt_tokens,
                secrets=secrets,
                client=client,
                continuous=continuous,
            )
            if not retry:
                return record
            continuous = False
    raise AssertionError("unreachable")  # pragma: no cover


async def _stream_openai_once(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    on_event: OnEvent | None,
    info: EndpointInfo | None,
    prompt_tokens: int | None,
    secrets: Mapping[str, Any] | None,
    client: openai.AsyncOpenAI,
    continuous: bool,
) -> tuple[RequestRecord, bool]:
    recorder = StreamRecorder(endpoint.name, one_token_per_chunk=endpoint.kind == "llamacpp", on_event=None)
    prepared = await _prepare(
        endpoint,
        request,
        recorder,
        timeout_s=timeout_s,
        info=info,
        prompt_tokens=prompt_tokens,
        secrets=secrets,
        need_model=True,
        on_event=on_event,
    )
    if prepared is None:
        return _finish(recorder, on_event), False
    model = prepared[0]
    recorder.on_event = on_event
    stream_options: dict[str, Any] = {"include_usage": True}
    if continuous:
        stream_options["continuous_usage_stats"] = True
    request_id = f"{endpoint.name}-{next(_IDS)}"
    _IN_FLIGHT[request_id] = recorder
    retry = False
    recorder.sent()
    try:
        stream = await client.chat.completions.create(
            model=model or "default",
            messages=request.messages(),  # type: ignore[arg-type]
            stream=True,
            stream_options=stream_options,  # type: ignore[arg-type]
            extra_headers={_ID_HEADER: request_id},
            **request.sampling(),
        )
        async with stream:
            async for chunk in _items(stream, timeout_s):
                t = time.perf_counter()
                recorder.payload(chunk.model_dump(), t)
        recorder.eof()
    except _IdleTimeout:
        recorder.fail("timeout", f"no stream data within {timeout_s:g} s from {endpoint.openai_base_url}")
    except openai.APIStatusError as exc:
        message = _body_message(exc.response.text if exc.response is not None else exc.body) or str(exc)
        if continuous and exc.status_code == 400 and "continuous_usage_stats" in message:
            retry = True
            recorder.on_event = None  # the retry reports instead
        recorder.fail("http", f"HTTP {exc.status_code}: {message}", http_status=exc.status_code)
    except openai.APITimeoutError:
        recorder.fail("timeout", f"no response within {timeout_s:g} s from {endpoint.openai_base_url}")
    except openai.APIConnectionError as exc:
        _connection_failure(recorder, endpoint.openai_base_url, exc)
    except openai.APIError as exc:  # in-stream error payload (the SDK raises on it)
        body = exc.body if isinstance(exc.body, Mapping) else {}
        status = body.get("http_status_code") or body.get("code")
        recorder.fail(
            "in_stream",
            _body_message({"error": exc.body}) or exc.message,
            http_status=status if isinstance(status, int) else None,
        )
    except ValueError as exc:  # a payload that is not JSON
        recorder.fail("in_stream", f"malformed stream payload: {exc}")
    except asyncio.CancelledError:
        recorder.fail("cancelled", "cancelled")
        recorder.record()
        raise
    finally:
        _IN_FLIGHT.pop(request_id, None)
    return recorder.record(), retry


class _IdleTimeout(Exception):
    """No stream item arrived within the idle limit (SSE comments and keep-alives do not count)."""


async def _items(stream: Any, idle_s: float) -> Any:
    """Yield ``stream``'s items, raising :class:`_IdleTimeout` when the next one takes longer than ``idle_s``.

    The clients' own read timeouts restart on every byte, so a server sending only ``: keep-alive`` comments
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
            raise _IdleTimeout from None
        yield item


def _finish(recorder: StreamRecorder, on_event: OnEvent | None) -> RequestRecord:
    """Build the record of a request that was never sent, and report it."""
    record = recorder.record()
    if on_event is not None:
        on_event(StreamUpdate(record.endpoint, "end", 0.0, record=record))
    return record


def _connection_failure(recorder: StreamRecorder, url: str, exc: BaseException) -> None:
    cause = exc.__cause__ or exc
    detail = one_line(cause) or type(cause).__name__
    if recorder.record_started:
        recorder.fail("cut", f"stream from {url} cut: {detail}")
    else:
        recorder.fail("connect", f"cannot connect to {url}: {detail}")


def _hf_dict(obj: Any) -> Any:
    """A huggingface_hub output object as plain data, keeping unknown keys (e.g. ``reasoning_content``)."""
    if isinstance(obj, dict):
        extra = {k: v for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("_")}
        return {k: _hf_dict(v) for k, v in {**obj, **extra}.items()}
    if isinstance(obj, list):
        return [_hf_dict(v) for v in obj]
    return obj


async def stream_tgi(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    native: bool = False,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: AsyncInferenceClient | None = None,
) -> RequestRecord:
    """Stream one request through ``huggingface_hub.AsyncInferenceClient`` and record its timeline.

    ``native=False`` uses ``chat_completion(stream=True, stream_options={"include_usage": True})`` (TGI Messages
    API, also works on vLLM). ``native=True`` uses ``text_generation(stream=True, details=True)``, i.e. TGI's
    ``/generate_stream`` semantics posted to the server root (TGI only): the system prompt and the prompt are
    joined with a blank line and sent without a chat template; exactly one token per event.

    The first byte is the moment the client returns the stream (response headers checked).

    Args:
        endpoint: Where to send it.
        request: Prompt and sampling parameters.
        timeout_s: Longest wait to connect and for each next byte, seconds.
        native: Use TGI's native ``/generate_stream`` instead of the chat route.
        on_event: Called with a :class:`~planner.serving.streaming.StreamUpdate` per token chunk and at the end.
        info: Discovery result (model, context limit), when already known.
        prompt_tokens: Prompt length in tokens when known, for the context check.
        secrets: Optional mapping holding the API key.
        client: A client from :func:`tgi_client` to reuse; None = a new one for this request.

    Returns:
        The request's record (see :func:`stream_openai`).

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
        asyncio.CancelledError: the task was cancelled.
    """
    recorder = StreamRecorder(endpoint.name)
    prepared = await _prepare(
        endpoint,
        request,
        recorder,
        timeout_s=timeout_s,
        info=info,
        prompt_tokens=prompt_tokens,
        secrets=secrets,
        need_model=False,
        on_event=on_event,
    )
    if prepared is None:
        return _finish(recorder, on_event)
    model = prepared[0]
    recorder.on_event = on_event
    url = endpoint.base_url
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = tgi_client(endpoint, timeout_s=timeout_s, secrets=secrets)
            stack.push_async_callback(client.close)
        # The client opens its httpx2 session lazily on the first request; that costs tens of ms (TLS context),
        # which would land in TTFT, so open it before the clock starts (private API, guarded).
        opener = getattr(client, "_get_async_client", None)
        session = await opener() if opener is not None else None
        if session is not None and hasattr(session, "follow_redirects"):
            # A redirect could send the request (and its key) to an address the endpoint list never named.
            session.follow_redirects = False
        recorder.sent()
        hooks = getattr(session, "event_hooks", None)
        if isinstance(hooks, dict):
            # As for the openai client: "sent" is when the request reaches the transport. Requests on one client
            # run one at a time, so the hook stamps the recorder of the request in flight.
            def _stamp(_request: Any, recorder: StreamRecorder = recorder) -> None:
                recorder.sent(time.perf_counter())

            async def _sent(request: Any) -> None:
                _stamp(request)

            hooks["request"] = [_sent]
        try:
            if native:
                prompt = f"{request.system}\n\n{request.prompt}" if request.system else request.prompt
                stream = await client.text_generation(
                    prompt,
                    stream=True,
                    details=True,
                    max_new_tokens=request.max_tokens,
                    temperature=request.temperature,
                    top_p=request.top_p,
                    stop=list(request.stop) or None,
                    seed=request.seed,
                )
            else:
                stream = await client.chat_completion(
                    request.messages(),
                    model=model,
                    stream=True,
                    stream_options={"include_usage": True},  # type: ignore[arg-type]
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    top_p=request.top_p,
                    stop=list(request.stop) or None,
                    seed=request.seed,
                )
            recorder.first_byte(time.perf_counter(), http_status=200)
            async for item in _items(stream, timeout_s):
                t = time.perf_counter()
                payload = recorder.payload(_hf_dict(item), t)
                if payload.ends_stream:
                    break
            recorder.eof()
        except _IdleTimeout:
            recorder.fail("timeout", f"no stream data within {timeout_s:g} s from {url}")
        except TextGenerationError as exc:  # in-stream error payload
            if isinstance(exc.__cause__, HfHubHTTPError):
                # huggingface_hub turns an HTTP 422 (and other validation answers) into a TextGenerationError
                # subclass; it is an HTTP failure, not an in-stream one.
                cause = exc.__cause__
                status = cause.response.status_code if cause.response is not None else None
                body = _body_message(cause.response.text) if cause.response is not None else ""
                recorder.fail("http", f"HTTP {status}: {body or one_line(exc)}", http_status=status)
                return recorder.record()
            detail = exc.args[0] if exc.args else ""
            if isinstance(detail, Mapping):  # OpenAI-style {"error": {...}} (vLLM, TGI chat)
                status = detail.get("http_status_code") or detail.get("code")
                recorder.fail(
                    "in_stream",
                    _body_message({"error": detail}),
                    http_status=status if isinstance(status, int) else None,
                )
            else:
                recorder.fail("in_stream", one_line(detail) or type(exc).__name__, error_type=type(exc).__name__)
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            body = _body_message(exc.response.text) if exc.response is not None else ""
            recorder.fail("http", f"HTTP {status}: {body or one_line(exc)}", http_status=status)
        except (InferenceTimeoutError, httpx2.TimeoutException):
            recorder.fail("timeout", f"no response within {timeout_s:g} s from {url}")
        except httpx2.TransportError as exc:
            _connection_failure(recorder, url, exc)
        except ValueError as exc:
            recorder.fail("in_stream", f"malformed stream payload: {exc}")
        except asyncio.CancelledError:
            recorder.fail("cancelled", "cancelled")
            recorder.record()
            raise
    return recorder.record()


async def stream_chat(
    endpoint: Endpoint,
    request: ChatRequest,
    *,
    timeout_s: float,
    on_event: OnEvent | None = None,
    info: EndpointInfo | None = None,
    prompt_tokens: int | None = None,
    secrets: Mapping[str, Any] | None = None,
    client: openai.AsyncOpenAI | AsyncInferenceClient | None = None,
) -> RequestRecord:
    """Stream one chat request with the client that fits ``endpoint.kind``.

    TGI goes through ``huggingface_hub`` (:func:`stream_tgi`, chat route); every other kind through the
    ``openai`` SDK (:func:`stream_openai`). Arguments and result as :func:`stream_openai`; ``client`` must come
    from :func:`make_client` for the same endpoint.
    """
    common: dict[str, Any] = {
        "timeout_s": timeout_s,
        "on_event": on_event,
        "info": info,
        "prompt_tokens": prompt_tokens,
        "secrets": secrets,
    }
    if endpoint.kind == "tgi":
        if client is not None and not isinstance(client, AsyncInferenceClient):
            raise InvalidParameterError("client", type(client).__name__, "an AsyncInferenceClient for a tgi endpoint")
        return await stream_tgi(endpoint, request, client=client, **common)
    if client is not None and not isinstance(client, openai.AsyncOpenAI):
        raise InvalidParameterError("client", type(client).__name__, f"an AsyncOpenAI for a {endpoint.kind} endpoint")
    return await stream_openai(endpoint, request, client=client, **common)


def make_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> openai.AsyncOpenAI | AsyncInferenceClient:
    """The reusable client :func:`stream_chat` uses for ``endpoint.kind``; close it with ``await client.close()``."""
    if endpoint.kind == "tgi":
        return tgi_client(endpoint, timeout_s=timeout_s, secrets=secrets)
    return openai_client(endpoint, timeout_s=timeout_s, secrets=secrets)
