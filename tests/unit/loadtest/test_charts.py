"""Load Test figures and tables built from saved runs and live records."""

from __future__ import annotations

import json
import math

import pandas as pd

from planner.loadtest.charts import display_runs, live_figure, live_frames, runs_figure, sweep_figure, sweep_points
from planner.loadtest.results import import_runs
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
