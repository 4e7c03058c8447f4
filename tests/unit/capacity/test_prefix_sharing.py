"""The shared-prefix what-if on a block pool (hand-worked figures)."""

from __future__ import annotations

import pytest

from planner.capacity.prefix_sharing import shared_prefix_concurrency
from planner.errors import InvalidParameterError


def test_llama_8b_on_an_h200_at_8192():
    # vLLM 0.24.0 on one H200 (bench/data/h200_sweeps/README.md): 896,912 KV tokens = 56,057 blocks of 16.
    # 8,192 tokens = 512 blocks a request: ⌊56,057 / 512⌋ = 109 unshared. Half shared: 256 blocks once, 256 each:
    # ⌊(56,057 − 256) / 256⌋ = 217.
    plan = shared_prefix_concurrency(56_057, 16, 8192, 0.5)
    assert (plan.shared_blocks, plan.own_blocks_per_request) == (256, 256)
    assert (plan.max_concurrency_unshared, plan.max_concurrency) == (109, 217)
    assert plan.kv_tokens_per_request == 4096 and plan.gain == pytest.approx(217 / 109)


def test_only_whole_blocks_are_shared():
    # 100 tokens = 7 blocks (⌈100/16⌉); 30% = 30 tokens = 1 whole block shared; 6 own. ⌊(100 − 1) / 6⌋ = 16
    plan = shared_prefix_concurrency(100, 16, 100, 0.3)
    assert (plan.shared_blocks, plan.own_blocks_per_request, plan.max_concurrency) == (1, 6, 16)
    assert plan.max_concurrency_unshared == 14  # ⌊100 / 7⌋


def test_everything_shared_still_leaves_a_block_each():
    # 64 tokens = 4 blocks; the last is always the request's own: 3 shared, 1 each; ⌊(10 − 3) / 1⌋ = 7
    plan = shared_prefix_concurrency(10, 16, 64, 1.0)
    assert (plan.shared_blocks, plan.own_blocks_per_request, plan.max_concurrency) == (3, 1, 7)
    assert shared_prefix_concurrency(2, 16, 64, 1.0).max_concurrency == 0  # not even the shared blocks fit


@pytest.mark.parametrize(
    ("args", "name"),
    [((10, 16, 64, 1.5), "share_ratio"), ((10, 0, 64, 0.5), "block_size_tokens"), ((10, 16, 0, 0.5), "context")],
)
def test_bad_input(args, name):
    with pytest.raises(InvalidParameterError, match=name):
        shared_prefix_concurrency(*args)
