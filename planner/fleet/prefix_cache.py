"""One replica's prefix cache: KV blocks named by the hash of the tokens up to their end, kept until evicted (LRU).

vLLM's automatic prefix caching (``vllm/v1/core/block_pool.py``, ``kv_cache_utils.py`` ``hash_block_tokens``, v0.24)
names a full block of ``block_size`` tokens by a hash of its parent block's hash and its own tokens, so two requests
share a block only if they share every token before it; a partly filled block is never shared. A request's blocks
are held while it runs; when it finishes (or is preempted) they return to the free queue still holding their KV
(and their hash), and a later request whose prompt starts with the same blocks skips computing them. A free block
is reused for new KV (its hash dropped: eviction) least recently freed first. Hits are counted as vLLM counts them
(``KVCacheManager.get_computed_blocks``): the leading full blocks found, at most the prompt less its last token.

Here a prompt is a sequence of named segments (:class:`planner.loadtest.generators.Segment`: equal names are equal
text), so a block's tokens are the pieces of segments it covers and its hash chains its parent's
(:func:`block_hashes`). :class:`PrefixCache` keeps the blocks of one replica's pool: the held ones (pinned, with a
count of the running requests holding them) and the free ones in LRU order, at most ``capacity_blocks`` in all (the
pool's ``num_gpu_blocks``). The output tokens' blocks of a running request are not counted as held (they join the
cache when it finishes), which leaves the free ones a little more room than vLLM's pool has.

**The router's view.** A router that scores replicas by their cache sees a snapshot refreshed every so often
(llm-d's KV-events indexer, a scrape). :meth:`PrefixCache.refresh_view` sets the view's time ``T``; a block is in the
view when it was cached at ``T``: inserted before ``T`` and not evicted before it. Insertion and eviction times
since the last refresh are kept, so no copy of the cache is made.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from planner.errors import InvalidParameterError

__all__ = ["BlockHasher", "PrefixCache", "block_hashes"]

#: One segment of a token sequence: ``(name, tokens)``; equal names are equal tokens.
_Piece = tuple[str, int, int]


def block_hashes(segments: Iterable[tuple[str, int]], block_size: int) -> list[int]:
    """The hash of every full block of the token sequence the segments make, in order.

    Block ``i`` covers tokens ``[i·B, (i + 1)·B)``; its hash is ``hash((hash of block i − 1, pieces))``, the pieces
    being ``(segment name, first token, end token)`` of each segment it covers (vLLM's chained block hash, over
    names instead of token ids). The tokens after the last full block make no hash.

    Example:
        >>> a = block_hashes([("p", 32), ("s1", 8)], 16)
        >>> b = block_hashes([("p", 32), ("s2", 8)], 16)
        >>> len(a), a == b
        (2, True)
    """
    return BlockHasher(block_size).hashes(tuple(segments))


class BlockHasher:
    """:func:`block_hashes` with memory: the hashing state after each segment sequence seen, so a conversation's next
    turn (the previous turn's prompt and answer, then a new message) hashes only its new segments."""

    def __init__(self, block_size: int, *, memo_size: int = 65_536) -> None:
        if block_size < 1:
            raise InvalidParameterError("block_size", block_size, "an integer ≥ 1")
        self.block_size = block_size
        self._memo: OrderedDict[tuple[tuple[str, int], ...], tuple[tuple[int, ...], int, tuple[_Piece, ...], int]] = (
            OrderedDict()
        )
        self._memo_size = memo_size

    def hashes(self, segments: Sequence[tuple[str, int]], *, remember: bool = True) -> list[int]:
        """The block hashes of ``segments`` (:func:`block_hashes`); ``remember`` keeps the state for later calls."""
        key = tuple(segments)
        start = len(key)
        while start > 0 and key[:start] not in self._memo:
            start -= 1
        if start:
            done, prev, pieces_t, filled = self._memo[key[:start]]
            out, pieces = list(done), list(pieces_t)
        else:
            out, prev, pieces, filled = [], 0, [], 0
        bs = self.block_size
        for i in range(start, len(key)):
            name, n = key[i]
            pos = 0
            while pos < n:
                take = min(n - pos, bs - filled)
                pieces.append((name, pos, pos + take))
                pos += take
                filled += take
                if filled == bs:
                    prev = hash((prev, tuple(pieces)))
                    out.append(prev)
                    pieces, filled = [], 0
        if remember:
            self._memo[key] = (tuple(out), prev, tuple(pieces), filled)
            while len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)
        return out


class PrefixCache:
    """One replica's cached blocks (module docstring): held ones pinned, free ones evicted least recently freed first.

    Args:
        capacity_blocks: blocks of the pool (``num_gpu_blocks``).
        track_view: keep what a router's stale view needs (:meth:`refresh_view`); False for a router that sees the
            cache as it is.

    Example:
        >>> cache = PrefixCache(4)
        >>> cache.pin([1, 2, 3], now_s=0.0); cache.unpin([1, 2, 3])
        >>> cache.match([1, 2, 9])
        2
    """

    def __init__(self, capacity_blocks: int, *, track_view: bool = False) -> None:
        if capacity_blocks < 1:
            raise InvalidParameterError("capacity_blocks", capacity_blocks, "an integer ≥ 1")
        self.capacity_blocks = capacity_blocks
        self._free: OrderedDict[int, float] = OrderedDict()  # hash -> inserted at; first = least recently freed
        self._held: dict[int, list[float]] = {}  # hash -> [holders, inserted at]
        self._track = track_view
        self._view_s = -math.inf if track_view else math.inf
        self._evicted: dict[int, list[tuple[float, float]]] = {}  # hash -> [(inserted at, evicted at)] since the view
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._free) + len(self._held)

    def __contains__(self, block: int) -> bool:
        return block in self._held or block in self._free

    def match(self, blocks: Sequence[int]) -> int:
        """Leading blocks of ``blocks`` the cache holds now."""
        n = 0
        for block in blocks:
            if block not in self._held and block not in self._free:
                break
            n += 1
        return n

    def pin(self, blocks: Iterable[int], now_s: float) -> None:
        """A request now holds ``blocks`` (found or newly computed at ``now_s``); free ones may be evicted for room."""
        held, free = self._held, self._free
        for block in blocks:
            entry = held.get(block)
            if entry is not None:
                entry[0] += 1
            elif block in free:
                held[block] = [1, free.pop(block)]
            else:
                held[block] = [1, now_s]
        self._evict(now_s)

    def unpin(self, blocks: Iterable[int]) -> None:
        """A request let go of ``blocks`` (finished or preempted): those no one else holds become free, most recent."""
        held, free = self._held, self._free
        for block in reversed(list(blocks)):  # vLLM frees a request's blocks tail first: its last block goes first
            entry = held.get(block)
            if entry is None:
                continue
            entry[0] -= 1
            if entry[0] <= 0:
                del held[block]
                free[block] = entry[1]
                free.move_to_end(block)

    def add(self, blocks: Iterable[int], now_s: float) -> None:
        """Blocks computed at ``now_s`` and free at once (a finished request's output blocks)."""
        for block in blocks:
            if block in self._held:
                continue
            if block in self._free:
                self._free.move_to_end(block)
            else:
                self._free[block] = now_s
        self._evict(now_s)

    def _evict(self, now_s: float) -> None:
        free = self._free
        while len(free) + len(self._held) > self.capacity_blocks and free:
            block, inserted = free.popitem(last=False)
            self.evictions += 1
            if self._track:  # a later view may fall in its time in the cache
                self._evicted.setdefault(block, []).append((inserted, now_s))

    def refresh_view(self, view_s: float) -> None:
        """A router's view of the cache is now the cache as it was at ``view_s`` (a time at or before now)."""
        self._view_s = view_s
        kept = {b: [(i, e) for i, e in spans if i < view_s <= e] for b, spans in self._evicted.items()}
        self._evicted = {b: spans for b, spans in kept.items() if spans}

    def view_match(self, blocks: Sequence[int]) -> int:
        """Leading blocks of ``blocks`` in the router's view (:meth:`refresh_view`; the cache itself without one)."""
        if not self._track:
            return self.match(blocks)
        t = self._view_s
        n = 0
        for block in blocks:
            entry = self._held.get(block)
            inserted = entry[1] if entry is not None else self._free.get(block)
            if (inserted is None or inserted >= t) and not any(i < t <= e for i, e in self._evicted.get(block, ())):
                break
            n += 1
        return n
