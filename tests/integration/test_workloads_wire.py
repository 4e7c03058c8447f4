"""What the workload generators send, as the server received it: shared prefixes byte for byte, conversations that
carry the answers the server gave, trace arrivals on time, flush before prime before measure, and a malformed file of
each kind refused by line through the CLI.

Runs go through :func:`planner.loadtest.runner.run_load`, the runner the page and the CLI use, against the timed
server (:mod:`planner.demo`), which records every request with its body and its arrival time.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from planner.demo.script import token_text
from planner.loadtest.datasets import TraceRow
from planner.loadtest.generators import sampled_words
from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.serving.endpoints import Endpoint
from tests.servers.timed_sse import TimedServer

ROOT = Path(__file__).resolve().parents[2]
GENERATION = ("/v1/chat/completions", "/v1/completions")


def _generations(server: TimedServer) -> list[dict]:
    return [r for r in server.recorded() if r["path"] in GENERATION]


def _content(entry: dict) -> str:
    return json.loads(entry["body"])["messages"][-1]["content"]


def test_shared_prefixes_are_byte_identical_and_flush_comes_before_prime_before_measure():
    settings = LoadSettings(
        dataset_name="prefix_repetition",
        num_prompts=16,
        num_prefixes=4,
        prefix_len=64,
        suffix_len=8,
        output_len=2,
        num_warmups=4,
        flush_cache=True,
        max_concurrency=4,
    )
    with TimedServer(prefix_caching=True) as server:  # fixed tokenizer, no /tokenize: one word per token
        result = asyncio.run(run_load(Endpoint("t", "vllm", server.url), settings))
        recorded = server.recorded()
    assert result.metrics.completed == 16 and result.cache_flushed and result.cache_reset is None
    paths = [r["path"] for r in recorded if r["path"] in (*GENERATION, "/reset_prefix_cache")]
    assert paths == ["/reset_prefix_cache"] + ["/v1/chat/completions"] * 20  # flush, then 4 warmups + 16 measured
    prompts = [json.loads(r["body"])["messages"][-1]["content"] for r in recorded if r["path"] in GENERATION]
    prefixes = [sampled_words(f"p{k}", 64) for k in range(4)]
    # the warmups carry the four prefixes in turn (the prime); then each prefix starts exactly 4 measured prompts
    assert [next(k for k, p in enumerate(prefixes) if q.startswith(p + " ")) for q in prompts[:4]] == [0, 1, 2, 3]
    owners = Counter(next(k for k, p in enumerate(prefixes) if q.startswith(p + " ")) for q in prompts[4:])
    assert owners == {0: 4, 1: 4, 2: 4, 3: 4}
    suffixes = [q.split(" ", 64)[64] for q in prompts]
    assert len(set(suffixes)) == 20 and all(len(s.split(" ")) == 8 for s in suffixes)
    # the server's counters over the measured run: every prompt's prefix was primed by the warmups, so every
    # measured prompt hits it (the demo server's cache works on the chat-templated bytes: its own figure)
    assert result.prefix_cache is not None and result.prefix_cache.hit_rate > 0.5


def test_each_turn_carries_the_conversation_with_the_answers_received():
    settings = LoadSettings(
        dataset_name="multi_turn",
        num_prompts=6,
        num_turns=3,
        input_len=10,
        output_len=5,
        ignore_eos=True,
        max_concurrency=2,
        think_time_s=0.2,
    )
    with TimedServer() as server:
        result = asyncio.run(run_load(Endpoint("t", "vllm", server.url), settings))
        recorded = _generations(server)
    assert result.metrics.completed == 6 and result.turns == (0, 1, 2, 0, 1, 2)
    by_first: dict[str, list[dict]] = defaultdict(list)
    for r in recorded:
        by_first[json.loads(r["body"])["messages"][0]["content"]].append(r)
    assert sorted(len(v) for v in by_first.values()) == [3, 3]  # two conversations of three turns
    answer = "".join(token_text(k) for k in range(1, 6))  # what the timed server answers to 5 tokens
    for turns in by_first.values():
        bodies = [json.loads(r["body"]) for r in turns]
        for before, after in itertools.pairwise(bodies):
            # turn t = turn t−1's messages + the answer it got + a new user message of its own
            assert after["messages"][:-2] == before["messages"]
            assert after["messages"][-2] == {"role": "assistant", "content": answer}
            assert after["messages"][-1]["role"] == "user" and after["messages"][-1] not in before["messages"]
        for done, nxt in itertools.pairwise(turns):
            assert nxt["received_s"] - done["finished_s"] >= 0.2 - 0.005  # the think time, then the next turn
    assert [len(json.loads(r["body"])["messages"]) for r in next(iter(by_first.values()))] == [1, 3, 5]


@pytest.mark.parametrize(("scale", "unit"), [(1.0, 1.0), (0.001, 1000.0)])
def test_trace_arrivals_within_5_ms_of_their_timestamps(scale, unit):
    # seconds as recorded (BurstGPT), and milliseconds with time_scale 0.001 (Mooncake's traces, vLLM's
    # --timed-trace-sec-multiplier 0.001)
    stamps = (3.0, 3.05, 3.12, 3.2, 3.31, 3.4, 3.52, 3.6, 3.75, 3.8)
    rows = tuple(TraceRow(t * unit, 16, 2) for t in stamps)
    # two warmups (the trace's first shapes) open the client's connections first, as a replay should
    settings = LoadSettings(
        dataset_name="timed_trace",
        num_prompts=10,
        num_warmups=2,
        trace_rows=rows,
        time_scale=scale,
        max_concurrency=None,
    )
    expected = [t - stamps[0] for t in stamps]
    # On an idle machine every arrival lands within 5 ms (measured: at most 2.2 ms at the server, 1.4-3.8 ms from
    # release to send). This 2-core machine is shared with other test runs, whose bursts can hold either process
    # off the CPU for 10-50 ms at any moment (seen here), so an attempt allows two such outliers in ten at the
    # server (a second process) and one at the client, and a replay gets three attempts.
    failures = []
    for _ in range(3):
        with TimedServer() as server:
            result = asyncio.run(run_load(Endpoint("t", "vllm", server.url), settings))
            received = [r["received_s"] for r in _generations(server)][2:]
        assert result.metrics.completed == 10 and result.metrics.failed == 0
        # the server's clock against the trace's: one offset (the median gap, so one late request does not set it)
        gaps = sorted(r - e for r, e in zip(received, expected, strict=True))
        errors_ms = [round((r - e - gaps[5]) * 1000, 1) for r, e in zip(received, expected, strict=True)]
        sent = sorted(r.t_sent - result.start_s for r in result.records)
        sent_ms = [round((a - b) * 1000, 1) for a, b in zip(sent, expected, strict=True)]
        within = [sum(abs(e) <= 5 for e in errs) for errs in (errors_ms, sent_ms)]
        median_ms = sorted(abs(e) for e in errors_ms)[5]
        if within[0] >= 8 and within[1] >= 9 and median_ms <= 3:
            return
        failures.append((errors_ms, sent_ms))
    pytest.fail(f"arrivals off their timestamps by more than 5 ms (server, client): {failures}")


FILES = {
    "custom": ('{"prompt": "a"}\n{"prompt": ""}\n', "line 2"),
    "sharegpt": ('[{"conversations": [{"value": "a"}, {"value": "b"}]},\n{"conversation": []}]', "line 2"),
    "timed_trace": ('{"timestamp": 0, "input_length": 8, "output_length": 2}\n{"timestamp": 1}\n', "line 2"),
    "burstgpt": (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,m,10,-3,7,x\n",
        "line 2",
    ),
}


@pytest.mark.parametrize("name", list(FILES))
def test_cli_refuses_a_malformed_file_by_line(name, tmp_path, closed_port_url):
    text, where = FILES[name]
    path = tmp_path / f"bad.{name}"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:{closed_port_url}", "--dataset-name", name,
         "--dataset-path", str(path), "--num-prompts", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"python -m planner bench: error: --dataset-path {path} {where}")


def test_cli_prefix_repetition_reports_the_hit_rate(tmp_path):
    with TimedServer(tokenizer="bytes", prefix_caching=True) as server:
        out = subprocess.run(
            [sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:{server.url}",
             "--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "256",
             "--prefix-repetition-suffix-len", "32", "--prefix-repetition-num-prefixes", "2",
             "--prefix-repetition-output-len", "2", "--num-prompts", "8", "--max-concurrency", "1", "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
    data = json.loads(out.stdout)
    # 2 prefixes of 256 byte-tokens: the first prompt of each misses, the 6 others hit their prefix's whole blocks
    assert data["planner_dataset_name"] == "prefix_repetition" and data["completed"] == 8
    assert 0.5 < data["planner_prefix_cache_hit_rate"] < 1
    assert data["planner_prefix_cache_queries"] == data["total_input_tokens"]
