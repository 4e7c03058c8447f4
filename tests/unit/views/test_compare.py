"""planner/views/compare.py: the live columns, the final metrics and the run history, from hand-made records.

Record A (the timed server's shape): TTFT 150 ms, chunks of 1, 2 and 1 tokens at 0.150, 0.190 and 0.210 s; E2E 210 ms,
4 tokens, so TPOT = (210 − 150) / 3 = 20.0 ms.
"""

from __future__ import annotations

from planner.compare.run import CompareResult, CompareSnapshot, EndpointProgress
from planner.serving.requests import ChatRequest
from planner.serving.streaming import RequestRecord, TokenChunk
from planner.views.compare import history_view, live_view

CHUNKS = tuple(TokenChunk(t, f"x{i} ", n, "content") for i, (t, n) in enumerate(((0.150, 1), (0.190, 2), (0.210, 1))))
A = RequestRecord(
    endpoint="a",
    ok=True,
    first_token_s=0.150,
    first_content_s=0.150,
    last_token_s=0.210,
    end_s=0.210,
    chunks=CHUNKS,
    output_tokens=4,
    output_tokens_source="usage",
    text="x0 x1 x2 ",
)
DOWN = RequestRecord(endpoint="down", ok=False, error="cannot connect to http://127.0.0.1:9", error_kind="connect")


def test_before_the_run_starts_its_endpoints_there_is_nothing_but_an_error():
    failed = live_view(CompareSnapshot(endpoints=(), error="C_KEY is not set"), 1)
    assert failed.error == "The run failed: C_KEY is not set"
    assert live_view(CompareSnapshot(endpoints=()), 1).columns == ()


def test_live_columns_while_streaming():
    snap = CompareSnapshot(
        endpoints=(
            EndpointProgress("a", token_times_s=(0.150,), tokens=1, reasoning_text="thinking"),
            EndpointProgress("down", records=(DOWN,), done=True, error=DOWN.error),
        )
    )
    view = live_view(snap, 1)
    streaming, down = view.columns
    assert (streaming.state, streaming.label, streaming.waiting, streaming.boxed) == (
        "streaming",
        "streaming · 1 tokens",
        True,
        True,
    )
    assert streaming.reasoning == "thinking"
    assert (down.state, down.error, down.boxed) == ("error", "cannot connect to http://127.0.0.1:9", False)
    assert len(view.figures) == 3 and view.metrics is None


def test_a_finished_run_has_its_metrics():
    result = CompareResult(ChatRequest("hi"), infos=(), records=(A,), cancelled=True)
    progress = EndpointProgress("a", text=A.text, token_times_s=(0.150, 0.190, 0.210), records=(A,), done=True)
    view = live_view(CompareSnapshot(endpoints=(progress,), done=True, result=result), 1)
    assert view.metrics_title == "Metrics (cancelled run)"
    row = view.metrics.iloc[0]
    assert row["TTFT ms"] == "150.0 (n=1)" and row["TPOT ms"] == "20.0 (n=1)"


def test_history_rounds_to_a_tenth_and_says_na():
    assert history_view([]) is None
    history = history_view([CompareResult(ChatRequest("hi"), infos=(), records=(A, DOWN))])
    rows = history.table.set_index("endpoint")
    assert rows.loc["a", "ttft_ms"] == "150.0" and rows.loc["a", "tpot_ms"] == "20.0"
    assert rows.loc["down", "ttft_ms"] == "n/a"
    assert history.history_csv.startswith("run,")
