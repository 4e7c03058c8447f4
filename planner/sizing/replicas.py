"""The fewest replicas of each configuration, cheapest configuration first: a uniform-cost search over
(configuration, replicas) with one evaluation per step.

Each configuration enters with the fewest replicas its bound allows and a cost per replica. A heap orders the
entries by cost (replicas × cost per replica); the cheapest is evaluated (in the sizing search: one simulation of a
replica at its share of the load):

* **met**: the configuration passes at these replicas; when the count below is known to miss, this is its answer
  (*resolved*); when that count is ruled out by a bound that is not sure, it is evaluated once to check the bound;
  otherwise the midpoint between the two is pushed (bisection);
* **missed**: the count is too few; before any pass the count grows by the evaluation's excess ratio (how far the
  binding SLO was missed), clamped to [:data:`GROW_MIN`, :data:`GROW_MAX`], at least by one; after a pass, the
  midpoint is pushed.

Entries leave the heap in cost order, so the first configurations resolved are the cheapest: the search stops once
``keep`` are resolved and the cheapest entry left costs at least as much as the ``keep``-th (nothing left can beat
them), or after ``max_evaluations``. A configuration that would need more than ``max_replicas`` gives up.

Example (hand-worked: a replica meets the SLOs up to 3 req/s; 20 req/s with 20% headroom = 24 req/s; the bound
allows 4 req/s a replica, so the search starts at ⌈24 / 4⌉ = 6 replicas and misses there (4 req/s, 1.33× the
capacity), grows to ⌈6 × 1.33⌉ = 8 and meets (3 req/s), then misses at the midpoint 7 (3.43 req/s): 8 it is)::

    states, runs = cheapest_replicas([(1.0, 6)], lambda i, r: (24 / r <= 3.0, 24 / r / 3.0))
    states[0].passed  # 8
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["GROW_MAX", "GROW_MIN", "ReplicaState", "cheapest_replicas"]

#: Least and most factor by which the replicas grow after a miss.
GROW_MIN, GROW_MAX = 1.1, 2.0
_EPS = 1e-9


@dataclass
class ReplicaState:
    """The search's knowledge of one configuration.

    Attributes:
        index: the configuration's position in the input.
        usd_per_replica: cost of one replica.
        failed: most replicas known to miss (0 when none is; the bound rules out fewer than its least).
        passed: fewest replicas known to meet; None before a pass.
        tried: ``(replicas, met)`` of each evaluation, in order.
        resolved: ``passed`` is the answer: ``passed − 1`` replicas miss.
        given_up: why the search gave this configuration up (too many replicas); None otherwise.
        by_bound: ``failed`` is ruled out by the bound alone, not yet by an evaluation.
    """

    index: int
    usd_per_replica: float
    failed: int
    passed: int | None = None
    tried: list[tuple[int, bool]] = field(default_factory=list)
    resolved: bool = False
    given_up: str | None = None
    by_bound: bool = False

    def cost(self, replicas: int) -> float:
        """Cost of ``replicas`` replicas."""
        return replicas * self.usd_per_replica


def cheapest_replicas(
    entries: Sequence[tuple[float, int] | tuple[float, int, bool]],
    evaluate: Callable[[int, int], tuple[bool, float]],
    *,
    keep: int = 3,
    max_evaluations: int = 40,
    max_replicas: int = 4096,
    on_step: Callable[[int, int, int], object] | None = None,
) -> tuple[list[ReplicaState], int]:
    """Search the fewest replicas of each configuration, cheapest first (module docstring).

    Args:
        entries: per configuration, ``(cost per replica, fewest replicas the bound allows ≥ 1)``, and optionally
            whether that bound is sure (True: the count below it is not checked; default False).
        evaluate: ``evaluate(index, replicas) -> (met, excess)``: whether the configuration meets the SLOs with
            ``replicas`` replicas, and by what ratio it missed (≥ 1 when it missed; inf when unknown).
        keep: configurations to resolve before stopping.
        max_evaluations: most evaluations.
        max_replicas: most replicas of one configuration.
        on_step: called as ``on_step(evaluations done, index, replicas)`` before each evaluation.

    Returns:
        ``(states in input order, evaluations run)``; the resolved ones have ``resolved`` set.
    """
    states = [
        ReplicaState(i, e[0], failed=max(0, e[1] - 1), by_bound=e[1] > 1 and not (len(e) > 2 and e[2]))
        for i, e in enumerate(entries)
    ]
    heap: list[tuple[float, int, int, int]] = []
    seq = 0

    def push(s: ReplicaState, replicas: int) -> None:
        nonlocal seq
        if replicas > max_replicas:
            s.given_up = f"not sized: needs more than {max_replicas:,} replicas (the search's limit) to meet the SLOs"
            return
        heapq.heappush(heap, (s.cost(replicas), seq, replicas, s.index))
        seq += 1

    for s, entry in zip(states, entries, strict=True):
        push(s, max(1, entry[1]))
    kept: list[float] = []
    runs = 0
    while heap and runs < max_evaluations:
        if len(kept) >= keep and heap[0][0] >= sorted(kept)[keep - 1] - _EPS:
            break  # nothing left can be cheaper than the configurations kept
        _, _, replicas, index = heapq.heappop(heap)
        s = states[index]
        if s.resolved or replicas <= s.failed or (s.passed is not None and replicas >= s.passed):
            continue  # a stale entry
        if on_step is not None:
            on_step(runs, index, replicas)
        met, excess = evaluate(index, replicas)
        runs += 1
        s.tried.append((replicas, met))
        if met:
            s.passed = replicas
        else:
            s.failed, s.by_bound = replicas, False
        if s.passed is not None and s.passed - s.failed <= 1 and s.by_bound:
            # the count below is ruled out by the bound alone: one evaluation checks it
            below, s.failed, s.by_bound = s.failed, 0, False
            push(s, below)
        elif s.passed is not None and s.passed - s.failed <= 1:
            s.resolved = True
            kept.append(s.cost(s.passed))
        elif s.passed is not None:
            push(s, (s.failed + s.passed) // 2)
        else:
            grow = min(max(excess if math.isfinite(excess) else GROW_MAX, GROW_MIN), GROW_MAX)
            push(s, max(replicas + 1, math.ceil(replicas * grow)))
    return states, runs
