"""planner.demo.prefix_cache: full blocks of 16 prompt tokens chained as vLLM V1 hashes them, the last token never a
hit, least recently used blocks dropped past the 2,048-block pool."""

from __future__ import annotations

from planner.demo.prefix_cache import cache_prompt, prefill_s
from planner.demo.state import KV_NUM_GPU_BLOCKS, STATE


def _ids(n: int, start: int = 0) -> dict[str, list[int]]:
    return {"prompt": list(range(start, start + n))}


def test_off_by_default(clock) -> None:
    assert cache_prompt(_ids(64)) == 0 and cache_prompt(_ids(64)) == 0
    assert (STATE.prefix_queries, STATE.prefix_hits, len(STATE.blocks)) == (0, 0, 0)


def test_hits_are_whole_leading_blocks_never_the_last_token(clock) -> None:
    STATE.prefix_caching = True
    assert cache_prompt(_ids(64)) == 0  # 4 blocks kept
    assert len(STATE.blocks) == 4
    # the same 64 tokens: (64 − 1) // 16 = 3 blocks may hit (the 4th holds the last token, always computed)
    assert cache_prompt(_ids(64)) == 48
    # 70 tokens sharing the first 64: 4 full blocks may hit ((70 − 1) // 16 = 4), the 6 left are not a block
    assert cache_prompt(_ids(70)) == 64
    # a prompt that differs in its first token shares no block: each hash chains to the one before
    assert cache_prompt({"prompt": [999, *range(1, 64)]}) == 0
    assert (STATE.prefix_queries, STATE.prefix_hits) == (64 + 64 + 70 + 64, 48 + 64)


def test_least_recently_used_blocks_go_past_the_pool(clock) -> None:
    STATE.prefix_caching = True
    first = _ids(16 * KV_NUM_GPU_BLOCKS)  # fills the pool: 2,048 blocks
    cache_prompt(first)
    cache_prompt(_ids(32, start=10**6))  # 2 more blocks: the 2 least recently used (the first's first two) go
    assert len(STATE.blocks) == KV_NUM_GPU_BLOCKS
    assert cache_prompt(_ids(17)) == 0  # its first block was dropped


def test_prefill_time_counts_the_tokens_not_cached(clock) -> None:
    STATE.prefix_caching, STATE.prefill_ms_per_token = True, 0.05
    assert prefill_s(_ids(100)) == 0.05e-3 * 100  # nothing cached yet: 5 ms
    assert prefill_s(_ids(100)) == 0.05e-3 * (100 - 96)  # 6 blocks of 16 hit: 0.2 ms
    STATE.prefill_ms_per_token = 0.0
    assert prefill_s(_ids(100)) == 0.0
