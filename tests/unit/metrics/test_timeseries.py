"""Per-window time series of a load run: hand-built records with hand-worked window values, and a real run."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.metrics.timeseries import default_window_s, timeseries, timeseries_frame
from planner.serving.streaming import RequestRecord

START = 100.0


def _ok(t_sent: float, ttft_s: float, e2e_s: float, tokens: int, end_s: float | None = None) -> RequestRecord:
    return RequestRecord(
        endpoint="t",
        ok=True,
        t_sent=t_sent,
        first_chunk_s=ttft_s,
        first_token_s=ttft_s,
        last_token_s=e2e_s,
        end_s=e2e_s if end_s is None else end_s,
        output_tokens=tokens,
    )


RECORDS = (
    _ok(100.0, 0.1, 0.5, 10),  # completes at 100.50
    _ok(100.2, 0.3, 0.6, 20, end_s=0.62),  # completes at 100.82 ([DONE] after the last token)
    _ok(100.5, 0.2, 1.2, 30),  # completes at 101.70
    RequestRecord(endpoint="t", ok=False, error_kind="http", t_sent=100.6, end_s=0.1),  # fails at 100.70
)


def test_one_second_windows_by_completion_time():
    w0, w1 = timeseries(RECORDS, START, window_s=1.0)
    # window [0, 1): the first two complete, the failure lands here too
    assert (w0.start_s, w0.end_s, w0.span_s) == (0.0, 1.0, 1.0)
    assert (w0.completed, w0.failed, w0.output_tokens) == (2, 1, 30)
    assert (w0.requests_per_s, w0.output_tokens_per_s) == (2.0, 30.0)
    # TTFT samples 100 and 300 ms: p50 = 200, p90 = 100 + 0.9 * 200 = 280, p99 = 100 + 0.99 * 200 = 298
    assert w0.ttft_samples == 2
    assert (w0.ttft_p50_ms, w0.ttft_p90_ms, w0.ttft_p99_ms) == pytest.approx((200.0, 280.0, 298.0))
    # E2E samples 500 and 600 ms: p50 = 550, p99 = 500 + 0.99 * 100 = 599
    assert w0.e2e_samples == 2 and (w0.e2e_p50_ms, w0.e2e_p99_ms) == pytest.approx((550.0, 599.0))
    # window [1, 2): the third (one sample: every percentile is that sample)
    assert (w1.completed, w1.failed, w1.output_tokens, w1.output_tokens_per_s) == (1, 0, 30, 30.0)
    assert (w1.ttft_p50_ms, w1.ttft_p99_ms, w1.e2e_p50_ms) == pytest.approx((200.0, 200.0, 1200.0))


def test_last_window_is_cut_at_the_run_end():
    windows = timeseries(RECORDS, START, window_s=1.0, end_s=101.8)
    assert len(windows) == 2
    # the run ended 0.8 s into the second window: 1 request / 0.8 s, 30 tokens / 0.8 s
    assert windows[1].span_s == pytest.approx(0.8)
    assert windows[1].requests_per_s == pytest.approx(1.25) and windows[1].output_tokens_per_s == pytest.approx(37.5)
    # windows reach end_s even when nothing completes in them
    assert len(timeseries(RECORDS, START, window_s=1.0, end_s=104.0)) == 4


def test_default_window_and_empty_windows_are_none_not_zero():
    # the last completion is 1.7 s in, so the default window is max(0.5, 1.7 / 30) = 0.5 s -> 4 windows
    assert default_window_s(1.7) == 0.5 and default_window_s(90.0) == 3.0
    windows = timeseries(RECORDS, START)
    assert [w.completed for w in windows] == [0, 2, 0, 1]  # 100.50 and 100.82 in [0.5, 1.0); 101.70 in [1.5, 2.0)
    assert [w.failed for w in windows] == [0, 1, 0, 0]
    empty = windows[0]
    assert (empty.ttft_samples, empty.ttft_p50_ms, empty.e2e_p99_ms) == (0, None, None)
    assert empty.requests_per_s == 0.0  # a rate over a window with no request is a measured 0, not missing


def test_edge_cases():
    assert timeseries((), START) == ()
    assert [w.completed for w in timeseries((), START, window_s=1.0, end_s=102.0)] == [0, 0]
    # a completion exactly on a window edge opens the next window
    (w0, w1) = timeseries((_ok(100.0, 0.1, 1.0, 5),), START, window_s=1.0)
    assert (w0.completed, w1.completed) == (0, 1)
    for bad in (0, -1.0, math.inf):
        with pytest.raises(InvalidParameterError, match="window_s"):
            timeseries(RECORDS, START, window_s=bad)
    with pytest.raises(InvalidParameterError, match="end_s"):
        timeseries(RECORDS, START, end_s=99.0)


def test_frame_for_charts():
    frame = timeseries_frame(timeseries(RECORDS, START, window_s=0.5))
    assert list(frame["completed"]) == [0, 2, 0, 1]
    assert math.isnan(frame["ttft_p50_ms"][0]) and frame["ttft_p50_ms"][1] == pytest.approx(200.0)
    assert "output_tokens_per_s" in frame.columns and "e2e_p99_ms" in frame.columns
