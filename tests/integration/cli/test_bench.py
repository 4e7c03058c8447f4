"""``python -m planner bench``: the vLLM-style table, the vLLM-keyed JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json

from planner.cli.main import main
from planner.loadtest.results import import_runs

FAST = "load [ttft_ms=10] [itl_ms=2] [tokens=4]"


def test_bench_table(timed_server, capsys):
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--concurrency", "2", "--num-prompts", "4"]
    assert main([*argv, "--prompt", FAST, "--output-len", "4", "--goodput", "ttft:5000"]) == 0
    out = capsys.readouterr().out
    assert "Serving Benchmark Result" in out
    rows = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert (rows["Successful requests"].strip(), rows["Failed requests"].strip()) == ("4", "0")
    assert rows["Maximum request concurrency"].strip() == "2"
    assert rows["Total generated tokens"].strip() == "16"  # 4 requests x 4 tokens
    assert rows["Samples (TTFT)"].strip() == "4" and rows["Samples (ITL)"].strip() == "8"  # 2 chunk gaps each
    assert "Request goodput (req/s):" in out and "Mean TTFT (ms):" in out and "P99 ITL (ms):" in out


def test_bench_json_has_vllm_keys(timed_server, capsys):
    argv = ["bench", "--endpoint", f"a=vllm:{timed_server.url}", "--request-rate", "50", "--num-prompts", "3"]
    assert main([*argv, "--prompt", FAST, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["completed"], data["failed"], data["label"], data["request_rate"]) == (3, 0, "a", 50.0)
    for key in ("duration", "request_throughput", "output_throughput", "mean_ttft_ms", "p99_itl_ms", "mean_e2el_ms"):
        assert data[key] is not None
    assert data["request_goodput"] is None


# --- sweeps, prompts files, saved results ----------------------------------------------------------------------------
def test_sweep_prints_a_row_per_level_and_the_knee(timed_server, capsys):
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--sweep", "4", "--prompts-per-level", "2"]
    assert main([*argv, "--prompt", FAST, "--output-len", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[1:4]]
    assert [r[:3] for r in rows] == [["1", "2", "0"], ["2", "2", "0"], ["4", "2", "0"]]  # concurrency, ok, failed
    assert lines[4].startswith("knee: ")


def test_sweep_json_and_saved_result(timed_server, capsys, tmp_path):
    out = tmp_path / "sweep.json"
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--sweep", "2", "--prompts-per-level", "3"]
    assert main([*argv, "--prompt", FAST, "--json", "--save-result", str(out)]) == 0
    shown = json.loads(capsys.readouterr().out)
    saved = json.loads(out.read_text())
    assert [lv["max_concurrency"] for lv in shown["levels"]] == [1, 2] and "knee_concurrency" in shown
    assert [lv["completed"] for lv in saved] == [3, 3] and len(saved[1]["ttfts"]) == 3
    # the saved sweep is a list of vLLM results the Load Test page imports as one sweep
    runs = import_runs(out.read_bytes(), "sweep.json")
    assert [(r.max_concurrency, r.source) for r in runs] == [(1, "imported"), (2, "imported")]
    # one sweep id, tagged with the start time as on the page, so a later sweep of the same endpoint stays apart
    assert runs[0].sweep == runs[1].sweep and runs[0].sweep.startswith("vllm sweep · ")


def test_dataset_path_and_save_result_round_trip(timed_server, capsys, tmp_path):
    from planner.metrics.benchmark import BenchmarkMetrics

    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text(json.dumps({"prompt": FAST}) + "\n" + json.dumps({"text": FAST}) + "\n")
    out = tmp_path / "result.json"
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--num-prompts", "4", "--concurrency", "2"]
    assert main([*argv, "--dataset-path", str(dataset), "--save-result", str(out)]) == 0
    rows = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines() if ":" in line)
    assert rows["Total generated tokens"].strip() == "16"  # the prompts file's [tokens=4] was used: 4 x 4
    assert "Mean TTFT first chunk (ms)" in rows
    data = json.loads(out.read_text())
    assert data["output_lens"] == [4, 4, 4, 4] and len(data["itls"]) == 4 and data["errors"] == [""] * 4
    assert data["mean_ttft_first_chunk_ms"] < data["mean_ttft_ms"]  # the role chunk comes before the first token
    metrics = BenchmarkMetrics.from_vllm_json(data)  # a vLLM --save-result reader accepts it
    assert (metrics.completed, metrics.total_output_tokens, metrics.itl.count, metrics.tpot.count) == (4, 16, 8, 4)


# --- every request failed: results first, then exit 1 with the most common reason --------------------------------
def _rows(out: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def test_bench_all_failed_exits_1_with_the_reason(closed_port_url, capsys):
    code = main(["bench", "--endpoint", f"vllm:{closed_port_url}", "--num-prompts", "3", "--goodput", "ttft:500"])
    out, err = capsys.readouterr()
    assert code == 1
    rows = _rows(out)
    assert (rows["Successful requests"], rows["Failed requests"]) == ("0", "3")
    for label in (
        "Benchmark duration (s)",
        "Request throughput (req/s)",
        "Request goodput (req/s)",
        "Output token throughput (tok/s)",
        "Total Token throughput (tok/s)",
    ):
        assert rows[label] == "n/a", label  # undefined without a successful request, not 0.00
    assert rows["Total generated tokens"] == "0"  # a count, and truly 0
    last = err.splitlines()[-1]
    assert last.startswith("python -m planner bench: error: all 3 requests failed; most common: connect (3 of 3): ")
    assert "cannot connect" in last


def test_bench_all_failed_json_still_printed_then_exit_1(closed_port_url, capsys):
    assert main(["bench", "--endpoint", f"vllm:{closed_port_url}", "--num-prompts", "2", "--json"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert (data["completed"], data["failed"]) == (0, 2)
    assert "all 2 requests failed" in err.splitlines()[-1]


def test_sweep_all_failed_shows_na_and_exits_1(closed_port_url, capsys):
    argv = ["bench", "--endpoint", f"vllm:{closed_port_url}", "--sweep", "2", "--prompts-per-level", "1"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    rows = [line.split() for line in out.splitlines()[1:3]]
    assert [r[:5] for r in rows] == [["1", "0", "1", "n/a", "n/a"], ["2", "0", "1", "n/a", "n/a"]]
    assert "all 2 requests failed; most common: connect (2 of 2)" in err.splitlines()[-1]


def test_bench_with_some_success_exits_0(timed_server, capsys):
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--num-prompts", "2", "--prompt", FAST]
    assert main(argv) == 0
    assert _rows(capsys.readouterr().out)["Request throughput (req/s)"] != "n/a"


def test_a_sweep_says_when_a_level_sends_more_than_num_prompts(timed_server, capsys, tmp_path):
    """Issue 24 item 9: ``--sweep 16 --num-prompts 16`` ran 32 and 64 requests at the higher levels without saying
    so. A level sends at least 4 requests per slot (``SweepSpec.num_prompts``): at --num-prompts 4, levels 1, 2 and 4
    send max(4, 4 x level) = 4, 8 and 16; one line says so before the run, and the result's levels carry it."""
    out = tmp_path / "sweep.json"
    argv = ["bench", "--endpoint", f"vllm:{timed_server.url}", "--sweep", "4", "--num-prompts", "4"]
    assert main([*argv, "--prompt", FAST, "--output-len", "2", "--save-result", str(out), "--no-sweep-stop"]) == 0
    captured = capsys.readouterr()
    note = (
        "a sweep level sends at least 4 requests per slot: 8 at concurrency 2, 16 at concurrency 4, not --num-prompts 4"
        " (--prompts-per-level N sends N at every level)"
    )
    assert captured.err.startswith(f"python -m planner bench: note: {note}\n")
    assert captured.out.rstrip().endswith(f"note: {note}")
    saved = json.loads(out.read_text())
    assert [lv["num_prompts"] for lv in saved] == [4, 8, 16] and [lv["completed"] for lv in saved] == [4, 8, 16]
    assert [n for lv in saved for n in lv["planner_notes"] if "--num-prompts" in n] == [
        "8 requests at concurrency 2, not --num-prompts 4 (a sweep level sends at least 4 per slot)",
        "16 requests at concurrency 4, not --num-prompts 4 (a sweep level sends at least 4 per slot)",
    ]
    # with --prompts-per-level the count typed is the count sent: nothing to say
    assert main([*argv, "--prompt", FAST, "--output-len", "2", "--prompts-per-level", "4", "--no-sweep-stop"]) == 0
    assert "--num-prompts" not in capsys.readouterr().err
