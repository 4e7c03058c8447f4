"""planner.cli.bench_text: ``python -m planner bench``'s console tables, on runs built by hand.

The run: 4 requests in 2 s, each answering 4 tokens with its first token after 100 ms and then one every 20 ms
(TTFT 100 ms, TPOT (160 − 100) / 3 = 20 ms, E2EL 160 ms), 12 prompt tokens each, plus one refused connection:
4 / 2 s = 2 req/s, 16 / 2 s = 8 output tok/s, (48 + 16) / 2 s = 32 total tok/s.
"""

from __future__ import annotations

import pandas as pd

from planner.cli.bench_text import batching_text, bench_text, confidence_text, sweep_text, turns_text
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import LoadSettings
from planner.loadtest.sweep import SweepPoint
from planner.metrics.benchmark import compute_benchmark_metrics
from planner.serving.streaming import RequestRecord, TokenChunk

OK = RequestRecord(
    "v", ok=True, first_chunk_s=0.100, first_token_s=0.100, last_token_s=0.160, end_s=0.161,
    chunks=tuple(TokenChunk(0.100 + 0.020 * k, "t ", 1, "content") for k in range(4)), output_tokens=4,
    output_tokens_source="usage", prompt_tokens=12,
)  # fmt: skip
REFUSED = RequestRecord("v", ok=False, error="cannot connect to http://127.0.0.1:9", error_kind="connect")


def _run() -> LoadResult:
    records = (OK, OK, OK, OK, REFUSED)
    metrics = compute_benchmark_metrics(records, [12] * 5, 2.0)
    return LoadResult("v", LoadSettings(num_prompts=5, max_concurrency=2), records, (12,) * 5, metrics, 2.0)


def test_the_vllm_style_table() -> None:
    lines = bench_text(_run()).splitlines()
    assert lines[0] == "{:=^50}".format(" Serving Benchmark Result ")
    rows = {line[:40].strip(): line[41:] for line in lines if len(line) > 41 and not line.startswith(("=", "-"))}
    assert (rows["Successful requests:"], rows["Failed requests:"], rows["Maximum request concurrency:"]) == (
        "4",
        "1",
        "2",
    )
    assert (rows["Benchmark duration (s):"], rows["Request throughput (req/s):"]) == ("2.00", "2.00")
    assert (rows["Output token throughput (tok/s):"], rows["Total Token throughput (tok/s):"]) == ("8.00", "32.00")
    assert (rows["Samples (TTFT):"], rows["Mean TTFT (ms):"], rows["P99 TTFT (ms):"]) == ("4", "100.00", "100.00")
    assert (rows["Median TPOT (ms):"], rows["Median E2EL (ms):"], rows["Std E2EL (ms):"]) == ("20.00", "160.00",
                                                                                              "0.00")  # fmt: skip
    assert rows["Request rate configured (RPS):"] == "inf"
    assert lines[-2:] == ["failed: 1 x connect", "  e.g. connect: cannot connect to http://127.0.0.1:9"]


def test_no_successful_request_prints_na_never_zero() -> None:
    metrics = compute_benchmark_metrics([REFUSED], [12], 1.0)
    result = LoadResult("v", LoadSettings(num_prompts=1), (REFUSED,), (12,), metrics, 1.0, stopped="duration",
                        cancelled=0, not_sent=3)  # fmt: skip
    text = bench_text(result)
    assert (
        "Request throughput (req/s):              n/a" in text
        and "Mean TTFT (ms):                          n/a" in text
    )
    assert text.splitlines()[-1] == "stopped by duration: 0 cancelled in flight, 3 not sent"


def test_a_sweep_row_per_level_and_the_knee() -> None:
    points = [
        SweepPoint(1, 4, 0, 2.0, 80.0, 0.1, 0.12, 0.02, 0.5),
        SweepPoint(2, 0, 4, 0.0, 0.0, None, None, None, None, stopped="duration"),
    ]
    lines = sweep_text(points, knee=None, stopped="saturation").splitlines()
    assert lines[1] == "    1     4     0     2.00       80.0     100.0     120.0      20.0     500.0"
    assert (
        lines[2] == "    2     0     4      n/a        n/a       n/a       n/a       n/a       n/a  stopped by duration"
    )
    assert lines[3].startswith("knee: none found") and lines[4] == "sweep stopped by saturation"
    assert sweep_text(points[:1], knee=8, stopped=None).splitlines()[-1] == (
        "knee: concurrency 8 (Kneedle on concurrency -> output tok/s)"
    )


def test_repeats_turns_and_batching() -> None:
    ci = pd.DataFrame([{"metric": "output_throughput", "mean": 1010.86, "ci95_half_width_pct": 6.146,
                        "ci95_low": 948.73, "ci95_high": 1072.99, "runs": 3}])  # fmt: skip
    assert confidence_text(ci).splitlines()[1] == "output_throughput           1010.86 ± 6.1%    [948.73, 1072.99]  n=3"
    turns = pd.DataFrame([{"turn": 0, "requests": 4, "mean_input_tokens": 224.0, "median_ttft_ms": 221.0,
                           "p90_ttft_ms": 240.0}])  # fmt: skip
    assert turns_text(turns).splitlines()[2] == "    0         4         224     221.0     240.0"
    batching = pd.DataFrame([{"max_concurrency": 3, "static_output_throughput": 121.4,
                              "continuous_output_throughput": 136.0, "throughput_ratio": 1.12}])  # fmt: skip
    lines = batching_text(batching).splitlines()
    assert lines[1:] == [
        "Concurrency / batch size:                3",
        "Static output throughput (tok/s):        121.40",
        "Continuous output throughput (tok/s):    136.00",
        "Continuous / static:                     1.12x",
    ]
    assert batching_text(batching.iloc[0:0]).splitlines()[-1] == "n/a: a run failed"
