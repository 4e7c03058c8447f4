"""The explanations of vLLM plans: the figures they quote, worked out by hand (see ``test_kv_layout.py`` for the
formulas and config.json values; vLLM ``vllm/v1/core/kv_cache_utils.py``, v0.10–v0.24).

Block counts are the planner's figures (issue 11 quoted gemma-2-9b's 19,187 blocks; issue 16's mechanisms give
19,345); everything else is derived from them in the comments. Integers exact; ratios within 0.05.
"""

from __future__ import annotations

import pytest

from planner.capacity.explain import compare_versions, explain, layout_rows, max_model_len_text
from planner.capacity.plan import plan
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from tests.unit.capacity.test_kv_layout import GEMMA_2_9B, GPT_OSS_20B, H100, LLAMA_70B_TP16


def _text(lines) -> str:
    return "\n".join(lines)


def test_gemma_2_9b_says_why_tokens_are_not_blocks_times_16() -> None:
    result = plan(GEMMA_2_9B)
    text = _text(explain(result).lines)
    assert "2 KV-cache groups of 21 layers" in text
    assert "1 sliding-window group (21 layers, window 4,096 tokens)" in text
    # 19,345 blocks x 16 = 309,520 is not the token count: each token takes a slot in both groups,
    # 19,345 // 2 x 16 = 9,672 x 16 = 154,752; v0.24+ prints int(19345 / 1025 x 8192) = 154,609
    assert "19,345 × 16 = 309,520" in text
    assert "19,345 // 2 × 16 = 154,752" in text
    assert "int(18.8732 × 8,192) = 154,609 tokens" in text
    # 513 blocks in the sliding group (min(4095 + 8192, 8192) = 8,192 tokens + 1 block), 512 in the full group
    assert "513 blocks in the sliding-window group" in text and "512 blocks in the full-attention group" in text
    assert "19,345 blocks / 1,025 blocks per request = 18.87x" in text
    assert "344,064 B per GPU" in text  # labelled per GPU: 42 x 8 x 512 x 2 B


def test_gemma_2_9b_longest_fit_is_the_model_limit() -> None:
    result = plan(GEMMA_2_9B)
    fit = explain(result).longest_fit
    # (19,345 - 769) x 16 = 297,216 tokens by memory, capped at max_position_embeddings 8,192
    assert (fit.longest_by_memory_tokens, fit.longest_tokens, fit.limited_by) == (
        297_216,
        8_192,
        "max_position_embeddings",
    )
    assert fit.num_gpu_blocks == 19_345 and fit.block_bytes == 2_752_512
    assert 0 <= fit.rounding_loss_bytes < fit.block_bytes  # whole blocks: less than one block is left over
    assert fit.advice_tokens is None  # it fits: no shorter length is advised


def test_longest_fit_rounding_block_then_advice() -> None:
    # Llama-3.1-8B-Instruct on an RTX 4090 at its 131,072 tokens: 2,901 blocks (the planner's figure: v0.24+ runs
    # Llama on the V2 model runner, whose lean sampler leaves the 2,048-token forward as the peak) of 2 MiB
    # (16 x 8 x 256 x 2 B x 32 layers = 2,097,152 B). Full attention only: longest = 2,901 x 16 = 46,416 tokens
    # (the verdict's "about 46,416"); the advice rounds down to a multiple of 1,024: 45 x 1024 = 46,080.
    result = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", engine_version="0.28.0"))
    assert not result.fits and "about 46,416 tokens" in result.reason
    fit = explain(result).longest_fit
    assert (fit.num_gpu_blocks, fit.block_bytes) == (2_901, 2_097_152)
    assert (fit.longest_tokens, fit.limited_by, fit.advice_tokens) == (46_416, "kv_cache", 46_080)
    assert "2,901 × 16 = 46,416" in _text(fit.lines)
    assert "--max-model-len 46080" in _text(fit.lines)
    assert result.advice[0].change == "--max-model-len 46080"  # what the advice offers is what is explained


def test_llama_70b_tp16_labels_per_gpu_and_whole_model() -> None:
    result = plan(LLAMA_70B_TP16)
    text = _text(explain(result).lines)
    # 80 layers x 1 head x 256 x 2 B = 40,960 B per GPU; distinct 80 x 8 x 256 x 2 = 327,680 B; stored 16 x 40,960
    assert "40,960 B per GPU" in text and "1 of the 8 KV heads on each GPU" in text
    assert "each head is cached on 2 GPUs" in text
    assert "327,680 B of distinct K/V per token, 655,360 B stored over the 16 GPUs" in text
    assert "98,210 blocks / 512 blocks per request = 191.82x" in text


def test_gpt_oss_window_capped_by_a_prefill_chunk() -> None:
    result = plan(GPT_OSS_20B)
    text = _text(explain(result).lines)
    # min(128 - 1 + 8192, 16000) = 8,319 tokens -> 521 blocks; full 1,000; 147,071 / 1,521 = 96.69x
    assert "min(128 − 1 + 8,192 batched tokens, 16,000) = 8,319 tokens" in text
    assert "147,071 blocks / 1,521 blocks per request = 96.69x" in text
    assert "37,380 B per token per GPU" in text  # 1521 x 393,216 B / 16,000


def test_gemma_3_versions_same_tokens_four_times_the_concurrency() -> None:
    # v0.9: 6,626 blocks / 8,192 per request = 0.809x; v0.11 (the hybrid manager, the same sort-path sampler):
    # 39,714 / 11,077 = 3.585x; 3.585 / 0.809 = 4.43. Tokens 6,626 x 16 = 106,016 and 39,714 // 6 x 16 = 105,904: the
    # same memory less the wider forward of 8,192 batched tokens (2,048 in v0.9)
    old = plan(Scenario(model="google/gemma-3-12b-it", gpu=H100, engine_version="0.9.0"), advise=False)
    new = plan(Scenario(model="google/gemma-3-12b-it", gpu=H100, engine_version="0.11.0"), advise=False)
    change = compare_versions(new, old)  # either order: the older version comes first
    assert (change.old_version, change.new_version) == ("0.9.0", "0.11.0")
    text = _text(change.lines)
    assert "hybrid KV-cache manager landed" in text
    assert "6,626 → 39,714 blocks" in text and "8,192 → 11,077" in text
    assert "0.81x → 3.59x (4.4×)" in text
    assert new.max_concurrency / old.max_concurrency == pytest.approx((39_714 / 11_077) / (6_626 / 8_192), abs=0.05)
    figures = {f.label: (f.old, f.new) for f in change.figures}
    assert figures["KV-cache groups"] == ("1", "6")
    assert figures["GPU KV cache size (tokens)"] == ("106,016", "105,904")


def test_compare_versions_needs_one_scenario_and_two_accountings() -> None:
    a = plan(Scenario(model="google/gemma-3-12b-it", gpu=H100, engine_version="0.11.0"), advise=False)
    b = plan(Scenario(model="google/gemma-3-12b-it", gpu=H100, engine_version="0.12.0"), advise=False)
    assert compare_versions(a, b) is None  # 0.11 and 0.12 share one profile
    other = plan(Scenario(model="google/gemma-2-9b", gpu=H100, engine_version="0.9.0"), advise=False)
    assert compare_versions(a, other) is None  # not the same scenario


def test_tokens_rule_before_v024_is_blocks_over_groups() -> None:
    # v0.19 (log id 54's version): tokens = num_blocks // 2 groups x 16
    result = plan(Scenario(model="google/gemma-2-9b", gpu=H100, max_model_len=8192, engine_version="0.19.0"))
    blocks = result.num_gpu_blocks
    assert result.kv_cache_tokens == blocks // 2 * 16
    assert f"{blocks:,} // 2 × 16 = {blocks // 2 * 16:,}" in _text(explain(result).lines)


def test_no_explanation_for_tgi_or_a_refused_configuration() -> None:
    assert explain(plan(Scenario(engine="tgi", model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100))) is None
    refused = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu=H100, tensor_parallel_size=3))
    assert refused.refused and explain(refused) is None


def test_layout_rows_say_n_a_for_full_attention_window() -> None:
    result = plan(GEMMA_2_9B)
    rows = {r["attention"]: r for r in layout_rows(result.kv_layout)}
    assert rows["full attention"]["window"] == "n/a"
    assert rows["sliding window"]["window"] == "4,096"
    assert rows["sliding window"]["blocks/request (each group)"] == "513"
    assert rows["full attention"]["KV bytes/token/GPU"] == "172,032 B"


def test_max_model_len_text_names_auto_and_its_value() -> None:
    fixed = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", max_model_len=8192))
    auto = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="rtx-4090", max_model_len=MAX_MODEL_LEN_AUTO))
    assert max_model_len_text(fixed) == "8,192 tokens"
    assert max_model_len_text(auto) == "auto → 46,416 tokens"  # 2,901 blocks x 16
    assert "the launch command passes auto" in _text(explain(auto).longest_fit.lines)


def test_range_text_when_no_version_has_room_for_kv() -> None:
    from planner.capacity.explain import version_range_text

    # Llama-3.3-70B in bf16 is 131 GiB of weights: not one L4 (22 GiB) holds them in any version
    result = plan(Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu="l4"), advise=False)
    text = version_range_text(result)
    assert text == "it does not fit in any vLLM version from 0.10.0 on (no room for one KV block)"
