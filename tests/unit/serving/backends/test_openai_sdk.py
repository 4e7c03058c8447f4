"""planner.serving.backends.openai_sdk: the openai SDK's stream recorded, on an in-memory transport (``httpx2``'s
``MockTransport``: no socket). The same SDK against real servers: tests/integration/serving/test_clients.py."""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest

from planner.serving.backends import openai_sdk
from planner.serving.backends.openai_sdk import OpenAISDK, openai_client
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest, build_request
from planner.serving.streaming import StreamRecorder
from tests.unit.serving.backends.streams import CHAT, CONTEXT_400, CUT, IN_STREAM_ERROR, MODEL

ENDPOINT = Endpoint("v", "vllm", "http://vllm.test", model=MODEL)


REQUEST = ChatRequest("hi", max_tokens=4)


def _send(handler, request: ChatRequest = REQUEST):
    """Send ``request`` through the backend on a client whose transport is ``handler``; the record and the requests
    the transport saw."""
    seen: list[httpx2.Request] = []

    def transport(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        return handler(req)

    async def main():
        http = httpx2.AsyncClient(
            transport=httpx2.MockTransport(transport),
            event_hooks={"request": [openai_sdk._sent_hook], "response": [openai_sdk._first_byte_hook]},
        )
        client = openai.AsyncOpenAI(base_url=ENDPOINT.openai_base_url, api_key="EMPTY", max_retries=0, http_client=http)
        recorder = StreamRecorder(ENDPOINT.name, model=MODEL)
        wire = build_request("vllm", request, model=MODEL)
        await OpenAISDK().send(ENDPOINT, wire, recorder, client=client, timeout_s=5)
        await client.close()
        return recorder.record()

    return asyncio.run(main()), seen


def _stream(body: bytes, status: int = 200):
    return lambda _: httpx2.Response(status, content=body, headers={"Content-Type": "text/event-stream"})


def test_a_chat_stream_becomes_one_record() -> None:
    record, seen = _send(_stream(CHAT))
    (request,) = seen
    assert request.url == "http://vllm.test/v1/chat/completions" and request.method == "POST"
    assert record.ok and record.text == "t1 t2 t3 t4 " and record.finish_reason == "length"
    assert [c.n_tokens for c in record.chunks] == [1, 2, 1]  # from continuous_usage_stats deltas
    assert (record.output_tokens, record.output_tokens_source, record.prompt_tokens) == (4, "usage", 12)
    assert record.http_status == 200 and 0 <= record.first_byte_s <= record.first_token_s <= record.end_s
    assert openai_sdk._IN_FLIGHT == {}  # the hooks' table is emptied after each request


def test_an_http_error_keeps_the_servers_message() -> None:
    record, _ = _send(lambda _: httpx2.Response(400, json=CONTEXT_400))
    assert (record.ok, record.error_kind, record.http_status) == (False, "http", 400)
    assert record.error == "HTTP 400: This model's maximum context length is 4096 tokens. (BadRequestError)"


def test_an_in_stream_error_fails_the_request_with_what_came_before() -> None:
    record, _ = _send(_stream(IN_STREAM_ERROR))
    assert (record.ok, record.error_kind, record.http_status, record.partial) == (False, "in_stream", 500, True)
    assert record.error == "Engine core hit an error: CUDA out of memory (InternalServerError)"
    assert record.text == "t1 "


def test_a_refused_connection_is_connect() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    record, _ = _send(refuse)
    assert (record.ok, record.error_kind) == (False, "connect")
    assert record.error == "cannot connect to http://vllm.test/v1: [Errno 111] Connection refused"


def test_a_body_that_ends_without_done_or_finish_is_cut() -> None:
    record, _ = _send(_stream(CUT))
    assert (record.ok, record.error_kind, record.text, record.partial) == (False, "cut", "t1 ", True)


def test_the_client_never_retries_nor_follows_redirects(monkeypatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    client = openai_client(Endpoint("v", "vllm", "http://vllm.test", api_key_env="MY_KEY"), timeout_s=7)
    assert (client.max_retries, client.api_key, str(client.base_url)) == (0, "secret", "http://vllm.test/v1/")
    assert client.timeout.read == 7 and client._client.follow_redirects is False
    assert client._client.event_hooks["request"] == [openai_sdk._sent_hook]
    asyncio.run(client.close())
    with pytest.raises(Exception, match="NO_SUCH_KEY"):
        openai_client(Endpoint("v", "vllm", "http://vllm.test", api_key_env="NO_SUCH_KEY"), timeout_s=7)
