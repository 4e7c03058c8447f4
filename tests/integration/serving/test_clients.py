"""The request functions against the timed server (planner/demo/): accuracy and every failure mode.

Truth (set by the server): first token 150 ms after the request arrives, then 20 ms per token, tokens grouped
1, 2, 1, 3, ... per chunk, 12 tokens. Medians over several requests make the test robust to scheduler noise.
"""

from __future__ import annotations

import asyncio
import functools
import statistics

import pytest

from planner.demo.state import CONTEXT_ERROR, IN_STREAM_ERROR, SERVER_ERROR, TGI_STREAM_ERROR
from planner.metrics.latency import compute_metrics
from planner.serving.backends import stream_request
from planner.serving.backends.hf_hub import tgi_client
from planner.serving.backends.openai_sdk import openai_client
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest, check_context

stream_openai = functools.partial(stream_request, backend="openai")
stream_tgi = functools.partial(stream_request, backend="huggingface_hub")


TTFT_S, ITL_S, N = 0.150, 0.020, 12
REPEATS = 7


def _ep(url, kind="vllm"):
    return Endpoint("timed", kind, url, model="timed-model")


async def _many(fn, make, endpoint, prompt, **kw):
    client = make(endpoint, timeout_s=5)
    try:
        return [await fn(endpoint, ChatRequest(prompt), timeout_s=5, client=client, **kw) for _ in range(REPEATS)]
    finally:
        await client.close()


def _medians(records):
    ms = [compute_metrics(r) for r in records]
    assert all(m.ok for m in ms), [r.error for r in records]
    return (
        statistics.median(m.ttft_s for m in ms),
        statistics.median(x for m in ms for x in m.itl_token_s),
        statistics.median(m.tpot_s for m in ms),
    )


@pytest.mark.parametrize(
    ("fn", "make", "kwargs"),
    [
        (stream_openai, openai_client, {}),
        (stream_tgi, tgi_client, {}),
        (stream_tgi, tgi_client, {"route": "generate_stream"}),
    ],
    ids=["openai-sdk", "hf-chat", "hf-native"],
)
def test_medians_measure_the_right_intervals(timed_server, fn, make, kwargs):
    # What this checks is which interval each metric measures, not how tightly (the 2 ms accuracy target is
    # printed by bench/measurement_accuracy.py; timing targets do not belong in tests on a shared machine):
    # TTFT must not stop at the role chunk (~0 ms), ITL must be split per token in multi-token chunks (~20 ms,
    # not ~40), TPOT must exclude TTFT (~20 ms, not ~(150 + 20 n) / n).
    kind = "tgi" if kwargs.get("route") == "generate_stream" else "vllm"  # the native route is TGI's only
    records = asyncio.run(_many(fn, make, _ep(timed_server.url, kind), "hello", **kwargs))
    ttft, itl, tpot = _medians(records)
    # The server starts its 150 ms when it has read the request and sends the headers at that moment, so the
    # server's own interval is TTFT - first byte, paired per request; TTFT as a user sees it adds the transport.
    # Each bound sits halfway between the right interval and the wrong one it must not be, so a busy machine
    # (which only ever adds delay) cannot flip the verdict; the lower bounds are the server's own schedule.
    server_ttft = statistics.median(r.first_token_s - r.first_byte_s for r in records)
    assert TTFT_S - 0.005 <= server_ttft < TTFT_S + ITL_S * 3  # not one or more ITLs late
    assert TTFT_S - 0.005 <= ttft < 2 * TTFT_S  # not the role chunk (~0), not twice the server's TTFT
    assert ITL_S - 0.002 <= itl < 1.5 * ITL_S  # per token, not per 2-token chunk (~2 x ITL)
    wrong_tpot = (TTFT_S + ITL_S * (N - 1)) / N  # TPOT with TTFT left in: ~31.7 ms
    assert ITL_S - 0.002 <= tpot < (ITL_S + wrong_tpot) / 2
    assert {r.output_tokens for r in records} == {N}


def test_openai_counts_tokens_per_chunk_from_continuous_usage(timed_server):
    rec = asyncio.run(stream_openai(_ep(timed_server.url), ChatRequest("hi"), timeout_s=5))
    assert rec.ok and [c.n_tokens for c in rec.chunks] == [1, 2, 1, 3, 1, 2, 1, 1]
    assert (rec.output_tokens, rec.output_tokens_source, rec.prompt_tokens) == (12, "usage", 12)
    assert rec.first_byte_s < rec.first_chunk_s < rec.first_token_s  # headers, role chunk, first token
    assert rec.text == "".join(f"t{k} " for k in range(1, 13))


FAILURES = [
    ("error", "in_stream", IN_STREAM_ERROR, 500, True),
    ("tgi_error", "in_stream", TGI_STREAM_ERROR, 422, True),
    ("cut", "cut", "incomplete chunked read", 200, True),
    ("http400", "http", CONTEXT_ERROR, 400, False),
    ("http400_flat", "http", CONTEXT_ERROR, 400, False),
    ("http500", "http", SERVER_ERROR, 500, False),
]


@pytest.mark.parametrize(("mode", "kind", "message", "status", "partial"), FAILURES, ids=[f[0] for f in FAILURES])
@pytest.mark.parametrize("client", ["openai", "hf"])
def test_failure_modes_end_as_records(timed_server, client, mode, kind, message, status, partial):
    fn = stream_openai if client == "openai" else stream_tgi
    rec = asyncio.run(fn(_ep(timed_server.url), ChatRequest(f"hi [mode={mode}]"), timeout_s=5))
    assert not rec.ok and rec.error_kind == kind
    assert message in rec.error and "\n" not in rec.error
    assert rec.http_status == status
    assert rec.partial is partial
    if mode == "cut":  # three chunks (1 + 2 + 1 tokens) arrived before the connection dropped
        assert rec.text == "t1 t2 t3 t4 "
    assert compute_metrics(rec).ttft_s is None


def test_tgi_native_in_stream_error(timed_server):
    rec = asyncio.run(
        stream_tgi(_ep(timed_server.url, "tgi"), ChatRequest("x [mode=error]"), timeout_s=5, route="generate_stream")
    )
    assert (rec.ok, rec.error_kind) == (False, "in_stream") and "Model is overloaded" in rec.error


@pytest.mark.parametrize("fn", [stream_openai, stream_tgi])
def test_timeout_is_prompt(timed_server, fn):
    rec = asyncio.run(fn(_ep(timed_server.url), ChatRequest("x [mode=hang]"), timeout_s=0.3))
    assert (rec.ok, rec.error_kind) == (False, "timeout") and "0.3 s" in rec.error


@pytest.mark.parametrize("fn", [stream_openai, stream_tgi])
def test_connection_refused_is_prompt(closed_port_url, fn):
    rec = asyncio.run(fn(Endpoint("gone", "vllm", closed_port_url, model="m"), ChatRequest("x"), timeout_s=2))
    assert (rec.ok, rec.error_kind) == (False, "connect") and closed_port_url in rec.error


def test_model_is_discovered_when_not_given(timed_server):
    rec = asyncio.run(stream_openai(Endpoint("d", "vllm", timed_server.url), ChatRequest("x"), timeout_s=5))
    assert rec.ok and rec.model == "timed-model"


def test_rejected_continuous_usage_is_retried_without_it(timed_server):
    rec = asyncio.run(stream_openai(_ep(timed_server.url), ChatRequest("x [mode=reject_continuous]"), timeout_s=5))
    assert rec.ok and rec.output_tokens == N and all(c.n_tokens is None for c in rec.chunks)


def test_context_length_checked_before_sending(closed_port_url):
    info = EndpointInfo(endpoint="small", kind="vllm", healthy=True, model="m", max_model_len_tokens=100)
    request = ChatRequest("x", max_tokens=90)
    assert check_context(request, info, prompt_tokens=5) is None  # 5 + 90 <= 100
    assert "exceeds the context limit of 100" in check_context(request, info, prompt_tokens=20)
    # the port is closed: a request that was sent would fail with "connect"
    rec = asyncio.run(
        stream_openai(
            Endpoint("small", "vllm", closed_port_url, model="m"),
            ChatRequest("x", max_tokens=200),
            timeout_s=2,
            info=info,
        )
    )
    assert (rec.ok, rec.error_kind, rec.first_byte_s) == (False, "context_length", None)


def test_on_event_streams_deltas(timed_server):
    updates = []
    rec = asyncio.run(stream_openai(_ep(timed_server.url), ChatRequest("x"), timeout_s=5, on_event=updates.append))
    assert "".join(u.text for u in updates) == rec.text
    assert updates[-1].kind == "end" and updates[-1].record == rec
    assert sum(u.n_tokens for u in updates[:-1]) == N
