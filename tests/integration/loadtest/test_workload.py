"""Prompt sizing against tokenizer routes: TGI's ``/tokenize`` counts exactly; no route falls back to the word
estimate.
"""

from __future__ import annotations

import asyncio

from huggingface_hub import constants

from planner.loadtest.workload import (
    calibrate_prompt,
    calibrate_prompts,
)
from planner.serving.discovery import discover_sync
from planner.serving.endpoints import Endpoint
from tests.servers.tgi import TGIServer


def test_no_tokenizer_route_falls_back_to_the_word_estimate(timed_server):
    # the timed server has no /tokenize route
    ep = Endpoint("t", "vllm", timed_server.url)
    info = discover_sync(ep, 5)
    texts, tokens, cal = asyncio.run(calibrate_prompts(ep, info, [(12, 0), (9, 3)]))
    assert cal.method == "estimate" and cal.label == "estimate (words)" and cal.overhead_tokens is None
    assert [len(t.split()) for t in texts] == [12, 9] and tokens == (12, 9)


def test_tgi_tokenize_route_counts_exactly(monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with TGIServer() as server:
        ep = Endpoint("tgi", "tgi", server.base_url)
        info = discover_sync(ep, 5)
        got = asyncio.run(calibrate_prompt(ep, info, 17, offset=5))
        # the TGI test server's /tokenize counts whitespace words (no template): 17 words on the first count
        assert (got.words, got.counted_tokens, got.method) == (17, 17, "exact (server /tokenize)")
