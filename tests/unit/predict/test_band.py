"""The error band: its interval worked by hand, the regime it picks, and the band a prediction carries."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from planner.capacity.scenario import Scenario
from planner.loadtest.settings import LoadSettings
from planner.predict.api import predict
from planner.predict.band import (
    ErrorBand,
    PredictionBand,
    Sample,
    band_for,
    band_note,
    load_band,
    range_text,
    shipped_band,
    with_band,
)
from tests.unit.predict.conftest import tiny_shape


def _samples(metric: str, klass: str, load: str, by_model: dict[str, list[float]]) -> list[Sample]:
    return [Sample(m, klass, load, metric, r) for m, ratios in by_model.items() for r in ratios]


def test_interval_by_hand() -> None:
    # Two models whose runs were measured 10% above and 10% below the prediction, two runs each.
    # each model's log-ratio (its median): ln 1.1 = 0.095310, ln 0.9 = -0.105361; centre -0.005025; between-model
    # variance (ddof 1) 2 · 0.100336² = 0.020134; no scatter within a model. t(0.925, 1 dof) = tan(0.425 π) = 4.165:
    # half-width 4.165 · sqrt(0.020134 · (1 + 1/2)) = 4.165 · 0.173784 = 0.723810
    # band exp(-0.005025 ∓ 0.723810) = 0.48247 .. 2.05194
    band = ErrorBand.from_samples(_samples("median_tpot", "dense", "c1", {"a": [1.1, 1.1], "b": [0.9, 0.9]}))
    cell = next(c for c in band.cells if (c.metric, c.klass, c.load) == ("median_tpot", "dense", "c1"))
    assert (cell.low, cell.high) == pytest.approx((0.48247, 2.05194), abs=3e-4)
    assert (cell.n, cell.models) == (4, 2)


def test_one_stalled_run_does_not_widen_its_regime() -> None:
    # three models, each with five runs on the prediction and one run 9x slower (a stall): the runs' scatter is
    # taken robustly (median absolute deviation: 0 here), so the band stays at the models' agreement (1, 1)
    by_model = {m: [1.0] * 5 + [9.0] for m in "abc"}
    band = ErrorBand.from_samples(_samples("p99_ttft", "moe", "open", by_model))
    assert band.ratios("p99_ttft", "moe", "open") == (1.0, 1.0)


def test_the_prediction_is_always_inside() -> None:
    # every model measured 50% slower than predicted: the band still reaches down to the prediction
    band = ErrorBand.from_samples(_samples("median_ttft", "moe", "open", {m: [1.5] * 3 for m in "abc"}))
    low, high = band.ratios("median_ttft", "moe", "open")
    assert low == 1.0 and high == pytest.approx(1.5)


def test_a_regime_seen_on_too_few_models_borrows_the_pooled_one() -> None:
    dense = _samples("median_tpot", "dense", "c1", {m: [1.0, 1.02, 0.98] for m in "abcd"})
    mla = _samples("median_tpot", "mla-moe", "c1", {"x": [0.5, 0.55, 0.6] * 2})
    band = ErrorBand.from_samples(dense + mla)
    # dense: 4 models, its own cell
    assert band.cell("median_tpot", "dense", "c1").models == 4
    # mla-moe: one model only; the pooled cell (the dense models: a class of one model stays out of it) is
    # widened to hold what that one model showed
    low, high = band.ratios("median_tpot", "mla-moe", "c1")
    assert low < 0.55 and high >= 1.0
    # an unseen class gets the pooled cell alone
    assert band.ratios("median_tpot", "sliding", "c1") == band.ratios("median_tpot", "dense", "c1")
    # a metric with no sample: no band (1, 1)
    assert band.ratios("p99_ttft", "dense", "c1") == (1.0, 1.0)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (LoadSettings(num_prompts=4, max_concurrency=1), "c1"),
        (LoadSettings(num_prompts=32, max_concurrency=16), "c2-16"),
        (LoadSettings(num_prompts=64, max_concurrency=64), "c32-64"),
        (LoadSettings(num_prompts=512, max_concurrency=256), "c128-256"),
        (LoadSettings(num_prompts=100, request_rate=4.0), "open"),
    ],
)
def test_load_bands(settings: LoadSettings, expected: str) -> None:
    assert load_band(settings) == expected


def test_json_round_trip() -> None:
    band = ErrorBand.from_samples(_samples("median_tpot", "dense", "c1", {"a": [1.1], "b": [0.9]}), source="x")
    again = ErrorBand.from_json(band.to_json(measured_coverage=0.8))
    assert again.cells == band.cells and again.measured_coverage == 0.8


def test_band_values_and_the_pessimistic_end() -> None:
    table = ErrorBand.from_samples(
        _samples("median_tpot", "dense", "c1", {m: [1.2] * 6 for m in "abc"})
        + _samples("output_throughput", "dense", "c1", {m: [0.8] * 6 for m in "abc"})
    )
    settings = LoadSettings(num_prompts=4, max_concurrency=1)
    band = band_for(tiny_shape(), settings, {"median_tpot": 0.010, "output_throughput": 100.0}, table)
    assert band.get("median_tpot") == pytest.approx((0.010, 0.012))
    assert band.pessimistic("median_tpot") == pytest.approx(0.012)  # slower is worse
    assert band.pessimistic("output_throughput") == pytest.approx(80.0)  # less is worse
    assert band.to_json()["median_tpot_ms"] == pytest.approx([10.0, 12.0])


def test_a_prediction_carries_the_shipped_band() -> None:
    scenario = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", max_model_len=8192)
    p = predict(scenario, LoadSettings(num_prompts=32, max_concurrency=16, input_len=512, output_len=64))
    assert p.band is not None and (p.band.klass, p.band.load) == ("dense", "c2-16")
    tpot = p.run.metrics.tpot.median_s
    low, high = p.band.get("median_tpot")
    assert low <= tpot <= high and high > low
    assert shipped_band().measured_coverage is not None and 0 < shipped_band().measured_coverage <= 1
    assert all(math.isfinite(x) for _, lo, hi in p.band.ranges for x in (lo, hi))


def test_band_text_membership_and_its_note() -> None:
    band = PredictionBand(
        "dense", "c1", (("median_tpot", 0.0058, 0.0080), ("output_throughput", 1210.4, 1480.6)), measured_coverage=0.806
    )
    # times in ms with one decimal, throughput in tok/s with none
    assert band.text("median_tpot") == "5.8–8.0" and band.text("output_throughput") == "1,210–1,481"
    assert band.text("median_ttft") is None
    assert range_text(0.5, 1234.56, digits=1) == "0.5–1,234.6" and range_text(None, 1.0, digits=0) == "n/a"
    assert range_text(math.nan, 1.0, digits=0) == "n/a"
    assert with_band("7.2", "5.8–8.0") == "7.2 (5.8–8.0)"
    assert with_band("7.2", None) == with_band("7.2", "n/a") == "7.2" and with_band("n/a", "5.8–8.0") == "n/a"
    assert band.contains("median_tpot", 0.0080) is True  # the ends belong to the band
    assert band.contains("median_tpot", 0.0081) is False and band.contains("output_throughput", 1200.0) is False
    assert band.contains("median_ttft", 0.1) is None and band.contains("median_tpot", None) is None
    assert band_note([None, band]) == (
        "the predictor's error band for dense models at load c1, from its errors on models it was not fitted to; "
        "it held 81% of their measurements"
    )
    two = band_note([band, replace(band, klass="moe", load="c2-16")])
    assert two is not None and "for dense and moe models by load," in two
    assert band_note([None]) is None and band_note([replace(band, measured_coverage=None)]).endswith("fitted to")


def test_a_p99_band_never_ends_below_its_median_band() -> None:
    # the new-user trial: "TTFT median 1,001 (755–1,178) p99 1,011 (818–1,113)": the p99's high end below the
    # median's. Medians measured 1.5x the prediction, p99s on it: the p99's band is raised to the median's.
    table = ErrorBand.from_samples(
        _samples("median_ttft", "dense", "c1", {m: [1.5] * 6 for m in "abc"})
        + _samples("p99_ttft", "dense", "c1", {m: [1.0] * 6 for m in "abc"})
    )
    band = band_for(
        tiny_shape(), LoadSettings(num_prompts=4, max_concurrency=1), {"median_ttft": 1.0, "p99_ttft": 1.01}, table
    )
    assert band.get("median_ttft") == pytest.approx((1.0, 1.5))
    assert band.get("p99_ttft") == pytest.approx((1.01, 1.5))


def test_a_rate_that_sends_everything_at_once_is_the_burst() -> None:
    # "--request-rate 1e30 --max-concurrency 16" sends 64 requests within 1e-28 s: the burst at 16 in flight
    capped = LoadSettings(num_prompts=64, max_concurrency=16, request_rate=1e30)
    assert load_band(capped) == load_band(LoadSettings(num_prompts=64, max_concurrency=16)) == "c2-16"
