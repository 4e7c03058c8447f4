"""A Load Test workload as a fleet's requests: the generators' segments, conversations with their answers."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.fleet.workload import fleet_requests, threads
from planner.loadtest.settings import LoadSettings


def test_multi_turn_sends_the_conversation_so_far() -> None:
    # 2 conversations of 3 turns, 100-token messages, 10-token answers: turn t sends t·(100 + 10) + 100 tokens.
    s = LoadSettings(dataset_name="multi_turn", num_prompts=6, num_turns=3, input_len=100, output_len=10)
    requests = fleet_requests(s)
    assert [r.prompt_tokens for r in requests] == [100, 210, 320, 100, 210, 320]
    assert requests[2].segments == (("c0t0", 100), ("c0a0", 10), ("c0t1", 100), ("c0a1", 10), ("c0t2", 100))
    assert requests[2].output_key == "c0a2"
    assert [r.arrival_s is None for r in requests] == [False, True, True, False, True, True]
    assert threads(requests) == [[0, 1, 2], [3, 4, 5]]


def test_prefix_repetition_shares_the_prefix_segment() -> None:
    s = LoadSettings(dataset_name="prefix_repetition", num_prompts=4, num_prefixes=2, prefix_len=64, suffix_len=8)
    requests = fleet_requests(s)
    assert sorted(r.segments[0] for r in requests) == [("p0", 64), ("p0", 64), ("p1", 64), ("p1", 64)]
    assert len({r.segments[1][0] for r in requests}) == 4


def test_random_requests_are_their_own() -> None:
    requests = fleet_requests(LoadSettings(num_prompts=3, input_len=50, output_len=5, request_rate=2.0))
    assert [r.segments for r in requests] == [(("r0", 50),), (("r1", 50),), (("r2", 50),)]
    # the schedule's arrival times (vllm bench serve's, rescaled to end at num_prompts / rate = 1.5 s)
    assert requests[-1].arrival_s == pytest.approx(1.5)


def test_text_datasets_are_refused() -> None:
    with pytest.raises(InvalidParameterError) as exc:
        fleet_requests(LoadSettings(dataset_name="examples"))
    assert exc.value.name == "dataset_name"
