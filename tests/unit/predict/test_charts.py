"""The Performance page's figure, headline and table, and the Load Test's error table, from hand-built curves."""

from __future__ import annotations

import pytest

from planner.capacity.charts import COLORS
from planner.errors import InvalidParameterError
from planner.loadtest.charts import KV_FULL_TEXT
from planner.loadtest.results import SavedRun
from planner.metrics.benchmark import BenchmarkMetrics, Distribution
from planner.predict.charts import curve_points, headline_metrics, overlay_errors, performance_figure, points_table
from planner.predict.curves import CurvePoint, PredictedCurve


def _dist(median_s: float, p99_s: float | None = None) -> Distribution:
    return Distribution(count=10, mean_s=median_s, median_s=median_s, std_s=0.0, p90_s=median_s, p99_s=p99_s)


def _metrics(tok_s: float, tpot_s: float, ttft_s: float, itl_s: float | None = None) -> BenchmarkMetrics:
    return BenchmarkMetrics(
        duration_s=10.0,
        completed=10,
        failed=0,
        total_input_tokens=5120,
        total_output_tokens=int(tok_s * 10),
        request_throughput=1.0,
        output_throughput=tok_s,
        total_token_throughput=tok_s + 512,
        ttft=_dist(ttft_s, ttft_s * 2),
        tpot=_dist(tpot_s, tpot_s * 1.5),
        itl=None if itl_s is None else _dist(itl_s),
    )


def _curve(*, knee: float | None = 4.0, full: float | None = 8.0, axis: str = "concurrency") -> PredictedCurve:
    # throughput 100, 190, 360, 400 tok/s at 1, 2, 4, 8 in flight; TPOT 10, 10.5, 11, 20 ms; TTFT 30, 32, 40, 900 ms
    points = tuple(
        CurvePoint(level, _metrics(tok, tpot, ttft), kv_saturated=level == full, preemptions=0, mean_running=level)
        for level, tok, tpot, ttft in (
            (1.0, 100.0, 0.010, 0.030),
            (2.0, 190.0, 0.0105, 0.032),
            (4.0, 360.0, 0.011, 0.040),
            (8.0, 400.0, 0.020, 0.900),
        )
    )
    return PredictedCurve(axis, points, knee, full, kv_max_concurrency=6.5, calibration="default")


def test_headline_at_the_knee():
    assert headline_metrics(_curve()) == (
        (
            "Knee",
            "4 in flight",
            "Beyond the knee, doubling the requests in flight buys little throughput while latency keeps rising.",
        ),
        ("Throughput @ c=4", "360 tok/s", "Output tokens/s at the knee, 4 in flight."),
        ("Median TPOT @ c=4", "11.0 ms", "Time per output token after the first, at the knee, 4 in flight."),
        ("Median TTFT @ c=4", "40.0 ms", "Time to first token, at the knee, 4 in flight."),
        (
            "KV cache full at",
            "8 in flight",
            "The first level whose requests filled the KV cache (then requests wait for blocks); sweep up to 8 in "
            "flight. The cache holds 6.5 requests of this workload's length at once.",
        ),
    )


def test_headline_without_a_knee_or_saturation_is_the_top_level():
    labels_values = [(label, value) for label, value, _ in headline_metrics(_curve(knee=None, full=None))]
    assert labels_values == [
        ("Knee", "none"),
        ("Throughput @ c=8", "400 tok/s"),
        ("Median TPOT @ c=8", "20.0 ms"),
        ("Median TTFT @ c=8", "900.0 ms"),
        ("KV cache full at", "never"),
    ]
    # every level served 1 req/s: 1 req/s was kept up with (1 >= 0.95 x 1), 2 req/s was not (1 < 1.9)
    rate = headline_metrics(_curve(knee=None, full=None, axis="rate"))
    assert rate[0][:2] == ("Sustained rate", "1 req/s")
    assert rate[1][:2] == ("Throughput @ 1 req/s", "100 tok/s")


def test_performance_figure_one_colour_per_scenario_knee_and_kv_line():
    fig = performance_figure([_curve(), _curve(knee=None, full=None)], ["1 · a", "2 · b"])
    medians = [t for t in fig.data if t.name in ("1 · a", "2 · b") and t.showlegend]
    assert [t.line.color for t in medians] == list(COLORS[:2])
    assert all(t.line.dash == "solid" for t in fig.data if t.mode == "lines+markers")  # all predicted: no dashes
    assert list(medians[0].y) == [100.0, 190.0, 360.0, 400.0]
    (star,) = [t for t in fig.data if t.name and t.name.startswith("knee")]
    assert star.name == "knee of 1 · a: 4 in flight" and list(star.x) == [4.0] and list(star.y) == [360.0]
    assert [s.x0 for s in fig.layout.shapes] == [8.0, 8.0, 8.0]
    assert sum(a.text == KV_FULL_TEXT for a in fig.layout.annotations) == 1
    ttft_p99 = next(t for t in fig.data if t.name == "1 · a p99" and t.xaxis == "x3")
    assert list(ttft_p99.y) == pytest.approx([60.0, 64.0, 80.0, 1800.0])


def test_performance_figure_refuses_mixed_axes_and_mismatched_labels():
    with pytest.raises(InvalidParameterError):
        performance_figure([_curve(), _curve(axis="rate")], ["a", "b"])
    with pytest.raises(InvalidParameterError):
        performance_figure([_curve()], [])
    with pytest.raises(InvalidParameterError):
        performance_figure([], [])


def test_points_table_reads_na_and_units():
    points = curve_points([_curve()], ["1 · a"])
    assert len(points) == 4 and points["kv_saturated"].tolist() == [False, False, False, True]
    table = points_table(points)
    assert table.columns[:3].tolist() == ["scenario", "concurrency", "output tok/s"]
    row = table.iloc[2]
    assert (row["concurrency"], row["output tok/s"], row["median TPOT (ms)"], row["p99 TTFT (ms)"]) == (
        "4",
        "360.00",
        "11.00",
        "80.00",
    )
    assert row["median ITL (ms)"] == "n/a" and table.iloc[3]["KV cache full"] == "yes"
    assert "request rate (req/s)" in points_table(curve_points([_curve(axis="rate")], ["r"])).columns


def test_overlay_errors_are_predicted_over_measured_minus_one():
    measured = SavedRun("m c=4", "ep", "imported", _metrics(400.0, 0.020, 0.100, 0.019), max_concurrency=4)
    predicted = SavedRun("p c=4", "predicted", "predicted", _metrics(360.0, 0.022, 0.080), max_concurrency=4)
    (row,) = overlay_errors([(measured, predicted)]).to_dict("records")
    assert list(row)[:6] == [
        "run",
        "concurrency",
        "output tok/s error",
        "median TPOT error",
        "median TTFT error",
        "median ITL error",
    ]
    assert row["run"] == "m c=4" and row["concurrency"] == 4
    assert (row["output tok/s measured"], row["output tok/s predicted"], row["output tok/s error"]) == (
        "400.0",
        "360.0",
        "-10.0%",
    )
    assert row["median TPOT error"] == "+10.0%" and row["median TTFT error"] == "-20.0%"
    assert row["median ITL (ms) predicted"] == "n/a" and row["median ITL error"] == "n/a"
