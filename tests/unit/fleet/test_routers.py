"""How each routing policy picks a replica."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.fleet.routers import ROUTERS, choose


@pytest.mark.parametrize(
    ("router", "expected"),
    [
        ("round_robin", 7 % 3),  # the 8th request routed (7 before it) on 3 replicas
        ("least_loaded", 1),  # fewest in flight: 1 (2 in flight against 4 and 2: tie → lowest index)
        ("kv_aware", 2),  # lowest KV usage: 0.1
        ("prefix_aware", 2),  # longest cached prefix: 5 blocks on 0 and 2; of those, fewer in flight: 2
    ],
)
def test_each_policy(router: str, expected: int) -> None:
    pick = choose(router, routed=7, in_flight=[4, 2, 2], kv_usage=[0.5, 0.3, 0.1], prefix_blocks=[5, 0, 5])
    assert pick == expected


def test_ties_go_to_fewer_in_flight_then_the_lowest_index() -> None:
    assert choose("prefix_aware", routed=0, in_flight=[3, 1, 1], prefix_blocks=[2, 2, 2]) == 1
    assert choose("kv_aware", routed=0, in_flight=[0, 0], kv_usage=[0.2, 0.2]) == 0


def test_unknown_router_and_no_replica() -> None:
    with pytest.raises(InvalidParameterError):
        choose("random", routed=0, in_flight=[0])
    with pytest.raises(InvalidParameterError):
        choose("round_robin", routed=0, in_flight=[])
    assert ROUTERS == ("round_robin", "least_loaded", "kv_aware", "prefix_aware")
