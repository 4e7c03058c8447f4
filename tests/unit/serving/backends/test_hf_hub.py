"""planner.serving.backends.hf_hub: huggingface_hub's ``AsyncInferenceClient`` recorded, its session on an in-memory
transport (``httpx2``'s ``MockTransport``: no socket). Against the TGI stand-in:
tests/integration/serving/test_clients_tgi.py."""

from __future__ import annotations

import asyncio
import json

import httpx2

from planner.serving.backends.hf_hub import HuggingFaceHub, tgi_client
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest, build_request
from planner.serving.streaming import StreamRecorder
from tests.unit.serving.backends.streams import CHAT, MODEL, TGI_NATIVE

ENDPOINT = Endpoint("t", "tgi", "http://tgi.test", model=MODEL)


def _send(handler, route: str = "chat", request: ChatRequest | None = None):
    seen: list[httpx2.Request] = []

    def transport(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        return handler(req)

    async def main():
        client = tgi_client(ENDPOINT, timeout_s=5)
        client._async_client = httpx2.AsyncClient(  # the session huggingface_hub would open, in memory
            transport=httpx2.MockTransport(transport),
            event_hooks={"request": [], "response": []},
            follow_redirects=True,
        )
        recorder = StreamRecorder(ENDPOINT.name, model=MODEL)
        wire = build_request("tgi", request or ChatRequest("hi", max_tokens=4, seed=7), model=MODEL, route=route)
        await HuggingFaceHub().send(ENDPOINT, wire, recorder, client=client, timeout_s=5)
        redirects = client._async_client.follow_redirects
        await client.close()
        return recorder.record(), seen, redirects

    return asyncio.run(main())


def _stream(body: bytes):
    return lambda _: httpx2.Response(200, content=body, headers={"Content-Type": "text/event-stream"})


def test_chat_stream_with_the_wire_bodys_fields() -> None:
    record, seen, redirects = _send(_stream(CHAT))
    (request,) = seen
    assert request.url == "http://tgi.test/v1/chat/completions"
    body = json.loads(request.content)
    assert (body["messages"], body["max_tokens"], body["seed"], body["stream"]) == (
        [{"role": "user", "content": "hi"}],
        4,
        7,
        True,
    )
    assert record.ok and record.text == "t1 t2 t3 t4 " and record.output_tokens == 4
    assert redirects is False  # switched off on the session before the request went out


def test_native_stream_one_token_per_event() -> None:
    record, seen, _ = _send(_stream(TGI_NATIVE), route="generate_stream")
    (request,) = seen
    body = json.loads(request.content)
    assert request.url == "http://tgi.test" and body["inputs"] and body["parameters"]["details"] is True
    assert record.ok and record.text == "t1 t2 t3 " and [c.n_tokens for c in record.chunks] == [1, 1, 1]
    assert (record.output_tokens, record.finish_reason) == (3, "length")


def test_an_http_422_is_an_http_failure_with_tgis_message() -> None:
    def invalid(_):
        body = {"error": "Input validation error: `inputs` must have less than 4096 tokens", "error_type": "validation"}
        return httpx2.Response(422, json=body)

    record, _, _ = _send(invalid)
    assert (record.ok, record.error_kind, record.http_status) == (False, "http", 422)
    assert record.error == "HTTP 422: Input validation error: `inputs` must have less than 4096 tokens"


def test_a_refused_connection_is_connect() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    record, _, _ = _send(refuse)
    assert (record.ok, record.error_kind) == (False, "connect")
    assert record.error == "cannot connect to http://tgi.test: [Errno 111] Connection refused"
