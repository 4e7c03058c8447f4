"""KV blocks per request against counts worked by hand (vLLM's block and sliding-window rules)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from planner.predict.shape import AttentionGroup
from planner.predict.simulator.blocks import BlockPool
from tests.unit.predict.conftest import tiny_shape


def _pool(window: int | None) -> BlockPool:
    groups = (AttentionGroup("full", None, 1, 1.0),)
    if window is not None:
        groups += (AttentionGroup("sliding", window, 1, 1.0),)
    return BlockPool(replace(tiny_shape(blocks=100, block_size=16), groups=groups))


@pytest.mark.parametrize(
    ("window", "tokens", "blocks"),
    [
        (None, 1, 1),  # one token takes a whole block
        (None, 16, 1),
        (None, 17, 2),
        (None, 100, 7),  # ceil(100 / 16)
        # a 64-token window keeps at most ceil(63 / 16) + 1 = 5 blocks (the window can straddle five)
        (64, 1, 1 + 1),
        (64, 64, 4 + 4),
        (64, 80, 5 + 5),
        (64, 100, 7 + 5),
        (64, 1000, 63 + 5),
    ],
)
def test_blocks_per_request(window: int | None, tokens: int, blocks: int) -> None:
    pool = _pool(window)
    assert pool.blocks_at(tokens) == blocks
    assert pool.blocks_at_array(np.array([tokens]))[0] == blocks


def test_free_and_peak() -> None:
    pool = _pool(None)
    assert (pool.free, pool.peak) == (100, 0)
    pool.free -= 30
    pool.note_peak()
    pool.free += 20
    pool.note_peak()
    assert (pool.free, pool.peak) == (90, 30)  # the peak stays at the most in use
