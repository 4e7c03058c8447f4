"""The replica's prefix cache: chained block hashes, held and free blocks, LRU eviction, a router's stale view."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.fleet.prefix_cache import BlockHasher, PrefixCache, block_hashes


def test_blocks_chain_on_everything_before_them() -> None:
    # 40 tokens of blocks of 16: two full blocks (the last 8 tokens make none). Same first 32 tokens → same hashes;
    # a different first segment changes every block after it, even where the later text is equal.
    a = block_hashes([("sys", 20), ("u1", 20)], 16)
    b = block_hashes([("sys", 20), ("u1", 12), ("x", 8)], 16)
    c = block_hashes([("other", 20), ("u1", 20)], 16)
    assert len(a) == 2
    assert a == b
    assert not set(a) & set(c)
    # a block cut differently is another block: 16 tokens of "p" then "q" is not "p" 8 + "p" 8 ... of another name
    assert block_hashes([("p", 16)], 16) != block_hashes([("p", 8), ("q", 8)], 16)


def test_the_hasher_remembers_a_prefix() -> None:
    hasher = BlockHasher(16)
    turn0 = hasher.hashes([("c0t0", 32), ("c0a0", 16)])
    turn1 = hasher.hashes([("c0t0", 32), ("c0a0", 16), ("c0t1", 40)])
    assert turn1[:3] == turn0
    assert turn1 == block_hashes([("c0t0", 32), ("c0a0", 16), ("c0t1", 40)], 16)


def test_lru_evicts_the_least_recently_freed_unheld_block() -> None:
    cache = PrefixCache(4)
    cache.pin([1, 2], now_s=0.0)
    cache.unpin([1, 2])  # freed tail first: 2, then 1 (1 is the most recent)
    cache.pin([3, 4], now_s=1.0)  # held: never evicted
    assert len(cache) == 4
    cache.add([5], now_s=2.0)  # one too many: the least recently freed free block goes, 2
    assert 2 not in cache and 1 in cache and 5 in cache
    assert cache.evictions == 1
    cache.add([6, 7], now_s=3.0)  # 1 and 5 go; 3 and 4 are held
    assert sorted(b for b in (1, 3, 4, 5, 6, 7) if b in cache) == [3, 4, 6, 7]
    assert cache.match([3, 4, 6]) == 3
    assert cache.match([9, 3]) == 0


def test_a_block_held_twice_stays_until_both_let_go() -> None:
    cache = PrefixCache(2)
    cache.pin([1], 0.0)
    cache.pin([1], 0.0)
    cache.unpin([1])
    cache.add([2, 3], 1.0)  # 1 is still held: 2 is evicted for 3
    assert 1 in cache and 2 not in cache and 3 in cache


def test_a_stale_view_sees_the_cache_as_it_was() -> None:
    cache = PrefixCache(2, track_view=True)
    cache.add([1, 2], now_s=1.0)
    cache.refresh_view(5.0)
    cache.add([3], now_s=6.0)  # evicts 1 at 6 s
    assert cache.match([1, 2]) == 0  # the cache itself no longer has 1
    assert cache.view_match([1, 2]) == 2  # the router still sees 1 and 2 (as at 5 s)
    assert cache.view_match([3]) == 0  # and not 3, cached after its view
    cache.refresh_view(7.0)
    assert cache.view_match([1, 2]) == 0 and cache.view_match([2]) == 1 and cache.view_match([3]) == 1


def test_without_a_stale_view_the_router_sees_the_cache() -> None:
    cache = PrefixCache(4)
    cache.add([1, 2], 0.0)
    assert cache.view_match([1, 2, 3]) == 2


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_sizes_are_named(bad: int) -> None:
    with pytest.raises(InvalidParameterError) as exc:
        PrefixCache(bad)
    assert exc.value.name == "capacity_blocks"
    with pytest.raises(InvalidParameterError):
        BlockHasher(bad)
