"""Which end of the error band the sizing search checks SLOs at (:mod:`planner.sizing.estimate`): checks at both
ends worked by hand on a hand-made band, the SLOs the band has no figure for, agreement with ``band_for``, and the
bounds and the replica verdict taking the same ratios as the checks."""

from __future__ import annotations

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import resolve_model
from planner.metrics.benchmark import metrics_from_samples
from planner.metrics.slo import Slo, parse_slo, parse_slos
from planner.predict.band import COVERAGE, BandCell, ErrorBand, band_for
from planner.predict.shape import StepShape, step_shape
from planner.predict.step_time import DEFAULT_COEFFICIENTS
from planner.sizing.bounds import bounds
from planner.sizing.estimate import SloEnds, band_metrics, describe_estimate, ends_for
from planner.sizing.probe import probe_load
from planner.sizing.search import replica_verdict
from planner.sizing.settings import SizingSettings

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
#: A band made up for the tests: ``measured / predicted`` ratios pooled over every class and load.
HAND = ErrorBand(
    (
        BandCell("median_ttft", "*", "*", 0.6, 1.5, 10, 4),
        BandCell("p99_ttft", "*", "*", 0.5, 1.8, 10, 4),
        BandCell("median_tpot", "*", "*", 0.9, 1.1, 10, 4),
        BandCell("p99_tpot", "*", "*", 0.9, 1.2, 10, 4),
        BandCell("median_itl", "*", "*", 0.8, 1.3, 10, 4),
        BandCell("output_throughput", "*", "*", 0.8, 1.1, 10, 4),
    ),
    measured_coverage=0.81,
)
#: The load every probe of a search sends (open loop: load band ``open``).
LOAD = probe_load(rate=1.0, input_len=2048, output_len=300)
SLOS = parse_slos(["ttft_p99_ms=1000,tpot_p99_ms=50"])


@pytest.fixture(scope="module")
def deployment() -> tuple[object, StepShape]:
    spec = resolve_model(LLAMA).spec
    result = plan(Scenario(model=LLAMA, gpu="h100-sxm-80gb", max_model_len=4096), spec=spec, advise=False)
    return result, step_shape(result, spec)


def _metrics(ttft_s: float, tpot_s: float, n: int = 100, output_tokens: int = 11) -> object:
    """``n`` identical requests: every percentile of TTFT is ``ttft_s`` and of TPOT ``tpot_s``."""
    e2e = ttft_s + (output_tokens - 1) * tpot_s
    return metrics_from_samples(
        ttft_s=[ttft_s] * n,
        e2e_s=[e2e] * n,
        output_tokens=[output_tokens] * n,
        input_tokens=[100] * n,
        itl_s=[tpot_s] * (n * (output_tokens - 1)),
        duration_s=100.0,
    )


def test_a_replica_that_passes_at_the_point_estimate_fails_at_the_pessimistic_end(deployment) -> None:
    _, shape = deployment
    metrics = _metrics(ttft_s=0.6, tpot_s=0.045)
    point = ends_for(shape, SLOS, "point", LOAD, table=HAND)
    pessimistic = ends_for(shape, SLOS, "pessimistic", LOAD, table=HAND)
    # At the point estimate: p99 TTFT 600 ms ≤ 1,000 ms (ratio 0.6), p99 TPOT 45 ms ≤ 50 ms (ratio 0.9).
    ttft, tpot = point.checks(metrics)
    assert (ttft.value_s, ttft.ratio, ttft.ok) == (pytest.approx(0.6), pytest.approx(0.6), True)
    assert (tpot.value_s, tpot.ratio, tpot.ok) == (pytest.approx(0.045), pytest.approx(0.9), True)
    # At the band's high end: 600 ms × 1.8 = 1,080 ms > 1,000 ms; 45 ms × 1.2 = 54 ms > 50 ms.
    ttft, tpot = pessimistic.checks(metrics)
    assert (ttft.value_s, ttft.ratio, ttft.ok) == (pytest.approx(1.08), pytest.approx(1.08), False)
    assert (tpot.value_s, tpot.ratio, tpot.ok) == (pytest.approx(0.054), pytest.approx(1.08), False)
    # The largest predicted value that passes: 1,000 ms / 1.8 = 555.6 ms; 50 ms / 1.2 = 41.7 ms.
    assert pessimistic.limit_s(SLOS[0]) == pytest.approx(0.5556, abs=1e-4)
    assert pessimistic.limit_s(SLOS[1]) == pytest.approx(0.04167, abs=1e-5)
    assert (pessimistic.throughput_low, point.throughput_low) == (0.8, 1.0)
    assert pessimistic.shown(ttft) == "600.0 ms predicted, 1,080.0 ms at the band's pessimistic end"
    assert point.shown(point.checks(metrics)[0]) == "600.0 ms"


@pytest.mark.parametrize(
    ("slo", "metrics", "ratio"),
    [
        ("ttft_p99_ms=1", ("p99_ttft",), 1.8),
        ("ttft_p50_ms=1", ("median_ttft",), 1.5),
        ("ttft_mean_ms=1", ("median_ttft",), 1.5),  # no mean TTFT in the band: its central TTFT figure
        ("ttft_p90_ms=1", ("p99_ttft",), 1.8),  # no p90: its tail TTFT figure
        ("tpot_p90_ms=1", ("p99_tpot",), 1.2),
        ("tpot_mean_ms=1", ("mean_tpot",), 1.0),  # HAND has no mean_tpot cell: nothing known, ratio 1
        ("itl_p50_ms=1", ("median_itl",), 1.3),
        ("itl_p99_ms=1", ("median_itl", "p99_tpot"), 1.3),  # the larger of 1.3 and 1.2
        ("e2el_p99_ms=1", ("p99_ttft", "p99_tpot"), 1.8),  # the larger of 1.8 and 1.2
        ("e2el_p50_ms=1", ("median_ttft", "median_tpot"), 1.5),  # the larger of 1.5 and 1.1
    ],
)
def test_the_band_figure_each_slo_is_checked_with(deployment, slo: str, metrics: tuple[str, ...], ratio: float) -> None:
    _, shape = deployment
    s = parse_slo(slo)
    assert band_metrics(s) == metrics
    assert ends_for(shape, (s,), "pessimistic", LOAD, table=HAND).ratio(s) == pytest.approx(ratio)


def test_pessimistic_end_is_band_for_s_own_high_end(deployment) -> None:
    """The ends take the same regime and table as :func:`planner.predict.band.band_for` (the shipped band)."""
    _, shape = deployment
    ends = ends_for(shape, SLOS, "pessimistic", LOAD)
    band = band_for(shape, LOAD, {"p99_ttft": 0.6, "p99_tpot": 0.045, "output_throughput": 1000.0})
    assert ends.check(SLOS[0], 0.6).value_s == pytest.approx(band.pessimistic("p99_ttft"), rel=1e-12)
    assert ends.check(SLOS[1], 0.045).value_s == pytest.approx(band.pessimistic("p99_tpot"), rel=1e-12)
    assert 1000.0 * ends.throughput_low == pytest.approx(band.pessimistic("output_throughput"), rel=1e-12)
    assert (ends.klass, ends.load) == (band.klass, band.load) == ("dense", "open")


def test_point_estimate_is_the_prediction(deployment) -> None:
    _, shape = deployment
    ends = ends_for(shape, SLOS, "point", LOAD, table=HAND)
    assert ends.high == (1.0, 1.0) and ends.throughput_low == 1.0
    assert ends.check(SLOS[0], 0.6).value_s == 0.6


def test_an_empty_band_makes_both_ends_the_point_estimate(deployment) -> None:
    _, shape = deployment
    ends = ends_for(shape, SLOS, "pessimistic", LOAD, table=ErrorBand(()))
    assert ends.high == (1.0, 1.0) and ends.throughput_low == 1.0


def test_bounds_take_the_limit_over_the_ratio(deployment) -> None:
    """A TPOT SLO of 20 ms checked at ×1.2 bounds the rate as a 20 / 1.2 = 16.67 ms one checked at the point
    estimate; the throughput bound is the band's low end (0.8) of the fluid rate."""
    result, shape = deployment
    tpot = (Slo("tpot", "p99", 0.020),)
    args = {"input_len": 2048, "output_len": 300}
    pessimistic = bounds(
        result, shape, DEFAULT_COEFFICIENTS, ends=ends_for(shape, tpot, "pessimistic", LOAD, table=HAND), **args
    )
    tighter = (Slo("tpot", "p99", 0.020 / 1.2),)
    point = bounds(result, shape, DEFAULT_COEFFICIENTS, ends=ends_for(shape, tighter, "point", LOAD), **args)
    assert pessimistic.binding == point.binding == "tpot_p99_ms"
    assert pessimistic.rate_bound == pytest.approx(point.rate_bound, rel=1e-12)
    assert pessimistic.fluid_rate == point.fluid_rate  # the simulator's figure, whatever the end
    no_slo = bounds(
        result, shape, DEFAULT_COEFFICIENTS, ends=ends_for(shape, (), "pessimistic", LOAD, table=HAND), **args
    )
    assert no_slo.binding == "throughput" and no_slo.rate_bound == pytest.approx(0.8 * no_slo.fluid_rate)


def test_a_replica_must_keep_up_at_the_throughput_s_low_end(deployment) -> None:
    """At 0.3 × the fluid bound a replica keeps up (tests/unit/sizing/test_search.py); with a throughput band's low
    end of 0.25 it must keep up with 0.3 / 0.25 = 1.2 × the fluid bound, more than the bound lets any replica serve,
    so it misses by 1 / 0.25 = 4×."""
    result, shape = deployment
    settings = SizingSettings(input_len=2048, output_len=300, slos=(Slo("tpot", "p99", 1.0),))
    b = bounds(result, shape, DEFAULT_COEFFICIENTS, input_len=2048, output_len=300)
    rate = 0.3 * b.fluid_rate
    point = replica_verdict(shape, b, DEFAULT_COEFFICIENTS, settings, SloEnds("point", settings.slos, (1.0,)), rate)
    assert point.met and point.simulations == 1
    low = SloEnds("pessimistic", settings.slos, (1.0,), throughput_low=0.25)
    pessimistic = replica_verdict(shape, b, DEFAULT_COEFFICIENTS, settings, low, rate)
    assert not pessimistic.met and pessimistic.simulations == 2 and pessimistic.excess == 4.0
    assert pessimistic.probe is point.probe  # the same simulation at the offered rate: only the verdict differs


def test_describe_says_which_end_and_how_to_switch() -> None:
    pessimistic = describe_estimate("pessimistic", switch="--slo-estimate {}", table=HAND)
    assert pessimistic.startswith(
        "SLOs checked against the pessimistic end of the predictor's error band (--slo-estimate point to use the "
        f"point estimate): a prediction interval of {COVERAGE:.0%}"
    )
    assert "held 81%" in pessimistic  # HAND's measured coverage
    assert describe_estimate("point", switch="--slo-estimate {}") == (
        "SLOs checked against the predictor's point estimate (--slo-estimate pessimistic to check them against the "
        "worse end of its error band)."
    )
