"""``python -m planner`` as a process: exit codes, a closed stdout, ``| head -1``, a deeply nested file.

Golden values: vLLM v0.19.0's startup log of Llama-3.1-8B-Instruct on one H100 80GB (id 38 of
bench/data/vllm_capacity_logs.json: "GPU KV cache size: 476,000 tokens"); KV bytes per token by hand from its
config.json: 2 × 32 × 8 × 128 × 2 B = 131,072 B. The in-process tests of the CLI are in tests/unit/cli/test_main.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli.main import main
from tests.servers.empty_answer import empty_answer_server

REPO_ROOT = Path(__file__).resolve().parents[3]


LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


BASE = ["plan", "--model", LLAMA_8B, "--gpu", "h100"]


#: vllm_capacity_logs.json id 38 (vLLM v0.19.0, H100 80GB, Llama-3.1-8B-Instruct, util 0.95, 8192).
LOG38_ARGV = [
    "plan",
    "--model",
    LLAMA_8B,
    "--gpu",
    "H100 80GB",
    "--gpu-memory-utilization",
    "0.95",
    "--max-model-len",
    "8192",
    "--engine-version",
    "0.19.0",
]


LOG38_KV_CACHE_TOKENS = 476_000


LLAMA_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # = 131,072, by hand from config.json


REL_TOL = 0.01


def test_python_dash_m_planner_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planner", *LOG38_ARGV, "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["kv_bytes_per_token"] == LLAMA_8B_KV_BYTES_PER_TOKEN
    assert payload["kv_cache_tokens"] == pytest.approx(LOG38_KV_CACHE_TOKENS, rel=REL_TOL)


def test_python_dash_m_planner_error_exit_code() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planner", *BASE, "--bogus-flag"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1
    assert "--bogus-flag" in proc.stderr


def test_closed_stdout_is_quiet_exit_141() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner", *BASE, "--json"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # no reader left: the first write to stdout fails with EPIPE
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141  # 128 + SIGPIPE, as a shell reports it
    assert err == ""  # no BrokenPipeError traceback, no "Exception ignored" line


def test_head_dash_1_prints_one_line_without_traceback() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m planner plan --model {LLAMA_8B} --gpu h100 | head -1",
        shell=True,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""


def test_compare_empty_answer_fails_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with empty_answer_server() as url:
        code = main(["compare", "--endpoint", f"lcp=llamacpp:{url}", "--prompt", "Write a long story about a dragon."])
    captured = capsys.readouterr()
    assert code == 1
    row = next(line.split() for line in captured.out.splitlines() if line.startswith("lcp "))
    # endpoint, ok, TTFT, TPOT, ITL, E2E, tokens: it failed, so nothing is measured
    assert row == ["lcp", "0/1", "n/a", "n/a", "n/a", "n/a", "n/a"]
    reason = "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"
    assert f"  lcp: empty: {reason}" in captured.out.splitlines()
    assert (
        captured.err
        == f"python -m planner compare: error: all 1 request failed; most common: empty (1 of 1): {reason}\n"
    )


def test_a_deeply_nested_file_is_one_line_and_exit_2_from_the_shell(tmp_path) -> None:
    # the new-user trial: `predict --calibration deep_runs.json` printed a 28-line RecursionError traceback, exit 1
    deep = tmp_path / "deep_runs.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    argv = ["predict", "--model", LLAMA_8B, "--gpu", "h200", "--input-len", "100", "--output-len", "100"]
    done = subprocess.run(
        [sys.executable, "-m", "planner", *argv, "--max-concurrency", "4", "--calibration", str(deep)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"python -m planner predict: error: {deep}: nested too deeply to read; expected a JSON calibration profile\n"
    )
