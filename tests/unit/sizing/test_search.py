"""The sizing search on hand-worked cases: a TPOT floor ruled out by bandwidth alone, a price edit that changes the
cheapest option, cost arithmetic, the answer when nothing meets the SLOs, and the bounds against the simulator."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.catalog.gpus import get_gpu
from planner.catalog.hub import resolve_model
from planner.errors import InvalidParameterError, PlannerError
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import Slo, parse_slos
from planner.predict.band import BandCell, ErrorBand
from planner.predict.shape import step_shape
from planner.predict.simulator import simulate
from planner.predict.step_time import DEFAULT_COEFFICIENTS
from planner.sizing import estimate
from planner.sizing.bounds import bounds
from planner.sizing.estimate import SloEnds
from planner.sizing.probe import probe
from planner.sizing.search import size
from planner.sizing.settings import SizingSettings

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
#: 8,030,261,248 parameters in bf16 (meta-llama/Llama-3.1-8B-Instruct model card: 8.03B).
LLAMA_WEIGHT_BYTES = 8_030_261_248 * 2
#: One replica, the checkpoint as published, the default KV dtype.
PLAIN = {"max_gpus": 1, "quantizations": ("none",), "kv_cache_dtypes": ("auto",)}


def test_fits_in_memory_but_misses_tpot_is_ranked_out_with_that_reason() -> None:
    # L4: 24 GB, 300 GB/s (NVIDIA L4 datasheet). Reading Llama-3.1-8B's 16.06 GB of bf16 weights once takes at
    # least 16.06 / 300 = 53.5 ms at the full datasheet bandwidth: every decode step, so TPOT ≥ 53.5 ms > 50 ms.
    floor_s = LLAMA_WEIGHT_BYTES / get_gpu("l4").memory_bandwidth_bytes_per_s
    assert floor_s == pytest.approx(0.0535, abs=5e-4)
    result = size(SizingSettings(gpus=("l4",), prices=(("l4", 0.8),), **PLAIN))
    (option,) = result.options
    assert option.plan is not None and option.plan.fits  # it fits in memory
    assert option.verdict == "misses_slo" and option.rank is None
    assert "tpot_p99_ms" in option.reason and "more replicas do not help" in option.reason
    assert option.bounds.tpot_s >= floor_s
    assert result.best is None
    assert "tpot_p99_ms binds" in result.answer and "L4" in result.answer


def test_cheapest_option_changes_when_a_price_is_edited() -> None:
    two = SizingSettings(
        target_rate=5.0,
        gpus=("h100-sxm-80gb", "a100-sxm4-80gb"),
        slos=parse_slos(["ttft_p99_ms=2000,tpot_p99_ms=100"]),
        **PLAIN,
    )
    first = size(two)
    h100 = next(o for o in first.ranked if o.config.gpu_id == "h100-sxm-80gb")
    a100 = next(o for o in first.ranked if o.config.gpu_id == "a100-sxm4-80gb")
    # Catalog prices (Lambda): H100 SXM $2.99, A100 80GB $1.79 per GPU-hour; cost = replicas × price.
    assert h100.usd_per_hour == pytest.approx(h100.replicas * 2.99)
    assert a100.usd_per_hour == pytest.approx(a100.replicas * 1.79)
    assert first.best is min((h100, a100), key=lambda o: o.usd_per_hour)
    winner = first.best.config.gpu_id
    # Make the winner's GPU cost 4 × its catalog price: the other one becomes the cheapest.
    pricier = 4 * first.best.price.usd_per_hour
    edited = size(replace(two, prices=((winner, pricier),)))
    assert edited.best.config.gpu_id != winner
    loser = next(o for o in edited.ranked if o.config.gpu_id == winner)
    assert loser.price.edited and loser.price.source == "your price"
    assert loser.usd_per_hour == pytest.approx(loser.replicas * pricier)
    assert "more than #1" in loser.reason


def test_cost_per_million_output_tokens_by_hand() -> None:
    result = size(SizingSettings(target_rate=4.0, gpus=("h100-sxm-80gb",), **PLAIN))
    best = result.best
    # $/h over output tokens per hour: 4 req/s × 300 tokens × 3600 s = 4.32 M tokens/h.
    assert best.usd_per_million_output_tokens == pytest.approx(best.usd_per_hour / 4.32)
    assert best.num_gpus == best.replicas
    assert best.to_json()["meets_slo"] is True
    assert best.to_json()["p99_tpot_ms"] <= 50.0 and best.to_json()["p99_ttft_ms"] <= 1000.0


def test_headroom_never_lowers_the_replicas() -> None:
    base = SizingSettings(target_rate=30.0, gpus=("h100-sxm-80gb",), **PLAIN)
    none, more = size(replace(base, headroom=0.0)).best, size(replace(base, headroom=0.5)).best
    assert more.replicas >= none.replicas
    # each resolved option's capacity bracket holds its replica count: ⌈30 · 1.5 / capacity⌉ = replicas
    assert more.replica_rate == pytest.approx(45.0 / more.replicas)


def test_unpriced_gpu_is_one_row_asking_for_a_price() -> None:
    result = size(SizingSettings(gpus=("b200", "h100-sxm-80gb"), target_rate=2.0, **PLAIN))
    unpriced = [o for o in result.options if o.verdict == "no_price"]
    assert [o.config.gpu_id for o in unpriced] == ["b200"]
    assert "--price b200=" in unpriced[0].reason


def test_bad_input_names_it() -> None:
    with pytest.raises(PlannerError, match="unknown GPU 'nope'"):
        size(SizingSettings(gpus=("nope",)))
    with pytest.raises(InvalidParameterError, match="max_model_len"):
        size(SizingSettings(input_len=4000, max_model_len=2048))
    with pytest.raises(InvalidParameterError) as err:
        SizingSettings(target_rate=0)
    assert err.value.name == "target_rate" and "[0.001, 100000]" in err.value.accepted


def test_floor_matches_a_simulated_request_alone() -> None:
    spec = resolve_model(LLAMA).spec
    result = plan(Scenario(model=LLAMA, gpu="h100-sxm-80gb", max_model_len=4096), spec=spec, advise=False)
    shape = step_shape(result, spec)
    b = bounds(result, shape, DEFAULT_COEFFICIENTS, input_len=2048, output_len=300)
    alone = simulate(shape, LoadSettings(num_prompts=1, max_concurrency=1, input_len=2048, output_len=300))
    assert b.tpot_s == pytest.approx(alone.metrics.tpot.median_s, rel=1e-6)
    assert b.ttft_s == pytest.approx(alone.metrics.ttft.median_s, rel=1e-6)
    assert b.e2el_s == pytest.approx(alone.metrics.e2el.median_s, rel=1e-6)


def test_probe_fails_a_rate_past_the_replica_and_passes_one_below() -> None:
    spec = resolve_model(LLAMA).spec
    result = plan(Scenario(model=LLAMA, gpu="h100-sxm-80gb", max_model_len=4096), spec=spec, advise=False)
    shape = step_shape(result, spec)
    b = bounds(result, shape, DEFAULT_COEFFICIENTS, input_len=2048, output_len=300)
    kwargs = {"input_len": 2048, "output_len": 300, "warmup_s": 10.0, "measure_s": 10.0}
    # Twice the fluid bound: the replica does twice the work it has time for; its queue grows.
    over = probe(shape, DEFAULT_COEFFICIENTS, rate=2 * b.fluid_rate, **kwargs)
    assert not over.keeps_up and over.queue_growth > 10
    under = probe(shape, DEFAULT_COEFFICIENTS, rate=0.3 * b.fluid_rate, **kwargs)
    slos = parse_slos(["ttft_p99_ms=1000,tpot_p99_ms=50"])
    assert under.keeps_up and all(c.ok for c in SloEnds("point", slos, (1.0, 1.0)).checks(under.metrics))


def test_a_configuration_that_meets_at_the_point_estimate_misses_at_the_pessimistic_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One H100 at 0.6 req/s (0.5 with 20% headroom) meets a median-TPOT SLO set 5% above its predicted median TPOT
    ``v``; with a band whose high end is 1.5× (a made-up table) the same SLO asks for ``v · 1.05 / 1.5 = 0.7 v``,
    below what a request alone takes (a replica this lightly loaded decodes nearly alone): it misses at any load."""
    monkeypatch.setattr(
        estimate, "shipped_band", lambda: ErrorBand((BandCell("median_tpot", "*", "*", 0.9, 1.5, 10, 4),))
    )
    base = SizingSettings(target_rate=0.5, gpus=("h100-sxm-80gb",), slos=parse_slos(["tpot_p50_ms=50"]), **PLAIN)
    first = size(replace(base, slo_estimate="point")).best
    (check,) = first.checked
    v = check.value_s
    slo = Slo("tpot", "p50", v * 1.05)

    point = size(replace(base, slos=(slo,), slo_estimate="point"))
    assert point.best.replicas == 1
    (check,) = point.best.checked
    assert check.value_s == pytest.approx(v, rel=1e-12) and check.ratio == pytest.approx(1 / 1.05)
    assert point.to_json()[0]["slo_checks"][0]["band_ratio"] == 1.0

    pessimistic = size(replace(base, slos=(slo,), slo_estimate="pessimistic"))
    (option,) = pessimistic.options
    floor = option.bounds.tpot_s
    assert floor * 1.5 > slo.limit_s  # a request alone, at the band's high end, already misses
    assert pessimistic.best is None and option.verdict == "misses_slo"
    shown = f"{floor * 1e3:,.1f} ms predicted, {floor * 1.5 * 1e3:,.1f} ms at the band's pessimistic end"
    assert shown in option.reason and "more replicas do not help" in option.reason
    assert shown in pessimistic.answer
    assert f"tpot_p50_ms binds ({floor * 1.5 / slo.limit_s:.2f}× its limit)" in pessimistic.answer
    assert all(row["slo_estimate"] == "pessimistic" for row in pessimistic.to_json())


def test_a_tie_with_the_cheapest_says_it_is_a_tie() -> None:
    # the question on GH200s: 2 replicas of TP 1 and 1 of TP 2 cost the same on the same 2 GPUs; row #2 read
    # "costs the same as #1 with 2 GPUs against 2", which did not say why it was second
    result = size(SizingSettings(gpus=("gh200-96gb",), quantizations=("none",), kv_cache_dtypes=("fp8",)))
    first, *rest = result.ranked
    ties = [o for o in rest if abs(o.usd_per_hour - first.usd_per_hour) < 1e-9 and o.num_gpus == first.num_gpus]
    assert ties, [o.reason for o in rest]
    for o in ties:
        assert o.reason.startswith(f"ties with #1 at ${first.usd_per_hour:,.2f}/h on as many GPUs ({first.num_gpus})")
        assert o.fleet_text in o.reason and first.fleet_text in o.reason
