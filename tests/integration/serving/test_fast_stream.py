"""The lean streaming path against the SDK path, on the timed server's modes and a real llama.cpp server.

Truth (planner/demo/): first token 150 ms after the request arrives, then 20 ms per token, 12 tokens in
chunks of 1, 2, 1, 3, 1, 2, 1, 1 tokens with continuous usage; texts "t1 " ... "t12 ". Both paths must build the
same record from the same stream (times aside, which differ by scheduling only).
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json

import pytest

from planner.demo.state import CONTEXT_ERROR, IN_STREAM_ERROR, SERVER_ERROR, TGI_STREAM_ERROR
from planner.errors import InvalidParameterError
from planner.serving.backends import stream_request
from planner.serving.backends.aiohttp_lean import fast_client
from planner.serving.backends.openai_sdk import openai_client
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest

stream_openai = functools.partial(stream_request, backend="openai")
stream_openai_fast = functools.partial(stream_request, backend="aiohttp")


TEXT_12 = "".join(f"t{k} " for k in range(1, 13))


def _ep(url: str, kind: str = "vllm") -> Endpoint:
    return Endpoint("timed", kind, url, model="timed-model")


def _same_fields(rec):
    """Everything of a record that does not depend on when the events happened."""
    return (
        rec.ok,
        rec.error_kind,
        rec.http_status,
        rec.text,
        rec.reasoning_text,
        rec.output_tokens,
        rec.output_tokens_source,
        rec.prompt_tokens,
        rec.finish_reason,
        rec.partial,
        rec.model,
        tuple((c.text, c.n_tokens, c.kind) for c in rec.chunks),
    )


def _both(endpoint, request, timeout_s=5.0):
    sdk = asyncio.run(stream_openai(endpoint, request, timeout_s=timeout_s))
    lean = asyncio.run(stream_openai_fast(endpoint, request, timeout_s=timeout_s))
    return sdk, lean


# mode, error_kind, message part, HTTP status, partial, text received
MODES = [
    ("ok", None, None, 200, False, TEXT_12),
    ("reject_continuous", None, None, 200, False, TEXT_12),
    ("error", "in_stream", f"{IN_STREAM_ERROR} (InternalServerError)", 500, True, "t1 t2 t3 "),
    ("tgi_error", "in_stream", TGI_STREAM_ERROR, 422, True, "t1 t2 t3 "),
    ("cut", "cut", "incomplete chunked read", 200, True, "t1 t2 t3 t4 "),
    ("http400", "http", f"HTTP 400: {CONTEXT_ERROR} (BadRequestError)", 400, False, ""),
    ("http400_flat", "http", f"HTTP 400: {CONTEXT_ERROR} (BadRequestError)", 400, False, ""),
    ("http500", "http", f"HTTP 500: {SERVER_ERROR} (InternalServerError)", 500, False, ""),
]


@pytest.mark.parametrize(("mode", "kind", "message", "status", "partial", "text"), MODES, ids=[m[0] for m in MODES])
def test_lean_record_equals_sdk_record(timed_server, mode, kind, message, status, partial, text):
    sdk, lean = _both(_ep(timed_server.url), ChatRequest(f"hi [mode={mode}]"))
    assert _same_fields(lean) == _same_fields(sdk)
    assert (lean.error_kind, lean.http_status, lean.partial, lean.text) == (kind, status, partial, text)
    if message is None:
        assert lean.ok and lean.error is None
    else:
        assert message in lean.error and message in sdk.error and "\n" not in lean.error
    if kind in ("in_stream", "http", "cut"):  # the server's own words (or httpx2's, copied), the same on both paths
        assert lean.error == sdk.error


def test_multi_token_chunks_are_counted_from_continuous_usage(timed_server):
    # max_tokens 12 = the answer's 12 tokens, so it ends by length, not at the server's end of sequence
    lean = asyncio.run(stream_openai_fast(_ep(timed_server.url), ChatRequest("hi", max_tokens=12), timeout_s=5))
    assert [c.n_tokens for c in lean.chunks] == [1, 2, 1, 3, 1, 2, 1, 1]
    assert [c.text for c in lean.chunks][:3] == ["t1 ", "t2 t3 ", "t4 "]
    assert (lean.output_tokens, lean.output_tokens_source, lean.prompt_tokens) == (12, "usage", 12)
    assert lean.finish_reason == "length"


def test_rejected_continuous_usage_falls_back_to_final_usage(timed_server):
    lean = asyncio.run(
        stream_openai_fast(_ep(timed_server.url), ChatRequest("x [mode=reject_continuous]"), timeout_s=5)
    )
    assert lean.ok and lean.output_tokens == 12 and all(c.n_tokens is None for c in lean.chunks)


def test_intervals_are_the_servers(timed_server):
    # The server sends headers when it has read the request, the role chunk at once, the first token 150 ms later
    # and the last (12th) token 150 + 11 * 20 = 370 ms after the headers.
    lean = asyncio.run(stream_openai_fast(_ep(timed_server.url), ChatRequest("hi"), timeout_s=5))
    assert 0 < lean.first_byte_s <= lean.first_chunk_s < lean.first_token_s
    # lower bounds: the server's schedule; upper: short of the next token (a loaded machine only adds delay)
    assert 0.145 <= lean.first_token_s - lean.first_byte_s < 0.150 + 0.060
    assert 0.365 <= lean.last_token_s - lean.first_byte_s < 0.370 + 0.060
    assert lean.end_s >= lean.last_token_s


@pytest.fixture(scope="module")
def faulty_server():
    faulty = pytest.importorskip("tests.servers.faulty", reason="tests/servers/faulty.py is not there")
    with faulty.FaultyServer() as server:
        yield server, faulty.MODES


def test_lean_equals_sdk_on_every_faulty_mode(faulty_server):
    # hang_mid (read timeout after the first chunk), not_json, truncated_json, no_prefix, HTTP 422/503 bodies...
    server, modes = faulty_server
    for mode in modes:
        sdk, lean = _both(Endpoint("f", "vllm", server.url, model="faulty-model"), ChatRequest(f"x [mode={mode}]"), 0.5)
        assert (_same_fields(lean), lean.error) == (_same_fields(sdk), sdk.error), mode


@pytest.mark.parametrize("fn", [stream_openai, stream_openai_fast], ids=["sdk", "lean"])
def test_hang_times_out(timed_server, fn):
    rec = asyncio.run(fn(_ep(timed_server.url), ChatRequest("x [mode=hang]"), timeout_s=0.3))
    assert (rec.ok, rec.error_kind, rec.error) == (
        False,
        "timeout",
        f"no response within 0.3 s from {timed_server.url}/v1",
    )


def test_connection_refused(closed_port_url):
    endpoint = Endpoint("gone", "vllm", closed_port_url, model="m")
    rec = asyncio.run(stream_openai_fast(endpoint, ChatRequest("x"), timeout_s=2))
    assert (rec.ok, rec.error_kind, rec.first_byte_s) == (False, "connect", None)
    assert rec.error.startswith(f"cannot connect to {closed_port_url}/v1: ")


def test_context_length_checked_before_sending(closed_port_url):
    info = EndpointInfo(endpoint="small", kind="vllm", healthy=True, model="m", max_model_len_tokens=100)
    endpoint = Endpoint("small", "vllm", closed_port_url, model="m")
    rec = asyncio.run(
        stream_openai_fast(endpoint, ChatRequest("x", max_tokens=90), timeout_s=2, info=info, prompt_tokens=20)
    )
    assert (rec.ok, rec.error_kind) == (False, "context_length") and "20 prompt + 90 max_tokens" in rec.error


def test_events_reach_on_event_as_on_the_sdk_path(timed_server):
    seen: dict[str, list] = {"sdk": [], "lean": []}
    endpoint = _ep(timed_server.url)
    asyncio.run(stream_openai(endpoint, ChatRequest("hi"), timeout_s=5, on_event=seen["sdk"].append))
    asyncio.run(stream_openai_fast(endpoint, ChatRequest("hi"), timeout_s=5, on_event=seen["lean"].append))
    lean = [(u.kind, u.text, u.n_tokens) for u in seen["lean"]]
    assert lean == [(u.kind, u.text, u.n_tokens) for u in seen["sdk"]]
    assert len(lean) == 9 and lean[-1] == ("end", "", None) and seen["lean"][-1].record.ok


def test_a_shared_client_reuses_one_connection(timed_server):
    endpoint = _ep(timed_server.url)

    async def run():
        client = fast_client(endpoint, timeout_s=5)
        try:
            records = [
                await stream_openai_fast(endpoint, ChatRequest("hi [ttft_ms=0] [itl_ms=0]"), timeout_s=5, client=client)
                for _ in range(3)
            ]
            return records, client.connections_opened
        finally:
            await client.close()

    records, opened = asyncio.run(run())
    assert all(r.ok and r.text == TEXT_12 for r in records)
    assert opened == 1  # one keep-alive connection served all three


def test_stream_chat_refuses_a_foreign_client(timed_server):
    async def run():
        client = openai_client(_ep(timed_server.url), timeout_s=5)
        try:
            await stream_openai_fast(_ep(timed_server.url), ChatRequest("hi"), timeout_s=5, client=client)
        finally:
            await client.close()

    with pytest.raises(InvalidParameterError, match="client"):
        asyncio.run(run())


def test_tgi_endpoints_stream_on_the_lean_path_too(timed_server):
    rec = asyncio.run(stream_openai_fast(_ep(timed_server.url, "tgi"), ChatRequest("hi"), timeout_s=5))
    assert rec.ok and rec.text == TEXT_12 and rec.output_tokens == 12


def test_against_real_llama_cpp(llama_url):
    endpoint = Endpoint("llama", "llamacpp", llama_url)
    request = ChatRequest("Say hello.", max_tokens=8, temperature=0.0, seed=1)

    async def run():
        lean_client = fast_client(endpoint, timeout_s=60)
        try:
            lean = await stream_openai_fast(endpoint, request, timeout_s=60, client=lean_client)
        finally:
            await lean_client.close()
        sdk = await stream_openai(endpoint, request, timeout_s=60)
        return sdk, lean

    sdk, lean = asyncio.run(run())
    assert sdk.ok and lean.ok, (sdk.error, lean.error)
    assert _same_fields(lean) == _same_fields(sdk)
    assert 1 <= lean.output_tokens <= 8 and lean.text


def test_cancelled_request_reports_its_record(timed_server):
    seen = []

    async def run():
        task = asyncio.create_task(
            stream_openai_fast(_ep(timed_server.url), ChatRequest("x [mode=hang]"), timeout_s=5, on_event=seen.append)
        )
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert [(u.kind, u.record.error_kind) for u in seen] == [("end", "cancelled")]


# --- framings, encodings and proxies, against a one-shot raw HTTP/1.1 server --------------------------------------
def _sse(*texts: str) -> bytes:
    last = len(texts) - 1
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": "stop" if k == last else None}]}
        for k, t in enumerate(texts)
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


async def _raw_exchange(
    answer: bytes, endpoint_url: str | None = None, monkeypatch=None, login: str = ""
) -> tuple[object, list[bytes]]:
    """Serve ``answer`` (a whole HTTP response, written as is, then the connection closed) to one lean request.

    Returns the record and the request heads the server read. ``endpoint_url`` None = the server itself; otherwise
    the server is set as ``HTTP_PROXY`` (with ``login`` = ``"user:password@"`` in its URL) and the request goes to
    ``endpoint_url`` through it.
    """
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        length = next(
            int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.lower() == b"content-length"
        )
        await reader.readexactly(length)
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    own = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    if endpoint_url is not None:
        monkeypatch.setenv("HTTP_PROXY", own.replace("//", f"//{login}"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
    async with server:
        endpoint = Endpoint("raw", "llamacpp", endpoint_url or own, model="m")
        record = await stream_openai_fast(endpoint, ChatRequest("hi"), timeout_s=2)
    return record, heads


def _response(body: bytes, *headers: str) -> bytes:
    return (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
    ).encode() + body


def _chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


FRAMINGS = {
    "chunked_gzip": _response(
        _chunked(gzip.compress(_sse("a ", "b "))), "Transfer-Encoding: chunked", "Content-Encoding: gzip"
    ),
    "content_length": _response(_sse("a ", "b "), f"Content-Length: {len(_sse('a ', 'b '))}"),
    "close_delimited": _response(_sse("a ", "b "), "Connection: close"),
}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_body_framings_and_gzip_decode_alike(framing):
    record, _ = asyncio.run(_raw_exchange(FRAMINGS[framing]))
    assert (record.ok, record.text, record.output_tokens) == (True, "a b ", 2), record.error


def test_short_content_length_body_is_a_cut_worded_as_httpx2():
    body = _sse("a ")  # the whole answer, but announced 3 bytes longer than it is
    record, _ = asyncio.run(_raw_exchange(_response(body, f"Content-Length: {len(body) + 3}")))
    assert (record.ok, record.error_kind, record.text) == (False, "cut", "a ")
    assert record.error.endswith(
        "peer closed connection without sending complete message body "
        f"(received {len(body)} bytes, expected {len(body) + 3})"
    )


@pytest.mark.parametrize(("login", "header"), [("", None), ("user:pw@", b"Proxy-Authorization: Basic dXNlcjpwdw==")])
def test_proxy_from_environment_is_used(monkeypatch, login, header):
    # The request for an unresolvable host goes to HTTP_PROXY, in absolute form (RFC 9112 §3.2.2); credentials in
    # the proxy URL become Basic proxy credentials (RFC 7617: base64("user:pw") = "dXNlcjpwdw==").
    answer = _response(_sse("p "), "Connection: close")
    target = "http://planner-proxy-test.invalid:8000"
    record, heads = asyncio.run(_raw_exchange(answer, target, monkeypatch, login))
    assert record.ok and record.text == "p "
    assert heads[0].startswith(f"POST {target}/v1/chat/completions HTTP/1.1\r\n".encode())
    assert (header in heads[0].split(b"\r\n")) if header else b"proxy-authorization" not in heads[0].lower()


def test_redirect_is_not_followed():
    location = b"Location: http://127.0.0.1:9/v1/chat/completions\r\n"
    answer = b"HTTP/1.1 307 Temporary Redirect\r\n" + location + b"Content-Length: 0\r\n\r\n"
    record, heads = asyncio.run(_raw_exchange(answer))
    assert (record.http_status, record.text, len(heads)) == (307, "", 1)
