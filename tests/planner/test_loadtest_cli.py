"""``python -m planner bench``: the vLLM-style table, the vLLM-keyed JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

from planner.cli import main

FAST = "load [ttft_ms=10] [itl_ms=2] [tokens=4]"


def test_bench_table(timed_server, capsys):
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--concurrency", "2", "--num-prompts", "4"]
    assert main([*argv, "--prompt", FAST, "--output-len", "4", "--goodput", "ttft:5000"]) == 0
    out = capsys.readouterr().out
    assert "Serving Benchmark Result" in out
    rows = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert (rows["Successful requests"].strip(), rows["Failed requests"].strip()) == ("4", "0")
    assert rows["Maximum request concurrency"].strip() == "2"
    assert rows["Total generated tokens"].strip() == "16"  # 4 requests x 4 tokens
    assert rows["Samples (TTFT)"].strip() == "4" and rows["Samples (ITL)"].strip() == "8"  # 2 chunk gaps each
    assert "Request goodput (req/s):" in out and "Mean TTFT (ms):" in out and "P99 ITL (ms):" in out


def test_bench_json_has_vllm_keys(timed_server, capsys):
    argv = ["bench", "--endpoint", f"a=vllm:{timed_server.url}", "--request-rate", "50", "--num-prompts", "3"]
    assert main([*argv, "--prompt", FAST, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["completed"], data["failed"], data["endpoint"], data["request_rate"]) == (3, 0, "a", 50.0)
    for key in ("duration", "request_throughput", "output_throughput", "mean_ttft_ms", "p99_itl_ms", "mean_e2el_ms"):
        assert data[key] is not None
    assert data["request_goodput"] is None


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--endpoint", "vllm:http://127.0.0.1:1", "--concurrency", "0"], "--concurrency 0 is not valid"),
        (["--endpoint", "nope"], "--endpoint 'nope=nope' is not valid"),
        (["--endpoint", "vllm:http://127.0.0.1:1", "--goodput", "ttft"], "--goodput 'ttft' is not valid"),
    ],
)
def test_bench_bad_flag_is_one_line_exit_2(argv, fragment, capsys):
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner bench: error: ") and fragment in err
    assert err.count("\n") == 1
