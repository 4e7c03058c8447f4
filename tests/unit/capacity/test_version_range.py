"""The range over the vLLM versions still in use (planner/capacity/version_range.py), worked out by hand.

Llama-3.1-8B-Instruct on one H100 SXM (79.19 GiB, vLLM log ids 38-45) at 0.9 and max_model_len 8,192; vLLM serve's
defaults on an H100 from v0.10: 1024 sequences, 8192 batched tokens. The newest version runs Llama on the V2 model
runner (vLLM 0.24.0 DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES): its peak is the forward, 8192 × (2·4096 + 3·14336 +
48·128) × 2 B = 939,524,096 B, and non-torch is 0.248 GiB (v0.18+). v0.11-v0.16 sort the vocabulary in the sampler
(38.37 B per logit, fitted on v0.11/v0.15 logs) with 0.133 GiB of non-torch: the low end, the newer of the two
identical profiles (v0.14) named.
"""

from __future__ import annotations

import pytest

from planner.capacity.engines.vllm_fitted import fitted
from planner.capacity.explain import version_range_text
from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.capacity.version_range import version_range, versions_in_use
from planner.catalog.hub import resolve_model
from planner.units import GIB

LLAMA = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_model_len=8192)


def test_versions_in_use_are_the_first_of_each_profile_from_v010() -> None:
    assert versions_in_use() == (
        "0.10.0",
        "0.11.0",
        "0.14.0",
        "0.17.0",
        "0.18.0",
        "0.21.0",
        "0.24.0",
        "0.27.0",
        "0.28.0",
    )


def test_llama_on_h100_ends_worked_out_by_hand() -> None:
    result = plan(LLAMA, advise=False)
    vr = result.version_range
    assert (vr.low.version, vr.high.version) == ("0.14.0", "0.28.0")
    assert vr.high.kv_cache_bytes == pytest.approx(result.per_gpu.kv_cache_bytes)  # the newest is the plan itself
    rows, vocab, tokens, hidden = 1024, 128_256, 8192, 4096
    sort_peak = rows * vocab * fitted("sampler_bytes_v1_sort") + tokens * hidden * 2
    v2_peak = 939_524_096
    difference = (sort_peak - v2_peak) + (fitted("non_torch_tp1_v1") - fitted("non_torch_tp1_v018"))
    assert vr.high.kv_cache_bytes - vr.low.kv_cache_bytes == pytest.approx(difference, abs=1)
    assert difference / GIB == pytest.approx(4.756 - 0.875 - 0.115, abs=0.002)  # activation 4.756 vs 0.875 GiB
    # blocks of 32 layers x 8 heads x 256 x 2 B x 16 tokens = 2 MiB; 8,192 tokens take 512 of them
    low, high = vr.concurrency_band(8192)
    assert (low, high) == (vr.low.max_concurrency, vr.high.max_concurrency)
    assert low == pytest.approx(vr.low.kv_cache_bytes // 2**21 / 512, abs=0.002)


def test_the_range_in_words_names_each_end() -> None:
    text = version_range_text(plan(LLAMA, advise=False))
    assert text.startswith("between 421,264 and 452,112 tokens")
    assert "0.14.0 sets the low end, 0.28.0 the high end; the figures above are 0.28.0's" in text


def test_no_range_with_a_version_or_another_engine() -> None:
    assert plan(LLAMA.with_changes(engine_version="0.19.0"), advise=False).version_range is None
    assert plan(LLAMA.with_changes(engine="tgi"), advise=False).version_range is None
    spec = resolve_model(LLAMA.model).spec
    assert version_range(LLAMA.with_changes(tensor_parallel_size=3), spec) is None  # refused in every version


def test_only_some_versions_start() -> None:
    # Llama-3.3-70B on 2 H100 at its 131,072 tokens starts in no version; at 16,384 tokens v0.10 and v0.17 hold
    # a request (about 20,000 tokens of KV) where v0.21 (CUDA-graph estimate) and v0.11 (sorting sampler) do not
    result = plan(
        Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", tensor_parallel_size=2, max_model_len=16384),
        advise=False,
    )
    vr = result.version_range
    assert vr.fits_in_some
    assert {v.version for v in vr.versions if v.fits} == {"0.10.0", "0.17.0"}
    assert "It starts only in 0.10.0, 0.17.0" in version_range_text(result)


def test_json_carries_the_range() -> None:
    payload = plan(LLAMA, advise=False).to_json()["version_range"]
    assert (payload["low"]["version"], payload["high"]["version"]) == ("0.14.0", "0.28.0")
    assert len(payload["versions"]) == 9


def test_a_version_newer_than_the_newest_known_is_planned_with_a_note() -> None:
    # the new-user trial: --engine-version 99.0 was accepted without a word
    newer = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", engine_version="99.0"))
    assert (
        "vLLM 99.0 is newer than the newest version the planner knows (0.28.0, versions known: 0.5 to 0.28.0); "
        "planned with 0.28.0's memory accounting"
    ) in newer.notes
    newest = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", engine_version="0.28.0"))
    assert newer.per_gpu.kv_cache_bytes == newest.per_gpu.kv_cache_bytes
    assert not [n for n in newest.notes if "newer than" in n]
