"""Prefill/decode layouts in the sizing search: off by default, ranked with the aggregated replicas by cost, with
their pools in ``--json`` and a reason wherever they lose."""

from __future__ import annotations

import pytest

from planner.sizing.disaggregated import decode_rate, prefill_rate
from planner.sizing.search import size
from planner.sizing.settings import SizingSettings

#: 20 req/s of 2,048 + 300 tokens on H100s, 16-bit weights and KV: one configuration family, a fast search.
BASE = dict(target_rate=20.0, gpus=("h100-sxm-80gb",), quantizations=("none",), kv_cache_dtypes=("auto",))


@pytest.fixture(scope="module")
def both():
    return size(SizingSettings(**BASE, disaggregation="both"))


def test_off_is_the_aggregated_search() -> None:
    result = size(SizingSettings(**BASE))
    assert {o.mode for o in result.options} == {"aggregated"}
    assert all(row["mode"] == "aggregated" and "prefill" not in row for row in result.to_json())


def test_both_ranks_layouts_with_replicas_by_cost(both) -> None:
    modes = {o.mode for o in both.options}
    assert modes == {"aggregated", "disaggregated"}
    costs = [o.usd_per_hour for o in both.ranked]
    assert costs == sorted(costs)
    layout = next(o for o in both.options if o.mode == "disaggregated" and o.verdict == "meets")
    row = layout.to_json()
    assert row["mode"] == "disaggregated" and row["meets_slo"]
    for pool in ("prefill", "decode"):
        assert set(row[pool]) >= {"gpu", "tensor_parallel_size", "replicas"}
    assert row["replicas"] == row["prefill"]["replicas"] + row["decode"]["replicas"]
    assert row["num_gpus"] == sum(row[p]["replicas"] * row[p]["gpus_per_replica"] for p in ("prefill", "decode"))
    # H100 pools in one node: NVLink 4, 450 GB/s per GPU pair, min(TP_p, TP_d) pairs at once; 2,048 tokens of
    # Llama-3.1-8B KV (131,072 B a token: 268 MB) take 0.60 ms over one pair, + 1 ms of fixed latency
    pairs = min(row["prefill"]["tensor_parallel_size"], row["decode"]["tensor_parallel_size"])
    assert row["kv_transfer_ms"] == pytest.approx(2048 * 131_072 / (pairs * 450e9) * 1e3 + 1.0, rel=1e-6)
    assert row["usd_per_hour"] == pytest.approx(row["num_gpus"] * 2.99)
    assert "--kv-transfer-config" in row["launch_command"]
    # every option that does not meet the SLOs, or costs more, says why
    assert all(o.reason for o in both.options if o.rank != 1)


def test_on_keeps_only_layouts() -> None:
    result = size(SizingSettings(**BASE, disaggregation="on"))
    assert {o.mode for o in result.options} == {"disaggregated"}
    assert result.best is not None and result.best.layout.endswith("D")
    assert result.best.layout in result.answer


def test_a_slow_link_misses_the_ttft_slo_at_any_size() -> None:
    # 0.1 GB/s: 2,048 tokens of KV (268 MB) take 2.7 s, past the 1 s TTFT limit before any queue
    result = size(SizingSettings(**BASE, disaggregation="on", kv_transfer_gb_per_s=0.1))
    assert result.best is None
    assert any("KV transfer alone takes" in (o.reason or "") for o in result.options)
    assert result.answer.startswith("No prefill/decode layout meets the SLOs")


def test_rates_per_role_are_positive_and_decode_is_bounded_by_tpot(both) -> None:
    config = next(o for o in both.options if o.mode == "aggregated" and o.shape is not None)
    s = both.settings
    assert prefill_rate(config, s, both.coefficients) > 0
    strict = SizingSettings(**BASE, slos=(*both.settings.slos[:1], type(s.slos[1])("tpot", "p99", 0.001)))
    assert decode_rate(config, strict, both.coefficients) <= decode_rate(config, s, both.coefficients)
