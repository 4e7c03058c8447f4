"""Generated workloads: vLLM's prefix_repetition shape (checked against vLLM 0.24.0's own result file), conversations,
traces, the schedule the runner consumes, and the prefix a cache could reuse."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.datasets import TraceRow
from planner.loadtest.generators import (
    PlannedRequest,
    Segment,
    plan_requests,
    reusable_prefix_tokens,
    sampled_words,
)
from planner.loadtest.schedule import Schedule
from planner.loadtest.settings import LoadSettings
from planner.serving.requests import ChatRequest

H200 = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps" / "llama-3.1-8b-spec"
# vllm bench serve --dataset-name prefix_repetition --prefix-repetition-prefix-len 1024 --prefix-repetition-suffix-len
# 128 --prefix-repetition-num-prefixes 4 --prefix-repetition-output-len 64 --num-prompts 64 --max-concurrency 16
VLLM_PREFIX_REP = LoadSettings(
    dataset_name="prefix_repetition",
    prefix_len=1024,
    suffix_len=128,
    num_prefixes=4,
    output_len=64,
    num_prompts=64,
    max_concurrency=16,
)


def test_prefix_repetition_has_the_shape_of_vllms_run():
    vllm = json.loads(gzip.decompress((H200 / "prefix_rep_1.json.gz").read_bytes()))
    planned = plan_requests(VLLM_PREFIX_REP)
    # vLLM sent 64 prompts of 1,152 tokens (1,024 + 128) and asked for 64 tokens each
    assert len(planned) == vllm["num_prompts"] == vllm["completed"] == 64
    assert {r.tokens for r in planned} == set(vllm["input_lens"]) == {1152}
    assert {r.output_len for r in planned} == {64} and vllm["total_output_tokens"] == 64 * 64
    assert Counter(r.segments[0].key for r in planned) == {"p0": 16, "p1": 16, "p2": 16, "p3": 16}
    assert len({r.segments[1].key for r in planned}) == 64  # every suffix its own


def test_the_reusable_prefix_equals_what_vllm_hit():
    # bench/data/h200_sweeps/llama-3.1-8b-spec: prefix_rep_1 after in512_c256, counters differenced: 73,728 prompt
    # tokens queried, 61,440 hit (the first prompt of each prefix misses, the other 60 hit their 1,024 tokens)
    planned = plan_requests(VLLM_PREFIX_REP)
    assert sum(r.tokens for r in planned) == 73_728
    assert sum(reusable_prefix_tokens(planned)) == 61_440


def test_prefix_repetition_sends_every_prompt_asked_for():
    planned = plan_requests(LoadSettings(dataset_name="prefix_repetition", num_prompts=10, num_prefixes=4))
    # vLLM would send 4 × (10 // 4) = 8; the remainder goes to the first prefixes
    assert Counter(r.segments[0].key for r in planned) == {"p0": 3, "p1": 3, "p2": 2, "p3": 2}
    warm = plan_requests(
        LoadSettings(dataset_name="prefix_repetition", num_prompts=10, num_prefixes=4, num_warmups=4), warmups=True
    )
    assert [r.segments[0].key for r in warm] == ["p0", "p1", "p2", "p3"]  # the prime of flush, prime, measure
    with pytest.raises(InvalidParameterError, match="num_prefixes"):
        LoadSettings(dataset_name="prefix_repetition", num_prompts=3, num_prefixes=4)


def test_multi_turn_conversations():
    s = LoadSettings(
        dataset_name="multi_turn",
        num_prompts=7,
        num_turns=3,
        input_len=50,
        output_len=9,
        request_rate=2.0,
        burstiness=float("inf"),
    )
    planned = plan_requests(s)
    assert [(r.conversation, r.turn) for r in planned] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    # conversations start on the run's schedule (constant gaps of 1/rate over ⌈7/3⌉ = 3 conversations); later turns
    # go when the turn before has its answer
    assert [r.arrival_s for r in planned] == [0.5, None, None, 1.0, None, None, 1.5]
    assert {r.tokens for r in planned} == {50} and {r.output_len for r in planned} == {9}
    assert s.conversations == 3


def test_timed_trace_blocks_and_times():
    rows = (TraceRow(100.0, 40, 8, (7, 8, 9)), TraceRow(100.5, 20, 4, (7, 8)), TraceRow(102.0, 10, 3))
    s = LoadSettings(dataset_name="timed_trace", num_prompts=3, trace_rows=rows, time_scale=0.5)
    planned = plan_requests(s)
    # blocks of 16 tokens named by hash id; the last one cut to the input length (vLLM keys a cut block by its size)
    assert [tuple((g.key, g.tokens) for g in r.segments) for r in planned] == [
        (("h7:16", 16), ("h8:16", 16), ("h9:8", 8)),
        (("h7:16", 16), ("h8:4", 4)),
        (("r2", 10),),
    ]
    assert [r.arrival_s for r in planned] == [0.0, 0.25, 1.0]  # (t − t₀) × time_scale
    assert reusable_prefix_tokens(planned) == (0, 16, 0)  # request 2 shares block 7 whole; block 8 is cut
    with pytest.raises(InvalidParameterError, match="trace_rows"):
        plan_requests(LoadSettings(dataset_name="burstgpt"))


def test_sampled_words_are_stable_and_distinct():
    assert sampled_words("p0", 6, seed=3) == sampled_words("p0", 6, seed=3)
    assert sampled_words("p0", 6) != sampled_words("p1", 6)
    assert len(sampled_words("s9", 40).split(" ")) == 40


def test_reusable_prefix_of_hand_built_requests():
    a, b = Segment("a", 100), Segment("b", 10)
    planned = [PlannedRequest((a, b), 1), PlannedRequest((a,), 1), PlannedRequest((b, a), 1), PlannedRequest((a, b), 1)]
    assert reusable_prefix_tokens(planned) == (0, 100, 0, 110)


def test_schedule_groups_a_conversation_and_orders_by_release():
    req = ChatRequest("x")
    s = Schedule((req,) * 5, (0.3, None, 0.1, 0.2, None), (0, 0, None, 1, 1), (0, 1, 0, 0, 1))
    assert s.has_conversations and s.threads() == [[2], [3, 4], [0, 1]]
    with pytest.raises(InvalidParameterError, match="arrival_s"):
        Schedule((req,), (None,), (None,), (0,))
