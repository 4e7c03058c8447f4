"""Calibration: the fit recovers coefficients it was not given, scores, and profile files."""

from __future__ import annotations

import json

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.loadtest.results import import_runs
from planner.loadtest.settings import LoadSettings
from planner.predict.calibration import CalibrationProfile, CalibrationRun, calibration_run, fit, load_profile, score
from planner.predict.shape import step_shape
from planner.predict.simulator import simulate
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, step_time_s
from tests.unit.predict.conftest import TRUTH


def _shape(model: str = "meta-llama/Llama-3.1-8B-Instruct"):
    s = Scenario(model=model, gpu="h200-sxm-141gb", max_model_len=8192, max_num_seqs=256, max_num_batched_tokens=8192)
    return step_shape(plan(s))


def _runs(shape, truth: StepCoefficients) -> list[CalibrationRun]:
    runs = []
    for c in (1, 4, 16, 64, 256):
        for n_in in (512, 2048):
            settings = LoadSettings(
                num_prompts=max(8, 2 * c), max_concurrency=c, input_len=n_in, output_len=128, duration_s=None
            )
            sim = simulate(shape, settings, truth)
            m = sim.metrics
            measured = {
                "mean_tpot": m.tpot.mean_s,
                "mean_ttft": m.ttft.mean_s,
                "median_tpot": m.tpot.median_s,
                "median_ttft": m.ttft.median_s,
                "median_itl": m.itl.median_s,
                "output_throughput": m.output_throughput,
            }
            runs.append(CalibrationRun(f"c{c} in{n_in}", shape, settings, measured))
    return runs


def test_fit_recovers_what_the_runs_measure() -> None:
    shape = _shape()
    runs = _runs(shape, TRUTH)
    before = score(runs)
    result = fit(runs)
    worst_before = max(abs(s.errors["median_tpot"]) for s in before)
    worst_after = max(abs(s.errors["median_tpot"]) for s in result.scores)
    assert worst_before > 0.10  # the defaults are off for this "GPU"
    assert worst_after < 0.06
    assert result.median_abs_error("median_ttft") < 0.05
    assert result.median_abs_error("output_throughput") < 0.03
    # One model cannot separate the fixed step overhead from the weight read (both are the same in every step),
    # but their sum, a batch-1 decode step, comes back.
    step = step_time_s(shape, result.coefficients, n_decode=1, decode_ctx=600)
    assert step == pytest.approx(step_time_s(shape, TRUTH, n_decode=1, decode_ctx=600), rel=0.03)


def test_terms_no_run_sees_keep_their_defaults() -> None:
    # TP 1: the all-reduce term is 0 in every row, so the prior holds it.
    result = fit(_runs(_shape(), TRUTH)[:4])
    assert result.coefficients.allreduce_efficiency == pytest.approx(DEFAULT_COEFFICIENTS.allreduce_efficiency)


def test_profile_round_trip_and_bad_files() -> None:
    shape = _shape()
    runs = _runs(shape, TRUTH)[:3]
    result = fit(runs, rounds=1)
    profile = CalibrationProfile.from_fit(result, runs, engine_version="0.24.0")
    back = load_profile(profile.to_json())
    assert back.coefficients == result.coefficients
    assert back.gpu == "h200-sxm-141gb"
    assert back.models == ("meta-llama/Llama-3.1-8B-Instruct",)
    assert len(back.runs) == 3
    with pytest.raises(InvalidParameterError, match="JSON"):
        load_profile("{not json")
    with pytest.raises(InvalidParameterError, match="coefficients"):
        load_profile(json.dumps({"gpu": "h200", "coefficients": {"warp_factor": 9}}))
    with pytest.raises(InvalidParameterError, match="prefill_efficiency"):
        load_profile(json.dumps({"gpu": "h200", "coefficients": {"prefill_efficiency": 5}}))
    with pytest.raises(InvalidParameterError, match="gpu"):
        load_profile(json.dumps({"coefficients": {}}))


def test_calibration_run_from_a_vllm_result_file() -> None:
    # The aggregate keys vllm bench serve --save-result writes (vllm/benchmarks/serve.py, v0.24).
    data = {
        "date": "20261201-120000",
        "backend": "vllm",
        "model_id": "llama",
        "num_prompts": 32,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 16,
        "duration": 2.0,
        "completed": 32,
        "failed": 0,
        "total_input_tokens": 32 * 512,
        "total_output_tokens": 32 * 128,
        "request_throughput": 16.0,
        "output_throughput": 2048.0,
        "total_token_throughput": 10240.0,
        "mean_ttft_ms": 150.0,
        "median_ttft_ms": 140.0,
        "std_ttft_ms": 1.0,
        "p99_ttft_ms": 200.0,
        "mean_tpot_ms": 5.4,
        "median_tpot_ms": 5.3,
        "std_tpot_ms": 0.1,
        "p99_tpot_ms": 5.9,
        "mean_itl_ms": 5.4,
        "median_itl_ms": 5.3,
        "std_itl_ms": 0.1,
        "p99_itl_ms": 6.0,
        "mean_e2el_ms": 830.0,
        "median_e2el_ms": 820.0,
        "std_e2el_ms": 1.0,
        "p99_e2el_ms": 900.0,
    }
    (saved,) = import_runs(json.dumps(data))
    run = calibration_run(saved, _shape())
    assert (run.settings.input_len, run.settings.output_len, run.settings.max_concurrency) == (512, 128, 16)
    assert run.settings.num_prompts == 32
    assert run.measured["mean_tpot"] == pytest.approx(5.4e-3)
    assert run.measured["output_throughput"] == pytest.approx(2048.0)


def test_calibration_finds_how_correlated_the_routing_is() -> None:
    # Runs of a MoE whose tokens keep to few experts (simulated with routing exponent 0.45) are fitted best at 0.45,
    # one of the exponents the calibration tries; the defaults' independent routing (1.0) would not fit them.
    from dataclasses import replace as dc_replace

    from planner.capacity.plan import plan
    from planner.capacity.scenario import Scenario
    from planner.predict.calibration import ROUTING_EXPONENTS
    from planner.predict.shape import step_shape

    moe = step_shape(plan(Scenario(model="Qwen/Qwen3-30B-A3B-Instruct-2507", gpu="h200-sxm-141gb", max_model_len=8192)))
    truth = dc_replace(StepCoefficients(), moe_routing_exponent=0.45)
    assert 0.45 in ROUTING_EXPONENTS
    runs = []
    for c in (1, 8, 32):
        settings = LoadSettings(num_prompts=2 * c, max_concurrency=c, input_len=256, output_len=64, duration_s=None)
        m = simulate(moe, settings, truth).metrics
        measured = {"mean_tpot": m.tpot.mean_s, "median_tpot": m.tpot.median_s, "median_itl": m.itl.median_s}
        runs.append(CalibrationRun(f"c{c}", moe, settings, measured))
    result = fit(runs)
    assert result.coefficients.moe_routing_exponent == 0.45
    assert result.median_abs_error("median_tpot") < 0.02
