"""Live compare figures and tables from hand-made records and snapshots (values checked by hand)."""

from __future__ import annotations

import pytest

from planner.compare.charts import (
    METRIC_HELP,
    display_metrics,
    endpoint_metrics,
    endpoint_status,
    history_csv,
    history_figure,
    history_frame,
    itl_figure,
    itl_samples_ms,
    token_curve,
    tokens_figure,
    ttft_figure,
)
from planner.compare.run import CompareResult, EndpointProgress
from planner.serving.requests import ChatRequest
from planner.serving.streaming import RequestRecord, TokenChunk


def _record(name: str, times: list[float], sizes: list[int | None], *, ok: bool = True, **kw) -> RequestRecord:
    chunks = tuple(TokenChunk(t, f"x{i} ", n, "content") for i, (t, n) in enumerate(zip(times, sizes, strict=True)))
    known = [n for n in sizes if n is not None]
    return RequestRecord(
        endpoint=name,
        ok=ok,
        first_token_s=times[0] if times else None,
        first_content_s=times[0] if times else None,
        last_token_s=times[-1] if times else None,
        end_s=times[-1] if times else None,
        chunks=chunks,
        output_tokens=sum(known) if ok and known else kw.pop("output_tokens", None),
        output_tokens_source="continuous_usage" if ok else None,
        text="".join(c.text for c in chunks),
        **kw,
    )


# Timed-server shape: TTFT 150 ms, chunks of 1, 2, 1 tokens, 20 ms per token.
# Chunk times 0.150, 0.190, 0.210 → per-token ITL 20, 20, 20 ms; per-chunk 40, 20 ms.
# E2E 210 ms, 4 tokens → TPOT (210 − 150) / 3 = 20 ms; tokens/s = 4 / 0.210 = 19.05.
A = _record("a", [0.150, 0.190, 0.210], [1, 2, 1])
# TTFT 300 ms, three chunks of unknown size (one token each) 50 ms apart.
B = _record("b", [0.300, 0.350, 0.400], [None, None, None], output_tokens=None)
FAILED = RequestRecord(endpoint="down", ok=False, error="cannot connect to http://127.0.0.1:9", error_kind="connect")
CUT = _record("c", [0.1, 0.2], [1, 1], ok=False, error="stream cut", error_kind="cut", partial=True)


def _done(record: RequestRecord) -> EndpointProgress:
    times = tuple(c.t_s for c in record.chunks)
    return EndpointProgress(record.endpoint, text=record.text, token_times_s=times, records=(record,), done=True)


def test_status_of_each_state():
    assert endpoint_status(EndpointProgress("a"), 1).state == "waiting"
    streaming = EndpointProgress("a", text="x", token_times_s=(0.1, 0.2), tokens=2)
    assert endpoint_status(streaming, 1).label == "streaming · 2 tokens"
    done = endpoint_status(_done(A), 1)
    assert done.state == "done" and done.error is None
    failed = endpoint_status(EndpointProgress("down", records=(FAILED,), done=True, error=FAILED.error), 1)
    assert failed.state == "error" and failed.error == "cannot connect to http://127.0.0.1:9"
    cut = endpoint_status(_done(CUT), 1)
    assert cut.state == "cut" and cut.error == "stream cut"
    # repeat 3, first request done, second streaming
    second = EndpointProgress("a", text="y", token_times_s=(0.15,), tokens=1, records=(A,))
    assert endpoint_status(second, 3).label == "streaming · request 2/3 · 1 tokens"


def test_token_curve_uses_exact_counts_once_finished():
    assert token_curve(_done(A)) == ((0.150, 0.190, 0.210), (1, 3, 4))
    live = EndpointProgress("a", token_times_s=(0.15, 0.19), tokens=3)
    assert token_curve(live) == ((0.15, 0.19), (1, 2))  # one per chunk while streaming


def test_tokens_figure_has_one_line_per_endpoint():
    fig = tokens_figure([_done(A), _done(B), EndpointProgress("down", records=(FAILED,), done=True)])
    assert [t.name for t in fig.data] == ["a", "b (chunks)", "down"]
    assert list(fig.data[0].y) == [1, 3, 4] and list(fig.data[1].y) == [1, 2, 3]
    assert list(fig.data[2].x) == []


def test_ttft_figure_medians_in_ms():
    live = EndpointProgress("live", token_times_s=(0.120,), tokens=1)
    fig = ttft_figure([_done(A), _done(B), live, EndpointProgress("down", records=(FAILED,), done=True)])
    bar = fig.data[0]
    assert list(bar.x) == ["a", "b", "live", "down"]
    assert list(bar.y)[:3] == pytest.approx([150.0, 300.0, 120.0])
    assert bar.y[3] is None and bar.text[3] == "n/a"


def test_itl_figure_per_token_samples():
    fig = itl_figure([_done(A), _done(B)])
    assert [t.name for t in fig.data] == ["a (n=3)", "b (n=2)"]
    assert list(fig.data[0].y) == pytest.approx([20.0, 20.0, 20.0])
    assert list(fig.data[1].y) == pytest.approx([50.0, 50.0])
    # before any request finished, the live chunk gaps are shown
    values, kind = itl_samples_ms(EndpointProgress("a", token_times_s=(0.15, 0.19, 0.21)))
    assert values == pytest.approx([40.0, 20.0]) and kind == "per chunk"


def test_endpoint_metrics_and_display():
    result = CompareResult(ChatRequest("hi"), infos=(), records=(A, A, B, FAILED))
    frame = endpoint_metrics(result).set_index("endpoint")
    a = frame.loc["a"]
    assert (a.requests, a.ok, a.ttft_n, a.itl_n, a.itl_chunk_n) == (2, 2, 2, 6, 4)
    assert a.ttft_ms == pytest.approx(150.0)
    assert a.tpot_ms == pytest.approx(20.0)
    assert a.itl_p50_ms == pytest.approx(20.0) and a.itl_p99_ms == pytest.approx(20.0)
    assert a.e2e_ms == pytest.approx(210.0)
    assert a.output_tokens_per_s == pytest.approx(4 / 0.210)
    assert frame.loc["b", "tpot_ms"] is None or frame.loc["b", "tpot_ms"] != frame.loc["b", "tpot_ms"]
    shown = display_metrics(endpoint_metrics(result)).set_index("endpoint")
    assert list(shown.reset_index().columns) == list(METRIC_HELP)
    assert shown.loc["a", "TTFT ms"] == "150.0 (n=2)"
    assert shown.loc["a", "output tokens"] == "4 (server usage per chunk)"
    assert shown.loc["b", "TPOT ms"] == "n/a"  # output tokens unknown
    assert shown.loc["down", "ok / requests"] == "0/1"
    assert (shown.loc["down"].drop(["ok / requests", "ITL samples"]) == "n/a").all()
    for text in ("first token", "(E2E − TTFT) / (output tokens − 1)", "last token"):
        assert any(text in help_text for help_text in METRIC_HELP.values())


def test_history_frame_figure_and_csv():
    runs = [
        CompareResult(ChatRequest("hi"), infos=(), records=(A, B)),
        CompareResult(ChatRequest("hi"), infos=(), records=(A, FAILED)),
    ]
    frame = history_frame(runs)
    assert list(frame["run"]) == [1, 1, 2, 2]
    assert list(frame["endpoint"]) == ["a", "b", "a", "down"]
    fig = history_figure(frame)
    names = [(t.name, t.xaxis) for t in fig.data]
    assert names == [("a", "x"), ("a", "x2"), ("b", "x"), ("b", "x2"), ("down", "x"), ("down", "x2")]
    assert list(fig.data[0].y) == pytest.approx([150.0, 150.0])
    assert list(fig.data[1].y) == pytest.approx([20.0, 20.0])
    csv = history_csv(runs)
    assert csv.splitlines()[0].startswith("run,endpoint,repeat,ok")
    assert len(csv.splitlines()) == 5
    assert history_frame([]).empty and history_csv([]) == "run\n"


# llama.cpp's empty answer: the stream ended with finish_reason "stop" and no token-bearing chunk; the recorder
# counts 0 tokens from the (zero) chunks, no latency is defined, and the request failed as "empty".
EMPTY_ERROR = "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"
EMPTY = RequestRecord(
    endpoint="lcp",
    ok=False,
    error=EMPTY_ERROR,
    error_kind="empty",
    first_byte_s=0.05,
    first_chunk_s=0.06,
    end_s=0.07,
    output_tokens=0,
    output_tokens_source="chunks_one_token_each",
    finish_reason="stop",
)


def test_status_of_an_empty_answer():
    status = endpoint_status(EndpointProgress("lcp", records=(EMPTY,), done=True), 1)
    assert (status.state, status.label, status.empty_answer, status.error) == (
        "error",
        "error · empty answer (0 tokens)",
        True,
        EMPTY_ERROR,
    )
    assert not endpoint_status(_done(A), 1).empty_answer


def test_endpoint_metrics_of_an_empty_answer():
    result = CompareResult(ChatRequest("Write a long story about a dragon."), infos=(), records=(EMPTY,))
    row = endpoint_metrics(result).iloc[0]
    assert (row.requests, row.ok, row.ttft_n, row.tpot_n, row.e2e_n) == (1, 0, 0, 0, 0)
    shown = display_metrics(endpoint_metrics(result)).iloc[0]
    assert (shown["ok / requests"], shown["output tokens"]) == ("0/1", "n/a")
    for column in ("TTFT ms", "TPOT ms", "E2E ms", "tokens/s", "ITL p50 ms"):
        assert shown[column] == "n/a"
