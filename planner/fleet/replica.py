"""One replica of a fleet: the continuous-batching engine (:class:`planner.predict.simulator.ReplicaEngine`), its own
prefix cache (:class:`planner.fleet.prefix_cache.PrefixCache`) and what each of its requests is.

The engine asks the replica, through its hooks (:class:`planner.predict.simulator.EngineHooks`), how many of a
request's tokens the cache holds when it is next to be admitted (vLLM looks the cache up then: ``Scheduler.schedule``
→ ``KVCacheManager.get_computed_blocks``), and tells it when the request is admitted (its prompt's full blocks are
held and cached: vLLM caches a block as soon as it is scheduled to be filled), preempted (they are let go, still
cached) and finished (they are let go; its output's full blocks join the cache). Hits are counted once per request,
at its first admission, as vLLM's ``prompt_tokens_by_source`` counts them: ``min(blocks found, ⌊(tokens − 1) / B⌋) ·
B`` tokens (the last token is always computed).

KV received from another instance (a decode replica of a prefill/decode pair, :mod:`planner.fleet.disaggregation`) is
``remote_tokens`` of a request: they start computed as cached tokens do, and are not counted as hits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from planner.fleet.prefix_cache import BlockHasher, PrefixCache
from planner.fleet.workload import FleetRequest
from planner.predict.shape import StepShape
from planner.predict.simulator import ReplicaEngine
from planner.predict.step_time import StepCoefficients

__all__ = ["Replica"]


class Replica:
    """One replica (module docstring).

    Args:
        index: its place in the fleet.
        shape / coefficients: the deployment and the step model.
        hasher: the fleet's block hasher (shared: a conversation's prefix is hashed once).
        track_view: its cache keeps what a stale router view needs.
        on_finish: called as ``on_finish(replica index, engine index)`` when a request's last token is made.
    """

    def __init__(
        self,
        index: int,
        shape: StepShape,
        coefficients: StepCoefficients | np.ndarray,
        *,
        hasher: BlockHasher,
        track_view: bool,
        on_finish: Callable[[int, int], None],
    ) -> None:
        self.index = index
        self.block_size = shape.block_size
        self.engine = ReplicaEngine(shape, coefficients, hooks=self)
        self.cache = PrefixCache(shape.num_gpu_blocks, track_view=track_view)
        self._hasher = hasher
        self._on_finish = on_finish
        self._prompt_blocks: list[list[int]] = []
        self._requests: list[FleetRequest] = []
        self._remote: list[int] = []
        self._lookup: list[int] = []
        self._pinned: list[bool] = []
        #: per engine index: the fleet's request index
        self.request_of: list[int] = []
        #: per engine index: prompt tokens found in the cache at its first admission (None before it)
        self.hit_tokens: list[int | None] = []

    def prompt_blocks(self, request: FleetRequest) -> list[int]:
        """The block hashes of ``request``'s prompt."""
        return self._hasher.hashes(request.segments)

    def submit(
        self, fleet_index: int, request: FleetRequest, sent_s: float, *, output_len: int | None = None, remote: int = 0
    ) -> int:
        """Send ``request`` to this replica at ``sent_s``; ``output_len`` overrides its answer's length (a prefill
        instance makes one token), ``remote`` of its tokens arrive computed from elsewhere. Returns its engine index.

        Raises:
            InvalidParameterError: from the engine (a request longer than ``max_model_len`` or the KV cache).
        """
        j = self.engine.submit(request.prompt_tokens, output_len or request.output_len, sent_s)
        self._prompt_blocks.append(self.prompt_blocks(request))
        self._requests.append(request)
        self._remote.append(remote)
        self._lookup.append(0)
        self._pinned.append(False)
        self.request_of.append(fleet_index)
        self.hit_tokens.append(None)
        return j

    # --- the engine's hooks (planner.predict.simulator.EngineHooks) ------------------------------------------------
    def cached_tokens(self, j: int) -> int:
        prompt, generated = self.engine.tokens(j)
        found = self.cache.match(self._prompt_blocks[j])
        hit = min(found, (prompt + generated - 1) // self.block_size) * self.block_size
        self._lookup[j] = hit
        return max(hit, self._remote[j])

    def admitted(self, j: int) -> None:
        if self.hit_tokens[j] is None:
            self.hit_tokens[j] = self._lookup[j]
        self.cache.pin(self._prompt_blocks[j], self.engine.now_s)
        self._pinned[j] = True

    def preempted(self, j: int) -> None:
        if self._pinned[j]:
            self.cache.unpin(self._prompt_blocks[j])
            self._pinned[j] = False

    def finished(self, j: int) -> None:
        request = self._requests[j]
        if self._pinned[j]:
            self.cache.unpin(self._prompt_blocks[j])
            self._pinned[j] = False
        _, generated = self.engine.tokens(j)
        whole = self._hasher.hashes((*request.segments, (request.output_key, generated)))
        self.cache.add(whole[len(self._prompt_blocks[j]) :], self.engine.now_s)
        self._on_finish(self.index, j)
