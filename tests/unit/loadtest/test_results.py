"""Saved runs: vLLM --save-result files in and out, per-request rows, the side-by-side table."""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.results import (
    failure_summary,
    import_runs,
    requests_frame,
    runs_frame,
    same_model,
    to_vllm_file,
)

# A result in the shape vllm bench serve --save-result writes (serve.py: result_json), two requests, the second
# failed. Values chosen by hand: request 1 has TTFT 0.1 s, E2EL 1.0 s and 10 output tokens, so its
# TPOT = (1.0 - 0.1) / (10 - 1) = 0.1 s.
VLLM_RESULT = {
    "date": "20261129-101500",
    "backend": "vllm",
    "label": None,
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
    "num_prompts": 2,
    "request_rate": float("inf"),
    "burstiness": 1.0,
    "max_concurrency": 4,
    "duration": 2.0,
    "completed": 1,
    "failed": 1,
    "total_input_tokens": 128,
    "total_output_tokens": 10,
    "request_throughput": 0.5,
    "request_goodput": None,
    "output_throughput": 5.0,
    "total_token_throughput": 69.0,
    "mean_ttft_ms": 100.0,
    "median_ttft_ms": 100.0,
    "std_ttft_ms": 0.0,
    "p99_ttft_ms": 100.0,
    "mean_tpot_ms": 100.0,
    "median_tpot_ms": 100.0,
    "std_tpot_ms": 0.0,
    "p99_tpot_ms": 100.0,
    "mean_itl_ms": 100.0,
    "median_itl_ms": 100.0,
    "std_itl_ms": 0.0,
    "p99_itl_ms": 100.0,
    "input_lens": [128, 128],
    "output_lens": [10, 0],
    "ttfts": [0.1, 0.0],
    "itls": [[0.1] * 9, []],
    "latencies": [1.0, 0.0],
    "start_times": [1000.5, 1000.75],
    "generated_texts": ["a b c", ""],
    "errors": ["", "Bad Request"],
}


def test_import_a_vllm_result_file():
    # json.dumps writes inf as the token Infinity, as vLLM's own file does
    (run,) = import_runs(json.dumps(VLLM_RESULT).encode(), "bench.json")
    assert run.source == "imported"
    assert run.endpoint == "meta-llama/Llama-3.1-8B-Instruct"
    assert (run.max_concurrency, run.num_prompts, run.request_rate) == (4, 2, math.inf)
    assert run.metrics.completed == 1 and run.metrics.failed == 1
    assert run.metrics.ttft.median_s == pytest.approx(0.1)
    assert run.metrics.itl.count == 9
    ok, failed = run.requests
    assert ok.ok and ok.tpot_s == pytest.approx(0.1) and ok.start_s == 0.0 and ok.output_tokens == 10
    assert not failed.ok and failed.error == "Bad Request" and failed.ttft_s is None and failed.start_s == 0.25


def test_a_run_without_request_rows_round_trips_with_its_distributions():
    # a file without the per-request arrays (or a prediction): its export must not write empty arrays, which read
    # back as "no sample" and lost TPOT and ITL
    summary = {k: v for k, v in VLLM_RESULT.items() if k not in ("input_lens", "output_lens", "ttfts", "itls")}
    summary = {k: v for k, v in summary.items() if k not in ("latencies", "start_times", "errors", "generated_texts")}
    (run,) = import_runs(json.dumps(summary), "summary.json")
    assert run.requests == ()
    written = to_vllm_file(run)
    assert "output_lens" not in written and "itls" not in written
    (back,) = import_runs(json.dumps(written), "again.json")
    assert back.metrics.tpot.median_s == pytest.approx(0.1) and back.metrics.itl.median_s == pytest.approx(0.1)
    assert back.metrics.ttft.median_s == pytest.approx(0.1)


def test_the_ray_workers_and_their_request_counts_round_trip():
    (run,) = import_runs(json.dumps(VLLM_RESULT), "bench.json")
    assert (run.num_workers, run.worker_requests) == (None, ())  # vLLM's own file: one process, unknown
    written = to_vllm_file(dataclasses.replace(run, num_workers=2, worker_requests=(6, 5)))
    assert (written["planner_num_workers"], written["planner_worker_requests"]) == (2, [6, 5])
    (back,) = import_runs(json.dumps(written), "again.json")
    assert (back.num_workers, back.worker_requests) == (2, (6, 5))
    written["planner_worker_requests"] = [6, "five"]  # a hand-edited file: not counts, so none
    (odd,) = import_runs(json.dumps(written), "odd.json")
    assert odd.worker_requests == ()


def test_import_json_lines_and_lists():
    lines = "\n".join(json.dumps({**VLLM_RESULT, "date": d}) for d in ("20261129-101500", "20261129-101600"))
    assert [r.date for r in import_runs(lines, "append.jsonl")] == ["20261129-101500", "20261129-101600"]
    assert len(import_runs(json.dumps([VLLM_RESULT, VLLM_RESULT]), "list.json")) == 2


def test_json_lines_end_only_at_newlines():
    """An error text holding U+2028 (raw, as a writer with ensure_ascii=False leaves it) is part of its line
    (issue 24: str.splitlines cut the line there and refused the file)."""
    runs = [{**VLLM_RESULT, "errors": ["", "Bad\u2028Request"]}, VLLM_RESULT]
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in runs)
    first, _ = import_runs(text, "append.jsonl")
    assert first.requests[1].error == "Bad\u2028Request"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\xff\xfe\x00", "binary data"),
        (b"{not json", "bad.json line 1: not valid JSON (Expecting property name enclosed in double quotes)"),
        (b"{}\n{not json", "bad.json line 2: not valid JSON"),
        # the new-user trial's upload: a RecursionError traceback from json.loads
        (b"[" * 100_000 + b"]" * 100_000, "bad.json: nested too deeply to read; expected JSON or JSON Lines"),
        (b"[]", "0 results"),
        (json.dumps({"completed": 1}).encode(), "duration"),
        (b"42", "JSON object"),
    ],
)
def test_import_refuses_with_one_line_naming_the_file(data, needle):
    with pytest.raises(InvalidParameterError) as info:
        import_runs(data, "bad.json")
    message = str(info.value)
    assert "bad.json" in message and needle in message and "\n" not in message


def test_tables():
    (run,) = import_runs(json.dumps(VLLM_RESULT), "bench.json")
    rows = requests_frame([run])
    assert list(rows["ok"]) == [True, False]
    assert rows["itl_count"].tolist() == [9, 0]
    assert rows["itl_median_s"][0] == pytest.approx(0.1)
    table = runs_frame([run])
    assert table.loc[0, "median_ttft_ms"] == pytest.approx(100.0)
    assert table.loc[0, "itl_samples"] == 9
    assert table.loc[0, "e2el_samples"] is pd.NA  # no E2EL in the file: missing, not 0


def test_a_run_without_completed_requests_has_no_throughput():
    (run,) = import_runs(json.dumps({**VLLM_RESULT, "completed": 0, "failed": 2, "planner_stopped": "cancelled"}), "x")
    row = runs_frame([run]).iloc[0]
    assert row["stopped"] == "cancelled"
    assert row["request_throughput"] is None and row["output_throughput"] is None and row["duration"] is None


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"duration": 0}, "duration"),
        ({"completed": -5}, "completed"),
        ({"request_throughput": "NaN"}, "request"),
        # issue 24 (hostile-file suite): a count past 2^53 was read, then crashed the runs table (pandas Int64)
        ({"completed": 2**64}, "completed"),
        ({"failed": 10**30}, "failed"),
        ({"total_input_tokens": -1}, "total_input_tokens"),
    ],
)
def test_impossible_values_are_refused(change, needle):
    with pytest.raises(InvalidParameterError) as info:
        import_runs(json.dumps({**VLLM_RESULT, **change}), "edited.json")
    assert needle in str(info.value) and "edited.json" in str(info.value)


@pytest.mark.parametrize("stat", ["mean", "median", "p99"])
def test_a_statistic_that_is_not_a_number_reads_as_missing(stat):
    """NaN or Infinity in a file is no measurement: n/a (None), never "nan ms" (issue 24, hostile-file suite)."""
    (run,) = import_runs(json.dumps({**VLLM_RESULT, f"{stat}_ttft_ms": math.nan}), "nan.json")
    ttft = run.metrics.ttft
    assert (ttft is None) if stat == "mean" else (getattr(ttft, f"{stat}_s") is None)
    assert runs_frame([run]).iloc[0][f"{stat}_ttft_ms"] is None


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        # issue 24 (hostile-file suite): each was read as "no value" without a word, or crashed later
        ({"max_concurrency": "four"}, "max_concurrency"),
        ({"request_rate": [1]}, "request_rate"),
        ({"planner_requested_input_tokens": 2**64}, "planner_requested_input_tokens"),  # crashed the runs table
        ({"ttfts": [0.1]}, "ttfts 1"),  # arrays of different lengths: every per-request row was dropped
    ],
)
def test_a_value_of_the_wrong_type_is_refused_by_name(change, needle):
    with pytest.raises(InvalidParameterError) as info:
        import_runs(json.dumps({**VLLM_RESULT, **change}), "edited.json")
    message = str(info.value)
    assert needle in message and "edited.json result 1" in message and "\n" not in message


def test_entries_that_are_no_numbers_are_missing_values_of_their_request():
    """A per-request entry beyond a float's range (it raised OverflowError) or NaN is that request's missing value;
    a first-chunk TTFT of NaN is no distribution (it raised TypeError)."""
    data = {**VLLM_RESULT, "itls": [[0.1] * 8 + [10**400], []], "latencies": [math.nan, 0.0]}
    text = json.dumps({**data, "mean_ttft_first_chunk_ms": math.nan})
    (run,) = import_runs(text, "odd.json")
    assert run.requests[0].itls_s == (0.1,) * 8 and run.requests[0].e2el_s is None
    assert run.ttft_first_chunk is None
    assert len(requests_frame([run])) == 2


def test_failure_summary_names_the_most_common_error():
    (run,) = import_runs(json.dumps(VLLM_RESULT), "bench.json")
    assert failure_summary(run) == "1 of 2 requests failed; most common (1): Bad Request"
    (ok,) = import_runs(json.dumps({**VLLM_RESULT, "failed": 0, "errors": ["", ""]}), "ok.json")
    assert failure_summary(ok) is None


def test_same_model():
    assert same_model("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct")
    assert same_model("Qwen/Qwen3-8B", "qwen/qwen3-8b")
    assert not same_model("meta-llama/Llama-3.1-8B-Instruct", "timed-model")


def test_imported_vllm_files_of_one_workload_become_one_sweep() -> None:
    from pathlib import Path

    from planner.loadtest.results import group_sweeps

    # bench/data/h200_sweeps: vllm bench serve result files, one per --max-concurrency, no sweep id
    folder = Path(__file__).resolve().parents[3] / "bench/data/h200_sweeps/llama-3.1-8b"
    runs = [r for p in sorted(folder.glob("in*_c*.json.gz")) for r in import_runs(p.read_bytes(), name=p.name)]
    assert all(r.sweep is None for r in runs)
    grouped = group_sweeps(runs)
    sweeps = {r.sweep for r in grouped}
    assert sweeps == {"llama-3.1-8b · 512/128 tokens", "llama-3.1-8b · 2048/128 tokens"}
    assert sorted(r.max_concurrency for r in grouped if r.sweep.startswith("llama-3.1-8b · 512")) == [1, 4, 16, 64, 256]
    # a lone run stays as it was
    assert group_sweeps(runs[:1]) == runs[:1]


def test_a_calibration_profile_given_as_a_result_file_says_what_it_is() -> None:
    # the new-user trial: a profile uploaded as a run gave "result 1='duration' is not valid"
    profile = json.dumps({"version": 1, "gpu": "h200-sxm-141gb", "coefficients": {}, "models": []})
    with pytest.raises(InvalidParameterError, match=r"a calibration profile.*a profile goes under Calibration"):
        import_runs(profile, "h200-profile.json")
