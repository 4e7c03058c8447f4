"""The measured maximum-rate search against the demo server, whose timing model saturates at a rate worked out by
hand: found within 10% of it in a bounded number of runs, through the one load runner."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from planner.cli.main import main
from planner.loadtest.max_rate import MaxRateSpec, find_max_rate
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint
from tests.servers.timed_sse import TimedServer

#: 4 slots (--max-num-seqs 4); a request of 16 tokens holds one for its first token (100 ms) and 15 gaps of 20 ms:
#: 0.4 s, so the server saturates at 4 / 0.4 = 10 requests/s. With constant gaps (burstiness inf) nothing waits
#: below that rate; above it the queue grows by (rate − 10) requests a second: 3 s at 11 req/s leave 3 waiting,
#: 0.3 s each, past the 300 ms p99 TTFT. Slow enough that a busy 2-core machine's overheads stay a few percent.
CAPACITY = 4 / (0.100 + 15 * 0.020)
SERVER = {"max_num_seqs": 4, "flags": ("--ttft-ms", "100", "--itl-ms", "20")}
WORKLOAD = LoadSettings(
    num_prompts=32,
    output_len=16,
    ignore_eos=True,
    burstiness=math.inf,
    input_sizing="words",
    scrape_metrics=False,
    timeout_s=30.0,
)


def test_found_rate_is_within_ten_percent_of_the_servers_capacity() -> None:
    assert round(CAPACITY, 9) == 10.0
    spec = MaxRateSpec(WORKLOAD, parse_slos(["ttft_p99_ms=300"]), max_steps=8, probe_s=3.0, step_duration_s=60.0)
    with TimedServer(**SERVER) as server:
        result = asyncio.run(find_max_rate(Endpoint(name="demo", kind="vllm", base_url=server.url), spec))
    assert result.value is not None
    assert abs(result.value - CAPACITY) / CAPACITY <= 0.10, result.answer
    assert len(result.steps) <= 8
    assert all(s.result.metrics.completed == s.result.settings.num_prompts for s in result.steps if s.met)
    # the steps are ordinary runs: every request of a step reached the server
    assert result.steps[0].result.metrics.completed == 32  # the burst


def test_cli_find_max_rate_json_and_save_result(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "steps.json"
    with TimedServer(**SERVER) as server:
        code = main(
            [
                *("bench", "--endpoint", f"vllm:{server.url}", "--find-max-rate", "--slo", "ttft_p99_ms=300"),
                *("--num-prompts", "24", "--output-len", "16", "--ignore-eos", "--burstiness", "inf"),
                *("--input-sizing", "words", "--no-scrape-metrics", "--probe-duration", "2", "--max-steps", "4"),
                *("--save-result", str(saved), "--json"),
            ]
        )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["variable"] == "request_rate" and out["slos"] == ["ttft_p99_ms=300"]
    assert 1 <= len(out["steps"]) <= 4 and out["steps"][0]["burst"] is True
    assert {"p99_ttft_ms", "request_throughput", "meets_slo", "why"} <= set(out["steps"][0])
    files = json.loads(saved.read_text())
    assert len(files) == len(out["steps"]) and all("ttfts" in f for f in files)  # vllm bench serve result files
    # ... which recalibrate the predictor like any measured run (here on a model and GPU the demo did not play: the
    # point is the path, not the coefficients)
    profile = tmp_path / "profile.json"
    deployment = ["--model", "Qwen/Qwen3-0.6B", "--gpu", "l4", "--max-model-len", "4096"]
    assert main(["calibrate", str(saved), "--out", str(profile), *deployment]) == 0
    assert json.loads(profile.read_text())["coefficients"]


def test_cli_bad_slo_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--endpoint", "vllm:http://127.0.0.1:9", "--find-max-rate", "--slo", "ttft_p95_ms=1"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "--slo 'ttft_p95_ms=1' is not valid: expected METRIC_STAT_ms=LIMIT" in err
