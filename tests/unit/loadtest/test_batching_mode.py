"""The Load Test's batching setting: validated, ``compare`` planned as a static and a continuous run, and the pair's
throughput ratio (continuous / static) read from saved runs and their files."""

from __future__ import annotations

import json

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun, batching_frame, import_runs, to_vllm_file
from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.worker import plan_jobs
from planner.metrics.benchmark import BenchmarkMetrics
from planner.serving.endpoints import Endpoint


def test_batching_is_validated():
    assert LoadSettings().batching == "continuous"
    with pytest.raises(InvalidParameterError) as err:
        LoadSettings(batching="waves")
    assert err.value.name == "batching" and "static" in err.value.accepted


def test_compare_plans_static_then_continuous_per_endpoint():
    eps = [Endpoint("a", "vllm", "http://a"), Endpoint("b", "vllm", "http://b")]
    jobs = plan_jobs(eps, LoadSettings(batching="compare", max_concurrency=4))
    assert [(j.endpoint.name, j.settings.batching) for j in jobs] == [
        ("a", "static"),
        ("a", "continuous"),
        ("b", "static"),
        ("b", "continuous"),
    ]
    assert jobs[0].label == "a · c=4 · static" and all(j.settings.max_concurrency == 4 for j in jobs)


def test_compare_with_a_sweep_or_repeats_plans_both_kinds():
    ep = [Endpoint("a", "vllm", "http://a")]
    sweep = plan_jobs(ep, LoadSettings(batching="compare", mode="sweep", sweep=SweepSettings(sweep_max=4)), tag="t")
    assert [(j.level, j.settings.batching, j.sweep) for j in sweep] == [
        (1, "static", "a sweep · static · t"),
        (2, "static", "a sweep · static · t"),
        (4, "static", "a sweep · static · t"),
        (1, "continuous", "a sweep · continuous · t"),
        (2, "continuous", "a sweep · continuous · t"),
        (4, "continuous", "a sweep · continuous · t"),
    ]
    repeats = plan_jobs(ep, LoadSettings(batching="compare", num_runs=2, max_concurrency=2))
    assert [j.label for j in repeats] == [
        "a · c=2 · static · run 1/2",
        "a · c=2 · static · run 2/2",
        "a · c=2 · continuous · run 1/2",
        "a · c=2 · continuous · run 2/2",
    ]


def _run(batching: str, duration_s: float, cap: int = 3) -> SavedRun:
    # the article's example: 680 tokens; static 5.6 s and continuous 5.0 s in the simulator's 10 ms steps
    metrics = BenchmarkMetrics.from_vllm_json(
        {
            "completed": 5,
            "failed": 0,
            "duration": duration_s,
            "total_input_tokens": 50,
            "total_output_tokens": 680,
            "output_throughput": 680 / duration_s,
        }
    )
    return SavedRun(
        label=batching, endpoint="demo", source="measured", metrics=metrics, max_concurrency=cap, batching=batching
    )


def test_ratio_of_a_pair_and_the_file_round_trip():
    frame = batching_frame([_run("static", 5.6), _run("continuous", 5.0), _run("continuous", 1.0, cap=8)])
    assert len(frame) == 1  # the c=8 run has no static partner
    row = frame.iloc[0]
    assert row["static_output_throughput"] == pytest.approx(680 / 5.6)
    assert row["continuous_output_throughput"] == pytest.approx(680 / 5.0)
    assert row["throughput_ratio"] == pytest.approx(5.6 / 5.0)  # 1.12
    files = [to_vllm_file(_run("static", 5.6)), to_vllm_file(_run("continuous", 5.0))]
    assert files[0]["planner_batching"] == "static"
    again = import_runs(json.dumps(files), "pair.json")
    assert [r.batching for r in again] == ["static", "continuous"]
    assert batching_frame(again).iloc[0]["throughput_ratio"] == pytest.approx(1.12)
    assert batching_frame([_run("static", 5.6)]).empty
