"""A multi-turn run against a real llama.cpp server (llama-cpp-python, gemma3 270M): the prefix its cache reused per
turn, read off the server's own log, and TTFT by turn.

llama-cpp-python 0.3.36 keeps one context and, for each request, reuses the longest prefix its tokens share with the
previous request's (``Llama.generate``), logging ``"Llama.generate: N prefix-match hit, remaining M prompt tokens to
eval"``; it has no ``cache_prompt`` field and no ``/metrics`` counters, so the run's hit rate is n/a on the page and
the server's log is the truth here. With one conversation at a time, every later turn reuses the whole conversation
so far, and TTFT stays flat while the prompt grows.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

import pytest

from planner.loadtest.results import saved_run, ttft_by_turn
from planner.loadtest.runner import run_load
from planner.loadtest.settings import LoadSettings
from planner.serving.endpoints import Endpoint
from tests.conftest import LLAMA_MODEL, llama_server


@pytest.fixture(scope="module")
def logged_llama(llama_url, tmp_path_factory):
    """A second llama_cpp.server on the session's model (``llama_url`` assembled it), its log kept: ``(url, log)``."""
    log = tmp_path_factory.mktemp("llama-mt") / "server.log"
    with llama_server(LLAMA_MODEL, log, n_ctx=4096) as url:
        yield url, log


def test_multi_turn_against_llama_cpp_reuses_the_conversation(logged_llama):
    url, log = logged_llama
    settings = LoadSettings(
        dataset_name="multi_turn",
        num_prompts=6,
        num_turns=3,
        input_len=48,
        output_len=16,
        ignore_eos=True,
        max_concurrency=1,
        timeout_s=120,
    )
    result = asyncio.run(run_load(Endpoint("llama", "llamacpp", url), settings))
    assert result.metrics.completed == 6 and result.turns == (0, 1, 2, 0, 1, 2)
    assert result.prefix_cache is None  # llama-cpp-python exports no counters
    text = log.read_text()
    hits = [int(h) for h in re.findall(r"(\d+) prefix-match hit", text)]
    left = [int(n) for n in re.findall(r"remaining (\d+) prompt tokens to eval", text)]
    # this server served only the run, and its first request logs no match: requests 1-5 are the five lines
    assert len(hits) == len(left) == 5
    hits, left = [0, *hits], [None, *left]
    # turns 2 and 3 reuse the whole conversation so far (more each turn) and evaluate only the new message
    for i in (1, 2, 4, 5):
        assert hits[i] > hits[i - 1] + 16 and left[i] < 80, (hits, left)
    assert hits[3] < 16  # a new conversation shares only the chat template's opening
    later = [i for i, t in enumerate(result.turns) if t > 0]
    server_share = sum(hits[i] for i in later) / sum(hits[i] + left[i] for i in later)
    assert server_share > 0.5
    # our figure for the same requests: the conversation so far over the prompt (word estimates: no usage here)
    assert result.reusable_prefix_share is not None and result.reusable_prefix_share > 0.3
    turns = ttft_by_turn([saved_run(result, "llama", started=datetime(2026, 12, 2))])
    assert list(turns["turn"]) == [1, 2, 3] and list(turns["requests"]) == [2, 2, 2]
    # the prompt grows turn by turn, but its cached part is not evaluated again
    grow = turns["mean_input_tokens"].tolist()
    assert grow[0] < grow[1] < grow[2]
