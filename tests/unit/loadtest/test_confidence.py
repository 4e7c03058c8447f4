"""Repeats: the mean and Student's t 95% interval of each headline metric (hand-computed values)."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.confidence import T_975, confidence_interval, repeat_summary
from planner.loadtest.results import SavedRun
from planner.metrics.benchmark import compute_benchmark_metrics


def test_interval_by_hand():
    # mean 11, s = 1, t(0.975, 2) = 4.303: 11 ± 4.303 / √3 = 11 ± 2.4843
    ci = confidence_interval([10.0, 12.0, 11.0])
    assert (ci.n, ci.mean, ci.std) == (3, 11.0, 1.0)
    assert ci.low == pytest.approx(11 - 2.48434, abs=1e-4) and ci.high == pytest.approx(11 + 2.48434, abs=1e-4)
    assert ci.half_width_frac == pytest.approx(2.48434 / 11, abs=1e-5)
    one = confidence_interval([5.0])
    assert (one.low, one.high, one.half_width_frac) == (None, None, None)


def test_t_table_values():
    # NIST/SEMATECH e-Handbook §1.3.6.7.2, 0.975 column
    assert (T_975[0], T_975[9], T_975[29]) == (12.706, 2.228, 2.042)


@pytest.mark.parametrize("bad", [[], [1.0, math.nan]])
def test_bad_values(bad):
    with pytest.raises(InvalidParameterError):
        confidence_interval(bad)


def test_repeat_summary_groups_repeats():
    empty = compute_benchmark_metrics([], [], 1.0)
    runs = [SavedRun(f"r{i}", "e", "measured", empty, repeat="g") for i in range(3)] + [
        SavedRun("alone", "e", "measured", empty)
    ]
    table = repeat_summary(runs)
    assert list(table.columns)[:3] == ["group", "metric", "runs"]
    assert table.empty  # no completed request: no metric to summarise (n/a, never 0)


def test_repeat_summary_of_three_real_vllm_runs():
    # the three prefix_repetition runs of bench/data/h200_sweeps/llama-3.1-8b-spec (vLLM 0.24.0, one H200), taken as
    # repeats: output_throughput 1000.27, 992.89, 1039.42 tok/s → mean 1010.86, s 25.008, half-width
    # 4.303 · 25.008 / √3 = 62.13 (worked out by hand from the files' figures)
    from dataclasses import replace
    from pathlib import Path

    from planner.loadtest.results import import_runs

    folder = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps" / "llama-3.1-8b-spec"
    runs = [
        replace(import_runs((folder / f"prefix_rep_{i}.json.gz").read_bytes(), f"rep{i}")[0], repeat="prefix_rep")
        for i in (1, 2, 3)
    ]
    table = repeat_summary(runs).set_index("metric")
    row = table.loc["output_throughput"]
    assert row.runs == 3 and row["mean"] == pytest.approx(1010.86, abs=0.01)
    assert (row.ci95_high - row.ci95_low) / 2 == pytest.approx(62.13, abs=0.01)
    assert "prefix_cache_hit_rate" not in table.index  # vLLM's files carry no counters
