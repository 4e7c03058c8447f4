"""``/metrics`` and ``/info`` read from running servers: the timed server, a TGI-protocol server and a small server
with fixed routes; the scraper's polling, stops and reasons.
Parsing alone is in tests/unit/serving/test_server_metrics.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from planner.serving.endpoints import Endpoint
from planner.serving.server_metrics import (
    MeasuredKV,
    ServerSample,
    fetch_measured_kv,
    parse_metrics,
    scrape_metrics,
)
from tests.servers.tgi import TGIServer
from tests.servers.timed_sse import TimedServer
from tests.unit.serving.test_server_metrics import _collect  # the one scraper driver, on either clock

# TGI router/src/lib.rs `Info` at the 1.4-era commit 014d3fd: the schema examples of every field (this is the
# router generation that still reported max_batch_total_tokens; TGI 3.x's Info has no such field).
TGI_14_INFO = {
    "model_id": "bigscience/blomm-560m",
    "model_sha": "e985a63cdc139290c5f700ff1929f0b5942cced2",
    "model_dtype": "torch.float16",
    "model_device_type": "cuda",
    "model_pipeline_tag": "text-generation",
    "max_concurrent_requests": 128,
    "max_best_of": 2,
    "max_stop_sequences": 4,
    "max_input_length": 1024,
    "max_total_tokens": 2048,
    "waiting_served_ratio": 1.2,
    "max_batch_total_tokens": 32000,
    "max_waiting_tokens": 20,
    "max_batch_size": None,
    "validation_workers": 2,
    "version": "0.5.0",
    "sha": None,
    "docker_label": None,
}


# --- a small real HTTP server with fixed routes --------------------------------------------------------------------
class _Fixed:
    """``ThreadingHTTPServer`` on 127.0.0.1 answering ``routes[path] = (status, content_type, body)``; else 404."""

    def __init__(self, routes: dict[str, tuple[int, str, str]]) -> None:
        self.routes = routes
        self.hits: list[str] = []
        fixed = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fixed.hits.append(self.path)
                status, ctype, body = fixed.routes.get(self.path, (404, "text/plain", "Not Found"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Fixed:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def fixed() -> Iterator[_Fixed]:
    routes = {
        "/garbage/metrics": (200, "text/html", "<html><body>Welcome to nginx!</body></html>"),
        "/empty/metrics": (200, "text/plain", "# HELP python_info x\n# TYPE python_info gauge\npython_info 1.0\n"),
        "/tgi14/info": (200, "application/json", json.dumps(TGI_14_INFO)),
        "/tgi14/metrics": (200, "text/plain", "tgi_queue_size 0\ntgi_batch_current_size 0\n"),
        "/badjson/info": (200, "application/json", "{not json"),
    }
    with _Fixed(routes) as server:
        yield server


def _poll(get_text, kind: str, until, timeout_s: float = 3.0) -> ServerSample:
    """Parse ``get_text()`` every 20 ms until ``until(sample)`` holds; the last sample either way."""
    deadline = time.perf_counter() + timeout_s
    while True:
        sample = parse_metrics(get_text(), kind, 0.0)
        if until(sample) or time.perf_counter() > deadline:
            return sample
        time.sleep(0.02)


# --- the timed server's /metrics -----------------------------------------------------------------------------------
async def _streams(url: str, n: int, prompt: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:

        async def one() -> None:
            body = {"model": "timed-model", "messages": [{"role": "user", "content": prompt}], "stream": True}
            async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                async for _ in response.aiter_bytes():
                    pass

        await asyncio.gather(*(one() for _ in range(n)))


def _scraper_rise_and_fall(timed_server: TimedServer) -> None:
    endpoint = Endpoint("v", "vllm", timed_server.url)
    samples: list[ServerSample] = []

    async def main() -> tuple[str | None, float]:
        stop = asyncio.Event()
        began = time.perf_counter()
        scraper = asyncio.create_task(
            scrape_metrics(endpoint, interval_s=0.05, stop=stop, on_sample=samples.append, start=began, timeout_s=2)
        )
        await asyncio.sleep(0.1)
        await _streams(timed_server.url, 2, "x [ttft_ms=300] [tokens=5] [itl_ms=20]")
        await asyncio.sleep(0.15)
        stop.set()  # the wait between scrapes ends at once (tests/unit/serving/test_server_metrics.py)
        return await asyncio.wait_for(scraper, timeout=5)

    reason = asyncio.run(main())
    assert reason is None
    running = [s.running for s in samples]
    assert running[0] == 0 and max(running) == 2 and running[-1] == 0
    assert max(s.kv_cache_usage_perc for s in samples) == 2 * 64 / 2048
    times = [s.t_s for s in samples]
    assert times == sorted(times) and times[0] >= 0
    assert len(samples) >= 8  # ≈ 0.1 + 0.38 + 0.15 s at 20 scrapes/s


def test_tgi_queue_then_batch_then_idle() -> None:
    """TGI stand-in: a request is queued during its first-token delay, in the batch while streaming, gone after."""
    with TGIServer(first_token_delay_s=0.6, token_delay_s=0.15) as tgi, httpx.Client(base_url=tgi.base_url) as http:
        thread = threading.Thread(
            target=lambda: httpx.post(
                tgi.base_url + "/generate_stream",
                json={"inputs": "a", "parameters": {"max_new_tokens": 4}},
                timeout=10,
            )
        )
        before = parse_metrics(http.get("/metrics").text, "tgi", 0.0)
        thread.start()

        def metrics() -> str:
            return http.get("/metrics").text

        queued = _poll(metrics, "tgi", lambda s: s.queue_size == 1)
        streaming = _poll(metrics, "tgi", lambda s: s.batch_size == 1)
        thread.join(timeout=10)
        idle = parse_metrics(http.get("/metrics").text, "tgi", 0.0)
    assert (before.queue_size, before.batch_size) == (0, 0)
    assert (queued.queue_size, queued.waiting, queued.batch_size, queued.running) == (1, 1, 0, 0)
    # input 1 word + max_new_tokens 4 = 5 tokens reserved (the stand-in's whitespace tokenizer)
    assert (streaming.queue_size, streaming.batch_size, streaming.running, streaming.batch_max_tokens) == (0, 1, 1, 5)
    assert (idle.queue_size, idle.batch_size, idle.batch_max_tokens) == (0, 0, 0)
    assert idle.kv_cache_usage_perc is None  # TGI exports no usage gauge


# --- fetch_measured_kv -----------------------------------------------------------------------------------------------
def test_fetch_measured_kv_from_the_timed_server(timed_server: TimedServer) -> None:
    kv = asyncio.run(fetch_measured_kv(Endpoint("v", "vllm", timed_server.url), timeout_s=5))
    assert kv is not None and kv.error is None
    assert (kv.num_gpu_blocks, kv.block_size_tokens, kv.kv_capacity_tokens) == (2048, 16, 32_768)  # 2048 × 16
    assert kv.kv_cache_max_concurrency == 8.0  # 32,768 / 4,096 max_model_len


def test_fetch_measured_kv_legacy_label_set() -> None:
    with TimedServer(legacy_metrics=True) as server:
        kv = asyncio.run(fetch_measured_kv(Endpoint("v", "vllm", server.url)))
    assert kv is not None
    assert (kv.kv_capacity_tokens, kv.source) == (2048 * 16, "vllm:cache_config_info")


def test_fetch_measured_kv_tgi() -> None:
    with TGIServer() as tgi:  # TGI 3.x: /info has no max_batch_total_tokens
        assert asyncio.run(fetch_measured_kv(Endpoint("t", "tgi", tgi.base_url))) is None


def test_fetch_measured_kv_old_tgi_info(fixed: _Fixed) -> None:
    kv = asyncio.run(fetch_measured_kv(Endpoint("t", "tgi", fixed.url + "/tgi14")))
    assert kv == MeasuredKV(source="TGI /info max_batch_total_tokens", kv_capacity_tokens=32_000, engines=1)


def test_fetch_measured_kv_failures_never_raise(fixed: _Fixed, closed_port_url: str) -> None:
    async def fetch(kind: str, url: str) -> MeasuredKV | None:
        return await fetch_measured_kv(Endpoint("x", kind, url), timeout_s=2)

    refused = asyncio.run(fetch("vllm", closed_port_url))
    assert refused is not None and refused.kv_capacity_tokens is None
    assert refused.error is not None and refused.error.startswith("cannot connect to")
    missing = asyncio.run(fetch("vllm", fixed.url + "/nothing"))
    assert missing is not None and missing.error is not None and "HTTP 404" in missing.error
    garbage = asyncio.run(fetch("vllm", fixed.url + "/garbage"))
    assert garbage is not None and garbage.error is not None and "not Prometheus text" in garbage.error
    assert asyncio.run(fetch("vllm", fixed.url + "/empty")) is None  # answered, but exposes no capacity
    bad_json = asyncio.run(fetch("tgi", fixed.url + "/badjson"))
    assert bad_json is not None and bad_json.error is not None and "not JSON" in bad_json.error
    assert asyncio.run(fetch("openai", fixed.url)) is None
    assert asyncio.run(fetch("llamacpp", fixed.url)) is None
    for error in (refused.error, missing.error, garbage.error, bad_json.error):
        assert "\n" not in error


def test_timed_server_metrics_follow_in_flight_streams() -> None:
    # its own server: the shared one may still hold a hanging request of another test
    async def main(url: str) -> tuple[ServerSample, ServerSample, ServerSample]:
        async with httpx.AsyncClient(base_url=url) as http:
            before = parse_metrics((await http.get("/metrics")).text, "vllm", 0.0)
            streams = asyncio.create_task(_streams(url, 3, "x [ttft_ms=800] [tokens=4] [itl_ms=20]"))
            deadline = time.perf_counter() + 0.7  # all three wait 0.8 s for their first token
            while True:
                during = parse_metrics((await http.get("/metrics")).text, "vllm", 0.0)
                if during.running == 3 or time.perf_counter() > deadline:
                    break
                await asyncio.sleep(0.02)
            await streams
            after = parse_metrics((await http.get("/metrics")).text, "vllm", 0.0)
        return before, during, after

    with TimedServer() as server:
        before, during, after = asyncio.run(main(server.url))
    assert (before.running, during.running, after.running) == (0, 3, 0)
    assert during.waiting == 0
    assert during.kv_cache_usage_perc == 3 * 64 / 2048 == 0.09375
    assert after.kv_cache_usage_perc == 0.0
    assert after.prompt_tokens_total - before.prompt_tokens_total == 3 * 12
    assert after.generation_tokens_total - before.generation_tokens_total == 3 * 4


def test_timed_server_legacy_metrics_name() -> None:
    with TimedServer(legacy_metrics=True) as server:
        text = httpx.get(server.url + "/metrics").text
    assert "vllm:gpu_cache_usage_perc{" in text and "vllm:kv_cache_usage_perc" not in text
    assert parse_metrics(text, "vllm", 0.0).kv_cache_usage_perc == 0.0


# --- scrape_metrics ------------------------------------------------------------------------------------------------
def test_scraper_sees_running_rise_and_fall_and_stops_on_request() -> None:
    with TimedServer() as server:  # its own server: the shared one may still hold another test's hanging request
        _scraper_rise_and_fall(server)


def test_scraper_stops_after_a_404(fixed: _Fixed) -> None:
    reason, samples, _ = _collect(Endpoint("f", "vllm", fixed.url + "/nothing"), interval_s=0.02, run_s=None)
    assert reason is not None and "HTTP 404" in reason and "\n" not in reason
    assert samples == [] and fixed.hits == ["/nothing/metrics"]  # one request, then no more polling
    time.sleep(0.1)
    assert fixed.hits == ["/nothing/metrics"]


@pytest.mark.parametrize(("prefix", "expected"), [("/garbage", "not Prometheus text"), ("/empty", "has none of")])
def test_scraper_stops_on_a_body_without_metrics(fixed: _Fixed, prefix: str, expected: str) -> None:
    reason, samples, _ = _collect(Endpoint("f", "vllm", fixed.url + prefix), interval_s=0.02, run_s=None)
    assert reason is not None and expected in reason
    assert samples == [] and fixed.hits == [prefix + "/metrics"]


def test_scraper_closed_port_and_unknown_kind(closed_port_url: str, fixed: _Fixed) -> None:
    reason, samples, _ = _collect(Endpoint("c", "vllm", closed_port_url), interval_s=0.02, run_s=None, timeout_s=2)
    assert reason is not None and reason.startswith("cannot connect to") and samples == []
    reason, samples, _ = _collect(Endpoint("o", "openai", fixed.url), interval_s=0.02, run_s=None)
    assert reason is not None and "openai" in reason and fixed.hits == []


def test_scraper_reads_tgi(fixed: _Fixed) -> None:
    reason, samples, _ = _collect(Endpoint("t", "tgi", fixed.url + "/tgi14"), interval_s=0.05, run_s=0.12)
    assert reason is None and samples
    assert (samples[0].queue_size, samples[0].batch_size, samples[0].running) == (0, 0, 0)
