"""Tests of the TGI stand-in (tests/servers/tgi.py): spec conformance, recorded shapes, and the real clients.

Golden values come from TGI's own integration-test snapshots in tests/servers/tgi_reference (text-generation-inference
@db931fc, integration-tests/models/__snapshots__), which the server replays.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.servers.tgi import (
    DEVIATION_SCHEMAS,
    FAIL_MODES,
    REFERENCE_DIR,
    SpecValidator,
    SpecViolation,
    TGIServer,
    count_tokens,
    render_chat_prompt,
    strip_recording_artifacts,
)

DONE = "[DONE]"
CHAT = [{"role": "user", "content": "What is Deep Learning?"}]


def load_recording(name: str) -> Any:
    return json.loads((REFERENCE_DIR / name).read_text(encoding="utf-8"))


def sse_payloads(text: str) -> list[Any]:
    """``data:`` payloads of an SSE body, in order: parsed JSON, or ``DONE`` for ``[DONE]``."""
    out: list[Any] = []
    for event in text.split("\n\n"):
        for line in event.splitlines():
            if line.startswith("data:"):
                data = line[len("data:") :].strip()
                out.append(DONE if data == DONE else json.loads(data))
    return out


@pytest.fixture(scope="module")
def spec() -> SpecValidator:
    return SpecValidator.from_file()


@pytest.fixture
def tgi() -> Iterator[TGIServer]:
    with TGIServer() as server:
        yield server


@pytest.fixture
def http(tgi: TGIServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=tgi.base_url, timeout=10) as client:
        yield client


@pytest.fixture
def hub_online(monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest turns huggingface_hub offline, and its request hook then refuses every URL, even 127.0.0.1."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


# --- the spec and the recordings --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("recording", "schema"),
    [
        ("test_flash_llama_simple.json", "GenerateResponse"),
        ("test_flash_llama_all_params.json", "GenerateResponse"),
        ("test_chat_hfhub_usage.json", "ChatCompletionChunk"),
        ("test_flash_llama_completion_stream_usage.json", "ChatCompletionChunk"),
        ("test_flash_llama_completion_many_prompts_stream.json", "Chunk"),
    ],
)
def test_recorded_tgi_responses_validate(spec: SpecValidator, recording: str, schema: str) -> None:
    """What real TGI sent (as snapshotted by its integration tests) validates against its own spec."""
    data = load_recording(recording)
    for item in data if isinstance(data, list) else [data]:
        spec.validate(schema, strip_recording_artifacts(schema, item))


@pytest.mark.parametrize("recording", ["test_flash_llama_simple.json", "test_flash_llama_all_params.json"])
def test_recording_artifact_list_is_exact(spec: SpecValidator, recording: str) -> None:
    """Without RECORDING_ARTIFACTS the snapshot fails only at details/top_tokens (a client model_dump null)."""
    assert spec.errors("GenerateResponse", load_recording(recording)) == [
        "details/top_tokens: None is not of type 'array'"
    ]


@pytest.mark.parametrize(
    ("schema", "payload", "fragment"),
    [
        ("ErrorResponse", {"error": {"message": "x", "http_status_code": 422}}, "error_type"),  # chat error != spec
        ("StreamDetails", {"finish_reason": "stop", "generated_tokens": 1, "input_length": 1}, "stop"),
        ("StreamDetails", {"finish_reason": "length", "generated_tokens": 1}, "input_length"),
        ("Token", {"id": 2**33, "text": "a", "logprob": -1.0, "special": False}, "int32"),
        ("Token", {"id": -1, "text": "a", "logprob": -1.0, "special": False}, "minimum"),
        ("Info", {"model_id": "m"}, "max_total_tokens"),
        ("ChatCompletionChunk", {"id": "", "created": 0, "model": "m", "choices": []}, "system_fingerprint"),
        ("ModelsList", {"object": "list", "data": [{"id": "m"}]}, "owned_by"),
    ],
)
def test_validator_rejects(spec: SpecValidator, schema: str, payload: Any, fragment: str) -> None:
    with pytest.raises(SpecViolation, match=fragment):
        spec.validate(schema, payload)


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        # nullable next to allOf (utoipa's Option<Struct>): real TGI sends these nulls (SPEC_DEVIATIONS nullable-allOf)
        (
            "StreamResponse",
            {"index": 1, "token": {"id": 1, "text": "a", "logprob": -1.0, "special": False}, "details": None},
        ),
        ("ChatCompletionChunk", {"id": "", "created": 0, "model": "m", "system_fingerprint": "f", "choices": []}),
        ("OpenAIErrorEvent", {"error": {"message": "Model is overloaded", "http_status_code": 422}}),
    ],
)
def test_validator_accepts(spec: SpecValidator, schema: str, payload: Any) -> None:
    spec.validate(schema, payload)


def test_deviation_schemas_reference_the_spec(spec: SpecValidator) -> None:
    assert set(DEVIATION_SCHEMAS) == {"ModelsList", "OpenAIErrorEvent"}
    assert "ModelInfo" in spec.schema_names


# --- routes over HTTP -------------------------------------------------------------------------------------------------
def test_health_and_info(tgi: TGIServer, http: httpx.Client, spec: SpecValidator) -> None:
    health = http.get("/health")
    assert (health.status_code, health.content) == (200, b"")
    info = http.get("/info").json()
    spec.validate("Info", info)
    required = spec.spec["components"]["schemas"]["Info"]["required"]
    assert set(required) <= set(info)
    assert (info["max_input_tokens"], info["max_total_tokens"], info["router"]) == (
        4095,
        4096,
        "text-generation-router",
    )
    models = http.get("/v1/models").json()
    spec.validate("ModelsList", models)
    assert models["data"][0]["id"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_unhealthy_is_503_once(tgi: TGIServer, http: httpx.Client, spec: SpecValidator) -> None:
    tgi.fail_next("unhealthy")
    response = http.get("/health")
    assert response.status_code == 503
    assert response.json() == {"error": "unhealthy", "error_type": "healthcheck"}
    spec.validate("ErrorResponse", response.json())
    assert http.get("/health").status_code == 200


def test_generate_replays_the_recording(http: httpx.Client, spec: SpecValidator) -> None:
    """max_new_tokens=10 reproduces test_flash_llama_simple.json (minus the snapshot's client-side nulls)."""
    response = http.post(
        "/generate", json={"inputs": "Test request", "parameters": {"max_new_tokens": 10, "details": True}}
    )
    body = response.json()
    spec.validate("GenerateResponse", body)
    recorded = load_recording("test_flash_llama_simple.json")
    recorded["details"] = {k: v for k, v in recorded["details"].items() if v is not None or k == "seed"}
    assert body == recorded
    assert response.headers["x-generated-tokens"] == "10"
    assert response.headers["x-prompt-tokens"] == "2"


def test_generate_stream_shape(http: httpx.Client, spec: SpecValidator) -> None:
    response = http.post("/generate_stream", json={"inputs": "Test request", "parameters": {"details": True}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = sse_payloads(response.text)
    assert DONE not in events  # /generate_stream has no [DONE]
    for event in events:
        spec.validate("StreamResponse", event)
    assert [e["index"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["generated_text"] is None and e["details"] is None for e in events[:-1])
    last = events[-1]
    assert last["token"]["special"] is True  # EOS arrives as its own event
    assert last["generated_text"] == "".join(e["token"]["text"] for e in events[:-1]) == " for /api/v1/projects/1"
    assert last["details"] == {"finish_reason": "eos_token", "generated_tokens": 11, "seed": None, "input_length": 2}


def test_generate_stream_without_details(http: httpx.Client) -> None:
    events = sse_payloads(http.post("/generate_stream", json={"inputs": "a", "parameters": {"max_new_tokens": 3}}).text)
    assert len(events) == 3
    assert events[-1]["details"] is None and events[-1]["generated_text"] == " for /api"


def test_compat_route_non_stream_is_a_list(http: httpx.Client, spec: SpecValidator) -> None:
    body = http.post("/", json={"inputs": "a", "parameters": {"max_new_tokens": 2}, "stream": False}).json()
    assert isinstance(body, list) and len(body) == 1
    spec.validate("GenerateResponse", body[0])


@pytest.mark.parametrize(
    ("max_tokens", "finish_reason", "completion_tokens"),
    [(10, "length", 10), (None, "stop", 11), (3, "length", 3)],
)
def test_chat_stream_shape(
    http: httpx.Client, spec: SpecValidator, max_tokens: int | None, finish_reason: str, completion_tokens: int
) -> None:
    body = {"messages": CHAT, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": max_tokens}
    events = sse_payloads(http.post("/v1/chat/completions", json=body).text)
    assert events[-1] == DONE
    chunks, usage = events[:-2], events[-2]
    for chunk in [*chunks, usage]:
        spec.validate("ChatCompletionChunk", chunk)
        assert chunk["id"] == "" and chunk["object"] == "chat.completion.chunk"
        assert chunk["system_fingerprint"] == "3.3.7-native"
    assert all(set(c["choices"][0]["delta"]) == {"role", "content"} for c in chunks)  # no separate role chunk
    assert all(c["usage"] is None for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * (len(chunks) - 1) + [finish_reason]
    prompt_tokens = count_tokens(render_chat_prompt(CHAT))
    assert usage["choices"] == []
    assert usage["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if max_tokens == 10:  # the recorded stream, token by token
        recorded = load_recording("test_flash_llama_completion_stream_usage.json")
        assert [c["choices"][0]["delta"]["content"] for c in chunks] == [
            c["choices"][0]["delta"]["content"] for c in recorded if c["choices"]
        ]
        assert chunks[-1]["choices"][0]["finish_reason"] == recorded[-2]["choices"][0]["finish_reason"]
    if finish_reason == "stop":  # EOS: empty content together with the finish reason, as in test_chat_hfhub_usage
        assert chunks[-1]["choices"][0]["delta"]["content"] == ""


def test_chat_stream_without_usage_has_no_usage_chunk(http: httpx.Client) -> None:
    events = sse_payloads(http.post("/v1/chat/completions", json={"messages": CHAT, "stream": True}).text)
    assert events[-1] == DONE and all(e["choices"] for e in events[:-1])


def test_chat_non_stream(http: httpx.Client, spec: SpecValidator) -> None:
    body = http.post("/v1/chat/completions", json={"messages": CHAT, "max_tokens": 4}).json()
    spec.validate("ChatCompletion", body)
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "**Deep Learning:"}
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize(
    ("route", "body", "finish"),
    [
        ("/generate_stream", {"inputs": "a", "parameters": {"details": True, "stop": ["api"]}}, "stop_sequence"),
        ("/v1/chat/completions", {"messages": CHAT, "stream": True, "stop": ["Learning"]}, "stop_sequence"),
    ],
)
def test_stop_sequence_finish_reason(http: httpx.Client, route: str, body: dict, finish: str) -> None:
    events = [e for e in sse_payloads(http.post(route, json=body).text) if e != DONE]
    last = events[-1]
    got = last["details"]["finish_reason"] if "details" in last else last["choices"][0]["finish_reason"]
    assert got == finish  # chat keeps "stop_sequence" (FinishReason::format(true) only maps eos_token)


def test_completions_stream_replays_many_prompts(http: httpx.Client, spec: SpecValidator) -> None:
    body = {"prompt": ["What is Deep Learning?", "Is water wet?", "What is the capital of France?", "def mai"]}
    events = sse_payloads(http.post("/v1/completions", json={**body, "max_tokens": 10, "stream": True}).text)
    assert events[-1] == DONE
    for event in events[:-1]:
        spec.validate("Chunk", event)
    recorded = load_recording("test_flash_llama_completion_many_prompts_stream.json")

    def key(chunk: dict) -> tuple:
        choice = chunk["choices"][0]
        return choice["index"], choice["text"], choice["finish_reason"]

    assert [key(e) for e in events[:-1]] == [key(c) for c in recorded]


def test_completions_non_stream(http: httpx.Client, spec: SpecValidator) -> None:
    body = http.post("/v1/completions", json={"prompt": "What is Deep Learning?", "max_tokens": 4}).json()
    spec.validate("CompletionFinal", body)
    assert body["choices"][0]["text"] == " A Beginner’s Guide"
    assert body["usage"] == {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8}


def test_tokenize(http: httpx.Client, spec: SpecValidator) -> None:
    tokens = http.post("/tokenize", json={"inputs": "My name is  Olivier"}).json()
    spec.validate("TokenizeResponse", tokens)
    assert [(t["text"], t["start"], t["stop"]) for t in tokens] == [
        ("My", 0, 2),
        ("name", 3, 7),
        ("is", 8, 10),
        ("Olivier", 12, 19),
    ]


# --- validation errors ------------------------------------------------------------------------------------------------
TOO_LONG = (
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 2 `inputs` tokens and 4095"
    " `max_new_tokens`"
)


def test_too_many_tokens_non_stream_is_422(http: httpx.Client, spec: SpecValidator) -> None:
    response = http.post("/generate", json={"inputs": "two words", "parameters": {"max_new_tokens": 4095}})
    assert response.status_code == 422
    assert response.json() == {"error": TOO_LONG, "error_type": "validation"}
    spec.validate("ErrorResponse", response.json())
    chat = http.post("/v1/chat/completions", json={"messages": CHAT, "max_tokens": 5000})
    assert chat.status_code == 422 and chat.json()["error_type"] == "validation"


def test_too_many_tokens_generate_stream_errors_inside_200(http: httpx.Client, spec: SpecValidator) -> None:
    response = http.post("/generate_stream", json={"inputs": "two words", "parameters": {"max_new_tokens": 4095}})
    assert response.status_code == 200
    events = sse_payloads(response.text)
    assert events == [{"error": TOO_LONG, "error_type": "validation"}]
    spec.validate("ErrorResponse", events[0])


def test_too_many_tokens_chat_stream_errors_inside_200(http: httpx.Client, spec: SpecValidator) -> None:
    response = http.post("/v1/chat/completions", json={"messages": CHAT, "max_tokens": 5000, "stream": True})
    assert response.status_code == 200
    error, done = sse_payloads(response.text)
    spec.validate("OpenAIErrorEvent", error)
    assert error["error"]["http_status_code"] == 422
    assert error["error"]["message"].startswith("Input validation error: `inputs` tokens + `max_new_tokens` must be")
    assert done == DONE


def test_input_longer_than_max_input_tokens() -> None:
    with TGIServer(max_input_tokens=3, max_total_tokens=100) as server, httpx.Client(base_url=server.base_url) as c:
        response = c.post("/generate", json={"inputs": "one two three four", "parameters": {"max_new_tokens": 1}})
    assert response.status_code == 422
    assert response.json()["error"] == "Input validation error: `inputs` must have less than 3 tokens. Given: 4"


# --- forced failures --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "status", "error_type"),
    [("overloaded", 429, "overloaded"), ("validation", 422, "validation"), ("generation", 424, "generation")],
)
def test_fail_next_non_stream(tgi: TGIServer, http: httpx.Client, mode: str, status: int, error_type: str) -> None:
    tgi.fail_next(mode)
    response = http.post("/generate", json={"inputs": "a", "parameters": {"max_new_tokens": 2}})
    assert (response.status_code, response.json()["error_type"]) == (status, error_type)
    assert http.post("/generate", json={"inputs": "a", "parameters": {"max_new_tokens": 2}}).status_code == 200


@pytest.mark.parametrize("mode", ["overloaded", "validation", "generation"])
def test_fail_next_generate_stream(tgi: TGIServer, http: httpx.Client, spec: SpecValidator, mode: str) -> None:
    tgi.fail_next(mode)
    response = http.post("/generate_stream", json={"inputs": "a"})
    assert response.status_code == 200
    events = sse_payloads(response.text)
    assert events[-1]["error_type"] == mode
    spec.validate("ErrorResponse", events[-1])
    assert len(events) == (3 if mode == "generation" else 1)  # a generation error comes after 2 tokens


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/completions"])
def test_fail_next_openai_stream_overloaded(tgi: TGIServer, http: httpx.Client, route: str) -> None:
    tgi.fail_next("overloaded")
    body = {"messages": CHAT, "prompt": "a", "stream": True}
    response = http.post(route, json=body)
    assert response.status_code == 200
    assert sse_payloads(response.text) == [{"error": {"message": "Model is overloaded", "http_status_code": 422}}, DONE]


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/generate_stream", {"inputs": "a"}),
        ("/v1/chat/completions", {"messages": CHAT, "stream": True}),
        ("/v1/completions", {"prompt": "a", "stream": True}),
        ("/generate", {"inputs": "a"}),
    ],
)
def test_fail_next_cut(tgi: TGIServer, http: httpx.Client, route: str, body: dict) -> None:
    tgi.fail_next("cut")
    with pytest.raises(httpx.RemoteProtocolError):
        http.post(route, json=body)


@pytest.mark.parametrize("route", ["/generate", "/generate_stream", "/v1/chat/completions"])
def test_fail_next_http_500(tgi: TGIServer, http: httpx.Client, route: str) -> None:
    tgi.fail_next("http_500")
    response = http.post(route, json={"inputs": "a", "messages": CHAT, "stream": route != "/generate"})
    assert response.status_code == 500
    assert response.json() == {"error": "Incomplete generation", "error_type": "incomplete_generation"}


def test_fail_next_rejects_unknown_mode(tgi: TGIServer) -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        tgi.fail_next("teapot")
    assert set(FAIL_MODES) >= {"overloaded", "validation", "cut", "http_500", "unhealthy"}


@pytest.mark.parametrize(
    "kwargs", [{"max_input_tokens": 10, "max_total_tokens": 10}, {"token_delay_s": -1.0}], ids=["limits", "delay"]
)
def test_constructor_validates(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        TGIServer(**kwargs)


# --- self-validation --------------------------------------------------------------------------------------------------
def test_invalid_json_response_fails_the_test() -> None:
    server = TGIServer().start()
    server.info = lambda: {"model_id": "m"}  # type: ignore[method-assign]  # misses required Info fields
    with httpx.Client(base_url=server.base_url) as client:
        response = client.get("/info")
    assert response.status_code == 500 and response.json()["error_type"] == "spec_violation"
    with pytest.raises(SpecViolation, match="Info does not validate"):
        server.close()


def test_invalid_stream_event_fails_the_test() -> None:
    server = TGIServer().start()
    server._native = [server._native[0].__class__(-5, "bad", -1.0)]  # a negative token id breaks StreamResponse
    with httpx.Client(base_url=server.base_url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/generate_stream", json={"inputs": "a"})
    with pytest.raises(SpecViolation, match="StreamResponse does not validate"):
        server.close()


def _reset_after(server: TGIServer, request: bytes, *, read_reply: bool) -> None:
    """Send ``request`` on a raw socket, read the reply (or not), then close with a TCP reset (``SO_LINGER`` 0), as a
    client does that closes a connection with unread data in its buffer."""
    with socket.create_connection(_address(server)) as sock:
        sock.sendall(request)
        if read_reply:
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _address(server: TGIServer) -> tuple[str, int]:
    host, port = urlsplit(server.base_url).netloc.split(":")
    return host, int(port)


def _handlers_done(timeout_s: float = 5.0) -> None:
    """Wait until the server's request threads (socketserver names them after ``process_request_thread``) end."""
    deadline = time.monotonic() + timeout_s
    while any("process_request_thread" in t.name for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a request thread did not end"
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("request_bytes", "read_reply"),
    [
        (b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n", True),  # reset while the server waits for the next request
        (b"POST /generate HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{", False),  # reset mid-body
    ],
    ids=["keep-alive", "mid-body"],
)
def test_client_reset_prints_nothing(
    capsys: pytest.CaptureFixture[str], request_bytes: bytes, read_reply: bool
) -> None:
    """A client that hangs up is no server error (TGI's router drops the connection silently): no traceback is
    printed from the server's threads (issue 24 item 13: a stray traceback in an all-passing run)."""
    with TGIServer() as server:
        _reset_after(server, request_bytes, read_reply=read_reply)
        _handlers_done()
    err = capsys.readouterr().err
    assert "Traceback" not in err, err


def test_server_exception_fails_the_test_instead_of_printing(capsys: pytest.CaptureFixture[str]) -> None:
    """A bug in the stand-in itself (an exception that is no hang-up) fails the test at ``close()``."""
    server = TGIServer().start()

    def broken() -> dict[str, Any]:
        raise RuntimeError("stand-in bug")

    server.info = broken  # type: ignore[method-assign]
    with socket.create_connection(_address(server)) as sock:
        sock.sendall(b"GET /info HTTP/1.1\r\nHost: t\r\n\r\n")
        sock.recv(65536)
    _handlers_done()
    with pytest.raises(AssertionError, match="stand-in bug"):
        server.close()
    assert "Traceback" not in capsys.readouterr().err


# --- bookkeeping, pacing, metrics -------------------------------------------------------------------------------------
def test_requests_are_recorded(tgi: TGIServer, http: httpx.Client) -> None:
    http.post("/generate", json={"inputs": "a"}, headers={"X-Test": "1"})
    (request,) = tgi.requests
    assert (request["method"], request["path"], request["json"]) == ("POST", "/generate", {"inputs": "a"})
    assert request["headers"]["x-test"] == "1"


def test_token_pacing_and_gauges() -> None:
    with TGIServer(first_token_delay_s=1.0, token_delay_s=0.02) as server, httpx.Client(base_url=server.base_url) as c:
        arrivals: list[float] = []

        def consume() -> None:
            started = time.perf_counter()
            with c.stream("POST", "/generate_stream", json={"inputs": "a", "parameters": {"max_new_tokens": 4}}) as r:
                for line in r.iter_lines():
                    if line.startswith("data:"):
                        arrivals.append(time.perf_counter() - started)

        thread = threading.Thread(target=consume)
        thread.start()
        # Inside the first-token delay the request is queued; poll, since a loaded machine may take a while to send it.
        deadline = time.perf_counter() + 0.8
        with httpx.Client(base_url=server.base_url) as other:
            while True:
                text = other.get("/metrics").text
                queued = {m.name: m.samples[0].value for m in text_string_to_metric_families(text)}
                if queued["tgi_queue_size"] == 1 or time.perf_counter() > deadline:
                    break
                time.sleep(0.02)
        thread.join(timeout=5)
    assert queued["tgi_queue_size"] == 1
    assert len(arrivals) == 4
    assert arrivals[0] >= 1.0
    assert arrivals[-1] - arrivals[0] >= 3 * 0.02


def test_metrics_parse_and_count(tgi: TGIServer, http: httpx.Client) -> None:
    http.post("/generate", json={"inputs": "a b c", "parameters": {"max_new_tokens": 5}})
    http.post("/generate_stream", json={"inputs": "a", "parameters": {"max_new_tokens": 3}})
    http.post("/generate", json={"inputs": "a", "parameters": {"max_new_tokens": 5000}})  # validation failure
    response = http.get("/metrics")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    for name in (
        "tgi_queue_size",
        "tgi_batch_current_size",
        "tgi_batch_current_max_tokens",
        "tgi_request_duration",
        "tgi_request_queue_duration",
        "tgi_request_inference_duration",
        "tgi_request_mean_time_per_token_duration",
        "tgi_request_input_length",
        "tgi_request_generated_tokens",
        "tgi_request_max_new_tokens",
    ):
        assert name in families, name
    assert families["tgi_request_duration"].type == "histogram"

    def value(family: str, sample: str, **labels: str) -> float:
        return next(s.value for s in families[family].samples if s.name == sample and s.labels == labels)

    assert value("tgi_request_count", "tgi_request_count_total") == 3
    assert value("tgi_request_success", "tgi_request_success_total") == 2
    assert value("tgi_request_failure", "tgi_request_failure_total", err="validation") == 1
    assert value("tgi_request_generated_tokens", "tgi_request_generated_tokens_sum") == 5 + 3
    assert value("tgi_request_generated_tokens", "tgi_request_generated_tokens_count") == 2
    assert value("tgi_request_duration", "tgi_request_duration_bucket", le="+Inf") == 2
    buckets = [s.value for s in families["tgi_request_input_length"].samples if s.name.endswith("_bucket")]
    assert buckets == sorted(buckets)  # cumulative
    # TGI's exporter writes counters without `_total` (the parser adds it to sample names).
    assert "\ntgi_request_count 3\n" in response.text


# --- the real clients -------------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("hub_online")
def test_huggingface_hub_chat_stream_with_usage(tgi: TGIServer) -> None:
    from huggingface_hub import AsyncInferenceClient

    async def run() -> list:
        async with AsyncInferenceClient(base_url=tgi.base_url) as client:
            stream = await client.chat_completion(
                CHAT, stream=True, stream_options={"include_usage": True}, max_tokens=10
            )
            return [chunk async for chunk in stream]

    chunks = asyncio.run(run())
    assert (
        "".join(c.choices[0].delta.content for c in chunks[:-1])
        == "**Deep Learning: An Overview**\n" + "=" * 37 + "\n\n"
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == 10
    assert tgi.requests[-1]["path"] == "/v1/chat/completions"


@pytest.mark.usefixtures("hub_online")
def test_huggingface_hub_text_generation_stream_details(tgi: TGIServer) -> None:
    from huggingface_hub import AsyncInferenceClient

    async def run() -> tuple[list, list]:
        async with AsyncInferenceClient(base_url=tgi.base_url) as client:
            detailed = [e async for e in await client.text_generation("Test request", stream=True, details=True)]
            plain = [t async for t in await client.text_generation("Test request", stream=True, max_new_tokens=3)]
            return detailed, plain

    detailed, plain = asyncio.run(run())
    assert [e.token.text for e in detailed[:3]] == [" for", " /", "api"]
    assert detailed[-1].generated_text == " for /api/v1/projects/1"
    assert detailed[-1].details.finish_reason == "eos_token"
    assert detailed[-1].details.generated_tokens == 11
    assert plain == [" for", " /", "api"]
    assert tgi.requests[-1]["path"] == "/"  # text_generation posts to the compat route


@pytest.mark.usefixtures("hub_online")
@pytest.mark.parametrize(
    ("mode", "error"),
    [("overloaded", "OverloadedError"), ("validation", "ValidationError"), ("generation", "GenerationError")],
)
def test_huggingface_hub_text_generation_stream_errors(tgi: TGIServer, mode: str, error: str) -> None:
    import huggingface_hub.errors as hf_errors
    from huggingface_hub import AsyncInferenceClient

    async def run() -> None:
        async with AsyncInferenceClient(base_url=tgi.base_url) as client:
            async for _ in await client.text_generation("a", stream=True, details=True):
                pass

    tgi.fail_next(mode)
    with pytest.raises(getattr(hf_errors, error)):
        asyncio.run(run())


@pytest.mark.usefixtures("hub_online")
def test_huggingface_hub_non_stream_errors(tgi: TGIServer) -> None:
    from huggingface_hub import AsyncInferenceClient
    from huggingface_hub.errors import OverloadedError, ValidationError

    async def run() -> None:
        async with AsyncInferenceClient(base_url=tgi.base_url) as client:
            await client.text_generation("a")

    tgi.fail_next("overloaded")
    with pytest.raises(OverloadedError):
        asyncio.run(run())
    tgi.fail_next("validation")
    with pytest.raises(ValidationError):
        asyncio.run(run())


@pytest.mark.usefixtures("hub_online")
def test_huggingface_hub_chat_stream_error_is_unknown_error(tgi: TGIServer) -> None:
    """TGI's chat error event has no `error_type`, so huggingface_hub cannot classify it (errors.UnknownError)."""
    from huggingface_hub import AsyncInferenceClient
    from huggingface_hub.errors import UnknownError

    async def run() -> None:
        async with AsyncInferenceClient(base_url=tgi.base_url) as client:
            async for _ in await client.chat_completion(CHAT, stream=True):
                pass

    tgi.fail_next("overloaded")
    with pytest.raises(UnknownError, match="Model is overloaded"):
        asyncio.run(run())


def test_openai_chat_stream_with_usage(tgi: TGIServer) -> None:
    from openai import AsyncOpenAI

    async def run() -> list:
        async with AsyncOpenAI(base_url=tgi.base_url + "/v1", api_key="x", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="tgi", messages=CHAT, stream=True, stream_options={"include_usage": True}
            )
            return [chunk async for chunk in stream]

    chunks = asyncio.run(run())
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == "**"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 11
    assert tgi.requests[-1]["json"]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("mode", ["overloaded", "validation", "generation"])
def test_openai_chat_stream_error_is_api_error(tgi: TGIServer, mode: str) -> None:
    from openai import APIError, AsyncOpenAI

    async def run() -> None:
        async with AsyncOpenAI(base_url=tgi.base_url + "/v1", api_key="x", max_retries=0) as client:
            async for _ in await client.chat.completions.create(model="tgi", messages=CHAT, stream=True):
                pass

    tgi.fail_next(mode)
    with pytest.raises(APIError) as excinfo:
        asyncio.run(run())
    assert excinfo.value.body["http_status_code"] == 422  # into_openai_event hard-codes 422


def test_openai_non_stream_validation_is_422(tgi: TGIServer) -> None:
    from openai import AsyncOpenAI, UnprocessableEntityError

    async def run() -> None:
        async with AsyncOpenAI(base_url=tgi.base_url + "/v1", api_key="x", max_retries=0) as client:
            await client.chat.completions.create(model="tgi", messages=CHAT, max_tokens=5000)

    with pytest.raises(UnprocessableEntityError) as excinfo:
        asyncio.run(run())
    assert excinfo.value.status_code == 422
    assert "must be <= 4096" in json.dumps(excinfo.value.body)
