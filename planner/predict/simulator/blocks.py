"""The KV-cache block pool: how many blocks a request holds at a given token count, and the pool's free and peak.

Blocks per request: ``ceil(tokens / block_size)`` per full-attention KV-cache group; a sliding-window (or chunked)
group keeps at most ``ceil((window − 1) / block_size) + 1`` (blocks wholly outside the window are freed:
``vllm/v1/core/single_type_kv_cache_manager.py`` ``SlidingWindowManager.remove_skipped_blocks``, v0.24). The pool
has ``num_gpu_blocks`` blocks, from the capacity plan. A running request always holds exactly the blocks of its
computed tokens (``blocks_at(computed)``): every step allocates what its new tokens need before they are computed.
"""

from __future__ import annotations

import numpy as np

from planner.predict.shape import StepShape

__all__ = ["BlockPool"]


class BlockPool:
    """The pool of one run: block arithmetic per request and the free and peak counts.

    Attributes:
        block_size: tokens per block.
        num_gpu_blocks: the pool's size, blocks.
        full_groups: KV-cache groups with full attention (each holds ``ceil(tokens / block_size)`` blocks).
        window_caps: per sliding-window group, the most blocks it holds per request.
        free: blocks not held by any request now.
        peak: most blocks in use at once so far (:meth:`note_peak`).
    """

    def __init__(self, shape: StepShape) -> None:
        bs = shape.block_size
        self.block_size = bs
        self.num_gpu_blocks = shape.num_gpu_blocks
        self.full_groups = sum(1 for g in shape.groups if g.window_tokens is None)
        self.window_caps = [-(-(g.window_tokens - 1) // bs) + 1 for g in shape.groups if g.window_tokens is not None]
        self.free = shape.num_gpu_blocks
        self.peak = 0

    def blocks_at(self, tokens: int) -> int:
        """Blocks a request of ``tokens`` computed tokens holds."""
        per = -(-tokens // self.block_size)
        if not self.window_caps:
            return self.full_groups * per
        return self.full_groups * per + sum(min(per, cap) for cap in self.window_caps)

    def blocks_at_array(self, tokens: np.ndarray) -> np.ndarray:
        """:meth:`blocks_at` of each element (integer array in, integer array of the same shape out)."""
        per = -(-tokens // self.block_size)
        total = self.full_groups * per
        for cap in self.window_caps:
            total = total + np.minimum(per, cap)
        return total

    def note_peak(self) -> None:
        """Record the blocks in use now if they are the most so far."""
        used = self.num_gpu_blocks - self.free
        if used > self.peak:
            self.peak = used
