"""Ask an endpoint what it serves: health, model id, context limit, version.

Routes per server kind (``shared/reference/protocols.md`` §1.3, §2.3, §4):

* vLLM / SGLang: ``GET /health`` (200 empty body), ``GET /v1/models`` (``data[0].id``, ``max_model_len``),
  ``GET /version`` (``{"version": ...}``).
* TGI: ``GET /health``, ``GET /info`` (``model_id``, ``max_input_tokens``, ``max_total_tokens``, ``version``).
* llama-cpp-python and generic OpenAI-compatible servers: ``GET /v1/models`` only (no context limit there).

:func:`discover` never raises for endpoint failures: they end up in :attr:`EndpointInfo.error`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from planner.errors import PlannerError
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.streaming import one_line

__all__ = ["EndpointInfo", "count_prompt_tokens", "discover", "discover_sync"]


@dataclass(frozen=True)
class EndpointInfo:
    """What an endpoint reported about itself.

    Attributes:
        endpoint: Endpoint name.
        kind: Endpoint kind.
        healthy: The server answered its health (or models) route with 200.
        model: Served model id (the endpoint's own ``model`` when set, else the first one the server lists).
        models: Every model id the server lists.
        max_model_len_tokens: Context limit (prompt + output) in tokens: vLLM ``max_model_len`` or TGI
            ``max_total_tokens``; None when the server does not say.
        max_input_tokens: TGI ``max_input_tokens`` (prompt limit); None elsewhere.
        version: Server version string; None when not reported.
        error: One-line reason the endpoint is unusable; None when it is healthy.
    """

    endpoint: str
    kind: str
    healthy: bool
    model: str | None = None
    models: tuple[str, ...] = ()
    max_model_len_tokens: int | None = None
    max_input_tokens: int | None = None
    version: str | None = None
    error: str | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _describe(exc: Exception, url: str) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out: {url}"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}: {one_line(exc) or 'connection refused'}"
    return one_line(f"{url}: {type(exc).__name__}: {exc}")


async def _get(client: httpx.AsyncClient, url: str) -> tuple[int, Any]:
    response = await client.get(url)
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = response.text
    return response.status_code, body


def _status_error(url: str, status: int, body: Any) -> str:
    detail = ""
    if isinstance(body, Mapping):
        err = body.get("error")
        detail = err.get("message", "") if isinstance(err, Mapping) else (err or body.get("message") or "")
    elif isinstance(body, str):
        detail = body
    return one_line(f"HTTP {status} from {url}" + (f": {detail}" if detail else ""))


async def discover(
    endpoint: Endpoint, timeout_s: float = 5.0, *, secrets: Mapping[str, Any] | None = None
) -> EndpointInfo:
    """Query ``endpoint`` for its health, model, context limit and version.

    Args:
        endpoint: The endpoint.
        timeout_s: Connect/read timeout of each HTTP call, seconds.
        secrets: Optional mapping holding the API key (see :func:`planner.serving.endpoints.api_key`).

    Returns:
        The :class:`EndpointInfo`; ``healthy=False`` with a one-line ``error`` when the server cannot be reached,
        answers with an error status, or lists no model.

    Raises:
        MissingAPIKeyError: the endpoint names an API-key variable that is not set.
    """
    key = api_key(endpoint, secrets)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    base = endpoint.base_url
    info: dict[str, Any] = {"endpoint": endpoint.name, "kind": endpoint.kind, "healthy": False}
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers) as client:
        url = base
        try:
            if endpoint.kind in ("vllm", "sglang", "tgi"):
                url = f"{base}/health"
                status, body = await _get(client, url)
                if status != 200:
                    return EndpointInfo(**info, error=_status_error(url, status, body))
            if endpoint.kind == "tgi":
                url = f"{base}/info"
                status, body = await _get(client, url)
                if status != 200 or not isinstance(body, Mapping):
                    return EndpointInfo(**info, error=_status_error(url, status, body))
                model_id = body.get("model_id") if isinstance(body.get("model_id"), str) else None
                return EndpointInfo(
                    **{**info, "healthy": True},
                    model=endpoint.model or model_id,
                    models=(model_id,) if model_id else (),
                    max_model_len_tokens=_int(body.get("max_total_tokens")),
                    max_input_tokens=_int(body.get("max_input_tokens")),
                    version=body.get("version") if isinstance(body.get("version"), str) else None,
                )
            url = f"{base}/v1/models"
            status, body = await _get(client, url)
            if status != 200 or not isinstance(body, Mapping):
                return EndpointInfo(**info, error=_status_error(url, status, body))
            data = [m for m in body.get("data") or [] if isinstance(m, Mapping) and isinstance(m.get("id"), str)]
            models = tuple(m["id"] for m in data)
            chosen = endpoint.model or (models[0] if models else None)
            entry = next((m for m in data if m["id"] == chosen), data[0] if data else {})
            version = None
            if endpoint.kind in ("vllm", "sglang"):
                url = f"{base}/version"
                try:
                    v_status, v_body = await _get(client, url)
                    if v_status == 200 and isinstance(v_body, Mapping) and isinstance(v_body.get("version"), str):
                        version = v_body["version"]
                except httpx.HTTPError:
                    version = None
            if chosen is None:
                return EndpointInfo(**info, version=version, error=f"{base}/v1/models lists no model")
            return EndpointInfo(
                **{**info, "healthy": True},
                model=chosen,
                models=models,
                max_model_len_tokens=_int(entry.get("max_model_len")),
                version=version,
            )
        except httpx.HTTPError as exc:
            return EndpointInfo(**info, error=_describe(exc, url))


async def count_prompt_tokens(
    endpoint: Endpoint,
    info: EndpointInfo,
    messages: list[dict[str, str]],
    *,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> int | None:
    """Prompt tokens as the server counts them, for the context check before sending; None when unknown.

    vLLM and SGLang: ``POST /tokenize`` with the chat ``messages`` (the chat template applied) → ``count``.
    TGI: ``POST /tokenize`` with the messages' text joined → the token list's length (no chat template:
    a slight undercount). llama-cpp-python: ``POST /extras/tokenize`` likewise. Other servers: None.
    Never raises for endpoint failures.
    """
    if not info.healthy or endpoint.kind not in ("vllm", "sglang", "tgi", "llamacpp"):
        return None
    key = api_key(endpoint, secrets)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    text = "\n".join(m["content"] for m in messages)
    if endpoint.kind in ("vllm", "sglang"):
        url, payload = f"{endpoint.base_url}/tokenize", {"model": info.model, "messages": messages}
    elif endpoint.kind == "tgi":
        url, payload = f"{endpoint.base_url}/tokenize", {"inputs": text}
    else:
        url, payload = f"{endpoint.base_url}/extras/tokenize", {"input": text}
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers) as client:
            response = await client.post(url, json=payload)
        body = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if isinstance(body, Mapping) and isinstance(body.get("count"), int):
        return body["count"]
    if isinstance(body, Mapping) and isinstance(body.get("tokens"), list):
        return len(body["tokens"])
    if isinstance(body, list):
        return len(body)
    return None


def discover_sync(
    endpoint: Endpoint, timeout_s: float = 5.0, *, secrets: Mapping[str, Any] | None = None
) -> EndpointInfo:
    """:func:`discover` for synchronous callers (runs its own event loop; not for use inside a running loop).

    Raises:
        PlannerError: called from inside a running event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(discover(endpoint, timeout_s, secrets=secrets))
    raise PlannerError("discover_sync cannot run inside an event loop; await discover() instead")
