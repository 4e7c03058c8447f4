"""An answer with no text is the same failed record on both client paths (openai SDK and aiohttp) against a real
server.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.servers.empty_answer import empty_answer_server


@pytest.fixture
def empty_answer_url():
    with empty_answer_server() as url:
        yield url


EMPTY_STOP = "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"


def test_empty_answer_same_record_on_both_client_paths(empty_answer_url):
    from planner.serving.backends import stream_request
    from planner.serving.endpoints import Endpoint
    from planner.serving.requests import ChatRequest

    ep = Endpoint("lcp", "llamacpp", empty_answer_url, model="empty-model")
    request = ChatRequest("Write a long story about a dragon.", max_tokens=64)
    records = [asyncio.run(stream_request(ep, request, timeout_s=5, backend=b)) for b in ("openai", "aiohttp")]
    for r in records:
        assert (r.ok, r.error_kind, r.error, r.finish_reason, r.text) == (False, "empty", EMPTY_STOP, "stop", "")
        assert (r.output_tokens, r.output_tokens_source) == (0, "chunks_one_token_each")
        assert (r.first_token_s, r.last_token_s) == (None, None)
        assert r.first_chunk_s is not None  # the role chunk arrived
