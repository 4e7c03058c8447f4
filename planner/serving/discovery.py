"""Ask an endpoint what it serves: health, model id, context limit, version.

Routes per server kind (vLLM ``vllm/entrypoints/openai/api_server.py``; TGI ``docs/openapi.json``; SGLang
``python/sglang/srt/entrypoints/http_server.py``; llama-cpp-python ``llama_cpp/server/app.py``):

* vLLM / SGLang: ``GET /health`` (200 empty body), ``GET /v1/models`` (``data[0].id``, ``max_model_len``),
  ``GET /version`` (``{"version": ...}``).
* TGI: ``GET /health``, ``GET /info`` (``model_id``, ``max_input_tokens``, ``max_total_tokens``, ``version``).
* llama-cpp-python and generic OpenAI-compatible servers: ``GET /v1/models`` only (no context limit there).

:func:`discover` never raises for endpoint failures: they end up in :attr:`EndpointInfo.error`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx2

from planner.errors import PlannerError
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.streaming import RequestRecord, one_line

__all__ = [
    "EndpointInfo",
    "count_prompt_tokens",
    "describe_error",
    "discover",
    "discover_sync",
    "recount_output_tokens",
    "status_error",
    "tokenize_text",
]


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


def describe_error(exc: Exception, url: str) -> str:
    """One line for an ``httpx2`` failure on ``url``: ``timed out: <url>``, ``cannot connect to <url>: ...``, or the
    exception's type and text."""
    if isinstance(exc, httpx2.TimeoutException):
        return f"timed out: {url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect to {url}: {one_line(exc) or 'connection refused'}"
    return one_line(f"{url}: {type(exc).__name__}: {exc}")


async def _get(client: httpx2.AsyncClient, url: str) -> tuple[int, Any]:
    response = await client.get(url)
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = response.text
    return response.status_code, body


def status_error(url: str, status: int, body: Any) -> str:
    """One line for an error status on ``url``, with the server's own message from ``body`` when it has one."""
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
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), headers=headers) as client:
        url = base
        try:
            if endpoint.kind in ("vllm", "sglang", "tgi"):
                url = f"{base}/health"
                status, body = await _get(client, url)
                if status != 200:
                    return EndpointInfo(**info, error=status_error(url, status, body))
            if endpoint.kind == "tgi":
                url = f"{base}/info"
                status, body = await _get(client, url)
                if status != 200 or not isinstance(body, Mapping):
                    return EndpointInfo(**info, error=status_error(url, status, body))
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
                return EndpointInfo(**info, error=status_error(url, status, body))
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
                except httpx2.HTTPError:
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
        except httpx2.HTTPError as exc:
            return EndpointInfo(**info, error=describe_error(exc, url))


async def _tokenize(
    endpoint: Endpoint, url: str, payload: dict[str, Any], timeout_s: float, secrets: Mapping[str, Any] | None
) -> Any:
    """The JSON answer of a tokenizer route; None when it fails or is not JSON. Never raises for endpoint failures."""
    key = api_key(endpoint, secrets)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), headers=headers) as client:
            response = await client.post(url, json=payload)
        return response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None


def _token_list(body: Any) -> tuple[int, ...] | None:
    """Token ids of a tokenizer answer: vLLM/SGLang/llama.cpp ``{"tokens": [ids]}``, TGI ``[{"id": ...}, ...]``."""
    tokens = body.get("tokens") if isinstance(body, Mapping) else body
    if not isinstance(tokens, list):
        return None
    ids = [t.get("id") if isinstance(t, Mapping) else t for t in tokens]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return tuple(ids)
    return None


async def count_prompt_tokens(
    endpoint: Endpoint,
    info: EndpointInfo,
    messages: list[dict[str, str]],
    *,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
    template: bool = False,
) -> int | None:
    """Prompt tokens of a chat request as the server counts them, its chat template applied where it can be.

    vLLM and SGLang: ``POST /tokenize`` with the chat ``messages`` → ``count`` (``vllm/entrypoints/openai/
    protocol.py`` ``TokenizeChatRequest``: the chat template applied). TGI: ``POST /chat_tokenize`` with the
    messages → its ``tokenize_response`` (``docs/openapi.json``: "Template and tokenize ChatRequest"), else
    ``POST /tokenize`` with the messages' text joined (no template: a slight undercount). llama-cpp-python:
    ``POST /extras/tokenize`` with the text (no template). Other servers: None.

    Args:
        endpoint, info, messages: The endpoint, its discovery result, the chat messages.
        timeout_s: Timeout of each tokenizer call, seconds.
        secrets: Optional mapping holding the API key.
        template: Only a count with the chat template applied will do: None instead of a text-only count.

    Returns:
        The count; None when unknown. Never raises for endpoint failures.
    """
    if not info.healthy or endpoint.kind not in ("vllm", "sglang", "tgi", "llamacpp"):
        return None
    if endpoint.kind in ("vllm", "sglang"):
        payload = {"model": info.model, "messages": messages}
        body = await _tokenize(endpoint, f"{endpoint.base_url}/tokenize", payload, timeout_s, secrets)
        if isinstance(body, Mapping) and isinstance(body.get("count"), int):
            return body["count"]
        ids = _token_list(body)
        return None if ids is None else len(ids)
    if endpoint.kind == "tgi":
        payload = {"model": info.model or "tgi", "messages": messages}
        body = await _tokenize(endpoint, f"{endpoint.base_url}/chat_tokenize", payload, timeout_s, secrets)
        ids = _token_list(body.get("tokenize_response")) if isinstance(body, Mapping) else None
        if ids is not None:
            return len(ids)
    if template:
        return None
    text = "\n".join(m["content"] for m in messages)
    ids = await tokenize_text(endpoint, info, text, timeout_s=timeout_s, secrets=secrets)
    return None if ids is None else len(ids)


async def tokenize_text(
    endpoint: Endpoint,
    info: EndpointInfo,
    text: str,
    *,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> tuple[int, ...] | None:
    """The token ids of ``text`` alone (no chat template, no BOS) as the server's tokenizer gives them.

    vLLM and SGLang: ``POST /tokenize`` ``{"model", "prompt", "add_special_tokens": false}`` (``TokenizeCompletion
    Request``; ``vllm bench serve``'s random dataset counts its prompts the same way, without special tokens).
    TGI: ``POST /tokenize`` ``{"inputs"}`` (``docs/openapi.json``: a list of ``{"id", "text", ...}``).
    llama-cpp-python: ``POST /extras/tokenize`` ``{"input"}`` → ``{"tokens"}``. Other servers: None.

    Returns:
        The ids; None when the server has no tokenizer route or it failed. Never raises for endpoint failures.
    """
    if not info.healthy or endpoint.kind not in ("vllm", "sglang", "tgi", "llamacpp"):
        return None
    if endpoint.kind in ("vllm", "sglang"):
        url = f"{endpoint.base_url}/tokenize"
        payload: dict[str, Any] = {"model": info.model, "prompt": text, "add_special_tokens": False}
    elif endpoint.kind == "tgi":
        url, payload = f"{endpoint.base_url}/tokenize", {"inputs": text}
    else:
        url, payload = f"{endpoint.base_url}/extras/tokenize", {"input": text}
    return _token_list(await _tokenize(endpoint, url, payload, timeout_s, secrets))


async def recount_output_tokens(
    endpoint: Endpoint,
    info: EndpointInfo,
    records: Sequence[RequestRecord],
    *,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
    concurrency: int = 8,
) -> tuple[RequestRecord, ...]:
    """``records`` with each successful one whose output tokens are a chunk count (``output_tokens_source``
    ``estimate``: the stream carried no usage) counted again by the server's tokenizer route.

    The text counted is the answer as streamed (every token-bearing chunk's text in arrival order: reasoning, content,
    tool calls), without special tokens (:func:`tokenize_text`), as ``vllm bench serve`` counts output when usage is
    missing (``len(tokenizer(generated_text, add_special_tokens=False).input_ids)``). Call it after the timed requests
    have ended: the calls then cannot delay a measured stream. Each distinct text is counted once (at most
    ``concurrency`` calls at a time); the first failing call (no route, an error) ends the counting.

    Returns:
        The records in order; a recounted one has ``output_tokens`` from the tokenizer and ``output_tokens_source``
        ``tokenizer``, the others are unchanged. Never raises for endpoint failures.
    """
    texts = list(dict.fromkeys(_answer(r) for r in records if r.ok and r.output_tokens_source == "estimate"))
    if not texts:
        return tuple(records)
    first = await tokenize_text(endpoint, info, texts[0], timeout_s=timeout_s, secrets=secrets)
    if not first:
        return tuple(records)
    gate = asyncio.Semaphore(concurrency)

    async def count(text: str) -> int | None:
        async with gate:
            ids = await tokenize_text(endpoint, info, text, timeout_s=timeout_s, secrets=secrets)
        return len(ids) if ids else None

    counts = dict(zip(texts, [len(first), *await asyncio.gather(*(count(t) for t in texts[1:]))], strict=True))
    out = []
    for r in records:
        n = counts.get(_answer(r)) if r.ok and r.output_tokens_source == "estimate" else None
        out.append(r if n is None else replace(r, output_tokens=n, output_tokens_source="tokenizer"))
    return tuple(out)


def _answer(record: RequestRecord) -> str:
    return "".join(c.text for c in record.chunks)


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
