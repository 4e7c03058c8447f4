"""The TGI client paths against the TGI-protocol test server (tests/servers/tgi.py, built from TGI's OpenAPI spec
and its recorded responses), through the real huggingface_hub AsyncInferenceClient."""

from __future__ import annotations

import asyncio
import functools

import pytest
from huggingface_hub import constants

from planner.metrics.latency import compute_metrics
from planner.serving.backends import stream_request
from planner.serving.discovery import discover_sync
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from tests.servers.tgi import TGIServer

stream_tgi = functools.partial(stream_request, backend="huggingface_hub")


@pytest.fixture
def tgi(monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the client refuses even localhost when offline
    with TGIServer() as server:
        yield server


def _run(server, *, native: bool, prompt: str = "What is deep learning?", max_tokens: int = 10):
    endpoint = Endpoint("tgi", "tgi", server.base_url)
    info = discover_sync(endpoint, 5)
    return asyncio.run(
        stream_tgi(
            endpoint,
            ChatRequest(prompt, max_tokens=max_tokens),
            timeout_s=5,
            route="generate_stream" if native else None,
            info=info,
        )
    )


def test_discovery_reads_info(tgi):
    info = discover_sync(Endpoint("tgi", "tgi", tgi.base_url), 5)
    assert info.healthy
    assert (info.max_input_tokens, info.max_model_len_tokens, info.version) == (4095, 4096, "3.3.7")


@pytest.mark.parametrize("native", [False, True], ids=["messages-api", "generate-stream"])
def test_stream_counts_tokens_from_the_server(tgi, native):
    record = _run(tgi, native=native)
    assert record.ok, record.error
    # The server replays TGI's recorded 10-token answer; chat reports usage, the native stream details.
    assert record.output_tokens == 10
    assert record.output_tokens_source == ("tgi_details" if native else "usage")
    metrics = compute_metrics(record)
    assert metrics.ttft_s is not None and metrics.tpot_s is not None


@pytest.mark.parametrize("native", [False, True], ids=["messages-api", "generate-stream"])
@pytest.mark.parametrize("mode", ["overloaded", "validation"])
def test_errors_inside_a_200_stream_fail_the_request(tgi, native, mode):
    tgi.fail_next(mode)
    record = _run(tgi, native=native)
    assert not record.ok
    assert record.error_kind == "in_stream"
    assert "\n" not in record.error


@pytest.mark.parametrize("native", [False, True], ids=["messages-api", "generate-stream"])
def test_cut_stream_keeps_the_partial_answer(tgi, native):
    tgi.fail_next("cut")
    record = _run(tgi, native=native)
    assert not record.ok and record.error_kind == "cut"
    assert record.partial


def test_http_500_reports_the_status(tgi):
    tgi.fail_next("http_500")
    record = _run(tgi, native=False)
    assert not record.ok and record.error_kind == "http" and record.http_status == 500
