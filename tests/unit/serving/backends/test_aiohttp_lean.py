"""planner.serving.backends.aiohttp_lean: the load test's lean path with its ``aiohttp`` session replaced by one that
answers from memory (no socket): what it sends, how it reads the stream (split anywhere), its failures worded as the
SDK path words them, and the proxy route. Against real servers: tests/integration/serving/test_fast_stream.py."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from multidict import CIMultiDict

from planner.serving.backends.aiohttp_lean import KEEPALIVE_S, Aiohttp, FastClient, _cut_detail, fast_client
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest, build_request
from planner.serving.streaming import StreamRecorder
from tests.unit.serving.backends.streams import CHAT, CONTEXT_400, CUT, IN_STREAM_ERROR, MODEL, TGI_NATIVE

ENDPOINT = Endpoint("v", "vllm", "http://vllm.test", model=MODEL)


class Content:
    """``response.content``: ``readany`` hands the body out in pieces of ``size`` bytes, then ``b""``."""

    def __init__(self, body: bytes, size: int) -> None:
        self.pieces = [body[i : i + size] for i in range(0, len(body), size)]
        self.total_bytes = len(body)

    async def readany(self) -> bytes:
        await asyncio.sleep(0)
        return self.pieces.pop(0) if self.pieces else b""


class Response:
    def __init__(self, status: int, body: bytes, size: int, headers: dict[str, str] | None = None) -> None:
        self.status, self.body = status, body
        self.content = Content(body, size)
        self.headers = CIMultiDict(headers or {})

    async def read(self) -> bytes:
        return self.body


class Post:
    def __init__(self, answer) -> None:
        self.answer = answer

    async def __aenter__(self):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    async def __aexit__(self, *exc: object) -> None:
        return None


class Session:
    def __init__(self, answer) -> None:
        self.answer, self.posts = answer, []

    def post(self, url, **kwargs):
        self.posts.append((url, kwargs))
        return Post(self.answer)


def _send(answer, route: str = "chat", kind: str = "vllm"):
    client = fast_client(ENDPOINT, timeout_s=5)
    session = Session(answer)
    client.session = lambda: session  # type: ignore[method-assign]
    recorder = StreamRecorder(ENDPOINT.name, model=MODEL)
    wire = build_request(kind, ChatRequest("hi", max_tokens=4), model=MODEL, route=route)
    asyncio.run(Aiohttp().send(ENDPOINT, wire, recorder, client=client, timeout_s=5))
    return recorder.record(), session.posts


@pytest.mark.parametrize("size", [1, 7, 10_000])  # one byte at a time, mid-event splits, all at once
def test_a_chat_stream_read_in_any_pieces(size: int) -> None:
    record, posts = _send(Response(200, CHAT, size))
    assert record.ok and record.text == "t1 t2 t3 t4 " and [c.n_tokens for c in record.chunks] == [1, 2, 1]
    assert (record.output_tokens, record.finish_reason, record.http_status) == (4, "length", 200)
    ((url, kwargs),) = posts
    assert url == "http://vllm.test/v1/chat/completions" and kwargs["allow_redirects"] is False
    assert kwargs["headers"] == {"Authorization": "Bearer EMPTY"} and kwargs["proxy"] is None
    body = json.loads(kwargs["data"])
    assert (body["max_tokens"], body["stream"], body["stream_options"]) == (
        4,
        True,
        {"include_usage": True, "continuous_usage_stats": True},
    )


def test_tgi_native_events_without_a_space_or_done() -> None:
    record, posts = _send(Response(200, TGI_NATIVE, 13), route="generate_stream", kind="tgi")
    assert posts[0][0] == "http://vllm.test/generate_stream"
    assert record.ok and record.text == "t1 t2 t3 " and record.output_tokens == 3


def test_http_and_in_stream_errors() -> None:
    record, _ = _send(Response(400, json.dumps(CONTEXT_400).encode(), 100))
    assert (record.error_kind, record.http_status) == ("http", 400)
    assert record.error == "HTTP 400: This model's maximum context length is 4096 tokens. (BadRequestError)"
    record, _ = _send(Response(200, IN_STREAM_ERROR, 50))
    assert (record.error_kind, record.text) == ("in_stream", "t1 ")
    assert record.error == "Engine core hit an error: CUDA out of memory (InternalServerError)"
    record, _ = _send(Response(200, b"data: [1, 2]\n\n", 50))
    assert (record.error_kind, record.error) == ("in_stream", "malformed stream payload: expected a JSON object, "
                                                "got list")  # fmt: skip


def test_transport_failures_worded_as_the_sdk_path() -> None:
    record, _ = _send(Response(200, CUT, 50))
    assert (record.ok, record.error_kind, record.text) == (False, "cut", "t1 ")
    refused = aiohttp.ClientConnectorError(
        aiohttp.client_reqrep.ConnectionKey("vllm.test", 80, False, True, None, None, None),
        ConnectionRefusedError(111, "Connect call failed"),
    )
    record, _ = _send(refused)
    assert (record.error_kind, record.error) == ("connect", "cannot connect to http://vllm.test/v1: [Errno 111] "
                                                "Connect call failed")  # fmt: skip
    record, _ = _send(TimeoutError())
    assert (record.error_kind, record.error) == ("timeout", "no response within 5 s from http://vllm.test/v1")


def test_a_cut_body_reads_as_httpx2_words_it() -> None:
    exc = aiohttp.ClientPayloadError("Response payload is not completed")
    chunked = Response(200, b"", 1, {"Transfer-Encoding": "chunked"})
    assert str(_cut_detail(exc, chunked)) == (
        "peer closed connection without sending complete message body (incomplete chunked read)"
    )
    sized = Response(200, b"0123456789", 1, {"Content-Length": "100"})
    assert str(_cut_detail(exc, sized)) == (
        "peer closed connection without sending complete message body (received 10 bytes, expected 100)"
    )
    assert _cut_detail(exc, None) is exc
    assert _cut_detail(exc, Response(200, b"", 1, {"Content-Length": "100", "Content-Encoding": "gzip"})) is exc


def test_the_api_key_and_proxies(monkeypatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    keyed = fast_client(Endpoint("v", "vllm", "http://h", api_key_env="MY_KEY"), timeout_s=3)
    assert (keyed.authorization, keyed.timeout_s, KEEPALIVE_S) == ("Bearer secret", 3, 4.0)
    monkeypatch.setenv("http_proxy", "http://user:pw@proxy.test:3128")
    monkeypatch.setenv("https_proxy", "http://user:pw@proxy.test:3128")
    monkeypatch.setenv("no_proxy", "direct.test")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    client = FastClient(timeout_s=3, authorization="Bearer k")
    login = {"Proxy-Authorization": "Basic dXNlcjpwdw=="}  # base64 of "user:pw"
    plain = client.route("http://vllm.test/v1/chat/completions")
    # a plain-HTTP proxy reads the request itself: it gets the login on the request, never in its URL
    assert plain == ("http://proxy.test:3128", {"Authorization": "Bearer k", **login}, None)
    # an https target: the login goes on the CONNECT request only, the API key only to the server
    assert client.route("https://vllm.test/v1") == ("http://proxy.test:3128", {"Authorization": "Bearer k"}, login)
    assert client.route("http://direct.test/v1") == (None, {"Authorization": "Bearer k"}, None)
    assert client.route("http://vllm.test/other") is plain  # worked out once per scheme and host
