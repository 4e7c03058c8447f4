"""The demo server's prefix cache, as vLLM V1's ``KVCacheManager`` keeps one: full blocks of 16 prompt tokens, each
block's hash chained to the one before (``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``), least recently
used dropped past the 2,048-block pool; the prompt's last token is always computed, never a hit."""

from __future__ import annotations

from typing import Any

from planner.demo.script import prompt_units
from planner.demo.state import KV_BLOCK_SIZE, KV_NUM_GPU_BLOCKS, STATE

__all__ = ["cache_prompt", "prefill_s"]


def cache_prompt(body: dict[str, Any]) -> int:
    """Look the prompt up in the prefix cache and keep its blocks; the tokens served from the cache (0 when caching
    is off). Counts ``prefix_cache_queries`` (every prompt token) and ``prefix_cache_hits``."""
    if not STATE.prefix_caching:
        return 0
    units = prompt_units(body)
    hashes, parent = [], 0
    for start in range(0, len(units) - len(units) % KV_BLOCK_SIZE, KV_BLOCK_SIZE):
        parent = hash((parent, tuple(units[start : start + KV_BLOCK_SIZE])))
        hashes.append(parent)
    hit_blocks = 0
    for h in hashes[: (len(units) - 1) // KV_BLOCK_SIZE]:  # the last token is always computed
        if h not in STATE.blocks:
            break
        hit_blocks += 1
    for h in hashes:
        STATE.blocks[h] = None
        STATE.blocks.move_to_end(h)
    while len(STATE.blocks) > KV_NUM_GPU_BLOCKS:
        STATE.blocks.popitem(last=False)
    hits = hit_blocks * KV_BLOCK_SIZE
    STATE.prefix_queries += len(units)
    STATE.prefix_hits += hits
    return hits


def prefill_s(body: dict[str, Any]) -> float:
    """Extra time to the first token: ``prefill_ms_per_token`` for each prompt token not served from the cache
    (the lookup is counted, so call it once per request)."""
    hits = cache_prompt(body)
    if not STATE.prefill_ms_per_token:
        return 0.0
    return STATE.prefill_ms_per_token / 1000 * max(0, len(prompt_units(body)) - hits)
