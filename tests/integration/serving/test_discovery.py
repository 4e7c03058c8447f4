"""Endpoint discovery against the timed server and a closed port."""

from __future__ import annotations

import asyncio

import pytest

from planner.demo.state import MAX_MODEL_LEN, MODEL_ID
from planner.serving.discovery import discover, discover_sync
from planner.serving.endpoints import Endpoint


def test_vllm_discovery(timed_server):
    info = discover_sync(Endpoint("v", "vllm", timed_server.url), 5)
    assert info.healthy and info.error is None
    assert (info.model, info.models, info.max_model_len_tokens, info.version) == (
        MODEL_ID,
        (MODEL_ID,),
        MAX_MODEL_LEN,
        "0.0.0-timed",
    )


def test_tgi_discovery_reads_info(timed_server):
    info = discover_sync(Endpoint("t", "tgi", timed_server.url), 5)
    assert info.healthy
    assert (info.model, info.max_model_len_tokens, info.max_input_tokens, info.version) == (
        MODEL_ID,
        4096,
        4095,
        "3.3.6-timed",
    )


@pytest.mark.parametrize("kind", ["openai", "llamacpp"])
def test_generic_discovery_uses_models_route(timed_server, kind):
    info = discover_sync(Endpoint("g", kind, timed_server.url, model="mine"), 5)
    assert info.healthy and info.model == "mine" and info.version is None


@pytest.mark.parametrize("kind", ["vllm", "tgi", "openai"])
def test_closed_port_is_unhealthy_not_an_exception(closed_port_url, kind):
    info = asyncio.run(discover(Endpoint("x", kind, closed_port_url), 2))
    assert not info.healthy and "cannot connect" in info.error and closed_port_url in info.error
    assert "\n" not in info.error


def test_http_error_is_reported(timed_server):
    # the timed server has no /health under this prefix: 404 with a JSON error body
    info = discover_sync(Endpoint("p", "vllm", timed_server.url + "/prefix"), 5)
    assert not info.healthy and info.error.startswith("HTTP 404 from") and "no route" in info.error
