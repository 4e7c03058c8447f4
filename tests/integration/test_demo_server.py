"""``python -m planner demo-server`` over the wire: answers as long as ``max_tokens`` asks, as a real server's, and
the body of each route in its own shape (issue 24 item 11)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST = ("--ttft-ms", "1", "--itl-ms", "1")


@contextlib.contextmanager
def _demo(*flags: str) -> Iterator[str]:
    """The README's demo server (its own defaults, not the tests' timed server's) on a free port; its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "planner", "demo-server", "--port", "0", *FAST, *flags],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = server.stdout.readline()
        assert first.startswith("demo server on http://127.0.0.1:"), first
        yield first.split()[3]
    finally:
        server.terminate()
        server.wait(10)
        server.stdout.close()


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    with _demo() as url:
        yield url


def _tokens(text: str) -> list[str]:
    return text.split()


def _events(response: httpx.Response) -> list[dict]:
    lines = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_answer_runs_to_max_tokens(demo, stream):
    # the trial: --max-tokens 64 on Live Compare got 12 tokens ("stop") unless ignore_eos was sent
    body = {"model": "m", "messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 40}
    response = httpx.post(f"{demo}/v1/chat/completions", json={**body, "stream": stream}, timeout=30)
    assert response.status_code == 200
    if stream:
        events = _events(response)
        text = "".join(e["choices"][0]["delta"].get("content", "") for e in events)
        assert {e["object"] for e in events} == {"chat.completion.chunk"}
        assert events[-1]["choices"][0]["finish_reason"] == "length"
    else:
        answer = response.json()
        assert answer["object"] == "chat.completion"
        text = answer["choices"][0]["message"]["content"]
        assert answer["choices"][0]["finish_reason"] == "length" and answer["usage"]["completion_tokens"] == 40
    assert _tokens(text) == [f"t{k}" for k in range(1, 41)]


def test_a_completions_answer_is_a_text_completion(demo):
    body = {"model": "m", "prompt": "Once upon a time", "max_tokens": 20}
    answer = httpx.post(f"{demo}/v1/completions", json=body, timeout=30).json()
    assert answer["object"] == "text_completion"
    (choice,) = answer["choices"]
    assert "message" not in choice and set(choice) == {"index", "text", "logprobs", "finish_reason"}
    assert _tokens(choice["text"]) == [f"t{k}" for k in range(1, 21)] and choice["finish_reason"] == "length"
    # byte-level tokenizer: the prompt's 16 bytes
    assert answer["usage"] == {"prompt_tokens": 16, "completion_tokens": 20, "total_tokens": 36}
    streamed = _events(httpx.post(f"{demo}/v1/completions", json={**body, "stream": True}, timeout=30))
    assert {e["object"] for e in streamed} == {"text_completion"}
    assert "".join(e["choices"][0]["text"] for e in streamed) == choice["text"]


def test_without_max_tokens_the_route_default_applies(demo):
    # vLLM's CompletionRequest (as OpenAI's API) defaults max_tokens to 16
    answer = httpx.post(f"{demo}/v1/completions", json={"model": "m", "prompt": "Hi"}, timeout=30).json()
    assert answer["usage"]["completion_tokens"] == 16 and answer["choices"][0]["finish_reason"] == "length"


def test_an_end_of_sequence_is_the_servers_to_give():
    # --eos-tokens 12 (the tests' timed server's default): the model ends at 12 ("stop") unless ignore_eos is sent
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 40}
    with _demo("--eos-tokens", "12") as url:
        ended = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30).json()
        ignored = httpx.post(f"{url}/v1/chat/completions", json={**body, "ignore_eos": True}, timeout=30).json()
    assert (ended["usage"]["completion_tokens"], ended["choices"][0]["finish_reason"]) == (12, "stop")
    assert (ignored["usage"]["completion_tokens"], ignored["choices"][0]["finish_reason"]) == (40, "length")
