"""run_compare, the background CompareRun, the result tables and the compare CLI, against the timed server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.compare.run import CompareRun, metrics_frame, run_compare, summary_frame, to_csv, to_json
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest

ROOT = Path(__file__).resolve().parents[3]


def test_run_compare_concurrent_and_sequential_repeats(timed_server, closed_port_url):
    endpoints = [
        Endpoint("vllm", "vllm", timed_server.url),
        Endpoint("tgi", "tgi", timed_server.url),
        Endpoint("down", "vllm", closed_port_url),
    ]
    result = asyncio.run(run_compare(endpoints, ChatRequest("hi [tokens=4]"), repeat=2, timeout_s=5))
    # Endpoints run side by side: the second endpoint's first request is sent before the first endpoint's
    # first request has finished (each takes 150 + 3·20 = 210 ms); repeats of one endpoint run in turn.
    vllm_first, vllm_second, tgi_first = result.records[0], result.records[1], result.records[2]
    assert tgi_first.t_sent < vllm_first.t_sent + vllm_first.end_s
    assert vllm_second.t_sent >= vllm_first.t_sent + vllm_first.end_s
    assert [r.endpoint for r in result.records] == ["vllm", "vllm", "tgi", "tgi", "down", "down"]
    assert [r.ok for r in result.records] == [True, True, True, True, False, False]
    assert [i.healthy for i in result.infos] == [True, True, False]
    frame = metrics_frame(result)
    assert list(frame["repeat"]) == [0, 1, 0, 1, 0, 1]
    assert frame.loc[frame.endpoint == "down", "ttft_ms"].isna().all()
    summary = summary_frame(result).set_index("endpoint")
    assert summary.loc["vllm", "tpot_ms"] == pytest.approx(20, abs=5)  # accuracy itself: test_clients.py
    assert summary.loc["down", "failed"] == 2
    assert summary.loc["vllm", "output_tokens"] == 4
    assert to_csv(result).splitlines()[0].startswith("endpoint,repeat,ok,error_kind,error,ttft_ms")
    data = json.loads(to_json(result))
    assert data["records"][0]["chunks"][0]["text"] == "t1 "


def test_compare_run_snapshot_streams_then_finishes(timed_server):
    run = CompareRun(
        [Endpoint("a", "vllm", timed_server.url), Endpoint("b", "tgi", timed_server.url)],
        ChatRequest("hi [tokens=12] [itl_ms=30]"),
        timeout_s=5,
    ).start()
    seen_partial = False
    while not run.done:
        snap = run.snapshot()
        if any(0 < len(p.text) < len("t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 ") for p in snap.endpoints):
            seen_partial = True
        time.sleep(0.02)
    assert seen_partial  # the answer was visible while it streamed
    snap = run.snapshot()
    assert snap.done and not snap.cancelled and snap.error is None and snap.result is not None
    for p in snap.endpoints:
        assert p.done and len(p.records) == 1 and p.records[0].ok and p.tokens == 12
        assert p.text.endswith("t12 ") and len(p.token_times_s) == len(p.records[0].chunks)


def test_compare_run_cancel(timed_server):
    run = CompareRun([Endpoint("h", "vllm", timed_server.url)], ChatRequest("x [mode=hang]"), timeout_s=30).start()
    time.sleep(0.3)
    run.cancel()
    assert run.wait(10)  # the hanging request's 30 s timeout was not waited for: its record says "cancelled"
    snap = run.snapshot()
    assert snap.cancelled and snap.result is not None and snap.result.cancelled
    assert [r.error_kind for r in snap.endpoints[0].records] == ["cancelled"]


def test_cli_compare_text_and_json(timed_server, capsys):
    argv = ["compare", "--endpoint", f"a=vllm:{timed_server.url}", "--endpoint", f"b=tgi:{timed_server.url}"]
    assert main([*argv, "--prompt", "hi [tokens=3]", "--timeout", "5"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["endpoint", "ok", "TTFT"]
    assert out.splitlines()[1].split()[:2] == ["a", "1/1"] and out.splitlines()[2].split()[:2] == ["b", "1/1"]
    assert main([*argv, "--prompt", "hi [tokens=3]", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["output_tokens"] for r in data["records"]] == [3, 3]


def test_cli_compare_subprocess(timed_server):
    out = subprocess.run(
        [sys.executable, "-m", "planner", "compare", "--endpoint", f"x=vllm:{timed_server.url}", "--prompt", "hi"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.splitlines()[1].split()[:2] == ["x", "1/1"]


def test_context_checked_before_sending_with_server_token_count(monkeypatch):
    # TGI's /tokenize counts the prompt; a prompt over max_input_tokens is refused without a request.
    from huggingface_hub import constants

    from tests.servers.tgi import TGIServer

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the client refuses even localhost when offline
    with TGIServer(max_input_tokens=10, max_total_tokens=64) as server:
        endpoint = Endpoint("tgi", "tgi", server.base_url)
        long_prompt = ChatRequest(" ".join(["word"] * 40), max_tokens=8)
        result = asyncio.run(run_compare([endpoint], long_prompt, timeout_s=5))
        record = result.records[0]
        assert not record.ok and record.error_kind == "context_length"
        assert "max_input_tokens=10" in record.error
        assert not any(r["path"] == "/v1/chat/completions" for r in server.requests)
        short = asyncio.run(run_compare([endpoint], ChatRequest("hello there", max_tokens=8), timeout_s=5))
        assert short.records[0].ok


def test_a_busy_app_process_does_not_delay_the_measurement(timed_server):
    # The page's process renders charts while a run streams; C calls there hold the GIL for long stretches. Streams
    # read on a thread of that process were timestamped late (a 12-token answer seen in one burst 0.5 s after a
    # 150 ms first token); in the worker process they are not. Here a sort of 3 million floats (one C call, the GIL
    # held throughout: ~1 s) runs while the server streams its 150 ms + 11 x 20 ms answer.
    import random

    data = [random.random() for _ in range(3_000_000)]
    run = CompareRun([Endpoint("a", "vllm", timed_server.url)], ChatRequest("busy [tokens=12]"), timeout_s=10)
    run.start()
    deadline = time.monotonic() + 30
    while not run.done and time.monotonic() < deadline:
        sorted(data)
    assert run.wait(10)
    (record,) = run.snapshot().endpoints[0].records
    m = record.first_token_s, (record.last_token_s - record.first_token_s) / 11
    # halfway between the server's schedule and a delay by one sort: TTFT 150 ms, 20 ms per token
    assert 0.145 <= m[0] < 0.5 and 0.015 <= m[1] < 0.05, m
