"""``python -m planner demo-server``: the README's way to try the endpoint pages and the CLI without a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_demo_server_serves_a_bench_run():
    server = subprocess.Popen(
        [sys.executable, "-m", "planner", "demo-server", "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        first = server.stdout.readline()
        assert first.startswith("demo server on http://127.0.0.1:") and "Ctrl-C stops it" in first
        url = first.split()[3]
        bench = subprocess.run(
            [
                *(sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:{url}"),
                *("--num-prompts", "4", "--max-concurrency", "2", "--input-len", "64", "--output-len", "4"),
                *("--ignore-eos", "--json"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert bench.returncode == 0, bench.stderr
        result = json.loads(bench.stdout)
        assert result["completed"] == 4 and result["total_output_tokens"] == 16
        # byte-level /tokenize by default: each prompt text is 64 tokens, plus the template's 24 in usage
        assert result["total_input_tokens"] == 4 * (64 + 24) and result["input_tokens_method"] == "server_tokenize"
    finally:
        server.terminate()
        server.wait(10)
        server.stdout.close()
