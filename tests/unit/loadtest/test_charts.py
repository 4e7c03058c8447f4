"""Load Test figures and tables built from saved runs and live records."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pandas as pd
import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.charts import (
    BAND_OPACITY,
    CURVE_AXES,
    CURVE_COLUMNS,
    KV_FULL_TEXT,
    curve_row,
    curves_figure,
    display_runs,
    live_figure,
    live_frames,
    run_headline,
    runs_figure,
    sweep_curves,
    sweep_figure,
    sweep_points,
)
from planner.loadtest.results import SavedRun, import_runs
from planner.metrics.benchmark import BenchmarkMetrics, Distribution
from planner.serving.server_metrics import ServerSample


def _level(concurrency: int, tok_s: float, e2el_ms: float | None, sweep: str | None = "s") -> dict:
    # a minimal vllm --save-result object (duration/completed are the required keys)
    out = {
        "duration": 10.0,
        "completed": 10,
        "output_throughput": tok_s,
        "request_throughput": tok_s / 100,
        "max_concurrency": concurrency,
        "planner_label": f"c={concurrency} {sweep}",
        "planner_sweep": sweep,
        "planner_endpoint": "ep",
    }
    if e2el_ms is not None:
        out |= {"mean_e2el_ms": e2el_ms, "median_e2el_ms": e2el_ms, "p99_e2el_ms": e2el_ms * 2}
    return out


def _runs(levels: list[dict]):
    return import_runs(json.dumps(levels), "levels.json")


def test_sweep_points_keep_sweep_levels_only_in_order():
    runs = _runs([_level(4, 400.0, 300.0), _level(1, 100.0, 100.0), _level(8, 700.0, None), _level(2, 1.0, 1.0, None)])
    points = sweep_points(runs)
    assert points["concurrency"].tolist() == [1, 4, 8]
    assert points["latency_ms"].tolist()[:2] == [100.0, 300.0]
    assert points["latency_ms"].isna().tolist()[2]


def test_sweep_figure_stars_the_knee():
    runs = _runs([_level(1, 100.0, 100.0), _level(2, 200.0, 110.0), _level(4, 390.0, 130.0), _level(8, 420.0, 260.0)])
    fig = sweep_figure(sweep_points(runs), {"s": 4})
    curve, star = fig.data
    assert list(curve.x) == [100.0, 110.0, 130.0, 260.0] and list(curve.text) == ["c=1", "c=2", "c=4", "c=8"]
    assert star.name == "knee of s: c=4" and list(star.y) == [390.0] and star.marker.symbol == "star"
    assert len(sweep_figure(sweep_points(runs), {"s": None}).data) == 1


def test_empty_sweep_says_so():
    fig = sweep_figure(sweep_points(()), {})
    assert fig.layout.annotations[0].text == "No sweep yet"


def test_runs_figure_whiskers_reach_p99():
    (run,) = _runs([_level(1, 100.0, 100.0)])
    fig = runs_figure([run])
    e2el = next(t for t in fig.data if t.name.startswith("E2EL"))
    assert list(e2el.y) == [100.0] and list(e2el.error_y.array) == [100.0]  # p99 200 = median 100 + 100
    ttft = next(t for t in fig.data if t.name.startswith("TTFT"))
    assert list(ttft.y) == [None]  # no TTFT in the file: a gap, not 0


def test_display_runs_says_na_never_zero():
    (run,) = _runs([_level(1, 100.0, None)])
    row = display_runs([run]).iloc[0]
    assert row["median_e2el_ms"] == "n/a" and row["request_goodput"] == "n/a" and row["output_throughput"] == "100.00"


def test_display_runs_converts_to_arrow_with_gaps_beside_counts():
    # an imported run (input tokens asked for unknown) beside a predicted one (known): every column must have one
    # Arrow type, or Streamlit logs a conversion failure and guesses
    import pyarrow as pa

    (run,) = _runs([_level(1, 100.0, None)])
    known = replace(run, label="predicted", requested_input_tokens=1024)
    frame = display_runs([replace(run, requested_input_tokens=None), known])
    assert list(frame["requested_input_tokens"]) == ["n/a", "1,024"]
    assert pa.Table.from_pandas(frame).num_rows == 2


def test_live_figure_panels():
    windows, server = live_frames((), None, ())
    assert len(windows) == 0 and server is None
    fig = live_figure(windows, [(0.0, 0), (0.5, 2)], None)
    assert [a.text for a in fig.layout.annotations][-1] == "requests"
    samples = [ServerSample(t_s=0.0, running=1, waiting=0, kv_cache_usage_perc=0.25)]
    _, server = live_frames((), None, samples)
    fig = live_figure(windows, [], server)
    kv = next(t for t in fig.data if t.name == "KV cache usage %")
    assert list(kv.y) == [25.0]
    assert isinstance(server, pd.DataFrame) and not math.isnan(server["running"][0])


# --- load curves against concurrency ----------------------------------------------------------------------------------
def _curve_level(concurrency: int, tok_s: float, tpot_ms: float, ttft_ms: float, source: str | None = None) -> dict:
    out = _level(concurrency, tok_s, None) | {
        "median_tpot_ms": tpot_ms,
        "mean_tpot_ms": tpot_ms,
        "p99_tpot_ms": tpot_ms * 1.5,
        "median_ttft_ms": ttft_ms,
        "mean_ttft_ms": ttft_ms,
        "p99_ttft_ms": ttft_ms * 3,
    }
    return out | ({"planner_source": source, "planner_label": f"p c={concurrency}"} if source else {})


def test_curve_row_takes_milliseconds_and_none_for_missing():
    (run,) = _runs([_curve_level(4, 400.0, 20.0, 150.0)])
    row = curve_row("s", 4, run.metrics)
    assert row["level"] == 4.0 and row["output_throughput"] == 400.0
    assert row["median_tpot_ms"] == 20.0 and row["p99_tpot_ms"] == 30.0
    assert row["median_ttft_ms"] == 150.0 and row["p99_ttft_ms"] == 450.0
    assert row["median_itl_ms"] is None and row["group"] == "s" and row["predicted"] is False
    assert tuple(row) == CURVE_COLUMNS


def test_sweep_curves_pair_a_prediction_with_its_sweep():
    measured = _runs([_curve_level(2, 200.0, 21.0, 160.0), _curve_level(1, 100.0, 20.0, 150.0)])
    predicted = [replace(r, source="predicted", label=f"predicted {r.label}") for r in measured]
    points = sweep_curves([*measured, *predicted])
    assert points["series"].tolist() == ["s", "s", "s · predicted", "s · predicted"]
    assert points["group"].tolist() == ["s"] * 4
    assert points["level"].tolist() == [1.0, 2.0, 1.0, 2.0]
    assert points["predicted"].tolist() == [False, False, True, True]


def test_curves_figure_draws_medians_p99_knee_and_kv_full():
    measured = _runs([_curve_level(c, 100.0 * c, 20.0 + c, 150.0 * c) for c in (1, 2, 4, 8)])
    predicted = [replace(r, source="predicted") for r in measured]
    points = sweep_curves([*measured, *predicted])
    fig = curves_figure(points, knees={"s": 4}, saturation={"s · predicted": 8})
    names = [t.name for t in fig.data]
    # per series: throughput, TPOT median + p99, TTFT median + p99; then the measured sweep's knee
    p = "s · predicted"
    assert names == ["s", "s", "s p99", "s", "s p99", "knee of s: 4 in flight", p, p, f"{p} p99", p, f"{p} p99"]
    tpot, tpot_p99 = fig.data[1], fig.data[2]
    assert list(tpot.y) == [21.0, 22.0, 24.0, 28.0] and list(tpot_p99.y) == [31.5, 33.0, 36.0, 42.0]
    assert fig.data[2].line.width == 1 and fig.data[1].line.width == 2.5
    assert list(fig.data[5].y) == [400.0] and fig.data[5].marker.symbol == "star"
    assert fig.data[0].line.dash == "solid" and fig.data[6].line.dash == "dash"
    assert fig.data[0].line.color == fig.data[6].line.color  # a prediction in its sweep's colour
    assert [s.x0 for s in fig.layout.shapes] == [8, 8, 8]  # the KV-full line on every panel
    assert [a.text for a in fig.layout.annotations if a.text == KV_FULL_TEXT] == [KV_FULL_TEXT]
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [1.0, 2.0, 4.0, 8.0]
    assert fig.layout.xaxis2.title.text == CURVE_AXES["concurrency"]
    # TTFT from 150 ms (median at 1) to 3,600 ms (p99 at 8): a log axis ticked 1-2-5
    assert fig.layout.yaxis3.type == "log"
    assert list(fig.layout.yaxis3.tickvals) == [100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0]
    assert list(fig.layout.yaxis3.ticktext)[3] == "1,000"


def test_curves_figure_shades_a_band_under_its_curve():
    # a predicted sweep at 1, 2, 4 in flight: throughput 100, 200, 400 tok/s in a band of 80% to 120% of it, median
    # TPOT 20, 21, 22 ms in 18-24, 19-25, 20-26 ms; TTFT without a band; the measured sweep has none
    measured = _runs([_curve_level(c, 100.0 * c, 19.0 + c, 150.0) for c in (1, 2, 4)])
    predicted = [replace(r, source="predicted", label=f"predicted {r.label}") for r in measured]
    bands = {
        p.label: {"output_throughput": (80.0 * c, 120.0 * c), "median_tpot_ms": (17.0 + c, 23.0 + c)}
        for p, c in zip(predicted, (1, 2, 4), strict=True)
    }
    points = sweep_curves([*measured, *predicted], bands)
    assert points["output_throughput_low"].tolist()[3:] == [80.0, 160.0, 320.0]
    assert (
        points["median_ttft_ms_low"].isna().all() and points["output_throughput_low"].isna().tolist()[:3] == [True] * 3
    )
    fig = curves_figure(points)
    p = "s · predicted"
    shaded = [t for t in fig.data if t.name == f"{p} band"]
    assert len(shaded) == 2 and not any(t.name == "s band" for t in fig.data)  # throughput and TPOT, predicted only
    throughput, tpot = shaded
    # one closed polygon: the high ends left to right, then the low ends back
    assert list(throughput.x) == [1.0, 2.0, 4.0, 4.0, 2.0, 1.0]
    assert list(throughput.y) == [120.0, 240.0, 480.0, 320.0, 160.0, 80.0]
    assert list(tpot.y) == [24.0, 25.0, 27.0, 21.0, 19.0, 18.0] and tpot.xaxis == "x2"
    line = next(t for t in fig.data if t.name == p and t.xaxis == "x2")
    for lo, mid, hi in zip(tpot.y[3:][::-1], line.y, tpot.y[:3], strict=True):
        assert lo <= mid <= hi
    for band in shaded:
        assert band.fill == "toself" and band.opacity == BAND_OPACITY and band.showlegend is False
        assert band.legendgroup == p and band.fillcolor == line.line.color  # toggled with its series, its colour
        assert band.hoverinfo == "skip"
    # drawn under its line, and the line's hover gives the band
    names = [t.name for t in fig.data]
    assert names.index(f"{p} band") < names.index(p)
    assert list(line.customdata) == [
        "<br>error band 18.00–24.00",
        "<br>error band 19.00–25.00",
        "<br>error band 21.00–27.00",
    ]
    assert "%{customdata}" in line.hovertemplate
    assert set(next(t for t in fig.data if t.name == "s" and t.xaxis == "x2").customdata) == {""}


def test_the_ttft_axis_spans_its_band():
    (run,) = _runs([_curve_level(1, 100.0, 20.0, 150.0)])
    points = sweep_curves([run], {run.label: {"median_ttft_ms": (40.0, 600.0)}})
    # 40 ms to 600 ms, beyond the median (150) and the p99 (450): ticks from 20 to 1,000
    assert list(curves_figure(points).layout.yaxis3.tickvals) == [20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]


def test_curves_figure_empty_and_bad_axis():
    fig = curves_figure(sweep_curves(()))
    assert fig.layout.annotations[-1].text == "No points yet"
    with pytest.raises(InvalidParameterError):
        curves_figure(sweep_curves(()), axis="tokens")


def test_run_headline_by_hand():
    # 8 requests in 0.5 s, 1,000 output tokens: 2,000 tok/s; medians 169.7 ms and 8.24 ms (one decimal: 8.2)
    ttft = Distribution(count=8, mean_s=0.17, median_s=0.1697, std_s=None, p90_s=None, p99_s=None)
    tpot = Distribution(count=8, mean_s=0.008, median_s=0.00824, std_s=None, p90_s=None, p99_s=None)
    metrics = BenchmarkMetrics(
        duration_s=0.5,
        completed=8,
        failed=0,
        total_input_tokens=1024,
        total_output_tokens=1000,
        request_throughput=16.0,
        output_throughput=2000.0,
        total_token_throughput=4048.0,
        ttft=ttft,
        tpot=tpot,
    )
    run = SavedRun("demo · c=8 · 10:35:08", "demo", "measured", metrics)
    assert run_headline(run) == (
        "demo · c=8 · 10:35:08: 8 completed, 0 failed · output 2,000.0 tok/s · median TTFT 169.7 ms · "
        "median TPOT 8.2 ms"
    )
    failed = replace(metrics, completed=0, failed=8, ttft=None, tpot=None)
    assert run_headline(replace(run, metrics=failed)) == (
        "demo · c=8 · 10:35:08: 0 completed, 8 failed · output n/a · median TTFT n/a · median TPOT n/a"
    )
