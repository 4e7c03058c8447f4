"""Latency metric definitions (vLLM bench semantics, benchmark_clients.md §1, §10) on hand-built timelines."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.metrics.latency import (
    chunk_tokens,
    compute_metrics,
    output_tokens_method,
    output_tokens_warning,
    percentile,
    percentiles,
    summarize,
    tpot_s,
)
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
        output_tokens_source="usage",
        **kw,
    )


def test_multi_token_chunks():
    # Chunks at 0.150 s (1 token), 0.190 s (2 tokens), 0.210 s (1 token), 0.270 s (3 tokens): 7 tokens.
    m = compute_metrics(_rec([(0.150, 1), (0.190, 2), (0.210, 1), (0.270, 3)], output_tokens=7))
    assert m.ttft_s == pytest.approx(0.150)  # first token - sent
    assert m.e2e_s == pytest.approx(0.270)  # last token - sent
    # per chunk: 0.190-0.150, 0.210-0.190, 0.270-0.210
    assert m.itl_chunk_s == pytest.approx((0.040, 0.020, 0.060))
    # per token: 0.040/2 twice, 0.020/1, 0.060/3 three times -> six samples of 0.020
    assert m.itl_token_s == pytest.approx((0.020,) * 6)
    # TPOT = (0.270 - 0.150) / (7 - 1) = 0.020
    assert m.tpot_s == pytest.approx(0.020)
    # tokens/s = 7 / 0.270 = 25.925...
    assert m.output_tokens_per_s == pytest.approx(7 / 0.270)


def test_unknown_chunk_size_counts_one_token_and_zero_token_chunk_carries_gap():
    m = compute_metrics(_rec([(0.1, None), (0.2, None), (0.25, 0), (0.4, 2)], output_tokens=4))
    # gaps 0.1 (1 token), 0.05 (0 tokens: carried), 0.15 + 0.05 carried over 2 tokens -> 0.1, 0.1
    assert m.itl_chunk_s == pytest.approx((0.1, 0.05, 0.15))
    assert m.itl_token_s == pytest.approx((0.1, 0.1, 0.1))
    assert m.tpot_s == pytest.approx((0.4 - 0.1) / 3)


def test_a_final_count_is_spread_over_the_chunks_of_unknown_size():
    # Issue 24: 12 chunks of 4 tokens 40 ms apart, only a final usage count of 48. Per token: 40 / 4 = 10 ms, 11 gaps
    # x 4 tokens = 44 samples (it read 40 ms, one per chunk, for an endpoint without continuous usage).
    record = _rec([(0.050 + 0.040 * j, None) for j in range(12)], output_tokens=48)
    assert chunk_tokens(record) == (4,) * 12
    m = compute_metrics(record)
    assert m.itl_token_s == pytest.approx((0.010,) * 44)
    assert m.itl_chunk_s == pytest.approx((0.040,) * 11)  # per chunk unchanged
    assert m.tpot_s == pytest.approx(11 * 0.040 / 47)


@pytest.mark.parametrize(
    ("sizes", "output_tokens", "expected"),
    [
        ((None, None, None), 7, (2, 2, 3)),  # 7 over 3: ⌊7/3⌋ − 0, ⌊14/3⌋ − ⌊7/3⌋, 7 − ⌊14/3⌋
        ((1, None, None), 5, (1, 2, 2)),  # 5 − 1 known = 4 over the other 2
        ((3, None), 2, (3, 1)),  # fewer than the known counts: 1 for the chunk of unknown size
        ((None, None), None, (1, 1)),  # no count at all: 1 each
        ((None, None, None), 2, (0, 1, 1)),  # fewer tokens than chunks: a 0 passes its gap on
    ],
)
def test_chunk_tokens(sizes, output_tokens, expected):
    record = _rec([(0.1 * (i + 1), n) for i, n in enumerate(sizes)], output_tokens=output_tokens)
    assert chunk_tokens(record) == expected


def _counted(source: str | None, n: int | None = 4, ok: bool = True) -> RequestRecord:
    return RequestRecord(endpoint="ep", ok=ok, output_tokens=n, output_tokens_source=source)


@pytest.mark.parametrize(
    ("sources", "method"),
    [
        (("usage", "continuous_usage", "tgi_details", "tgi_events", "llamacpp_timings"), "usage"),
        (("usage", "chunks_one_token_each"), "chunks (one token each)"),
        (("usage", "tokenizer"), "tokenizer"),
        (("tokenizer", "estimate", "usage"), "chunks (estimate)"),  # the least exact one any request needed
        ((), None),
    ],
)
def test_output_tokens_method(sources, method):
    records = [_counted(s) for s in sources] + [_counted("estimate", ok=False)]  # a failed one does not count
    assert output_tokens_method(records) == method


def test_output_tokens_warning_names_the_figure():
    records = [_counted("estimate", 12), _counted("tokenizer", 48), _counted("estimate", 3, ok=False)]
    assert output_tokens_warning("ep", records) == (
        "ep: output tokens are estimates, one per chunk (total_output_tokens 60, 1 of 2 requests): the stream carried "
        "no usage and no tokenizer route counted the text; with several tokens per chunk, total_output_tokens and "
        "output_throughput read low and TPOT high"
    )
    assert output_tokens_warning("ep", records[1:]) is None


def test_one_output_token_has_no_tpot():
    m = compute_metrics(_rec([(0.2, 1)], output_tokens=1))
    assert (m.ttft_s, m.e2e_s, m.tpot_s, m.itl_chunk_s, m.itl_token_s) == (0.2, 0.2, None, (), ())
    assert m.output_tokens_per_s == pytest.approx(5.0)  # 1 / 0.2


def test_unknown_token_count_leaves_tpot_and_rate_undefined():
    m = compute_metrics(_rec([(0.2, None), (0.3, None)], output_tokens=None))
    assert m.tpot_s is None and m.output_tokens_per_s is None and m.ttft_s == 0.2


@pytest.mark.parametrize(
    "record",
    [
        RequestRecord(endpoint="ep", ok=False, error="HTTP 500: boom", error_kind="http", http_status=500),
        # in-stream error after two chunks: never a TTFT, never a 0
        _rec([(0.15, 1), (0.17, 1)], output_tokens=2, ok=False, error="boom", error_kind="in_stream", partial=True),
    ],
)
def test_failed_requests_have_no_latency(record):
    m = compute_metrics(record)
    assert not m.ok
    assert (m.ttft_s, m.e2e_s, m.tpot_s, m.output_tokens_per_s, m.itl_token_s) == (None, None, None, None, ())


def test_summary_matches_numpy_linear_percentiles():
    # np.percentile([1, 2, 3, 4, 10], 90) = 4 + 0.6 * (10 - 4) = 7.6; p99 = 4 + 0.96 * 6 = 9.76
    s = summarize([4.0, 1.0, None, 3.0, 10.0, 2.0])
    assert (s.count, s.mean, s.median) == (5, 4.0, 3.0)
    assert s.p90 == pytest.approx(7.6) and s.p99 == pytest.approx(9.76)
    # population std: sqrt(((1-4)^2+(2-4)^2+(3-4)^2+(4-4)^2+(10-4)^2)/5) = sqrt(50/5)
    assert s.std == pytest.approx(math.sqrt(10))
    assert summarize([]) is None and summarize([None]) is None
    assert percentile([5.0], 99) == 5.0


def test_percentiles_any_order_linear_interpolation():
    # sorted: 1, 2, 3, 4, 10; p25 rank 1 -> 2; p90 rank 3.6 -> 4 + 0.6 * 6 = 7.6; p100 -> 10
    assert percentiles([10.0, 3.0, 1.0, 4.0, 2.0], (25, 90, 100)) == pytest.approx((2.0, 7.6, 10.0), abs=1e-12)
    assert percentile([2.0, 1.0], 50) == pytest.approx(1.5, abs=1e-12)
    with pytest.raises(InvalidParameterError, match="empty sample"):
        percentiles([], (50,))


@pytest.mark.parametrize(
    ("ttft", "e2e", "tokens", "expected"),
    [
        (0.2, 1.2, 11, 0.1),  # 1.0 s over the 10 tokens after the first
        (0.5, 0.5, 1, None),  # one token: no gap after the first
        (0.5, 0.5, 0, None),
    ],
)
def test_tpot_leaves_the_first_token_out(ttft, e2e, tokens, expected):
    got = tpot_s(ttft, e2e, tokens)
    assert got == (None if expected is None else pytest.approx(expected, abs=1e-12))
