"""Tests of planner/server_metrics.py: engine /metrics parsing, reported KV capacity, and the scraper.

Exposition texts are copied from the engines' own docs or public captures (cited at each); expected numbers are
read off those texts or worked out by hand in the test. The scraper's polling grid runs here on a scripted clock and
an in-memory transport; against real servers (the timed server, the TGI stand-in, a small HTTP server for 404s and
garbage bodies) it is in tests/integration/serving/test_server_metrics.py.
"""

from __future__ import annotations

import asyncio
import time

import httpx2
import pytest

from planner.errors import InvalidParameterError, MetricsParseError, PlannerError
from planner.serving import server_metrics
from planner.serving.endpoints import Endpoint
from planner.serving.server_metrics import (
    KVComparison,
    MeasuredKV,
    ServerSample,
    compare_kv,
    fetch_measured_kv,
    parse_cache_config,
    parse_metrics,
    scrape_metrics,
)

# vLLM docs/design/metrics.md, "Metrics Publishing - Prometheus", example output (V1, before the `engine` label;
# the "..." lines of the doc are left out).
VLLM_DOCS_EXAMPLE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 27453.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
vllm:request_success_total{finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 131.0
vllm:request_success_total{finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 140.0
vllm:time_to_first_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 140.0
"""

# Two data-parallel engines, in the V1 shape: labels ("model_name", "engine") per series (make_per_engine in
# vllm/v1/metrics/loggers.py), sorted as prometheus_client prints them; HELP strings from loggers.py. Values are
# ours: running 3 + 5, waiting 1 + 0, usage (0.25 + 0.75) / 2, preemptions 2 + 1.
VLLM_TWO_ENGINES = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3"} 3.0
vllm:num_requests_running{engine="1",model_name="qwen3"} 5.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen3"} 1.0
vllm:num_requests_waiting{engine="1",model_name="qwen3"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen3"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="qwen3"} 0.75
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="qwen3"} 2.0
vllm:num_preemptions_total{engine="1",model_name="qwen3"} 1.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="qwen3"} 1.7869106011177013e+09
vllm:num_preemptions_created{engine="1",model_name="qwen3"} 1.7869106011177013e+09
vllm:prefix_cache_queries_total{engine="0",model_name="qwen3"} 1000.0
vllm:prefix_cache_queries_total{engine="1",model_name="qwen3"} 3000.0
vllm:prefix_cache_hits_total{engine="0",model_name="qwen3"} 400.0
vllm:prefix_cache_hits_total{engine="1",model_name="qwen3"} 600.0
"""

# vLLM V0 names, from a V0 capture in the AIBrix docs ("Metric Standardization"): model_name only, the old
# gpu_cache_usage_perc, and V0's cache_config_info label set (no engine).
VLLM_V0_CAPTURE = """\
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",\
enable_prefix_caching="False",gpu_memory_utilization="0.9",is_attention_free="False",num_cpu_blocks="9362",\
num_gpu_blocks="81767",num_gpu_blocks_override="None",sliding_window="None",swap_space_bytes="4294967296"} 1.0
# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 0.0
# HELP vllm:num_requests_swapped Number of requests swapped to CPU.
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 0.0
"""

# A recent vLLM V1 /metrics, captured with curl from a live server (qwen3-vl-235b-awq, TP 2; public troubleshooting
# transcript). CacheConfig labels as vllm/config/cache.py metrics_info() produces them.
VLLM_RECENT_CAPTURE = """\
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen3-vl-235b-awq"} 0.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{_block_size_resolved="True",block_size="16",cache_dtype="auto",calculate_kv_scales="False",\
enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.8",is_attention_free="False",\
kv_cache_dtype_skip_layers="[]",kv_cache_max_concurrency="16.8310546875",kv_cache_memory_bytes="None",\
kv_cache_size_tokens="551520",kv_offloading_backend="native",kv_offloading_size="None",\
kv_sharing_fast_prefill="False",mamba_block_size="None",mamba_cache_dtype="auto",mamba_cache_mode="none",\
mamba_page_size_padded="None",mamba_ssm_cache_dtype="auto",num_cpu_blocks="None",num_gpu_blocks="34470",\
num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",prefix_match_unit="None",\
skip_page_size_padded="None",sliding_window="None",user_specified_block_size="False",\
user_specified_mamba_block_size="False"} 1.0
"""

# SGLang docs/references/production_metrics.md example (histograms left out).
SGLANG_DOCS_EXAMPLE = """\
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.557572e+06
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:num_running_reqs The number of running requests
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 162.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2826.0
"""

# An older revision of the same SGLang doc, which listed the KV pool size.
SGLANG_OLD_DOCS_POOL = """\
# HELP sglang:max_total_num_tokens Maximum total number of tokens
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{name="google/gemma-2-9b-it"} 161721.0
"""


FIELDS = (
    "running",
    "waiting",
    "kv_cache_usage_perc",
    "batch_size",
    "queue_size",
    "batch_max_tokens",
    "num_preemptions_total",
    "prompt_tokens_total",
    "generation_tokens_total",
    "prefix_cache_queries_total",
    "prefix_cache_hits_total",
)


def _collect(endpoint: Endpoint, *, interval_s: float, run_s: float | None, **kw: object):
    """Run the scraper for ``run_s`` seconds (None: until it returns by itself); (reason, samples, elapsed_s)."""
    samples: list[ServerSample] = []

    async def main() -> tuple[str | None, float]:
        stop = asyncio.Event()
        began = time.perf_counter()
        task = asyncio.create_task(
            scrape_metrics(endpoint, interval_s=interval_s, stop=stop, on_sample=samples.append, start=began, **kw)
        )
        if run_s is not None:
            done, _ = await asyncio.wait({task}, timeout=run_s)
            if not done:
                stop.set()
        reason = await asyncio.wait_for(task, timeout=10)
        return reason, time.perf_counter() - began

    reason, elapsed = asyncio.run(main())
    return reason, samples, elapsed


#: An address these tests never reach: each fails (missing key, bad argument) before it sends anything.
NOWHERE = "http://127.0.0.1:9"


# --- parse_metrics ---------------------------------------------------------------------------------------------------
def test_vllm_docs_example() -> None:
    sample = parse_metrics(VLLM_DOCS_EXAMPLE, "vllm", 1.25)
    assert sample.t_s == 1.25
    assert sample.running == 8
    assert sample.generation_tokens_total == 27453.0
    assert sample.waiting is None and sample.kv_cache_usage_perc is None  # not in the excerpt: None, never 0
    assert sample.has_data


def test_vllm_sums_two_engines() -> None:
    sample = parse_metrics(VLLM_TWO_ENGINES, "vllm", 0.0)
    assert (sample.running, sample.waiting) == (8, 1)
    assert sample.kv_cache_usage_perc == pytest.approx(0.5)
    assert sample.num_preemptions_total == 3  # the _created timestamps beside it are not counted
    assert (sample.prefix_cache_queries_total, sample.prefix_cache_hits_total) == (4000.0, 1000.0)
    assert isinstance(sample.running, int) and isinstance(sample.num_preemptions_total, int)


def test_vllm_legacy_gpu_cache_usage_name() -> None:
    sample = parse_metrics(VLLM_V0_CAPTURE, "vllm", 0.0)
    assert (sample.running, sample.waiting, sample.kv_cache_usage_perc) == (0, 0, 0.0)
    legacy = 'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.4\n'
    assert parse_metrics(legacy, "vllm", 0.0).kv_cache_usage_perc == 0.4
    # 0.9/0.10 export both names with the same value; the new one is read
    both = legacy + 'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.6\n'
    assert parse_metrics(both, "vllm", 0.0).kv_cache_usage_perc == 0.6


def test_vllm_picks_the_served_model() -> None:
    text = (
        'vllm:num_requests_running{engine="0",model_name="a"} 2.0\n'
        'vllm:num_requests_running{engine="0",model_name="b"} 7.0\n'
    )
    assert parse_metrics(text, "vllm", 0.0, model="b").running == 7
    assert parse_metrics(text, "vllm", 0.0).running == 2  # first model seen
    assert parse_metrics(text, "vllm", 0.0, model="not-served").running == 2


def test_missing_metrics_are_none_and_unknown_kinds_give_nones() -> None:
    empty = parse_metrics("# HELP python_info x\n# TYPE python_info gauge\npython_info 1.0\n", "vllm", 3.0)
    assert all(getattr(empty, f) is None for f in FIELDS) and not empty.has_data
    assert parse_metrics("", "tgi", 0.0) == ServerSample(t_s=0.0)
    for kind in ("openai", "llamacpp", "nonsense"):
        assert parse_metrics(VLLM_TWO_ENGINES, kind, 2.0) == ServerSample(t_s=2.0)


def test_nan_gauges_read_as_missing() -> None:
    assert (
        parse_metrics('vllm:kv_cache_usage_perc{engine="0",model_name="m"} NaN\n', "vllm", 0).kv_cache_usage_perc
        is None
    )


@pytest.mark.parametrize(
    "text",
    [
        "<html><body><h1>404 Not Found</h1></body></html>",
        '{"error": {"message": "Not Found"}}',
        "Not Found",
        'vllm:num_requests_running{engine="0" 3.0',
    ],
)
def test_malformed_text_is_a_package_error(text: str) -> None:
    with pytest.raises(MetricsParseError) as info:
        parse_metrics(text, "vllm", 0.0)
    assert isinstance(info.value, PlannerError)
    assert "\n" not in str(info.value) and str(info.value).startswith("not Prometheus text")


def test_sglang_docs_example() -> None:
    sample = parse_metrics(SGLANG_DOCS_EXAMPLE, "sglang", 0.0)
    assert (sample.running, sample.waiting, sample.kv_cache_usage_perc) == (162, 2826, 0.28)
    assert (sample.prompt_tokens_total, sample.generation_tokens_total) == (8_128_902.0, 7_557_572.0)


# --- parse_cache_config / compare_kv ---------------------------------------------------------------------------------
def test_cache_config_recent_vllm_capture() -> None:
    kv = parse_cache_config(VLLM_RECENT_CAPTURE)
    assert kv is not None
    assert (kv.num_gpu_blocks, kv.block_size_tokens, kv.kv_capacity_tokens) == (34470, 16, 551_520)  # = 34470 × 16
    assert kv.source == "vllm:cache_config_info kv_cache_size_tokens"
    assert (kv.cache_dtype, kv.gpu_memory_utilization, kv.enable_prefix_caching) == ("auto", 0.8, True)
    assert kv.kv_cache_max_concurrency == 16.8310546875
    assert (kv.engines, kv.error) == (1, None)


def test_cache_config_v0_capture_uses_blocks_times_block_size() -> None:
    kv = parse_cache_config(VLLM_V0_CAPTURE)
    assert kv is not None
    assert kv.kv_capacity_tokens == 81767 * 16 == 1_308_272
    assert kv.source == "vllm:cache_config_info"
    assert (kv.enable_prefix_caching, kv.kv_cache_max_concurrency) == (False, None)


def test_cache_config_prefers_the_group_aware_figure() -> None:
    # A hybrid-attention model: 49 blocks × 1568 = 76,832 tokens, but vLLM reports 66,901 usable tokens
    # (vllm/config/cache.py: num_gpu_blocks × block_size "can be wrong for hybrid models").
    text = (
        'vllm:cache_config_info{block_size="1568",cache_dtype="fp8",enable_prefix_caching="True",engine="0",'
        'kv_cache_size_tokens="66901",num_gpu_blocks="49"} 1.0\n'
    )
    kv = parse_cache_config(text)
    assert kv is not None and kv.kv_capacity_tokens == 66_901 and kv.num_gpu_blocks * kv.block_size_tokens == 76_832


def test_cache_config_edge_cases() -> None:
    assert parse_cache_config(VLLM_DOCS_EXAMPLE) is None  # no cache_config_info at all
    unprofiled = 'vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="None"} 1.0\n'
    kv = parse_cache_config(unprofiled)
    assert kv is not None and (kv.num_gpu_blocks, kv.kv_capacity_tokens) == (None, None)
    two = (
        'vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1000"} 1.0\n'
        'vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="1000"} 1.0\n'
    )
    kv = parse_cache_config(two)
    assert kv is not None and (kv.engines, kv.kv_capacity_tokens) == (2, 16_000)
    assert parse_cache_config(VLLM_RECENT_CAPTURE, "tgi") is None
    with pytest.raises(MetricsParseError):
        parse_cache_config("<html></html>")


def test_cache_config_sglang_pool() -> None:
    kv = parse_cache_config(SGLANG_OLD_DOCS_POOL, "sglang")
    assert kv == MeasuredKV(source="sglang:max_total_num_tokens", kv_capacity_tokens=161_721, engines=1)
    assert parse_cache_config(SGLANG_DOCS_EXAMPLE, "sglang") is None


@pytest.mark.parametrize(
    ("plan", "measured", "expected"),
    [
        (36_864, 32_768, 0.125),  # 4,096 / 32,768
        (24_576, 32_768, -0.25),  # −8,192 / 32,768
        (32_768, 32_768, 0.0),
        (None, 32_768, None),
        (32_768, None, None),
        (32_768, 0, None),
    ],
)
def test_compare_kv(plan: int | None, measured: int | None, expected: float | None) -> None:
    result = compare_kv(plan, MeasuredKV(source="s", kv_capacity_tokens=measured))
    assert result == KVComparison(plan_tokens=plan, measured_tokens=measured, error_frac=expected)


def test_compare_kv_without_a_measurement() -> None:
    assert compare_kv(1000, None) == KVComparison(1000, None, None)


def test_fetch_measured_kv_missing_key_is_a_reason(monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    endpoint = Endpoint("v", "vllm", NOWHERE, api_key_env="NO_SUCH_KEY_VAR")
    kv = asyncio.run(fetch_measured_kv(endpoint))
    assert kv is not None and kv.error is not None and "NO_SUCH_KEY_VAR" in kv.error


def test_fetch_measured_kv_rejects_bad_timeout() -> None:
    with pytest.raises(InvalidParameterError):
        asyncio.run(fetch_measured_kv(Endpoint("v", "vllm", NOWHERE), timeout_s=0))


def test_scraper_missing_api_key_is_a_reason(monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    endpoint = Endpoint("v", "vllm", NOWHERE, api_key_env="NO_SUCH_KEY_VAR")
    reason, samples, _ = _collect(endpoint, interval_s=0.05, run_s=None)
    assert reason is not None and "NO_SUCH_KEY_VAR" in reason and samples == []


@pytest.mark.parametrize("interval_s", [0, -1, float("nan"), True])
def test_scraper_rejects_bad_interval(interval_s: float) -> None:
    with pytest.raises(InvalidParameterError):
        _collect(Endpoint("v", "vllm", NOWHERE), interval_s=interval_s, run_s=None)


# --- the polling grid, on a scripted clock ---------------------------------------------------------------------------
class _ScriptedClock:
    """``time.perf_counter`` and ``asyncio.wait_for`` for :func:`scrape_metrics`: a wait for the stop event lasts
    exactly its timeout (the clock jumps), or ends at once when the event is set; each scrape takes ``scrape_s``."""

    def __init__(self, scrape_s: float, stop_after_s: float) -> None:
        self.now, self.scrape_s, self.stop_after_s = 0.0, scrape_s, stop_after_s
        self.waits: list[float] = []
        self.stop = asyncio.Event()

    def perf_counter(self) -> float:
        return self.now

    async def wait_for(self, coro, timeout: float) -> None:
        coro.close()  # the stop event's wait, never awaited: the clock decides
        self.waits.append(timeout)
        if self.now + timeout >= self.stop_after_s:  # stop was set during this wait (or the scrape before it)
            self.now = max(self.now, self.stop_after_s)
            self.stop.set()
            return
        self.now += timeout
        raise TimeoutError

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.now += self.scrape_s
        return httpx2.Response(200, text=VLLM_DOCS_EXAMPLE)


def _scrape_on(clock: _ScriptedClock, monkeypatch: pytest.MonkeyPatch, interval_s: float) -> list[ServerSample]:
    monkeypatch.setattr(server_metrics, "time", clock)
    monkeypatch.setattr(server_metrics, "asyncio", clock)
    monkeypatch.setattr(
        server_metrics, "_client", lambda *_: httpx2.AsyncClient(transport=httpx2.MockTransport(clock.handler))
    )
    samples: list[ServerSample] = []
    endpoint = Endpoint("v", "vllm", "http://scripted")
    reason = asyncio.run(
        scrape_metrics(endpoint, interval_s=interval_s, stop=clock.stop, on_sample=samples.append, start=0.0)
    )
    assert reason is None
    return samples


def test_scrapes_start_on_the_interval_grid(monkeypatch) -> None:
    # scrapes of 30 ms every 100 ms, stopped at 0.55 s: starts at 0, 0.1, ..., 0.5; each sample stamped when its
    # answer arrived (start + 30 ms); each wait runs to the next grid point (100 - 30 = 70 ms), the last cut by stop
    clock = _ScriptedClock(scrape_s=0.030, stop_after_s=0.55)
    samples = _scrape_on(clock, monkeypatch, interval_s=0.1)
    assert [s.t_s for s in samples] == pytest.approx([0.03, 0.13, 0.23, 0.33, 0.43, 0.53])
    assert clock.waits == pytest.approx([0.07] * 6)
    span = samples[-1].t_s - samples[0].t_s
    assert span / (len(samples) - 1) == pytest.approx(0.1)  # on the 0.1 s grid, never faster


def test_a_scrape_that_overruns_its_slot_skips_the_grid_points_it_missed(monkeypatch) -> None:
    # scrapes of 250 ms every 100 ms: the scrape started at 0 ends at 0.25, so the next starts at 0.3 (0.1 and 0.2 are
    # skipped), then 0.6 and 0.9, each after a 50 ms wait; stop comes at 0.95 while the 0.9 scrape is in flight: it
    # finishes (at 1.15) and the wait after it ends at once
    clock = _ScriptedClock(scrape_s=0.250, stop_after_s=0.95)
    samples = _scrape_on(clock, monkeypatch, interval_s=0.1)
    assert [s.t_s for s in samples] == pytest.approx([0.25, 0.55, 0.85, 1.15])
    assert clock.waits == pytest.approx([0.05] * 4) and clock.now == pytest.approx(1.15)


def test_stop_ends_the_wait_between_scrapes_at_once(monkeypatch) -> None:
    # stop set 20 ms into a 970 ms wait: the scraper returns then, without another scrape
    clock = _ScriptedClock(scrape_s=0.030, stop_after_s=0.05)
    samples = _scrape_on(clock, monkeypatch, interval_s=1.0)
    assert [s.t_s for s in samples] == pytest.approx([0.03])
    assert clock.now == 0.05 and clock.waits == pytest.approx([0.97])
