"""The ``huggingface_hub`` backend: Live Compare's client for TGI, on its Messages API or its native stream.

``chat`` goes through ``AsyncInferenceClient.chat_completion(stream=True)``, ``generate_stream`` through
``text_generation(stream=True, details=True)`` posted to the server root. The client builds its own payload from
keyword arguments, so each field of the :class:`~planner.serving.requests.WireRequest` body is handed to the
keyword of the same meaning (and anything else through ``extra_body`` on the chat route); the recording-server
tests check that the server receives the wire body's fields.

The client's ``httpx2`` session is opened before the clock starts (opening it costs tens of milliseconds, a TLS
context, that would land in TTFT), redirects are switched off on it, the send time is stamped in its request
hook, and its response hook watches the body for ``[DONE]`` (:func:`~planner.serving.backends.base.watch_for_done`).
Requests on one client run one at a time (Live Compare sends an endpoint's repeats in turn), so the hooks serve the
request in flight.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx2
from huggingface_hub import AsyncInferenceClient
from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError, TextGenerationError

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
from planner.serving.streaming import StreamRecorder, one_line

__all__ = ["HuggingFaceHub", "tgi_client"]

#: Chat body fields that ``chat_completion`` takes as keywords of the same name; the rest go in ``extra_body``.
_CHAT_KEYWORDS = ("model", "stream_options", "max_tokens", "temperature", "top_p", "stop", "seed")
#: ``/generate_stream`` parameters that ``text_generation`` takes as keywords of the same name.
_NATIVE_KEYWORDS = ("max_new_tokens", "temperature", "top_p", "stop", "seed", "details")


def tgi_client(
    endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None = None
) -> AsyncInferenceClient:
    """A ``huggingface_hub.AsyncInferenceClient`` for ``endpoint`` to reuse across requests.

    Close it with ``await client.close()``.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
    """
    return AsyncInferenceClient(base_url=endpoint.base_url, api_key=api_key(endpoint, secrets), timeout=timeout_s)


def _plain(obj: Any) -> Any:
    """A huggingface_hub output object as plain data, keeping unknown keys (e.g. ``reasoning_content``)."""
    if isinstance(obj, dict):
        extra = {k: v for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("_")}
        return {k: _plain(v) for k, v in {**obj, **extra}.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


class HuggingFaceHub(Backend):
    """Streams TGI's ``chat`` and ``generate_stream`` routes through ``huggingface_hub.AsyncInferenceClient``."""

    name: ClassVar[str] = "huggingface_hub"
    kinds: ClassVar[tuple[str, ...]] = ("tgi", "vllm", "sglang", "llamacpp", "openai")  # chat: any; native: TGI
    routes: ClassVar[tuple[str, ...]] = ("chat", "generate_stream")

    def make_client(
        self, endpoint: Endpoint, *, timeout_s: float, secrets: Mapping[str, Any] | None
    ) -> AsyncInferenceClient:
        return tgi_client(endpoint, timeout_s=timeout_s, secrets=secrets)

    def owns(self, client: Any) -> bool:
        return isinstance(client, AsyncInferenceClient)

    async def _open(self, client: AsyncInferenceClient, recorder: StreamRecorder) -> None:
        opener = getattr(client, "_get_async_client", None)  # private API, guarded: see the module docstring
        session = await opener() if opener is not None else None
        if session is not None and hasattr(session, "follow_redirects"):
            session.follow_redirects = False
        hooks = getattr(session, "event_hooks", None)
        if isinstance(hooks, dict):

            async def _sent(_request: Any, recorder: StreamRecorder = recorder) -> None:
                recorder.sent(time.perf_counter())

            async def _head(response: httpx2.Response, recorder: StreamRecorder = recorder) -> None:
                watch_for_done(response, recorder)

            hooks["request"] = [_sent]
            # keep huggingface_hub's own response hook (it reads an error body before raising); replace ours
            theirs = [hook for hook in hooks.get("response", ()) if getattr(hook, "__module__", None) != __name__]
            hooks["response"] = [*theirs, _head]

    async def send(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        recorder: StreamRecorder,
        *,
        client: AsyncInferenceClient,
        timeout_s: float,
    ) -> None:
        url = endpoint.base_url
        await self._open(client, recorder)
        recorder.sent()
        body = dict(wire.body)
        try:
            if wire.route == "generate_stream":
                params = dict(body["parameters"])
                stream = await client.text_generation(
                    body["inputs"], stream=True, **{k: params[k] for k in _NATIVE_KEYWORDS if k in params}
                )
            else:
                keywords = {k: body[k] for k in _CHAT_KEYWORDS if k in body}
                extra = {k: v for k, v in body.items() if k not in (*_CHAT_KEYWORDS, "messages", "stream")}
                stream = await client.chat_completion(
                    body["messages"], stream=True, extra_body=extra or None, **keywords
                )
            recorder.first_byte(time.perf_counter(), http_status=200)
            async for item in items_within(stream, timeout_s):
                if recorder.payload(_plain(item), time.perf_counter()).ends_stream:
                    break
            recorder.eof()
        except IdleTimeoutError:
            recorder.fail("timeout", f"no stream data within {timeout_s:g} s from {url}")
        except TextGenerationError as exc:
            if isinstance(exc.__cause__, HfHubHTTPError):
                # huggingface_hub turns an HTTP 422 (and other validation answers) into a TextGenerationError
                # subclass; it is an HTTP failure, not an in-stream one.
                self._http_failure(recorder, exc.__cause__, exc)
                return
            detail = exc.args[0] if exc.args else ""
            if isinstance(detail, Mapping):  # OpenAI-style {"error": {...}} (vLLM, TGI chat)
                status = detail.get("http_status_code") or detail.get("code")
                recorder.fail(
                    "in_stream",
                    body_message({"error": detail}),
                    http_status=status if isinstance(status, int) else None,
                )
            else:
                recorder.fail("in_stream", one_line(detail) or type(exc).__name__, error_type=type(exc).__name__)
        except HfHubHTTPError as exc:
            self._http_failure(recorder, exc, exc)
        except (InferenceTimeoutError, httpx2.TimeoutException):
            recorder.fail("timeout", f"no response within {timeout_s:g} s from {url}")
        except httpx2.TransportError as exc:
            transport_failure(recorder, url, exc.__cause__ or exc)
        except ValueError as exc:
            recorder.fail("in_stream", f"malformed stream payload: {exc}")

    @staticmethod
    def _http_failure(recorder: StreamRecorder, error: HfHubHTTPError, shown: Exception) -> None:
        status = error.response.status_code if error.response is not None else None
        body = body_message(error.response.text) if error.response is not None else ""
        recorder.fail("http", f"HTTP {status}: {body or one_line(shown)}", http_status=status)
