"""Predictions beside measured runs: the same workload predicted (against vLLM 0.24.0's own result files of
Llama-3.1-8B on one H200, bench/data/h200_sweeps/llama-3.1-8b), and a recalibration that recovers the deployment
the "measurements" came from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun, import_runs
from planner.loadtest.settings import LoadSettings
from planner.predict.api import DEFAULT_SOURCE, predict, predicted_run
from planner.predict.calibration import CalibrationProfile
from planner.predict.overlay import predict_runs, recalibrate
from planner.predict.step_time import StepCoefficients
from planner.serving.server_metrics import PrefixCacheStats
from tests.unit.predict.conftest import TRUTH

SCENARIO = Scenario(gpu="h200-sxm-141gb", max_model_len=8192)
#: The server of bench/data/h200_sweeps (its README): vllm serve --max-model-len 8192 --max-num-seqs 256
#: --max-num-batched-tokens 8192 --gpu-memory-utilization 0.9, vLLM 0.24.0.
H200_SERVER = Scenario(gpu="h200-sxm-141gb", max_model_len=8192, engine_version="0.24.0", max_num_seqs=256,
                       max_num_batched_tokens=8192)  # fmt: skip
SWEEP = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps" / "llama-3.1-8b"
#: Each file's concurrency, prompts (the campaign's min(max(4, 2c), 300000 // 512)) and measured output tok/s.
MEASURED = ((1, 4, 197.79), (4, 8, 743.87), (16, 32, 2310.19), (64, 128, 4934.28))


def _real_runs() -> list[SavedRun]:
    return [import_runs((SWEEP / f"in512_c{c}.json.gz").read_bytes(), f"c{c}")[0] for c, _, _ in MEASURED]


def _measured(coefficients: StepCoefficients | None = None) -> list[SavedRun]:
    """A sweep at 1, 4, 16 and 64 in flight of 512-in / 128-out requests, "measured" on ``coefficients``."""
    profile = None
    if coefficients is not None:
        profile = CalibrationProfile("h200-sxm-141gb", "vllm", None, (), coefficients, {})
    runs = []
    for c in (1, 4, 16, 64):
        work = LoadSettings(num_prompts=max(16, 2 * c), max_concurrency=c, input_len=512, output_len=128)
        run = predicted_run(predict(SCENARIO, work, profile=profile), f"c={c}", sweep="sweep")
        runs.append(replace(run, source="imported", endpoint="h200"))
    return runs


def test_each_run_is_predicted_with_its_own_workload():
    measured = _measured()
    overlay = predict_runs(SCENARIO, [*measured, replace(measured[0], label="again", source="predicted")])
    assert [m.label for m, _ in overlay.pairs] == ["c=1", "c=4", "c=16", "c=64"]  # a predicted run is no measurement
    assert [p.label for p in overlay.predicted] == [f"predicted · c={c}" for c in (1, 4, 16, 64)]
    for (_, p), c in zip(overlay.pairs, (1, 4, 16, 64), strict=True):
        assert p.source == "predicted" and p.sweep == "sweep"
        # the workload _measured built: max(16, 2c) prompts of 512 tokens at c in flight
        assert (p.max_concurrency, p.num_prompts, p.requested_input_tokens) == (c, max(16, 2 * c), 512)
    assert overlay.calibration == DEFAULT_SOURCE and overlay.skipped == ()


def test_real_runs_are_predicted_near_what_vllm_measured():
    # vLLM 0.24.0's result files (512 tokens in, 128 out, prefix caching off): the prediction of each, with its own
    # workload, within 10 % of the output throughput it measured (the default coefficients were fitted to these runs
    # among others, so this is in-sample: it checks the plumbing, bench/prediction_accuracy.py the accuracy)
    overlay = predict_runs(H200_SERVER, _real_runs())
    assert len(overlay.pairs) == 4 and overlay.skipped == ()
    for (m, p), (c, prompts, tok_s) in zip(overlay.pairs, MEASURED, strict=True):
        assert (m.max_concurrency, m.num_prompts) == (c, prompts)
        assert m.metrics.output_throughput == pytest.approx(tok_s, abs=0.01)
        assert (p.max_concurrency, p.num_prompts, p.requested_input_tokens) == (c, prompts, 512)
        assert p.metrics.output_throughput == pytest.approx(tok_s, rel=0.10)


def test_each_prediction_carries_its_band_in_the_order_of_the_pairs():
    overlay = predict_runs(H200_SERVER, _real_runs())
    assert len(overlay.bands) == len(overlay.pairs) == 4
    assert [b.load for b in overlay.bands] == ["c1", "c2-16", "c2-16", "c32-64"]  # 1, 4, 16, 64 in flight
    for (m, _), band in zip(overlay.pairs, overlay.bands, strict=True):
        # vLLM's measured median TPOT (4.91, 5.00, 5.30, 9.05 ms) inside the band around each prediction
        assert band.contains("median_tpot", m.metrics.tpot.median_s) is True


def test_runs_that_cannot_be_predicted_are_listed_with_why():
    measured = _measured()
    failed = replace(measured[0], label="all failed", metrics=replace(measured[0].metrics, completed=0, tpot=None))
    overlay = predict_runs(SCENARIO, [failed, measured[1]])
    assert [m.label for m, _ in overlay.pairs] == ["c=4"]
    assert len(overlay.skipped) == 1 and overlay.skipped[0].startswith("all failed: ")


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        (Scenario(engine="tgi"), "vllm"),
        (Scenario(model="meta-llama/Llama-3.1-70B-Instruct"), "fits"),
    ],
)
def test_a_deployment_that_cannot_be_simulated_is_refused(scenario, reason):
    with pytest.raises(InvalidParameterError, match=reason):
        predict_runs(scenario, _measured()[:1])
    with pytest.raises(InvalidParameterError, match=reason):
        recalibrate(scenario, _measured()[:1])


def test_recalibration_recovers_the_measured_deployment():
    measured = _measured(TRUTH)
    result = recalibrate(SCENARIO, measured)
    before = max(abs(s.errors["median_tpot"]) for s in result.before)
    after = max(abs(s.errors["median_tpot"]) for s in result.fit.scores)
    assert before > 0.15  # the defaults are off for this deployment
    assert after < 0.05
    assert result.fit.median_abs_error("output_throughput") < 0.05
    assert result.profile.gpu == "h200-sxm-141gb" and result.profile.models == ("meta-llama/Llama-3.1-8B-Instruct",)
    assert [r["label"] for r in result.profile.runs] == ["c=1", "c=4", "c=16", "c=64"]
    # predicting with the fitted profile now lands within 5% of every measured median TPOT
    overlay = predict_runs(SCENARIO, measured, profile=result.profile)
    assert overlay.calibration.startswith("calibrated on 4 run(s) of meta-llama/Llama-3.1-8B-Instruct")
    for m, p in overlay.pairs:
        assert p.metrics.tpot.median_s == pytest.approx(m.metrics.tpot.median_s, rel=0.05)


def test_recalibration_needs_a_measured_run():
    measured = _measured()
    with pytest.raises(InvalidParameterError, match="at least one measured run"):
        recalibrate(SCENARIO, [replace(measured[0], source="predicted")])


def test_recalibration_leaves_out_runs_served_from_the_prefix_cache():
    """Issue 24 item 8: "Recalibrate from these runs" fitted a run whose prompts came 98.5% from the prefix cache as
    if every token had been prefilled; it is now left out, with its hit rate, and the others are fitted."""
    measured = _measured()
    cached = replace(
        measured[0], label="cached", prefix_cache=PrefixCacheStats(10_000, 9_850, "vllm:prefix_cache_hits")
    )
    result = recalibrate(SCENARIO, [cached, *measured[1:]])
    assert [s.label for s in result.fit.scores] == ["c=4", "c=16", "c=64"]
    (skipped,) = result.skipped
    assert skipped.startswith("cached: 98.5% of its prompt tokens came from the prefix cache (vllm:prefix_cache_hits)")
