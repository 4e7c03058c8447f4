"""Streams issue 24 found mis-measured, played by a scripted server with known timing (:mod:`tests.servers.
scripted_stream`), through the product's own paths: :func:`~planner.serving.backends.stream_request` on every client
backend, :func:`~planner.loadtest.runner.run_load` (Load Test, ``bench``), :func:`~planner.compare.run.run_compare`
(Live Compare, ``compare``) and the CLI.

The truth each test holds the client to comes from the script: 12 chunks of 4 tokens, the first 50 ms after the request
was read, one every 40 ms after it, so 48 tokens, E2E 490 ms, TPOT = 11 · 40 / 47 = 9.36 ms, ITL 10 ms per token
(40 ms per chunk). Counting a chunk as a token instead gives 12 tokens and TPOT 40 ms. Timing bounds follow
``tests/unit/serving/test_clients.py``: at most 2 ms under the truth, and less than halfway to the wrong value.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from planner.cli.main import main
from planner.serving.backends import stream_request
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from tests.servers.scripted_stream import MODEL_ID, Script, ScriptedServer, words

BACKENDS = ("openai", "huggingface_hub", "aiohttp")
CHAT = "/v1/chat/completions"


def _endpoint(server: ScriptedServer, kind: str = "vllm", name: str | None = None) -> Endpoint:
    return Endpoint(name or f"s-{kind}", kind, server.url, model=MODEL_ID)


def _stream(server: ScriptedServer, backend: str, kind: str = "vllm"):
    request = ChatRequest("hello", max_tokens=64)
    return asyncio.run(stream_request(_endpoint(server, kind), request, timeout_s=10, backend=backend))


# --- 1. [DONE] is an end, with or without a finish reason ------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_done_without_a_finish_reason_ends_the_stream(backend):
    # Several OpenAI-compatible servers and proxies end this way: tokens, usage, [DONE], never a finish_reason.
    with ScriptedServer(Script(chunks=3, tokens_per_chunk=1, ttft_ms=5, gap_ms=5, finish_reason=None)) as server:
        record = _stream(server, backend)
        assert len(server.bodies(CHAT)) == 1
    assert (record.ok, record.error_kind, record.error) == (True, None, None)
    assert (record.text, record.finish_reason) == (words(1, 3), None)
    assert (record.output_tokens, record.output_tokens_source) == (3, "usage")


@pytest.mark.parametrize("backend", BACKENDS)
def test_done_alone_is_an_empty_answer_not_a_cut(backend):
    script = Script(chunks=0, finish_reason=None, usage="none", role_chunk=False)  # the body is `data: [DONE]`
    with ScriptedServer(script) as server:
        record = _stream(server, backend)
        assert len(server.bodies(CHAT)) == 1
    assert (record.ok, record.error_kind, record.partial) == (False, "empty", False)
    assert record.error == "empty answer: the stream ended normally ([DONE]) without any text, reasoning or tool call"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stream_without_done_or_finish_reason_is_still_cut(backend):
    with ScriptedServer(Script(chunks=2, tokens_per_chunk=1, ttft_ms=5, gap_ms=5, finish_reason=None, done=False)) as s:
        record = _stream(s, backend)
    assert (record.ok, record.error_kind, record.partial) == (False, "cut", True)
    assert record.error == "stream ended before a finish reason or [DONE]"


# --- 4. an empty answer is a failure, named, and nothing succeeded is an exit 1 ------------------------------------
EMPTY = Script(chunks=0, usage="none", finish_reason="stop")  # role chunk, an empty delta with "stop", [DONE]
EMPTY_ERROR = "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"


def test_bench_of_empty_answers_fails_with_the_reason(capsys, tmp_path):
    out = tmp_path / "run.json"
    with ScriptedServer(EMPTY) as server:
        argv = ["bench", "--endpoint", f"vllm:{server.url}", "--num-prompts", "3", "--input-sizing", "words"]
        code = main([*argv, "--no-scrape-metrics", "--save-result", str(out)])
        assert len(server.bodies(CHAT)) == 3
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.splitlines()[-1] == (
        f"python -m planner bench: error: all 3 requests failed; most common: empty (3 of 3): {EMPTY_ERROR}"
    )
    saved = json.loads(out.read_text())
    assert (saved["completed"], saved["failed"], saved["failures_by_kind"]) == (0, 3, {"empty": 3})
    assert saved["errors"] == [EMPTY_ERROR] * 3


def test_compare_of_empty_answers_only_exits_1(capsys):
    with ScriptedServer(EMPTY) as server:
        argv = ["compare", "--endpoint", f"a=vllm:{server.url}", "--endpoint", f"b=openai:{server.url}"]
        code = main([*argv, "--prompt", "hi"])
    captured = capsys.readouterr()
    assert code == 1
    assert f"  a: empty: {EMPTY_ERROR}" in captured.out.splitlines()
    assert captured.err.splitlines() == [
        f"python -m planner compare: error: all 2 requests failed; most common: empty (2 of 2): {EMPTY_ERROR}"
    ]


def test_compare_with_one_empty_endpoint_reports_it_failed(capsys):
    with ScriptedServer(EMPTY) as empty, ScriptedServer(Script(ttft_ms=5, gap_ms=5, chunks=3)) as good:
        argv = ["compare", "--endpoint", f"empty=vllm:{empty.url}", "--endpoint", f"good=vllm:{good.url}"]
        code = main([*argv, "--prompt", "hi"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    rows = {line.split()[0]: line.split()[1] for line in captured.out.splitlines()[1:3]}
    assert rows == {"empty": "0/1", "good": "1/1"}
