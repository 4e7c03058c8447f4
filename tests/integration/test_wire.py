"""What crosses the wire: the bytes a server receives from Live Compare and from the load runner, for every kind.

The timed server (:mod:`planner.demo`) records every request it receives, body as sent. Each test sends
through the product's own paths (``run_compare`` for Live Compare, ``run_load`` for Load Test, which the page and the
CLI both run) and asserts on the recorded bodies, field by field. Where the engine reads a field is cited in
:mod:`planner.serving.requests`; the timed server honours ``ignore_eos`` only at the top level of the body (where
vLLM reads it), so the generated token counts show whether it arrived.

Against today's (pre-issue-10) code these fail: the load path sent ``"extra_body": {"ignore_eos": true}`` as a body
key, which vLLM ignores, and prompts were sized one word per token.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from planner.compare.run import run_compare
from planner.demo.state import MODEL_ID
from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.serving.endpoints import KINDS, Endpoint
from planner.serving.requests import ChatRequest
from tests.servers.timed_sse import TimedServer

GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions", "/generate_stream", "/")
FAST = "[ttft_ms=5] [itl_ms=1]"


def _bodies(server: TimedServer) -> list[tuple[str, dict, dict]]:
    """``(path, body, headers)`` of every generation request the server received, in order."""
    return [
        (r["path"], json.loads(r["body"]), r["headers"]) for r in server.recorded() if r["path"] in GENERATION_PATHS
    ]


def _endpoint(server: TimedServer, kind: str) -> Endpoint:
    return Endpoint(f"wire-{kind}", kind, server.url, model=MODEL_ID)


def _stream_options(kind: str) -> dict:
    # continuous_usage_stats only where the engine honours it (vLLM, SGLang)
    if kind in ("vllm", "sglang"):
        return {"include_usage": True, "continuous_usage_stats": True}
    return {"include_usage": True}


# --- Live Compare ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_compare_sends_the_chat_body_the_engine_reads(timed_server, kind):
    timed_server.clear_recorded()
    request = ChatRequest(f"wire test {FAST}", system="be brief", max_tokens=16, temperature=0.5, seed=3, stop=("END",))
    result = asyncio.run(run_compare([_endpoint(timed_server, kind)], request, timeout_s=10))
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    ((path, body, headers),) = _bodies(timed_server)
    assert path == "/v1/chat/completions"
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"wire test {FAST}"}]
    expected = {
        "messages": messages,
        "model": MODEL_ID,
        "stream": True,
        "stream_options": _stream_options(kind),
        "max_tokens": 16,
        "temperature": 0.5,
        "seed": 3,
        "stop": ["END"],
    }
    if kind == "tgi":
        # huggingface_hub builds TGI's chat payload itself from the same fields; nothing else may be set
        assert {k: body[k] for k in expected} == expected
        assert {k for k, v in body.items() if v is not None} == set(expected)
    else:
        assert body == expected  # the openai SDK posts the built body unchanged: same keys, same values
    assert "ignore_eos" not in body and "extra_body" not in body
    assert headers["content-type"].startswith("application/json")
    # no key configured: the openai SDK sends its placeholder, huggingface_hub no header at all
    assert headers.get("authorization") == (None if kind == "tgi" else "Bearer EMPTY")


def test_compare_tgi_native_route_sends_generate_stream_parameters(timed_server):
    from planner.serving.backends import stream_request

    timed_server.clear_recorded()
    request = ChatRequest(f"native {FAST}", system="sys", max_tokens=9, temperature=0.7, top_p=0.9, seed=1)
    record = asyncio.run(
        stream_request(
            _endpoint(timed_server, "tgi"), request, timeout_s=10, backend="huggingface_hub", route="generate_stream"
        )
    )
    assert record.ok and record.output_tokens == 9
    ((path, body, _),) = _bodies(timed_server)
    assert path == "/"  # huggingface_hub posts TGI's native stream to the root route, which TGI serves as it
    assert body["inputs"] == f"sys\n\nnative {FAST}" and body["stream"] is True
    params = {k: v for k, v in body["parameters"].items() if v is not None}
    expected = {"max_new_tokens": 9, "temperature": 0.7, "top_p": 0.9, "seed": 1, "details": True}
    assert {k: params[k] for k in expected} == expected
    assert not params.get("decoder_input_details")  # TGI refuses it with streaming


# --- Load Test -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_load_sends_ignore_eos_at_the_top_level_where_the_engine_reads_it(timed_server, kind):
    timed_server.clear_recorded()
    settings = LoadSettings(
        num_prompts=3, max_concurrency=3, input_len=8, output_len=16, ignore_eos=True, input_sizing="words"
    )
    result = asyncio.run(run_load(_endpoint(timed_server, kind), settings))
    assert result.metrics.completed == 3, [r.error for r in result.records]
    bodies = _bodies(timed_server)
    assert len(bodies) == 3
    reads_ignore_eos = kind in ("vllm", "sglang", "llamacpp")
    for path, body, headers in bodies:
        assert path == "/v1/chat/completions"
        assert set(body) == {"messages", "model", "stream", "stream_options", "max_tokens"} | (
            {"ignore_eos"} if reads_ignore_eos else set()
        )
        assert body["model"] == MODEL_ID and body["stream"] is True and body["max_tokens"] == 16
        assert body["stream_options"] == _stream_options(kind)
        assert body.get("ignore_eos") is (True if reads_ignore_eos else None)
        assert "extra_body" not in body  # the pre-issue-10 bug: an SDK keyword sent as a body key
        assert len(body["messages"]) == 1 and len(body["messages"][0]["content"].split()) == 8
        assert headers["authorization"] == "Bearer EMPTY"
    # the server generates past its end of sequence (12 tokens) only when it received ignore_eos
    assert result.metrics.total_output_tokens == (3 * 16 if reads_ignore_eos else 3 * 12)
    assert result.not_sent_fields == (() if reads_ignore_eos else ("ignore_eos",))


def test_load_and_compare_send_the_same_body_for_the_same_request(timed_server):
    from planner.serving.backends import stream_request

    request = ChatRequest(f"same {FAST}", max_tokens=7, ignore_eos=True)
    sent = []
    for backend in ("openai", "aiohttp"):
        timed_server.clear_recorded()
        asyncio.run(stream_request(_endpoint(timed_server, "vllm"), request, timeout_s=10, backend=backend))
        sent.append(_bodies(timed_server)[0][1])
    assert sent[0] == sent[1]
    assert sent[0]["ignore_eos"] is True and sent[0]["max_tokens"] == 7


# --- prompts of the asked length, on a byte-level tokenizer (as the H200's vLLM test tokenizer) -----------------------
@pytest.fixture(scope="module")
def bytes_server():
    with TimedServer(tokenizer="bytes") as server:
        yield server


TEMPLATE_TOKENS = len("<|user|>\n") + len("\n") + len("<|assistant|>\n")  # the timed server's chat template: 24


def test_default_sizing_gives_prompts_of_the_asked_length(bytes_server):
    bytes_server.clear_recorded()
    settings = LoadSettings(num_prompts=4, max_concurrency=4, input_len=512, output_len=4)
    result = asyncio.run(run_load(_endpoint(bytes_server, "vllm"), settings))
    assert result.metrics.completed == 4
    for _, body, _ in _bodies(bytes_server):
        assert len(body["messages"][0]["content"].encode()) == 512  # the text: exactly 512 byte-level tokens
    assert [r.prompt_tokens for r in result.records] == [512 + TEMPLATE_TOKENS] * 4  # server usage
    check = result.input_check
    assert (check.input_tokens_method, check.template_tokens, check.warning) == ("server_tokenize", 24, None)
    assert check.requested_tokens == check.measured_tokens == 4 * (512 + 24)
    assert result.metrics.total_input_tokens == 4 * 536


def test_token_id_prompts_are_exact_by_construction(bytes_server):
    bytes_server.clear_recorded()
    settings = LoadSettings(num_prompts=3, max_concurrency=3, input_len=300, output_len=4, input_sizing="token_ids")
    result = asyncio.run(run_load(_endpoint(bytes_server, "vllm"), settings))
    assert result.metrics.completed == 3
    bodies = _bodies(bytes_server)
    assert {path for path, _, _ in bodies} == {"/v1/completions"}
    for _, body, _ in bodies:
        assert len(body["prompt"]) == 300 and all(isinstance(i, int) for i in body["prompt"])
        assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert len({tuple(b["prompt"][:8]) for _, b, _ in bodies}) == 3  # no shared prefix for a prefix cache
    assert [r.prompt_tokens for r in result.records] == [300] * 3
    check = result.input_check
    assert (check.input_tokens_method, check.requested_tokens, check.measured_tokens) == ("token_ids", 900, 900)
    assert result.input_calibration.label == "exact (token ids)" and check.warning is None


def test_word_estimates_on_a_byte_tokenizer_warn_with_both_figures(bytes_server):
    # the issue's bug: one word per token sent prompts ~4x too long on a byte-level tokenizer, silently
    settings = LoadSettings(num_prompts=2, max_concurrency=2, input_len=100, output_len=4, input_sizing="words")
    result = asyncio.run(run_load(_endpoint(bytes_server, "vllm"), settings))
    check = result.input_check
    measured = check.measured_tokens
    assert check.requested_tokens == 200 and measured > 4 * 200  # ~5 bytes a word, plus the template
    assert check.warning == (
        f"wire-vllm: asked for 200 input tokens (the chat template not included), the server counted {measured:,} "
        f"({measured / 200 - 1:+.1%}); input lengths are estimates (one word per token)"
    )
