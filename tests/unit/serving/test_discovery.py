"""planner.serving.discovery on an in-memory transport (``httpx2.MockTransport``, no socket): what each kind is asked,
what its answers become, one-line errors, and the tokenizer routes. Against real servers:
tests/integration/serving/test_discovery.py.

The answers are the servers' own shapes: vLLM's ``/v1/models`` lists ``max_model_len``
(``vllm/entrypoints/openai/protocol.py`` ``ModelCard``), TGI's ``/info`` ``max_total_tokens`` and ``max_input_tokens``
(tests/servers/tgi_reference/openapi.json ``Info``), a tokenizer's ``{"count", "max_model_len", "tokens"}`` (vLLM)
or ``[{"id", "text", ...}]`` (TGI).
"""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from planner.errors import PlannerError
from planner.serving import discovery
from planner.serving.discovery import (
    EndpointInfo,
    count_prompt_tokens,
    describe_error,
    discover_sync,
    recount_output_tokens,
    status_error,
    tokenize_text,
)
from planner.serving.endpoints import Endpoint
from planner.serving.streaming import RequestRecord, TokenChunk

MODELS = {"object": "list", "data": [{"id": "m-8b", "object": "model", "max_model_len": 8192},
                                     {"id": "m-70b", "object": "model", "max_model_len": 32768}]}  # fmt: skip
TGI_INFO = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "max_input_tokens": 4095, "max_total_tokens": 4096,
            "version": "3.3.6"}  # fmt: skip


@pytest.fixture
def routes(monkeypatch):
    """``routes[(method, path)] = (status, json body)``; every request the client made is in ``routes.seen``."""

    class Routes(dict):
        seen: list[httpx2.Request]

    table = Routes()
    table.seen = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        table.seen.append(request)
        answer = table.get((request.method, request.url.path))
        if isinstance(answer, Exception):
            raise answer
        if answer is None:
            return httpx2.Response(404, json={"detail": "Not Found"})
        status, body = answer
        return httpx2.Response(status, json=body)

    real = httpx2.AsyncClient
    monkeypatch.setattr(
        discovery.httpx2, "AsyncClient", lambda **kw: real(transport=httpx2.MockTransport(handler), **kw)
    )
    return table


def test_vllm_health_models_and_version(routes) -> None:
    routes.update({("GET", "/health"): (200, None), ("GET", "/v1/models"): (200, MODELS),
                   ("GET", "/version"): (200, {"version": "0.24.0"})})  # fmt: skip
    info = discover_sync(Endpoint("v", "vllm", "http://v.test"))
    assert info == EndpointInfo("v", "vllm", healthy=True, model="m-8b", models=("m-8b", "m-70b"),
                                max_model_len_tokens=8192, version="0.24.0")  # fmt: skip
    assert [r.url.path for r in routes.seen] == ["/health", "/v1/models", "/version"]
    chosen = discover_sync(Endpoint("v", "vllm", "http://v.test", model="m-70b"))
    assert (chosen.model, chosen.max_model_len_tokens) == ("m-70b", 32768)  # the named model's own limit


def test_tgi_info(routes) -> None:
    routes.update({("GET", "/health"): (200, None), ("GET", "/info"): (200, TGI_INFO)})
    info = discover_sync(Endpoint("t", "tgi", "http://t.test"))
    assert (info.healthy, info.model, info.models, info.version) == (
        True,
        "meta-llama/Llama-3.1-8B-Instruct",
        ("meta-llama/Llama-3.1-8B-Instruct",),
        "3.3.6",
    )
    assert (info.max_model_len_tokens, info.max_input_tokens) == (4096, 4095)


def test_openai_kinds_ask_models_only_and_send_the_key(routes, monkeypatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-1")
    routes.update({("GET", "/v1/models"): (200, MODELS)})
    info = discover_sync(Endpoint("o", "openai", "http://o.test", api_key_env="MY_KEY"))
    assert info.healthy and info.version is None and [r.url.path for r in routes.seen] == ["/v1/models"]
    assert routes.seen[0].headers["authorization"] == "Bearer sk-1"


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        ({("GET", "/health"): (503, {"error": {"message": "loading"}})}, "HTTP 503 from http://v.test/health: loading"),
        ({("GET", "/health"): (200, None), ("GET", "/v1/models"): (200, {"data": []})},
         "http://v.test/v1/models lists no model"),
        ({("GET", "/health"): (200, None)}, "HTTP 404 from http://v.test/v1/models"),
    ],
)  # fmt: skip
def test_unhealthy_answers_are_one_line(routes, answers, error) -> None:
    routes.update(answers)
    info = discover_sync(Endpoint("v", "vllm", "http://v.test"))
    assert (info.healthy, info.error) == (False, error)


def test_transport_errors_are_one_line(routes) -> None:
    request = httpx2.Request("GET", "http://v.test/health")
    routes[("GET", "/health")] = httpx2.ConnectError("[Errno 111] Connection refused", request=request)
    info = discover_sync(Endpoint("v", "vllm", "http://v.test"))
    assert info.error == "cannot connect to http://v.test/health: [Errno 111] Connection refused"
    assert describe_error(httpx2.ReadTimeout("x", request=request), "http://v.test/health") == (
        "timed out: http://v.test/health"
    )


def test_status_error_reads_the_servers_message() -> None:
    assert status_error("u", 400, {"error": {"message": "bad\nrequest"}}) == "HTTP 400 from u: bad request"
    assert status_error("u", 422, {"error": "Input validation error"}) == "HTTP 422 from u: Input validation error"
    assert status_error("u", 500, {"message": "flat"}) == "HTTP 500 from u: flat"
    assert status_error("u", 502, "Bad Gateway") == "HTTP 502 from u: Bad Gateway"
    assert status_error("u", 404, None) == "HTTP 404 from u"


def test_discover_sync_refuses_a_running_loop() -> None:
    async def inside() -> None:
        discover_sync(Endpoint("v", "vllm", "http://v.test"))

    with pytest.raises(PlannerError, match="await discover"):
        asyncio.run(inside())


VLLM = Endpoint("v", "vllm", "http://v.test")
VLLM_INFO = EndpointInfo("v", "vllm", healthy=True, model="m-8b")


def test_vllm_counts_chat_tokens_with_its_template(routes) -> None:
    routes[("POST", "/tokenize")] = (200, {"count": 30, "max_model_len": 8192, "tokens": list(range(30))})
    messages = [{"role": "user", "content": "hello"}]
    assert asyncio.run(count_prompt_tokens(VLLM, VLLM_INFO, messages)) == 30
    assert json.loads(routes.seen[0].content) == {"model": "m-8b", "messages": messages}
    assert asyncio.run(tokenize_text(VLLM, VLLM_INFO, "hello")) == tuple(range(30))
    assert json.loads(routes.seen[1].content) == {"model": "m-8b", "prompt": "hello", "add_special_tokens": False}


def test_tgi_chat_tokenize_then_plain_tokenize(routes) -> None:
    tgi, info = Endpoint("t", "tgi", "http://t.test"), EndpointInfo("t", "tgi", healthy=True, model="m")
    routes[("POST", "/chat_tokenize")] = (200, {"tokenize_response": [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]})
    assert asyncio.run(count_prompt_tokens(tgi, info, [{"role": "user", "content": "ab"}])) == 2
    del routes[("POST", "/chat_tokenize")]
    routes[("POST", "/tokenize")] = (200, [{"id": 5, "text": "a"}, {"id": 6, "text": "b"}, {"id": 7, "text": "c"}])
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    # no chat template route: the messages' text joined, "s\nu", counted without a template (or nothing when asked)
    assert asyncio.run(count_prompt_tokens(tgi, info, messages)) == 3
    assert json.loads(routes.seen[-1].content) == {"inputs": "s\nu"}
    assert asyncio.run(count_prompt_tokens(tgi, info, messages, template=True)) is None


def test_no_tokenizer_for_other_kinds_or_failures(routes) -> None:
    openai = Endpoint("o", "openai", "http://o.test")
    assert asyncio.run(tokenize_text(openai, EndpointInfo("o", "openai", healthy=True), "x")) is None
    assert asyncio.run(tokenize_text(VLLM, EndpointInfo("v", "vllm", healthy=False), "x")) is None
    assert asyncio.run(tokenize_text(VLLM, VLLM_INFO, "x")) is None  # 404
    assert routes.seen[-1].url.path == "/tokenize"


def test_recount_only_the_estimated_answers_once_per_text(routes) -> None:
    routes[("POST", "/tokenize")] = (200, {"tokens": [1, 2, 3]})

    def record(text: str, source: str, ok: bool = True) -> RequestRecord:
        return RequestRecord("v", ok=ok, chunks=(TokenChunk(0.1, text, None, "content"),), output_tokens=1,
                             output_tokens_source=source)  # fmt: skip

    failed = record("y", "estimate", ok=False)
    records = [record("a b c", "estimate"), record("a b c", "estimate"), record("x", "usage"), failed]
    out = asyncio.run(recount_output_tokens(VLLM, VLLM_INFO, records))
    assert [(r.output_tokens, r.output_tokens_source) for r in out] == [(3, "tokenizer"), (3, "tokenizer"),
                                                                        (1, "usage"), (1, "estimate")]  # fmt: skip
    assert len(routes.seen) == 1  # one distinct text, counted once
