"""``python -m planner compare``: the table of medians, the JSON, notes on stderr and the exit code, on a compare run
scripted here (no server: :func:`planner.compare.run.run_compare` is replaced at the boundary).

The scripted answer is the demo server's: first token 150 ms after sending, then one every 20 ms, 12 tokens in chunks
of 1, 2, 1, 3, 1, 2, 1, 1, so by hand TTFT = 150 ms, E2E = 150 + 11 × 20 = 370 ms, TPOT = (370 − 150) / 11 = 20 ms and
every per-token ITL is 20 ms (a chunk of n tokens after a gap of 20·n ms counts n gaps of 20 ms).
"""

from __future__ import annotations

import json

import pytest

from planner.cli.main import main
from planner.compare import run as compare_run
from planner.compare.run import CompareResult
from planner.serving.discovery import EndpointInfo
from planner.serving.requests import ChatRequest
from planner.serving.streaming import RequestRecord, TokenChunk

CHUNKS = (1, 2, 1, 3, 1, 2, 1, 1)


def _answer(endpoint: str, source: str = "usage") -> RequestRecord:
    chunks, sent = [], 0
    for n in CHUNKS:
        sent += n
        chunks.append(TokenChunk(0.150 + 0.020 * (sent - 1), "t " * n, n, "content"))
    return RequestRecord(
        endpoint, ok=True, first_byte_s=0.001, first_chunk_s=0.002, first_token_s=0.150, first_content_s=0.150,
        last_token_s=0.370, end_s=0.371, chunks=tuple(chunks), output_tokens=12, output_tokens_source=source,
        text="t " * 12, finish_reason="length",
    )  # fmt: skip


def _refused(endpoint: str) -> RequestRecord:
    return RequestRecord(endpoint, ok=False, error="cannot connect to http://127.0.0.1:9", error_kind="connect")


@pytest.fixture
def scripted(monkeypatch):
    """Replace the run with one that answers ``records`` and keeps what it was asked."""
    asked: dict[str, object] = {}

    def install(*records: RequestRecord) -> dict[str, object]:
        async def run_compare(endpoints, request, *, repeat, timeout_s):
            asked.update(endpoints=endpoints, request=request, repeat=repeat, timeout_s=timeout_s)
            infos = tuple(EndpointInfo(e.name, e.kind, healthy=True) for e in endpoints)
            return CompareResult(request, infos, records)

        monkeypatch.setattr(compare_run, "run_compare", run_compare)
        return asked

    return install


ARGV = ["compare", "--endpoint", "a=vllm:http://127.0.0.1:9", "--endpoint", "b=tgi:http://127.0.0.1:10"]


def test_the_table_has_one_row_of_medians_per_endpoint(scripted, capsys) -> None:
    asked = scripted(_answer("a"), _refused("b"))
    assert main([*ARGV, "--prompt", "hi", "--max-tokens", "12", "--repeat", "1", "--timeout", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "endpoint            ok   TTFT ms   TPOT ms    ITL ms    E2E ms  tokens"
    assert out[1] == "a                  1/1     150.0      20.0      20.0     370.0      12"
    assert out[2] == "b                  0/1       n/a       n/a       n/a       n/a     n/a"
    assert out[3] == "  b: connect: cannot connect to http://127.0.0.1:9"
    assert out[4].startswith("TTFT = first token - sent; TPOT = (E2E - TTFT)/(tokens - 1)")
    assert [e.name for e in asked["endpoints"]] == ["a", "b"] and [e.kind for e in asked["endpoints"]] == [
        "vllm",
        "tgi",
    ]
    assert asked["request"] == ChatRequest(prompt="hi", max_tokens=12) and asked["timeout_s"] == 5.0


def test_json_and_a_note_on_stderr_for_estimated_tokens(scripted, capsys) -> None:
    scripted(_answer("a", source="estimate"))
    assert main([*ARGV[:3], "--prompt", "hi", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    (row,) = data["summary"]
    assert (row["endpoint"], row["requests"], row["failed"]) == ("a", 1, 0)
    assert (row["ttft_ms"], row["tpot_ms"], row["itl_ms"], row["e2e_ms"]) == pytest.approx((150, 20, 20, 370))
    assert data["request"]["prompt"] == "hi" and data["cancelled"] is False
    (note,) = captured.err.splitlines()
    assert note == f"python -m planner compare: note: {data['notes'][0]}" and data["notes"][0].startswith("a: ")


def test_every_request_failed_exits_1_after_the_table(scripted, capsys) -> None:
    scripted(_refused("a"))
    assert main([*ARGV[:3], "--prompt", "hi"]) == 1
    captured = capsys.readouterr()
    assert "a                  0/1" in captured.out
    assert captured.err == (
        "python -m planner compare: error: all 1 request failed; most common: connect (1 of 1): "
        "cannot connect to http://127.0.0.1:9\n"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--prompt", "hi"], "give at least one --endpoint NAME=KIND:URL (or --endpoints-file)"),
        ([*ARGV[1:3], "--prompt", "hi", "--max-tokens", "0"], "--max-tokens 0 is not valid: expected "),
    ],
)
def test_bad_input_is_one_line_exit_2_before_anything_is_sent(scripted, capsys, argv, line) -> None:
    asked = scripted()
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m planner compare: error: {line}") and err.count("\n") == 1
    assert asked == {}  # nothing was sent
