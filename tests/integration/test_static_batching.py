"""Static against continuous batching, measured through the one runner (:func:`planner.loadtest.runner.run_load`)
and the CLI, on the timed demo server and on a real llama.cpp server.

The source article's example (``tests/data/article.md``, "Continuous batching"): requests A, B, C of 50, 500
and 30 output tokens in one batch, D and E waiting. Static batching: the batch lasts as long as B, and D, E start only
after it; continuous: D joins when C finishes (step 30), E when A does (step 50). On the demo server (5 ms to the
first token, then 1 ms per token, no batch slowdown) that is, worked by hand:

* static: batch 1 ends with B at 5 + 499 = 504 ms; batch 2 (D 40, E 60 tokens) is sent then and ends 5 + 59 = 64 ms
  later: 568 ms for 680 tokens;
* continuous (concurrency 3): D is sent when C ends (34 ms), E when A ends (54 ms); the last to end is B at 504 ms.

So static requests of the second batch are all sent after the first batch's last end, continuous ones before it,
and continuous output throughput is about 568 / 504 = 1.13× static's. Times on a shared machine vary, so the tests
assert the order of events (sent-after-end), and only that the ratio is above 1.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from planner.loadtest.results import batching_frame, saved_run
from planner.loadtest.runner import LoadResult, run_load
from planner.loadtest.settings import LoadSettings
from planner.serving.endpoints import Endpoint
from tests.servers.timed_sse import TimedServer

ROOT = Path(__file__).resolve().parents[2]
# the article's A, B, C, then D, E (the demo server reads [tokens=N] from the prompt)
ARTICLE = ("A [tokens=50]", "B [tokens=500]", "C [tokens=30]", "D [tokens=40]", "E [tokens=60]")
FAST = ("--ttft-ms", "5", "--itl-ms", "1")


def _settings(batching: str, **kw) -> LoadSettings:
    base = {"dataset_name": "custom", "prompts": ARTICLE, "num_prompts": 5, "max_concurrency": 3}
    return LoadSettings(batching=batching, scrape_metrics=False, **{**base, **kw})


def _ends(result: LoadResult) -> list[float]:
    return [r.t_sent + (r.end_s or 0.0) for r in result.records]


def _second_batch_waits(result: LoadResult, size: int) -> bool:
    """Every request after the first ``size`` was sent after the last of the first ``size`` ended."""
    records = sorted(result.records, key=lambda r: r.t_sent)
    first_end = max(r.t_sent + (r.end_s or 0.0) for r in records[:size])
    return all(r.t_sent >= first_end for r in records[size:])


def test_static_batches_wait_for_the_slowest_and_continuous_does_not():
    with TimedServer(flags=FAST) as server:
        ep = Endpoint("demo", "vllm", server.url)
        static = asyncio.run(run_load(ep, _settings("static")))
        continuous = asyncio.run(run_load(ep, _settings("continuous")))
    assert static.metrics.completed == continuous.metrics.completed == 5
    assert static.metrics.total_output_tokens == continuous.metrics.total_output_tokens == 680
    assert _second_batch_waits(static, 3)
    assert not _second_batch_waits(continuous, 3)  # D went in when C ended, before B did
    # the batch of 3 was sent together: its sends are the run's first three, before any of them ended
    first = sorted(static.records, key=lambda r: r.t_sent)[:3]
    assert max(r.t_sent for r in first) < min(_ends(static))
    started = datetime(2026, 12, 2)
    runs = [saved_run(static, "s", started=started), saved_run(continuous, "c", started=started)]
    frame = batching_frame(runs)
    assert len(frame) == 1 and frame.loc[0, "max_concurrency"] == 3
    assert frame.loc[0, "throughput_ratio"] > 1.0  # by hand: ~1.13 (module docstring)


def test_static_without_a_cap_is_one_batch():
    with TimedServer(flags=FAST) as server:
        result = asyncio.run(run_load(Endpoint("demo", "vllm", server.url), _settings("static", max_concurrency=None)))
    sends = sorted(r.t_sent for r in result.records)
    assert result.metrics.completed == 5 and sends[-1] < min(_ends(result))  # all five sent before any ended


def test_cli_compare_prints_both_runs_and_the_ratio():
    with TimedServer(flags=FAST) as server:
        out = subprocess.run(
            [
                *(sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:{server.url}"),
                *("--batching", "compare", "--concurrency", "3", "--num-prompts", "5"),
                *("--prompt", ARTICLE[0], "--prompt", ARTICLE[1], "--prompt", ARTICLE[2]),
                *("--prompt", ARTICLE[3], "--prompt", ARTICLE[4], "--no-scrape-metrics"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Serving Benchmark Result") == 2
    lines = out.stdout.splitlines()
    assert sum(line.startswith("Batching (client):") and line.endswith("static batches") for line in lines) == 1
    ratio = next(line for line in lines if line.startswith("Continuous / static:"))
    assert float(ratio.split()[-1].rstrip("x")) > 1.0


def test_bad_batching_is_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "planner", "bench", "--endpoint", "vllm:http://127.0.0.1:9", "--batching", "waves"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--batching" in out.stderr and "static" in out.stderr


def test_static_batching_against_llama_cpp(llama_url):
    # one slot on llama-cpp-python: requests are served one at a time either way, and static batches of 2 still
    # wait for the slower of each pair before the next pair is sent
    settings = LoadSettings(
        dataset_name="custom",
        prompts=("Name a colour.", "Count to five.", "Say hi.", "Name a fruit."),
        num_prompts=4,
        max_concurrency=2,
        output_len=8,
        batching="static",
        timeout_s=120,
    )
    result = asyncio.run(run_load(Endpoint("llama", "llamacpp", llama_url), settings))
    assert result.metrics.completed == 4
    assert _second_batch_waits(result, 2)
    assert result.spec_decode is None  # llama.cpp exports no vLLM spec-decode counters
