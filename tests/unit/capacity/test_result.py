"""planner.capacity.result: memory terms in GiB, the version range's ends and band, concurrency and the JSON keys.

Numbers are built by hand here (a plan of round figures), not taken from the planner.
"""

from __future__ import annotations

import pytest

from planner.capacity.kv_cache import KVGroup, KVPool
from planner.capacity.result import MemoryTerms, Plan, VersionFigures, VersionRange
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.units import GIB

TERMS = MemoryTerms(
    total_bytes=80 * GIB,
    budget_bytes=72 * GIB,
    weights_bytes=15 * GIB,
    activation_bytes=1.5 * GIB,
    non_torch_bytes=0.5 * GIB,
    cuda_graph_bytes=None,
    kv_cache_bytes=55 * GIB,
    unused_bytes=8 * GIB,
)


def _plan(**changes: object) -> Plan:
    """A plan of round figures: 55 GiB of KV at 128 KiB a token = 450,560 tokens, max_model_len 8,192."""
    fields: dict[str, object] = {
        "scenario": Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100"),
        "engine_label": "vLLM 0.19.0",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "gpu_name": "H100 SXM5 80GB",
        "num_gpus": 1,
        "per_gpu": TERMS,
        "weights_total_bytes": 15 * GIB,
        "kv_cache_total_bytes": 55 * GIB,
        "kv_bytes_per_token": 131_072.0,
        "kv_bytes_per_token_model": 131_072.0,
        "block_size": 16,
        "num_gpu_blocks": 28_160,
        "kv_cache_tokens": 450_560,
        "max_model_len": 8192,
        "max_concurrency": 55.0,
        "max_concurrency_at_target": None,
        "estimated_max_model_len": None,
        "fits": True,
        "reason": None,
    }
    return Plan(**{**fields, **changes})


def test_memory_terms_in_gib_keep_the_missing_term_none() -> None:
    assert TERMS.as_gib() == {
        "total_gib": 80.0,
        "budget_gib": 72.0,
        "weights_gib": 15.0,
        "activation_gib": 1.5,
        "non_torch_gib": 0.5,
        "cuda_graph_gib": None,
        "kv_cache_gib": 55.0,
        "unused_gib": 8.0,
    }


def test_concurrency_without_a_pool_is_tokens_over_context() -> None:
    # 450,560 tokens / 8,192 = 55 requests; / 100,000 = 4.5056
    plan = _plan()
    assert plan.concurrency_at(8192) == 55.0 and plan.concurrency_at(100_000) == pytest.approx(4.5056)


def test_concurrency_with_a_pool_counts_blocks() -> None:
    # one full-attention group of 32 layers, one pool per layer: a request of 1,000 tokens takes cdiv(1000, 16) = 63
    # blocks, so 28,160 blocks hold 28,160 / 63 = 446.98 of them (not 450,560 / 1,000 = 450.56)
    pool = KVPool(16, 65_536, (KVGroup("full", None, 32),), 32, 28_160, 8192)
    assert _plan(pool=pool).concurrency_at(1000) == pytest.approx(28_160 / 63)


def _figures(version: str, tokens: int, fits: bool) -> VersionFigures:
    return VersionFigures(version, tokens * 131_072, tokens, tokens / 32_768, fits)


def test_version_range_ends_and_the_versions_that_refuse() -> None:
    old, mid, new = (
        _figures("0.14.0", 28_352, False),
        _figures("0.19.0", 30_000, True),
        _figures("0.28.0", 34_816, True),
    )
    vr = VersionRange((old, mid, new), low=old, high=new)
    assert vr.starts_in == ("0.19.0", "0.28.0") and vr.refused_by == ("0.14.0",) and vr.fits_in_some
    assert not VersionRange((mid, new), low=mid, high=new).fits_in_some  # all start
    assert VersionRange((mid, new), low=mid, high=new).concurrency_band(8192) is None  # no pools
    assert old.to_json() == {
        "version": "0.14.0",
        "kv_cache_memory_gib": 28_352 * 131_072 / GIB,  # 3.4609375 GiB
        "kv_cache_tokens": 28_352,
        "max_concurrency": 28_352 / 32_768,
        "fits": False,
    }
    assert vr.to_json()["low"]["version"] == "0.14.0" and len(vr.to_json()["versions"]) == 3


def test_version_range_band_runs_between_the_two_pools() -> None:
    # 1,772 and 2,176 blocks of 16 tokens (28,352 and 34,816 tokens); 8,192 tokens take 512 blocks:
    # 1,772 / 512 = 3.46, 2,176 / 512 = 4.25
    group = (KVGroup("full", None, 32),)
    low, high = KVPool(16, 65_536, group, 32, 1_772, 8192), KVPool(16, 65_536, group, 32, 2_176, 8192)
    vr = VersionRange((), low=_figures("0.14.0", 28_352, True), high=_figures("0.28.0", 34_816, True),
                      low_pool=low, high_pool=high)  # fmt: skip
    assert vr.concurrency_band(8192) == pytest.approx((1_772 / 512, 2_176 / 512))


def test_to_json_uses_vllms_names_with_units() -> None:
    data = _plan(advice=(), notes=("a note",)).to_json()
    assert data["weights_memory_gib"] == 15.0 and data["kv_cache_memory_gib"] == 55.0
    assert data["requested_memory_gib"] == 72.0 and data["total_gpu_memory_gib"] == 80.0
    assert data["cuda_graph_memory_gib"] is None
    assert (data["kv_cache_tokens"], data["num_gpu_blocks"], data["max_concurrency"]) == (450_560, 28_160, 55.0)
    assert data["max_model_len_auto"] is False and data["notes"] == ["a note"]
    assert data["kv_needed_for_max_len_gib"] is None and data["version_range"] is None


def test_max_model_len_auto_is_read_off_the_scenario() -> None:
    plan = _plan(scenario=Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_model_len=-1))
    assert plan.scenario.max_model_len == MAX_MODEL_LEN_AUTO and plan.max_model_len_auto
    assert plan.to_json()["max_model_len_auto"] is True
