"""The Load Test engine: jobs from the page settings, run one after another with /metrics scraped alongside."""

from __future__ import annotations

import time
from datetime import datetime

from planner.loadtest.settings import LoadSettings
from planner.loadtest.worker import BenchmarkRun, plan_jobs
from planner.serving.endpoints import Endpoint

STARTED = datetime(2026, 11, 29, 12, 0, 0)


def _ep(name: str, kind: str = "vllm", url: str = "http://127.0.0.1:9", key_env: str | None = None) -> Endpoint:
    return Endpoint(name=name, kind=kind, base_url=url, api_key_env=key_env)


def _wait(run: BenchmarkRun, timeout_s: float = 60.0) -> None:
    assert run.wait(timeout_s), "the run did not finish"


def test_runs_endpoints_one_after_another_and_scrapes(timed_server, closed_port_url):
    settings = LoadSettings(num_prompts=4, max_concurrency=2, output_len=4)
    good = _ep("timed", url=timed_server.url)
    down = _ep("down", url=closed_port_url)
    run = BenchmarkRun(plan_jobs([good, down], settings, tag="t"), started=STARTED).start()
    _wait(run)
    snap = run.snapshot()
    assert snap.done and snap.jobs_done == 2 and snap.errors == ()
    first, second = snap.saved
    assert first.label == "timed · c=2 · t" and first.metrics.completed == 4 and first.metrics.failed == 0
    # the refused endpoint ends as failed requests in its own run, the other run is untouched
    assert second.metrics.completed == 0 and second.metrics.failed == 4
    assert all("refused" in r.error.lower() or "connect" in r.error.lower() for r in second.requests)
    kv = dict(snap.measured_kv)
    assert kv["timed"].kv_capacity_tokens == 2048 * 16  # the timed server's vllm:cache_config_info
    assert kv["down"] is None or kv["down"].error is not None
    assert snap.requests_total == 8 and snap.requests_done == 8


def test_a_missing_api_key_is_one_error_line_and_the_queue_goes_on(timed_server, monkeypatch):
    monkeypatch.delenv("PLANTED_MISSING_KEY", raising=False)
    settings = LoadSettings(num_prompts=2, max_concurrency=2, output_len=4, scrape_metrics=False)
    locked = _ep("locked", url=timed_server.url, key_env="PLANTED_MISSING_KEY")
    run = BenchmarkRun(plan_jobs([locked, _ep("timed", url=timed_server.url)], settings), started=STARTED).start()
    _wait(run)
    snap = run.snapshot()
    assert len(snap.errors) == 1 and snap.errors[0].startswith("locked · c=2: ")
    assert "PLANTED_MISSING_KEY" in snap.errors[0]
    assert [s.endpoint for s in snap.saved] == ["timed"]


def test_cancel_stops_the_queue(timed_server):
    settings = LoadSettings(num_prompts=50, max_concurrency=1, output_len=4, scrape_metrics=False)
    jobs = plan_jobs([_ep("a", url=timed_server.url), _ep("b", url=timed_server.url)], settings)
    run = BenchmarkRun(jobs, started=STARTED).start()
    deadline = time.monotonic() + 30
    while run.snapshot().requests_done < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    run.cancel()
    _wait(run, 15)
    snap = run.snapshot()
    assert snap.cancelled and snap.done
    assert [s.endpoint for s in snap.saved] == ["a"]  # the run in progress keeps what finished; b never starts
    assert 2 <= snap.saved[0].metrics.completed < 50


def test_tgi_server_run_scrapes_queue_and_batch():
    from tests.servers.tgi import TGIServer

    with TGIServer(first_token_delay_s=0.2, token_delay_s=0.05) as tgi:
        settings = LoadSettings(num_prompts=4, max_concurrency=2, output_len=4, ignore_eos=True)
        jobs = plan_jobs([_ep("tgi", kind="tgi", url=tgi.base_url)], settings)
        run = BenchmarkRun(jobs, started=STARTED).start()
        _wait(run)
    snap = run.snapshot()
    (saved,) = snap.saved
    assert snap.errors == () and saved.metrics.completed == 4 and saved.metrics.failed == 0
    assert saved.metrics.total_output_tokens == 16  # usage from the TGI server: 4 tokens each
    assert dict(snap.measured_kv)["tgi"] is None  # TGI 3.x /info has no max_batch_total_tokens
    assert any(s.batch_size is not None for s in snap.server)  # tgi_batch_current_size scraped
    assert snap.scrape_note is None
    assert saved.notes == ("tgi: ignore_eos not sent: this endpoint's engine does not read it",)


def test_llamacpp_run_without_metrics_route(llama_url):
    settings = LoadSettings(num_prompts=2, max_concurrency=1, output_len=8, input_len=16, ignore_eos=True)
    (job,) = plan_jobs([_ep("llama", kind="llamacpp", url=llama_url)], settings)
    run = BenchmarkRun([job], started=STARTED).start()
    _wait(run, 180)
    snap = run.snapshot()
    (saved,) = snap.saved
    assert snap.errors == () and saved.metrics.completed == 2
    assert saved.input_tokens_method == "server_tokenize" and saved.input_sizing.startswith("exact")
    # the prompt text was sized with the server's /extras/tokenize (llama-cpp-python streams carry no usage)
    assert [r.input_tokens for r in saved.requests] == [16, 16]
    # no usage in the stream: the tokenizer route's counts are the measurement, they agree with what was asked, and
    # the run says the chat template's tokens are not in them
    assert (saved.requested_input_tokens, saved.measured_input_tokens) == (32, 32)
    assert saved.notes == (
        "llama: the server reported no usage.prompt_tokens: input tokens are its tokenizer's counts of the prompt "
        "text, without the chat template",
    )
    assert [r.output_tokens for r in saved.requests] == [8, 8]
    assert dict(snap.measured_kv)["llama"] is None  # llama.cpp reports no KV capacity
    assert snap.scrape_note is not None and snap.server == ()  # no /metrics here: said once, not retried


def test_a_run_nobody_watches_stops(timed_server, monkeypatch):
    import planner.loadtest.worker as benchmark

    monkeypatch.setattr(benchmark, "ABANDONED_S", 1.0)  # the page polls every second; a closed tab stops polling
    settings = LoadSettings(num_prompts=200, max_concurrency=1, output_len=4, scrape_metrics=False)
    run = BenchmarkRun(plan_jobs([_ep("a", url=timed_server.url)], settings), started=STARTED).start()
    assert run.wait(30), "an abandoned run kept going"
    assert run.done and run._cancelled
    snap = run.snapshot()
    assert snap.errors == ("cancelled: nobody watched this run for 1 s",)
    assert snap.saved[0].metrics.completed < 200 and snap.saved[0].stopped == "cancelled"
