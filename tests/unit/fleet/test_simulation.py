"""The fleet simulation against schedules worked out by hand (every step 10 ms, no API-server time, synchronous
scheduling: each step is scheduled when the one before it ends)."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.fleet.simulation import simulate_fleet
from planner.fleet.workload import FleetRequest
from tests.unit.predict.conftest import TEN_MS, tiny_shape


def _alone(i: int, arrival_s: float, prompt: int = 10, output: int = 5) -> FleetRequest:
    return FleetRequest(((f"r{i}", prompt),), output, f"o{i}", arrival_s)


def test_round_robin_over_three_replicas_of_six_requests() -> None:
    # Six requests of 10 + 5 tokens sent 10 ms apart; one sequence at a time per replica (max_num_seqs 1).
    # Round robin: request k goes to replica k mod 3, so replica r serves r and r + 3.
    # Replica 0: request 0 (sent 0) prefills in [0, 10] ms, tokens at 10, 20, 30, 40, 50 ms: TTFT 10, E2E 50.
    #   Request 3 (sent 30 ms) waits for request 0's slot: its prefill step starts at 50 ms, first token at 60 ms
    #   (TTFT 60 − 30 = 30 ms), last at 100 ms (E2E 70 ms). Replicas 1 and 2 are the same, 10 and 20 ms later.
    shape = tiny_shape(max_num_seqs=1)
    requests = [_alone(i, 0.010 * i) for i in range(6)]
    run = simulate_fleet(shape, requests, replicas=3, router="round_robin", coefficients=TEN_MS)
    assert run.replica_of.tolist() == [0, 1, 2, 0, 1, 2]
    assert run.replica_requests == (2, 2, 2)
    assert run.ttft_s.tolist() == pytest.approx([0.010, 0.010, 0.010, 0.030, 0.030, 0.030], abs=1e-9)
    assert run.e2e_s.tolist() == pytest.approx([0.050, 0.050, 0.050, 0.070, 0.070, 0.070], abs=1e-9)
    assert run.load_imbalance == pytest.approx(1.0)
    # the same aggregation as one run: median TTFT of (10, 10, 10, 30, 30, 30) ms is 20 ms; 30 tokens over 120 ms
    assert run.metrics.ttft.median_s == pytest.approx(0.020, abs=1e-9)
    assert run.metrics.output_throughput == pytest.approx(30 / 0.120, rel=1e-9)
    assert [r.requests for r in run.replicas] == [2, 2, 2]
    assert run.replicas[0].metrics.ttft.median_s == pytest.approx(0.020, abs=1e-9)


def _conversation_and_two_requests() -> list[FleetRequest]:
    """Conversation A: 3 turns, each a new message of 32 tokens and an answer of 16; the whole conversation so far is
    sent each turn (32, 80 and 128 prompt tokens). X: 16 + 2 tokens; Y: 16 + 200 tokens. All released at 0."""
    a = [
        FleetRequest((("a0", 32),), 16, "A0", 0.0, 0, 0),
        FleetRequest((("a0", 32), ("A0", 16), ("a1", 32)), 16, "A1", None, 0, 1),
        FleetRequest((("a0", 32), ("A0", 16), ("a1", 32), ("A1", 16), ("a2", 32)), 16, "A2", None, 0, 2),
    ]
    return [*a, FleetRequest((("x", 16),), 2, "X", 0.0), FleetRequest((("y", 16),), 200, "Y", 0.0)]


@pytest.mark.parametrize(
    ("router", "refresh_s", "placed", "hits"),
    [
        # Sent at 0 in order A0, X, Y. A0 → replica 0 (nothing cached anywhere: fewest in flight, lowest index),
        # X → replica 1 (fewest in flight), Y → replica 0 (one each: lowest index). X ends at 20 ms; A0 at 160 ms
        # (16 tokens from 10 ms), when replica 0 holds A0's prompt and answer: 32 + 16 = 48 tokens, 3 blocks of 16.
        # Current view: A1 (80 tokens) finds those 3 blocks on replica 0 → 48 tokens hit (at most ⌊79/16⌋ = 4
        # blocks). A2 (128 tokens) finds A1's prompt and answer there, 80 + 16 = 96 tokens, 6 blocks → 96 hit.
        ("prefix_aware", 0.0, [0, 0, 0, 1, 0], [0, 48, 96, 0, 0]),
        # A view refreshed every 1,000 s is the view at 0 s, empty: the router falls back to fewest in flight.
        # At 160 ms replica 0 still runs Y (200 tokens, until 2.0 s), replica 1 is idle: A1 goes to replica 1,
        # which holds none of it (0 hit). At A1's end replica 0 still runs Y: A2 goes to replica 1, which now holds
        # A1's 96 tokens: 96 hit.
        ("prefix_aware", 1000.0, [0, 1, 1, 1, 0], [0, 0, 96, 0, 0]),
        # Round robin: A0 → 0, X → 1, Y → 0, A1 → 1 (nothing cached there), A2 → 0, which holds A0's 48 tokens:
        # A2's first 3 blocks are A0's prompt and answer → 48 hit.
        ("round_robin", 0.0, [0, 1, 0, 1, 0], [0, 0, 48, 0, 0]),
    ],
)
def test_prefix_aware_router_keeps_a_conversation_on_the_replica_holding_it(
    router: str, refresh_s: float, placed: list[int], hits: list[int]
) -> None:
    requests = _conversation_and_two_requests()
    run = simulate_fleet(
        tiny_shape(), requests, replicas=2, router=router, router_refresh_s=refresh_s, coefficients=TEN_MS
    )
    assert run.replica_of.tolist() == placed
    assert run.hit_tokens.tolist() == hits
    # prompt tokens: 32 + 80 + 128 + 16 + 16 = 272; fresh view 144 hit (52.9%), stale 96 (35.3%), round robin 48
    assert run.input_tokens.sum() == 272
    assert run.prefix_cache_hit_rate == pytest.approx(sum(hits) / 272, abs=1e-12)


def test_hits_shorten_the_prefill() -> None:
    # A1 found 48 of its 80 tokens on replica 0: its prefill computes the other 32. Every step takes 10 ms here, so
    # the hit shows in the tokens computed, not in time: prompt − hit.
    run = simulate_fleet(
        tiny_shape(), _conversation_and_two_requests(), replicas=2, router="prefix_aware", coefficients=TEN_MS
    )
    computed = (run.input_tokens - run.hit_tokens).tolist()
    assert computed == [32, 32, 32, 16, 16]


def test_closed_loop_cap_and_think_time() -> None:
    # One slot (max_concurrency 1): the conversation's turns one after another, each 50 ms of think time after the
    # last turn's last token, then X and Y. A0: 0 → 160 ms; A1 sent at 210 ms, prefill [210, 220], last token at
    # 370 ms; A2 sent at 420 ms, done at 580 ms; X sent at 580 ms (TTFT 10 ms).
    run = simulate_fleet(
        tiny_shape(),
        _conversation_and_two_requests(),
        replicas=1,
        router="round_robin",
        max_concurrency=1,
        think_time_s=0.050,
        coefficients=TEN_MS,
    )
    assert (run.e2e_s[:3]).tolist() == pytest.approx([0.160, 0.160, 0.160], abs=1e-9)
    assert run.ttft_s[3] == pytest.approx(0.010, abs=1e-9)
    assert run.metrics.duration_s == pytest.approx(0.580 + 0.020 + 2.000, abs=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"replicas": 0, "router": "round_robin"}, "replicas"),
        ({"replicas": 2, "router": "random"}, "router"),
        ({"replicas": 2, "router": "prefix_aware", "router_refresh_s": -1.0}, "router_refresh_s"),
    ],
)
def test_bad_input_is_named(kwargs: dict, name: str) -> None:
    with pytest.raises(InvalidParameterError) as exc:
        simulate_fleet(tiny_shape(), [_alone(0, 0.0)], coefficients=TEN_MS, **kwargs)
    assert exc.value.name == name
