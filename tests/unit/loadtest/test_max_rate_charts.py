"""planner.loadtest.max_rate_charts: the steps figure and table of a search, on two steps made by hand.

Step 1 is a burst that completed 40 requests in 4 s (10 req/s) with every TTFT at 800 ms; step 2 ran at 6 req/s,
24 requests in 4 s, every TTFT 200 ms. Against ``ttft_p99_ms=500`` the ratios are 800 / 500 = 1.6 (missed) and
200 / 500 = 0.4 (met).
"""

from __future__ import annotations

import math

import pytest

from planner.loadtest.max_rate import MaxRateSpec, MaxRateStep
from planner.loadtest.max_rate_charts import steps_figure, steps_table
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import compute_benchmark_metrics
from planner.metrics.slo import check, parse_slos
from planner.serving.streaming import RequestRecord, TokenChunk

SPEC = MaxRateSpec(base=LoadSettings(output_len=2), slos=parse_slos(["ttft_p99_ms=500"]))


def _step(index: int, level: float, n: int, ttft_s: float) -> MaxRateStep:
    chunks = (TokenChunk(ttft_s, "a", 1, "content"), TokenChunk(ttft_s + 0.01, "b", 1, "content"))
    record = RequestRecord("e", ok=True, first_token_s=ttft_s, last_token_s=ttft_s + 0.01, end_s=ttft_s + 0.01,
                           chunks=chunks, output_tokens=2, output_tokens_source="usage")  # fmt: skip
    settings = SPEC.level_settings(level)
    metrics = compute_benchmark_metrics([record] * n, [12] * n, 4.0)
    result = LoadResult("e", settings, (record,) * n, (12,) * n, metrics, 4.0)
    checks = check(metrics, SPEC.slos)
    met = all(c.ok for c in checks)
    return MaxRateStep(index, level, f"step {index}", result, checks, met, "met" if met else "missed")


STEPS = (_step(1, math.inf, 40, 0.8), _step(2, 6.0, 24, 0.2))


def test_table_one_row_per_step() -> None:
    table = steps_table(STEPS, SPEC)
    slo = SPEC.slos[0].key
    assert list(table.columns) == ["step", "level", "requests", "completed", "req/s measured", slo, "meets", "why"]
    assert table.to_dict("records")[1] == {
        "step": 2, "level": "6", "requests": STEPS[1].result.settings.num_prompts, "completed": 24,
        "req/s measured": 6.0, slo: 200.0, "meets": "yes", "why": "met",
    }  # fmt: skip
    first = table.to_dict("records")[0]
    assert (first["level"], first["completed"], first["req/s measured"], first[slo], first["meets"]) == (
        "burst",
        40,
        10.0,
        800.0,
        "no",
    )
    concurrency = MaxRateSpec(base=LoadSettings(), slos=SPEC.slos, variable="max_concurrency")
    assert steps_table((_step(1, 8.0, 8, 0.1),), concurrency)["level"].tolist() == [8]  # a whole number


def test_figure_levels_colours_answer_and_ratios() -> None:
    fig = steps_figure(STEPS, SPEC, answer=6.0)
    level, ratio = fig.data
    # the burst is drawn at the throughput it measured (10 req/s), the run at its rate
    assert list(level.x) == [1, 2] and list(level.y) == [10.0, 6.0]
    assert list(level.marker.color) == ["#E5484D", "#00A86B"]  # missed red, met green
    assert list(level.customdata[0]) == ["burst", "10", "missed"]
    assert ratio.name == SPEC.slos[0].key and list(ratio.y) == pytest.approx([1.6, 0.4])
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert {s.y0 for s in lines} == {6.0, 1.0}  # the answer and the ratio 1 (the limit)
    assert "highest meeting the SLOs: 6 req/s" in [a.text for a in fig.layout.annotations]
    assert fig.layout.yaxis2.type == "log"
    no_answer = steps_figure(STEPS, SPEC, answer=None)
    assert {s.y0 for s in no_answer.layout.shapes if s.type == "line"} == {1.0}
