"""The ``openai`` SDK backend: Live Compare's client for vLLM, SGLang, llama.cpp and other OpenAI-compatible servers.

The body is the :class:`~planner.serving.requests.WireRequest`'s, posted with the SDK's own request method
(``AsyncOpenAI.post(..., stream=True, stream_cls=AsyncStream[...])``), so the SDK adds nothing to it and drops
nothing from it (its typed ``chat.completions.create`` would need engine fields split off into ``extra_body``).
Chunks come back as the SDK's pydantic models (``ChatCompletionChunk``, ``Completion``), whose ``model_extra``
keeps unknown fields such as ``reasoning_content``.

Retries are off (the SDK retries twice by default, which hides failures and inflates latency) and every timeout
is explicit. openai 3.x runs on the ``httpx2`` package: the send time is stamped in an ``httpx2`` request hook
(when the request reaches the transport, after the SDK built it), the first byte in a response hook, which also
watches the body for ``[DONE]`` (:func:`~planner.serving.backends.base.watch_for_done`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx2
import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from planner.errors import IdleTimeoutError
from planner.serving.backends.base import (
    Backend,
    body_message,
    items_within,
    transport_failure,
    watch_for_done,
)
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.requests import WireRequest
from planner.serving.streaming import StreamRecorder

__all__ = ["OpenAISDK", "openai_client"]

# Recorders of in-flight requests by request id, so a shared client's hooks can stamp them.
_IN_FLIGHT: dict[str, StreamRecorder] = {}
_IDS = itertools.count()
_ID_HEADER = "x-planner-request-id"


async def _sent_hook(request: httpx2.Request) -> None:
    recorder = _IN_FLIGHT.get(request.headers.get(_ID_HEADER, ""))
    if recorder is not None:
        recorder.sent(time.perf_counter())


async def _first_byte_hook(response: httpx2.Response) -> None:
    recorder = _IN_FLIGHT.get(response.request.headers.get(_ID_HEADER, ""))
    if recorder is not None:
        recorder.first_byte(time.perf_counter(), http_status=response.status_code)
        watch_for_done(response, recorder)


def openai_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> openai.AsyncOpenAI:
    """An ``openai.AsyncOpenAI`` for ``endpoint`` to reuse across requests (one connection pool, no TLS redo).

    Retries are off (``max_retries=0``), every timeout is ``timeout_s``, redirects are not followed (a redirect
    could send the request and its key to an address the endpoint list never named), and its ``httpx2`` client
    carries the hooks that stamp each request's send time and first byte. Close it with ``await client.close()``.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    timeout = httpx2.Timeout(timeout_s)
    http = httpx2.AsyncClient(
        timeout=timeout,
        follow_redirects=False,
        event_hooks={"request": [_sent_hook], "response": [_first_byte_hook]},
    )
    return openai.AsyncOpenAI(
        base_url=endpoint.openai_base_url,
        api_key=api_key(endpoint, secrets) or "EMPTY",
        max_retries=0,
        timeout=timeout,
        http_client=http,
    )


class OpenAISDK(Backend):
    """Streams the OpenAI routes (``chat``, ``completions``) through ``openai.AsyncOpenAI``."""

    name: ClassVar[str] = "openai"
    kinds: ClassVar[tuple[str, ...]] = ("vllm", "sglang", "llamacpp", "openai", "tgi")
    routes: ClassVar[tuple[str, ...]] = ("chat", "completions")

    def make_client(
        self, endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None
    ) -> openai.AsyncOpenAI:
        return openai_client(endpoint, timeout_s=timeout_s, secrets=secrets)

    def owns(self, client: Any) -> bool:
        return isinstance(client, openai.AsyncOpenAI)

    async def send(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        recorder: StreamRecorder,
        *,
        client: openai.AsyncOpenAI,
        timeout_s: float,
    ) -> None:
        url = endpoint.openai_base_url
        chat = wire.route == "chat"
        request_id = f"{endpoint.name}-{next(_IDS)}"
        _IN_FLIGHT[request_id] = recorder
        try:
            stream = await client.post(
                wire.path.removeprefix("/v1"),
                cast_to=ChatCompletion if chat else Completion,
                body=dict(wire.body),
                options={"headers": {_ID_HEADER: request_id}},
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk if chat else Completion],
            )
            async with stream:
                async for chunk in items_within(stream, timeout_s):
                    recorder.payload(chunk.model_dump(), time.perf_counter())
            recorder.eof()
        except IdleTimeoutError:
            recorder.fail("timeout", f"no stream data within {timeout_s:g} s from {url}")
        except openai.APIStatusError as exc:
            message = body_message(exc.response.text if exc.response is not None else exc.body) or str(exc)
            recorder.fail("http", f"HTTP {exc.status_code}: {message}", http_status=exc.status_code)
        except openai.APITimeoutError:
            recorder.fail("timeout", f"no response within {timeout_s:g} s from {url}")
        except openai.APIConnectionError as exc:
            transport_failure(recorder, url, exc.__cause__ or exc)
        except openai.APIError as exc:  # in-stream error payload (the SDK raises on it)
            body = exc.body if isinstance(exc.body, Mapping) else {}
            status = body.get("http_status_code") or body.get("code")
            recorder.fail(
                "in_stream",
                body_message({"error": exc.body}) or exc.message,
                http_status=status if isinstance(status, int) else None,
            )
        except ValueError as exc:  # a payload that is not JSON
            recorder.fail("in_stream", f"malformed stream payload: {exc}")
        finally:
            _IN_FLIGHT.pop(request_id, None)
