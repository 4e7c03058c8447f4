"""The demo server playing a planned deployment: what a load test measures there is what ``predict`` says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.timed_sse import TimedServer

ROOT = Path(__file__).resolve().parents[2]
#: Qwen2.5-32B on one H200: ~20 ms decode steps, long enough that the event loop's jitter is small beside them.
DEPLOYMENT = ("--model", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "h200", "--max-model-len", "8192")
# Open loop at constant gaps: each request reaches the engine alone, so the schedule does not hinge on which
# requests of a burst land in the same step (a few microseconds decide that, on a real server too).
WORKLOAD = (
    "--request-rate",
    "10",
    "--burstiness",
    "inf",
    "--num-prompts",
    "12",
    "--input-len",
    "256",
    "--output-len",
    "24",
)


def _cli(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "planner", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)


def test_measured_on_the_planned_server_matches_the_prediction() -> None:
    with TimedServer(planned=DEPLOYMENT, tokenizer="bytes") as server:
        models = __import__("httpx").get(server.url + "/v1/models", timeout=5).json()
        assert models["data"][0]["id"] == "Qwen/Qwen2.5-32B-Instruct"
        assert models["data"][0]["max_model_len"] == 8192
        measured = _cli(
            "bench",
            "--endpoint",
            f"vllm:{server.url}",
            *WORKLOAD,
            "--ignore-eos",
            "--input-sizing",
            "token_ids",
            "--no-scrape-metrics",
        )
    # The load test's prompts are token ids of exactly 256 tokens on /v1/completions; the prediction uses the same
    # schedule (same settings, same seed).
    predicted = _cli("predict", *DEPLOYMENT, *WORKLOAD)
    assert measured["completed"] == predicted["completed"] == 12
    assert measured["total_output_tokens"] == predicted["total_output_tokens"] == 12 * 24
    # What the client sees adds its own overheads to the engine's steps (a loopback HTTP hop, an event loop on a
    # shared CPU): within 20% for TPOT and throughput (steps of 20-60 ms; a loaded 2-core machine wakes a few ms
    # late), 35% for TTFT (one prefill step plus the 17 ms request overhead, each late wake-up a larger share).
    for key, rel in (("median_tpot_ms", 0.20), ("output_throughput", 0.20), ("median_ttft_ms", 0.35)):
        assert measured[key] == pytest.approx(predicted[key], rel=rel), key


def test_a_deployment_that_does_not_fit_is_refused() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "demo-server",
            "--port",
            "0",
            "--model",
            "meta-llama/Llama-3.1-70B-Instruct",
            "--gpu",
            "rtx-4090",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "does not fit" in out.stderr and out.stderr.count("\n") == 1
