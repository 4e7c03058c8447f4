"""What a shared prompt prefix does to KV-cache concurrency: a what-if on a plan's block pool.

With prefix caching (vLLM V1 ``KVCacheManager``, ``vllm/v1/core/kv_cache_manager.py`` and ``kv_cache_utils.py``:
blocks hashed by their tokens and the blocks before them, one physical block per hash, reference-counted), requests
whose prompts start with the same tokens hold the same physical blocks for that prefix. Only WHOLE blocks are shared:
a block is reused only once it is full, so a shared prefix of ``s`` tokens shares ⌊s / B⌋ blocks of B tokens, and
every request still holds its own blocks for the rest.

With N requests of L tokens each whose first s = r·L tokens are the same (share ratio r):

    shared blocks   S = min(⌊r·L / B⌋, ⌈L / B⌉ − 1)  (held once, whatever N; the last block is always the request's)
    own blocks      b = ⌈L / B⌉ − S              (per request)
    N_max           = ⌊(num_gpu_blocks − S) / b⌋ (and N_max = ⌊num_gpu_blocks / ⌈L / B⌉⌋ without sharing)

The sliding-window and hybrid groups of :mod:`planner.capacity.kv_layout` are left out: this is the full-attention
what-if (every layer keeps every token), the common case and the one the ratio speaks to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.errors import InvalidParameterError

__all__ = ["SharedPrefixPlan", "shared_prefix_concurrency"]


@dataclass(frozen=True)
class SharedPrefixPlan:
    """Concurrency of requests sharing a prefix, on one engine's block pool.

    Attributes:
        share_ratio: The share of each request's tokens that is a prefix common to all, 0–1.
        context_tokens: Tokens per request (prompt and output).
        block_size_tokens: Tokens per KV block.
        shared_blocks: Blocks of the common prefix, held once.
        own_blocks_per_request: Blocks each request holds for itself.
        max_concurrency: Requests that fit at once with the prefix shared.
        max_concurrency_unshared: The same without sharing (every request holds all its blocks).
    """

    share_ratio: float
    context_tokens: int
    block_size_tokens: int
    shared_blocks: int
    own_blocks_per_request: int
    max_concurrency: int
    max_concurrency_unshared: int

    @property
    def kv_tokens_per_request(self) -> int:
        """KV tokens a request holds for itself (its own blocks × block size)."""
        return self.own_blocks_per_request * self.block_size_tokens

    @property
    def gain(self) -> float | None:
        """``max_concurrency / max_concurrency_unshared``; None when nothing fits unshared."""
        return self.max_concurrency / self.max_concurrency_unshared if self.max_concurrency_unshared else None


def shared_prefix_concurrency(
    num_gpu_blocks: int, block_size_tokens: int, context_tokens: int, share_ratio: float
) -> SharedPrefixPlan:
    """Requests of ``context_tokens`` tokens that fit in ``num_gpu_blocks`` when ``share_ratio`` of each is a prefix
    common to all (formulas in the module docstring).

    Args:
        num_gpu_blocks: The engine's KV blocks (vLLM "GPU KV cache size" / block size; one engine, TP ranks holding
            their share of each block).
        block_size_tokens: Tokens per block (vLLM ``--block-size``, 16 by default).
        context_tokens: Tokens per request, ≥ 1.
        share_ratio: Share of each request's tokens that is a common prefix, in [0, 1].

    Returns:
        The :class:`SharedPrefixPlan`.

    Raises:
        InvalidParameterError: a count < 1 (blocks ≥ 0) or a ratio outside [0, 1].

    Example:
        >>> p = shared_prefix_concurrency(56_057, 16, 8192, 0.5)   # Llama-3.1-8B on an H200: 896,912 tokens
        >>> p.max_concurrency_unshared, p.max_concurrency
        (109, 217)
    """
    for name, value, low in (
        ("num_gpu_blocks", num_gpu_blocks, 0),
        ("block_size_tokens", block_size_tokens, 1),
        ("context_tokens", context_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidParameterError(name, value, f"an integer ≥ {low}")
    if isinstance(share_ratio, bool) or not isinstance(share_ratio, int | float) or not 0 <= share_ratio <= 1:
        raise InvalidParameterError("share_ratio", share_ratio, "a share in [0, 1]")
    per_request = math.ceil(context_tokens / block_size_tokens)
    shared = math.floor(share_ratio * context_tokens / block_size_tokens)
    # a request's last block is its own (vLLM always computes the last prompt token; output tokens are not shared)
    shared = min(shared, per_request - 1)
    own = per_request - shared
    with_sharing = max(0, (num_gpu_blocks - shared) // own) if num_gpu_blocks >= shared else 0
    return SharedPrefixPlan(
        share_ratio=float(share_ratio),
        context_tokens=context_tokens,
        block_size_tokens=block_size_tokens,
        shared_blocks=shared,
        own_blocks_per_request=own,
        max_concurrency=with_sharing,
        max_concurrency_unshared=num_gpu_blocks // per_request,
    )
