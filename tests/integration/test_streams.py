"""Streams issue 24 found mis-measured, played by a scripted server with known timing (:mod:`tests.servers.
scripted_stream`), through the product's own paths: :func:`~planner.serving.backends.stream_request` on every client
backend, :func:`~planner.loadtest.runner.run_load` (Load Test, ``bench``), :func:`~planner.compare.run.run_compare`
(Live Compare, ``compare``) and the CLI.

The truth each test holds the client to comes from the script: 12 chunks of 4 tokens, the first 50 ms after the request
was read, one every 40 ms after it, so 48 tokens, E2E 490 ms, TPOT = 11 · 40 / 47 = 9.36 ms, ITL 10 ms per token
(40 ms per chunk). Counting a chunk as a token instead gives 12 tokens and TPOT 40 ms. Timing bounds follow
``tests/integration/serving/test_clients.py``: at most 2 ms under the truth, and less than halfway to the wrong value.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from planner.cli.main import main
from planner.compare.charts import endpoint_metrics
from planner.compare.run import run_compare
from planner.loadtest.results import saved_run, to_vllm_file
from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.metrics.latency import compute_metrics
from planner.serving.backends import stream_request
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from tests.servers.scripted_stream import MODEL_ID, Script, ScriptedServer, words

BACKENDS = ("openai", "huggingface_hub", "aiohttp")
CHAT = "/v1/chat/completions"
#: The script's truth (module docstring).
TOKENS = 48
TPOT_S = 11 * 0.040 / 47
CHUNK_TPOT_S = 0.040  # TPOT with one token per chunk
ITL_TOKEN_S = 0.010
ITL_CHUNK_S = 0.040


def _endpoint(server: ScriptedServer, kind: str = "vllm", name: str | None = None) -> Endpoint:
    return Endpoint(name or f"s-{kind}", kind, server.url, model=MODEL_ID)


def _stream(server: ScriptedServer, backend: str, kind: str = "vllm"):
    request = ChatRequest("hello", max_tokens=64)
    return asyncio.run(stream_request(_endpoint(server, kind), request, timeout_s=10, backend=backend))


def _load(server: ScriptedServer, num_prompts: int = 4):
    settings = LoadSettings(
        num_prompts=num_prompts, max_concurrency=2, input_len=8, output_len=64, input_sizing="words", timeout_s=10
    )
    return asyncio.run(run_load(_endpoint(server), settings))


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


# --- 2. no usage: the server's tokenizer counts the answer, else the count is flagged as an estimate ----------------
def test_load_counts_output_tokens_with_the_tokenizer_route():
    with ScriptedServer(Script(usage="none", tokenize=True)) as server:
        result = _load(server)
        received = [path for _, path, _ in server.received]
        tokenize_bodies = server.bodies("/tokenize")
    m = result.metrics
    assert m.completed == 4, [r.error for r in result.records]
    assert m.total_output_tokens == 4 * TOKENS  # 192, not 48 (one per chunk)
    assert {r.output_tokens_source for r in result.records} == {"tokenizer"}
    assert result.output_tokens_method == "tokenizer"
    assert TPOT_S - 0.002 <= m.tpot.median_s < (TPOT_S + CHUNK_TPOT_S) / 2  # ~9.4 ms, not 40
    # vLLM's /tokenize with the answer's text, no special tokens; the four answers are one text: one call
    assert tokenize_bodies == [{"model": MODEL_ID, "prompt": words(1, TOKENS), "add_special_tokens": False}]
    # off the timed path: counted after the last answer ended
    assert received.index("/tokenize") > max(i for i, path in enumerate(received) if path == CHAT)
    assert not any("output tokens are estimates" in note for note in result.notes)
    saved = to_vllm_file(saved_run(result, "run", started=_started()))
    assert (saved["output_tokens_method"], saved["total_output_tokens"]) == ("tokenizer", 192)


def test_load_without_a_tokenizer_route_flags_the_estimate():
    with ScriptedServer(Script(usage="none", tokenize=False)) as server:
        result = _load(server)
        assert len(server.bodies("/tokenize")) == 1  # asked once; a 404 ends the asking
    m = result.metrics
    assert (m.completed, m.total_output_tokens) == (4, 48)  # one per chunk: the best the client can do
    assert result.output_tokens_method == "chunks (estimate)"
    assert m.tpot.median_s >= CHUNK_TPOT_S - 0.002  # per chunk, and said so:
    warning = next(note for note in result.notes if "output tokens are estimates" in note)
    assert warning == (
        "s-vllm: output tokens are estimates, one per chunk (total_output_tokens 48, 4 of 4 requests): the stream "
        "carried no usage and no tokenizer route counted the text; with several tokens per chunk, "
        "total_output_tokens and output_throughput read low and TPOT high"
    )
    saved = to_vllm_file(saved_run(result, "run", started=_started()))
    assert saved["output_tokens_method"] == "chunks (estimate)"
    assert warning in saved["planner_notes"]


def test_bench_cli_carries_the_method_and_the_warning(capsys, tmp_path):
    out = tmp_path / "run.json"
    with ScriptedServer(Script(usage="none", ttft_ms=5, gap_ms=5, chunks=3)) as server:
        argv = ["bench", "--endpoint", f"vllm:{server.url}", "--num-prompts", "2", "--input-sizing", "words"]
        code = main([*argv, "--no-scrape-metrics", "--save-result", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert f"{'Output tokens counted by:':<40} chunks (estimate)" in captured.out.splitlines()
    assert "output tokens are estimates, one per chunk (total_output_tokens 6, 2 of 2 requests)" in captured.err
    assert json.loads(out.read_text())["output_tokens_method"] == "chunks (estimate)"


@pytest.mark.parametrize(("kind", "body"), [("vllm", "prompt"), ("tgi", "inputs")])
def test_compare_counts_output_tokens_with_the_kinds_tokenizer_route(kind, body):
    with ScriptedServer(Script(usage="none", tokenize=True)) as server:
        result = asyncio.run(run_compare([_endpoint(server, kind)], ChatRequest("hello", max_tokens=64), timeout_s=10))
        tokenize_bodies = server.bodies("/tokenize")
    (record,) = result.records
    assert (record.ok, record.output_tokens, record.output_tokens_source) == (True, TOKENS, "tokenizer")
    assert tokenize_bodies[-1][body] == words(1, TOKENS)  # vLLM {"prompt"}, TGI {"inputs"}
    frame = endpoint_metrics(result)
    assert frame.loc[0, "output_tokens_method"] == "tokenizer"
    assert TPOT_S - 0.002 <= compute_metrics(record).tpot_s < (TPOT_S + CHUNK_TPOT_S) / 2


def test_compare_cli_says_when_output_tokens_are_estimates(capsys):
    with ScriptedServer(Script(usage="none", ttft_ms=5, gap_ms=5, chunks=3)) as server:
        code = main(["compare", "--endpoint", f"o=openai:{server.url}", "--prompt", "hi", "--json"])
        assert server.bodies("/tokenize") == []  # an openai kind has no tokenizer route: not even asked
    captured = capsys.readouterr()
    assert code == 0
    summary = json.loads(captured.out)["summary"]
    assert [(r["endpoint"], r["output_tokens"], r["output_tokens_method"]) for r in summary] == [
        ("o", 3, "chunks (estimate)")
    ]
    assert captured.err == (
        "python -m planner compare: note: o: output tokens are estimates, one per chunk (total_output_tokens 3, 1 of "
        "1 requests): the stream carried no usage and no tokenizer route counted the text; with several tokens per "
        "chunk, total_output_tokens and output_throughput read low and TPOT high\n"
    )


# --- 3. Live Compare's ITL per token is per token for every kind ----------------------------------------------------
@pytest.mark.parametrize("usage", ["final", "none"])
def test_compare_itl_per_token_is_the_same_for_every_kind(usage):
    # The same stream to a vllm and an openai endpoint: final usage only (or none, counted by the tokenizer).
    with ScriptedServer(Script(usage=usage, tokenize=True)) as server:
        endpoints = [_endpoint(server, "vllm"), _endpoint(server, "openai")]
        if usage == "none":
            endpoints = endpoints[:1]  # an openai kind has no tokenizer route to count with
        result = asyncio.run(run_compare(endpoints, ChatRequest("hello", max_tokens=64), timeout_s=10))
    frame = endpoint_metrics(result)
    assert list(frame["output_tokens"]) == [TOKENS] * len(endpoints)
    for row in frame.to_dict("records"):
        assert ITL_TOKEN_S * 1000 - 2 <= row["itl_p50_ms"] < (ITL_TOKEN_S + ITL_CHUNK_S) / 2 * 1000, row["endpoint"]
        assert row["itl_n"] == 11 * 4  # every gap after the first chunk, split over its chunk's 4 tokens


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


def _started():
    from datetime import datetime

    return datetime(2026, 1, 1)
