"""The load runner: arrival schedule (vLLM ``get_request``), lengths, and runs against the timed server."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from datetime import datetime

import pytest

from planner.loadtest.runner import (
    Workload,
    arrival_times,
    build_requests,
    draw_lengths,
    run_load,
)
from planner.loadtest.settings import LoadSettings
from planner.loadtest.worker import BenchmarkRun, plan_jobs
from planner.serving.endpoints import Endpoint


def _ep(url: str, kind: str = "vllm") -> Endpoint:
    return Endpoint(name="t", kind=kind, base_url=url)


FAST = "load [ttft_ms=20] [itl_ms=5] [tokens=4]"
STARTED = datetime(2026, 12, 1, 12, 0, 0)


def test_ignore_eos_is_asked_for_and_tgi_runs_say_it_was_not_sent(closed_port_url):
    # what the server receives is asserted in tests/integration/test_wire.py; here, the request and the run's note
    (req,) = build_requests(LoadSettings(num_prompts=1, ignore_eos=True), Workload(("p",)))
    assert req.ignore_eos is True
    result = asyncio.run(run_load(_ep(closed_port_url, "tgi"), LoadSettings(num_prompts=1, ignore_eos=True)))
    assert result.not_sent_fields == ("ignore_eos",)
    assert result.notes[0] == "t: ignore_eos not sent: this endpoint's engine does not read it"


# --- runs against the timed server -----------------------------------------------------------------------------------
def test_concurrency_caps_in_flight_and_warmups_are_excluded(timed_server):
    spec = LoadSettings(num_prompts=8, max_concurrency=3, num_warmups=2, prompts=(FAST,), output_len=4)
    seen = []
    result = asyncio.run(run_load(_ep(timed_server.url), spec, on_progress=seen.append))
    assert len(result.records) == 8 and len(result.warmup_records) == 2
    assert result.max_in_flight == 3  # 8 requests released at once, at most 3 in flight
    m = result.metrics
    assert (m.completed, m.failed) == (8, 0)
    assert m.total_output_tokens == 32  # 8 x 4 tokens (server usage)
    assert m.total_input_tokens == 8 * 12  # the timed server reports prompt_tokens = 12
    assert m.ttft.count == 8 and m.ttft.mean_s >= 0.02
    # chunks of 1, 2, 1 tokens -> 2 gaps per request, pooled
    assert m.itl.count == 16
    assert [p.completed for p in seen] == list(range(1, 9))
    assert m.request_throughput == pytest.approx(8 / result.duration_s)


def test_rate_run_follows_the_schedule(timed_server):
    spec = LoadSettings(num_prompts=10, request_rate=20.0, seed=3, prompts=(FAST,), output_len=4)
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    sent = sorted(r.t_sent for r in result.records)
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    expected = arrival_times(spec)
    # schedule gaps (first send is at expected[0]); the client adds at most a few ms per send
    planned = (expected[-1] - expected[0]) / 9
    assert 0.9 * planned <= statistics.fmean(gaps) < 1.5 * planned  # paced: neither a burst (~0) nor serial
    assert result.duration_s >= expected[-1]  # last send at N/rate = 0.5 s


def test_failures_counted_by_reason(timed_server):
    # the cut comes after 3 chunks, so that answer needs more than 1 + 2 + 1 tokens
    prompts = ("x [mode=error] [ttft_ms=5]", "x [mode=http500]", "x [mode=cut] [tokens=8] [ttft_ms=5]", FAST)
    spec = LoadSettings(num_prompts=8, max_concurrency=4, prompts=prompts, output_len=4)
    m = asyncio.run(run_load(_ep(timed_server.url), spec)).metrics
    assert (m.completed, m.failed) == (2, 6)
    assert m.failures_by_kind == (("cut", 2), ("http", 2), ("in_stream", 2))


def test_closed_port_fails_every_request(closed_port_url):
    result = asyncio.run(run_load(_ep(closed_port_url), LoadSettings(num_prompts=3, timeout_s=2)))
    assert result.metrics.failures_by_kind == (("connect", 3),)
    assert result.metrics.ttft is None and result.metrics.completed == 0


def test_duration_cap_stops_the_run(timed_server):
    slow = "x [ttft_ms=3000] [tokens=2]"
    spec = LoadSettings(num_prompts=6, max_concurrency=2, duration_s=0.4, prompts=(slow,), output_len=2)
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    assert result.stopped == "duration"  # the two 3 s requests in flight were cancelled, not waited for
    assert (result.cancelled, result.not_sent, len(result.records)) == (2, 4, 0)
    assert result.metrics.completed == 0 and result.metrics.ttft is None


def test_stop_event_cancels_the_requests_in_flight(timed_server):
    async def run():
        stop = asyncio.Event()

        def in_flight(_t_s, n):
            if n == 4:  # cancel once all four are in flight (on a busy machine sending them takes a while)
                stop.set()

        spec = LoadSettings(num_prompts=4, prompts=("x [ttft_ms=5000]",))
        return await run_load(_ep(timed_server.url), spec, on_in_flight=in_flight, stop=stop)

    result = asyncio.run(run())
    # cancelled before the 5 s answers: none of them finished (how long a cancel takes: bench/promptness.py)
    assert result.stopped == "cancelled" and result.cancelled == 4 and result.records == ()


# --- live records, progress total, bounds, first-chunk TTFT, exact input lengths -------------------------------------
def test_snapshot_exposes_records_and_in_flight_while_running(timed_server):
    settings = LoadSettings(num_prompts=6, max_concurrency=2, prompts=("x [ttft_ms=150] [tokens=2]",), output_len=2)
    run = BenchmarkRun(plan_jobs([_ep(timed_server.url)], settings, settings.prompts, tag="t"), started=STARTED)
    run.start()
    deadline = time.monotonic() + 20
    live = run.snapshot()
    while len(live.records) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
        live = run.snapshot()
    # 6 requests 2 at a time, ~150 ms each: the first pair is done well before the run is
    assert not live.done and 2 <= len(live.records) < 6 and isinstance(live.records, tuple)
    assert live.requests_total == 6 and live.progress.total == 6 and 0 < live.progress.fraction < 1
    assert live.in_flight[0] == (pytest.approx(0.0, abs=0.01), 0) and max(n for _, n in live.in_flight) == 2
    assert live.run_start == live.progress.start_s and all(r.t_sent >= live.run_start for r in live.records)
    while not run.done and time.monotonic() < deadline:
        time.sleep(0.05)
    final = run.snapshot()
    assert final.done and len(final.records) == 6 and final.saved[0].metrics.completed == 6
    assert final.progress.fraction == 1.0


def test_duration_alone_is_still_bounded_by_num_prompts(timed_server):
    # num_prompts is always a cap: a generous duration ends early when the requests are done...
    spec = LoadSettings(num_prompts=5, max_concurrency=5, duration_s=30.0, prompts=(FAST,), output_len=4)
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    assert (len(result.records), result.stopped, result.not_sent) == (5, None, 0)
    # ...and a short duration ends a long request list early
    spec = LoadSettings(num_prompts=10_000, max_concurrency=4, duration_s=0.3, prompts=(FAST,), output_len=4)
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    assert result.stopped == "duration" and result.not_sent > 9000


def test_first_chunk_ttft_counts_the_role_chunk(timed_server):
    # the timed server sends vLLM's role chunk at once and the first token 120 ms later
    spec = LoadSettings(num_prompts=3, max_concurrency=3, prompts=("x [ttft_ms=120] [tokens=2]",), output_len=2)
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    first, ttft = result.ttft_first_chunk, result.metrics.ttft
    assert first.count == ttft.count == 3
    assert first.median_s < 0.06 and ttft.median_s >= 0.12  # the role chunk at once, the token after 120 ms
    assert ttft.median_s - first.median_s < 0.24  # the server's 120 ms apart, not twice it


def test_exact_input_lengths_against_tgi(monkeypatch):
    from huggingface_hub import constants

    from tests.servers.tgi import TGIServer

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    spec = LoadSettings(num_prompts=4, input_len=20, range_ratio=0.5, output_len=4, seed=5)
    drawn = [n for n, _, _ in draw_lengths(spec, 4)]  # the input lengths asked for
    with TGIServer() as server:
        result = asyncio.run(run_load(_ep(server.base_url, "tgi"), spec))
    cal = result.input_calibration
    assert (cal.method, cal.total, cal.counted, cal.exact, cal.overhead_tokens) == ("exact", 4, 4, 4, 0)
    assert cal.label == "exact (server /tokenize)"
    # The TGI test server counts whitespace words and renders a chat prompt as "<|user|> {text}\n<|assistant|>",
    # i.e. words + 2: its usage.prompt_tokens is each target + 2, and the records carry that usage.
    by_target = sorted(drawn)
    assert sorted(r.prompt_tokens for r in result.records) == [n + 2 for n in by_target]
    assert result.metrics.completed == 4
    # no /chat_tokenize on the test server: the template's 2 tokens are inferred, and the lengths agree
    check = result.input_check
    assert (check.input_tokens_method, check.template_tokens, check.warning) == ("server_tokenize", 2, None)
    assert check.requested_tokens == check.measured_tokens == sum(by_target) + 4 * 2


def test_exact_input_lengths_fall_back_to_the_estimate(timed_server):
    spec = LoadSettings(num_prompts=2, input_len=10, output_len=2, prompts=())
    result = asyncio.run(run_load(_ep(timed_server.url), spec))
    assert result.input_calibration.label == "estimate (words)"
    # the timed server (fixed tokenizer) counts 12 prompt tokens for every 10-word prompt, and says it
    assert result.input_check.warning == (
        "t: asked for 20 input tokens (the chat template not included), the server counted 24 (+20.0%); input "
        "lengths are estimates (one word per token): the server has no tokenizer route"
    )
    with_prompts = asyncio.run(
        run_load(_ep(timed_server.url), LoadSettings(num_prompts=1, prompts=(FAST,), output_len=4))
    )
    assert with_prompts.input_calibration is None


def test_cancel_during_warmups_returns_at_once(timed_server):
    async def run():
        stop = asyncio.Event()
        spec = LoadSettings(num_prompts=3, num_warmups=1, prompts=("x [ttft_ms=5000]",), output_len=2)
        task = asyncio.create_task(run_load(_ep(timed_server.url), spec, stop=stop))
        await asyncio.sleep(0.3)
        stop.set()
        return await task

    result = asyncio.run(run())
    # the warm-up's 5 s answer was not waited for: nothing measured was sent
    assert (result.stopped, result.not_sent, result.records, result.warmup_records) == ("cancelled", 3, (), ())
