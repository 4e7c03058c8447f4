"""The replica search on hand-worked cases: a replica that meets the SLOs up to a known rate."""

from __future__ import annotations

import math

import pytest

from planner.sizing.replicas import cheapest_replicas


def _capacity(capacity: float, needed: float):
    """evaluate(): a replica meets the SLOs while its share ``needed / replicas`` is at most ``capacity``."""

    def evaluate(_: int, replicas: int) -> tuple[bool, float]:
        share = needed / replicas
        return share <= capacity + 1e-12, share / capacity

    return evaluate


@pytest.mark.parametrize(
    ("target", "headroom", "capacity", "replicas"),
    [
        (20.0, 0.2, 3.0, 8),  # 24 / 3 = 8 exactly: 8 replicas carry 3.0 each
        (20.0, 0.25, 3.0, 9),  # 25 / 3 = 8.33: 8 carry 3.125 > 3, so 9
        (20.0, 0.0, 3.0, 7),  # 20 / 3 = 6.67
        (2.0, 0.2, 3.0, 1),  # 2.4 fits one replica
        (100.0, 0.1, 0.7, 158),  # 110 / 0.7 = 157.1
    ],
)
def test_replicas_from_capacity_and_headroom(target: float, headroom: float, capacity: float, replicas: int) -> None:
    needed = target * (1 + headroom)
    least = max(1, math.ceil(needed / (capacity * 1.3)))  # a fluid bound 30% above the real capacity
    states, runs = cheapest_replicas([(1.0, least)], _capacity(capacity, needed))
    assert states[0].resolved and states[0].passed == replicas
    assert runs <= 8


def test_docstring_walk() -> None:
    # bound 4 req/s a replica: starts at ⌈24 / 4⌉ = 6 and misses (4.0 = 1.33 × 3); grows to ⌈6 × 1.33⌉ = 8 and
    # meets (3.0); the midpoint 7 misses (3.43): 8.
    states, runs = cheapest_replicas([(1.0, 6)], _capacity(3.0, 24.0))
    assert states[0].tried == [(6, False), (8, True), (7, False)]
    assert states[0].passed == 8 and runs == 3


def test_cheapest_first_and_stop_once_nothing_can_beat_the_kept() -> None:
    # Config 0: $2 a replica, needs 4 (cost 8). Config 1: $1 a replica, needs 5 (cost 5). Config 2: $10, bound 1.
    caps = {0: 6.0, 1: 4.8, 2: 100.0}

    def evaluate(i: int, replicas: int) -> tuple[bool, float]:
        share = 24.0 / replicas
        return share <= caps[i], share / caps[i]

    states, _ = cheapest_replicas([(2.0, 3), (1.0, 3), (10.0, 1)], evaluate, keep=1)
    assert states[1].resolved and states[1].passed == 5
    assert not states[0].resolved and not states[2].resolved  # never cheaper than $5: not all evaluated
    assert states[2].tried == []  # $10 ≥ $5 from the start: never evaluated


def test_bisection_after_a_loose_bound() -> None:
    # Excess ratios push the count up fast; the answer is then found between the last miss and the first pass.
    states, runs = cheapest_replicas([(1.0, 1)], _capacity(0.37, 24.0))
    assert states[0].passed == math.ceil(24.0 / 0.37) == 65
    assert runs <= 12


def test_gives_up_past_max_replicas() -> None:
    states, _ = cheapest_replicas([(1.0, 1)], lambda i, r: (False, math.inf), max_replicas=100)
    assert states[0].given_up and "100" in states[0].given_up and not states[0].resolved


def test_the_count_a_bound_rules_out_is_checked_once() -> None:
    # 24 req/s, capacity 6 a replica: 4 replicas. A bound too strict (least 5: it rules 4 out) passes at 5 and checks
    # 4, which passes: the bound was wrong, so the search bisects below (2 and 3 miss). An exact bound (least 4)
    # passes at 4 and checks 3, which misses.
    right, _ = cheapest_replicas([(1.0, 5)], _capacity(6.0, 24.0))
    assert right[0].passed == 4 and right[0].tried == [(5, True), (4, True), (2, False), (3, False)]
    exact, runs = cheapest_replicas([(1.0, 4)], _capacity(6.0, 24.0))
    assert exact[0].passed == 4 and exact[0].tried == [(4, True), (3, False)] and runs == 2


def test_a_sure_bound_is_not_checked() -> None:
    states, runs = cheapest_replicas([(1.0, 5, True)], _capacity(6.0, 24.0))
    assert states[0].passed == 5 and states[0].tried == [(5, True)] and runs == 1
