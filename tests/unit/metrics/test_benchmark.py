"""Run metrics with ``vllm bench serve`` ``calculate_metrics`` semantics, on hand-built request timelines."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.metrics.benchmark import BenchmarkMetrics, compute_benchmark_metrics
from planner.serving.streaming import RequestRecord, TokenChunk


def _rec(chunks, *, output_tokens, ok=True, **kw):
    chunks = tuple(TokenChunk(t, "x", n, "content") for t, n in chunks)
    return RequestRecord(
        endpoint="ep",
        ok=ok,
        first_token_s=chunks[0].t_s if chunks else None,
        last_token_s=chunks[-1].t_s if chunks else None,
        chunks=chunks,
        output_tokens=output_tokens,
        output_tokens_source="usage" if output_tokens is not None else None,
        **kw,
    )


# A: multi-token chunks at 0.100 (1), 0.140 (2), 0.160 (1), 0.220 (3) -> 7 tokens
# B: 0.200 (1), 0.250 (1) -> 2 tokens
# C: one chunk at 0.300 -> 1 token: TTFT and E2EL samples, NO TPOT sample, no ITL gap
# D: HTTP 500, nothing streamed
# E: in-stream error after two chunks (partial output): failed, contributes nothing
RECORDS = [
    _rec([(0.100, 1), (0.140, 2), (0.160, 1), (0.220, 3)], output_tokens=7),
    _rec([(0.200, 1), (0.250, 1)], output_tokens=2),
    _rec([(0.300, 1)], output_tokens=1),
    RequestRecord(endpoint="ep", ok=False, error="HTTP 500: boom", error_kind="http", http_status=500),
    _rec([(0.15, 1), (0.17, 1)], output_tokens=2, ok=False, error="OOM", error_kind="in_stream", partial=True),
]
INPUTS = [10, 20, 30, 40, 50]


def test_counts_and_throughputs():
    m = compute_benchmark_metrics(RECORDS, INPUTS, 2.0)
    assert (m.completed, m.failed) == (3, 2)
    assert m.failures_by_kind == (("http", 1), ("in_stream", 1))
    assert m.total_input_tokens == 60  # 10 + 20 + 30 (failed requests' inputs not counted, as vLLM)
    assert m.total_output_tokens == 10  # 7 + 2 + 1
    assert m.request_throughput == pytest.approx(1.5)  # 3 / 2.0 s
    assert m.output_throughput == pytest.approx(5.0)  # 10 / 2.0 s
    assert m.total_token_throughput == pytest.approx(35.0)  # (60 + 10) / 2.0 s
    assert m.request_goodput is None  # no SLO given


def test_distributions_by_hand():
    m = compute_benchmark_metrics(RECORDS, INPUTS, 2.0)
    # TTFT = [0.1, 0.2, 0.3]: mean 0.2, median 0.2, std sqrt((0.01 + 0 + 0.01)/3),
    # p90 rank 2*0.9 = 1.8 -> 0.2 + 0.8*0.1 = 0.28; p99 rank 1.98 -> 0.298
    assert m.ttft.count == 3
    assert (m.ttft.mean_s, m.ttft.median_s) == pytest.approx((0.2, 0.2))
    assert m.ttft.std_s == pytest.approx(math.sqrt(0.02 / 3))
    assert (m.ttft.p90_s, m.ttft.p99_s) == pytest.approx((0.28, 0.298))
    # TPOT = (E2EL - TTFT)/(n - 1): A (0.22 - 0.10)/6 = 0.02, B (0.25 - 0.20)/1 = 0.05, C has n = 1 -> no sample
    # mean 0.035, std 0.015, p90 rank 0.9 -> 0.02 + 0.9*0.03 = 0.047, p99 -> 0.02 + 0.99*0.03 = 0.0497
    assert m.tpot.count == 2
    assert (m.tpot.mean_s, m.tpot.median_s, m.tpot.std_s) == pytest.approx((0.035, 0.035, 0.015))
    assert (m.tpot.p90_s, m.tpot.p99_s) == pytest.approx((0.047, 0.0497))
    # ITL = every chunk gap pooled: A 0.04, 0.02, 0.06; B 0.05 -> sorted [0.02, 0.04, 0.05, 0.06]
    # mean 0.17/4 = 0.0425; median rank 1.5 -> 0.045; p90 rank 2.7 -> 0.057; p99 rank 2.97 -> 0.0597
    # std: deviations -0.0225, -0.0025, 0.0075, 0.0175 -> squares sum 0.000875 / 4 = 0.00021875
    assert m.itl.count == 4
    assert (m.itl.mean_s, m.itl.median_s) == pytest.approx((0.0425, 0.045))
    assert (m.itl.p90_s, m.itl.p99_s) == pytest.approx((0.057, 0.0597))
    assert m.itl.std_s == pytest.approx(math.sqrt(0.00021875))
    # E2EL = [0.22, 0.25, 0.30]: mean 0.77/3, median 0.25
    assert m.e2el.count == 3
    assert (m.e2el.mean_s, m.e2el.median_s) == pytest.approx((0.77 / 3, 0.25))


@pytest.mark.parametrize(
    ("slo_ms", "goodput"),
    [
        # A: ttft 100, tpot 20, e2el 220; B: ttft 200, tpot 50, e2el 250; C: ttft 300, tpot 0 (vLLM), e2el 300
        ({"ttft": 250, "tpot": 40}, 0.5),  # only A meets both -> 1 / 2.0 s
        ({"tpot": 40}, 1.0),  # A and C (one-token request cannot violate TPOT) -> 2 / 2.0 s
        ({"e2el": 260}, 1.0),  # A and B -> 2 / 2.0 s
        ({"ttft": 50}, 0.0),  # none
    ],
)
def test_goodput_needs_every_slo(slo_ms, goodput):
    m = compute_benchmark_metrics(RECORDS, INPUTS, 2.0, slo_ms=slo_ms)
    assert m.request_goodput == pytest.approx(goodput)


def test_no_sample_is_none_never_zero():
    failed = [RECORDS[3], RECORDS[4]]
    m = compute_benchmark_metrics(failed, [1, 1], 1.0)
    assert (m.completed, m.failed, m.total_output_tokens) == (0, 2, 0)
    assert (m.ttft, m.tpot, m.itl, m.e2el) == (None, None, None, None)
    out = m.to_vllm_json()
    assert out["mean_ttft_ms"] is None and out["p99_itl_ms"] is None
    # only one-token requests: TTFT exists, TPOT and ITL do not
    one = compute_benchmark_metrics([RECORDS[2]], [5], 1.0)
    assert one.ttft.count == 1 and one.tpot is None and one.itl is None


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (([RECORDS[0]], [], 1.0), "input_tokens"),
        (([RECORDS[0]], [1], 0.0), "duration_s"),
        (([RECORDS[0]], [1], 1.0, {"itl": 5}), "slo_ms"),
        (([RECORDS[0]], [1], 1.0, {"ttft": -1}), "slo_ms"),
    ],
)
def test_bad_input(args, name):
    records, inputs, duration, *slo = args
    with pytest.raises(InvalidParameterError) as info:
        compute_benchmark_metrics(records, inputs, duration, slo_ms=slo[0] if slo else None)
    assert info.value.name == name


def test_vllm_json_keys_and_round_trip():
    m = compute_benchmark_metrics(RECORDS, INPUTS, 2.0, slo_ms={"ttft": 250})
    out = m.to_vllm_json()
    assert out["duration"] == 2.0 and out["completed"] == 3 and out["failed"] == 2
    assert out["mean_ttft_ms"] == pytest.approx(200.0) and out["p90_ttft_ms"] == pytest.approx(280.0)
    assert out["median_tpot_ms"] == pytest.approx(35.0) and out["mean_e2el_ms"] == pytest.approx(770 / 3)
    assert out["request_goodput"] == pytest.approx(1.0)  # A and B have TTFT <= 250 ms -> 2 / 2.0 s
    back = BenchmarkMetrics.from_vllm_json(out)
    assert back.to_vllm_json() == pytest.approx(out)


def test_imports_a_vllm_save_result_file():
    # Shape of `vllm bench serve --save-result` (serve.py): run info, aggregates, per-request arrays; p99 only.
    data = {
        "date": "20250101-120000",
        "endpoint_type": "openai-chat",
        "backend": "openai-chat",
        "label": None,
        "model_id": "Qwen/Qwen3-0.6B",
        "tokenizer_id": "Qwen/Qwen3-0.6B",
        "num_prompts": 3,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": 1.5,
        "completed": 2,
        "failed": 1,
        "total_input_tokens": 20,
        "total_output_tokens": 5,
        "request_throughput": 1.3333,
        "request_goodput": None,
        "output_throughput": 3.3333,
        "total_token_throughput": 16.6667,
        "max_output_tokens_per_s": 4.0,
        "max_concurrent_requests": 3,
        "input_lens": [10, 10, 10],
        "output_lens": [4, 1, 0],
        "ttfts": [0.1, 0.2, 0.0],
        "itls": [[0.02, 0.02, 0.02], [], []],
        "generated_texts": ["a b c d", "a", ""],
        "errors": ["", "", "Internal Server Error"],
        "mean_ttft_ms": 150.0,
        "median_ttft_ms": 150.0,
        "std_ttft_ms": 50.0,
        "p99_ttft_ms": 199.0,
        "mean_tpot_ms": 20.0,
        "median_tpot_ms": 20.0,
        "std_tpot_ms": 0.0,
        "p99_tpot_ms": 20.0,
        "mean_itl_ms": 20.0,
        "median_itl_ms": 20.0,
        "std_itl_ms": 0.0,
        "p99_itl_ms": 20.0,
    }
    m = BenchmarkMetrics.from_vllm_json(data)
    assert (m.duration_s, m.completed, m.failed, m.total_output_tokens) == (1.5, 2, 1, 5)
    assert m.ttft.count == 2 and m.ttft.mean_s == pytest.approx(0.15) and m.ttft.p90_s is None
    assert m.tpot.count == 1  # output_lens > 1: only the first
    assert m.itl.count == 3  # pooled gaps
    assert m.e2el is None  # not in the default --percentile-metrics
    with pytest.raises(InvalidParameterError):
        BenchmarkMetrics.from_vllm_json({"completed": 1})
