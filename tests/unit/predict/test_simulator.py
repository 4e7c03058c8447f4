"""The simulator against schedules worked out by hand (every step 10 ms, no request overhead)."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.predict.simulator import simulate
from planner.predict.step_time import StepCoefficients
from tests.unit.predict.conftest import TEN_MS, tiny_shape

#: The article's example (tests/data/article.md, "Continuous batching"): A, B, C of 50, 500 and 30 output
#: tokens in a batch of three; D (40) and E (60) wait. 10-token prompts.
ARTICLE = [(10, 50), (10, 500), (10, 30), (10, 40), (10, 60)]


def _settings(n: int, cap: int | None) -> LoadSettings:
    return LoadSettings(num_prompts=n, max_concurrency=cap, duration_s=None)


def test_article_example_continuous() -> None:
    # Step 1 prefills A, B, C (30 tokens, one step) and samples each one's first token at 10 ms; step s then gives
    # each its s-th token. C's 30th token ends step 30 (300 ms): its slot frees, D is sent at 300 ms and prefilled
    # in step 31 beside A's and B's decodes (first token 310 ms), its 40th token ends step 31 + 39 = 70 (700 ms).
    # A ends at step 50 (500 ms), E joins in step 51 (510 ms) and ends at step 51 + 59 = 110 (1.10 s). B ends at
    # step 500 (5.00 s): "C finishes at step 30 and D joins, A at step 50 and E joins, B at step 500".
    run = simulate(tiny_shape(max_num_seqs=3), _settings(5, 3), TEN_MS, lengths=ARTICLE)
    assert run.sent_s.tolist() == pytest.approx([0, 0, 0, 0.300, 0.500], abs=1e-9)
    assert run.ttft_s.tolist() == pytest.approx([0.010, 0.010, 0.010, 0.010, 0.010], abs=1e-9)
    assert (run.sent_s + run.e2e_s).tolist() == pytest.approx([0.500, 5.000, 0.300, 0.700, 1.100], abs=1e-9)
    assert run.num_steps == 500
    assert run.preemptions == 0
    # 680 tokens over the 5.00 s makespan
    assert run.metrics.output_throughput == pytest.approx(680 / 5.0, rel=1e-9)
    # TPOT: (E2E − TTFT) / (n − 1) = 10 ms for all
    assert run.metrics.tpot.median_s == pytest.approx(0.010, abs=1e-12)


def test_article_example_static() -> None:
    # Batch 1 (A, B, C): one prefill step (10 ms), then 499 decode steps: done at 5.00 s, the 500-token request's
    # length. Batch 2 (D, E), sent at 0 s, starts at 5.00 s: prefill ends 5.01 s, 59 decode steps: done at 5.60 s.
    run = simulate(tiny_shape(max_num_seqs=3), _settings(5, 3), TEN_MS, lengths=ARTICLE, mode="static")
    ends = (run.sent_s + run.e2e_s).tolist()
    assert ends == pytest.approx([0.500, 5.000, 0.300, 5.400, 5.600], abs=1e-9)
    assert run.ttft_s.tolist() == pytest.approx([0.010, 0.010, 0.010, 5.010, 5.010], abs=1e-9)
    assert run.num_steps == 500 + 60
    assert run.metrics.output_throughput == pytest.approx(680 / 5.6, rel=1e-9)
    continuous = simulate(tiny_shape(max_num_seqs=3), _settings(5, 3), TEN_MS, lengths=ARTICLE)
    assert continuous.metrics.output_throughput / run.metrics.output_throughput == pytest.approx(5.6 / 5.0)


def test_three_requests_chunked_prefill_and_a_preemption() -> None:
    # 6 blocks of 4 tokens, 8 tokens per step, 3 prompts of 6 tokens, 4 output tokens each (vLLM V1 rules,
    # planner/predict/simulator/continuous.py docstring). Free blocks after each step in brackets.
    # Step 1: R0 prefills 6 (2 blocks), R1 its first 2 (1 block) [3]; R0 samples its 1st token (10 ms).
    # Step 2: R0 decodes (7 tokens, still 2 blocks); R1 prefills its last 4 (2 blocks) [2]; R2 admitted with 3
    #         tokens (1 block) [1]. R1's 1st token (20 ms).
    # Step 3: R0 decodes (8 tokens, 2 blocks), R1 decodes (7, 2 blocks), R2 prefills its last 3 (2 blocks) [0].
    #         R2's 1st token (30 ms).
    # Step 4: R0 needs a 3rd block for its 9th token: none free, so the last running request, R2, is preempted
    #         (2 blocks back) [2 -> 1 after R0's]; R1 decodes. No admission in a step that preempted. R0's 4th
    #         token: done at 40 ms [4].
    # Step 5: R1 decodes (9 tokens: 3rd block) [3], R2 recomputes prompt + its 1 token = 7 tokens (2 blocks) [1]
    #         and samples its 2nd token; R1's 4th token: done at 50 ms.
    # Steps 6, 7: R2's 3rd and 4th tokens: done at 70 ms.
    run = simulate(
        tiny_shape(blocks=6, block_size=4, mnbt=8, max_num_seqs=3),
        _settings(3, None),
        TEN_MS,
        lengths=[(6, 4), (6, 4), (6, 4)],
    )
    assert run.preemptions == 1
    assert run.num_steps == 7
    assert run.ttft_s.tolist() == pytest.approx([0.010, 0.020, 0.030], abs=1e-9)
    assert run.e2e_s.tolist() == pytest.approx([0.040, 0.050, 0.070], abs=1e-9)
    assert run.peak_kv_blocks == 6
    assert run.kv_saturated
    # R2's TPOT spans its preemption: (70 − 30) ms / 3
    tpots = sorted((run.e2e_s - run.ttft_s) / 3)
    assert tpots == pytest.approx([0.010, 0.010, 0.040 / 3], abs=1e-9)


def test_request_overhead_and_open_loop_arrivals() -> None:
    # Constant gaps of 1 s (burstiness inf): each request arrives at an idle engine 5 ms after it is sent, one
    # prefill step (10 ms) gives its first token: TTFT 15 ms; 3 output tokens: E2E 15 + 2 × 10 = 35 ms.
    settings = LoadSettings(num_prompts=3, max_concurrency=None, request_rate=1.0, burstiness=math.inf, duration_s=None)
    run = simulate(tiny_shape(), settings, TEN_MS, request_overhead_s=0.005, lengths=[(8, 3)] * 3)
    assert run.sent_s.tolist() == pytest.approx([1.0, 2.0, 3.0], abs=1e-9)
    assert run.ttft_s.tolist() == pytest.approx([0.015] * 3, abs=1e-9)
    assert run.e2e_s.tolist() == pytest.approx([0.035] * 3, abs=1e-9)
    # duration: the last request ends at 3.035 s
    assert run.metrics.duration_s == pytest.approx(3.035, abs=1e-9)


def test_decode_stretches_equal_single_steps() -> None:
    # The fast path (many decode steps at once) must give what one step at a time gives: with max_num_seqs 1 the
    # engine can never batch, so every request is 1 prefill + 99 decode steps of 10 ms, back to back.
    run = simulate(tiny_shape(max_num_seqs=1), _settings(4, None), TEN_MS, lengths=[(5, 100)] * 4)
    assert (run.sent_s + run.e2e_s).tolist() == pytest.approx([1.0, 2.0, 3.0, 4.0], abs=1e-9)
    assert run.ttft_s.tolist() == pytest.approx([0.010, 1.010, 2.010, 3.010], abs=1e-9)


def test_metrics_use_vllm_definitions() -> None:
    run = simulate(tiny_shape(max_num_seqs=3), _settings(5, 3), TEN_MS, lengths=ARTICLE)
    data = run.metrics.to_vllm_json()
    assert data["completed"] == 5
    assert data["total_output_tokens"] == 680
    assert data["total_input_tokens"] == 50
    assert data["median_itl_ms"] == pytest.approx(10.0)
    assert run.metrics.itl.count == 680 - 5  # one gap per token after the first


def test_bad_input() -> None:
    with pytest.raises(InvalidParameterError, match="mode"):
        simulate(tiny_shape(), _settings(1, 1), TEN_MS, mode="batch")
    with pytest.raises(InvalidParameterError, match="max_model_len"):
        simulate(tiny_shape(), _settings(1, 1), TEN_MS, lengths=[(99_990, 20)])
    with pytest.raises(InvalidParameterError, match="lengths"):
        simulate(tiny_shape(), _settings(2, 1), TEN_MS, lengths=[(5, 5)])
    with pytest.raises(InvalidParameterError, match="KV cache"):
        simulate(tiny_shape(blocks=1, block_size=4), _settings(1, 1), TEN_MS, lengths=[(40, 2)])


@pytest.mark.parametrize(
    ("cached", "ttft_s", "e2e_s"), [(None, 0.020, 0.030), ([12], 0.010, 0.020), ([16], 0.010, 0.020)]
)
def test_cached_prompt_tokens_are_not_prefilled(cached, ttft_s, e2e_s) -> None:
    # one request, 16 prompt tokens, 2 output, 8 tokens per step, 10 ms steps. Uncached: 8 + 8 tokens of prefill,
    # the first token at 20 ms. 12 tokens cached (vLLM sets num_computed_tokens to them): one step of 4, 10 ms. The
    # whole prompt cached: vLLM still computes the last token (capped at 15 cached), one step of 1, 10 ms.
    run = simulate(
        tiny_shape(block_size=4, mnbt=8), _settings(1, None), TEN_MS, lengths=[(16, 2)], cached_tokens=cached
    )
    assert run.ttft_s.tolist() == pytest.approx([ttft_s], abs=1e-9)
    assert run.e2e_s.tolist() == pytest.approx([e2e_s], abs=1e-9)
    with pytest.raises(InvalidParameterError, match="cached_tokens"):
        simulate(tiny_shape(), _settings(1, None), TEN_MS, lengths=[(16, 2)], cached_tokens=[1, 2])


def test_speculative_decoding_in_the_simulator() -> None:
    # k = 2, rate 0.5: 1 + 0.5 + 0.25 = 1.75 tokens a step. An 8-token answer: its first token from the prefill step,
    # then ceil(7 / 1.75) = 4 decode steps. Every step (and every draft forward) takes 10 ms.
    from planner.predict.speculative import SpecDecodeConfig

    plain = simulate(tiny_shape(), _settings(1, 1), TEN_MS, lengths=[(10, 8)])
    assert plain.e2e_s[0] == pytest.approx(0.080) and plain.metrics.tpot.median_s == pytest.approx(0.010)
    ngram = SpecDecodeConfig("ngram", 2, (0.5,))  # drafts on the CPU: no GPU forward
    run = simulate(tiny_shape(), _settings(1, 1), TEN_MS, lengths=[(10, 8)], speculative=ngram)
    assert run.num_steps == 5 and run.e2e_s[0] == pytest.approx(0.050)
    assert run.output_tokens.tolist() == [8]
    assert run.metrics.tpot.median_s == pytest.approx(0.040 / 7)  # (50 − 10) ms over 7 tokens
    # a GPU drafter: 2 forwards of 10 ms more per decode step -> 30 ms steps, 10 + 4 × 30 = 130 ms
    eagle = SpecDecodeConfig("eagle", 2, (0.5,), tiny_shape())
    run = simulate(tiny_shape(), _settings(1, 1), TEN_MS, lengths=[(10, 8)], speculative=eagle)
    assert run.e2e_s[0] == pytest.approx(0.130) and run.metrics.itl.median_s == pytest.approx(0.030)
    # two requests decoding together share each step (the 3-request stretch path and the general path agree)
    run = simulate(tiny_shape(), _settings(2, 2), TEN_MS, lengths=[(10, 8), (10, 8)], speculative=ngram)
    assert (run.sent_s + run.e2e_s).tolist() == pytest.approx([0.050, 0.050])
    with pytest.raises(InvalidParameterError):
        simulate(tiny_shape(), _settings(1, 1), TEN_MS, lengths=[(10, 8)], mode="static", speculative=ngram)


def _frontend_only_shape(*, async_scheduling: bool):
    # every term but the per-step constant is zero: steps of 10 ms whatever they hold
    from dataclasses import replace

    from planner.predict.shape import AttentionGroup

    return replace(
        tiny_shape(async_scheduling=async_scheduling),
        dense_weight_bytes=0.0,
        linear_flops_per_token=0.0,
        groups=(AttentionGroup("full", None, 1, 0.0),),
    )


#: 10 ms steps; a lone request reaches the engine 3 ms + 0.1 ms per prompt token after it is sent, arrivals wait
#: 2 ms + 0.1 ms per prompt token behind the one before at the API server, a token reaches the client 1 ms after its
#: step.
FRONTEND = StepCoefficients(
    step_overhead_s=0.010,
    seq_overhead_s=0.0,
    layer_overhead_s=0.0,
    moe_layer_overhead_s=0.0,
    eager_layer_s=0.0,
    eager_moe_layer_s=0.0,
    request_overhead_s=0.003,
    request_overhead_per_token_s=1e-4,
    frontend_gap_s=0.002,
    frontend_gap_per_token_s=1e-4,
    response_overhead_s=0.001,
)


@pytest.mark.parametrize(("async_scheduling", "later_ttft_s"), [(False, 0.025), (True, 0.035)])
def test_a_burst_through_the_frontend(async_scheduling: bool, later_ttft_s: float) -> None:
    # Three 10-token prompts sent at 0: they reach the engine at 3 + 1 = 4 ms, then 4 + 2 + 1 = 7 ms and 10 ms.
    # A finds the engine idle: step 1 runs 4-14 ms and makes its first token, which the client reads at 15 ms.
    # B and C arrive during step 1. Scheduled when a step ends, they join step 2 (14-24 ms): TTFT 24 + 1 = 25 ms.
    # With asynchronous scheduling step 2 was scheduled when step 1 started (4 ms), before they arrived: they
    # join step 3 (24-34 ms), TTFT 35 ms.
    shape = _frontend_only_shape(async_scheduling=async_scheduling)
    settings = LoadSettings(num_prompts=3, max_concurrency=None, duration_s=None)
    run = simulate(shape, settings, FRONTEND, lengths=[(10, 2)] * 3)
    assert run.ttft_s.tolist() == pytest.approx([0.015, later_ttft_s, later_ttft_s], abs=1e-9)
    # A's second token comes from step 2 (ends 24 ms), read at 25 ms
    assert run.e2e_s[0] == pytest.approx(0.025, abs=1e-9)


def test_asynchronous_scheduling_puts_an_arrival_two_steps_on() -> None:
    # Every step 10 ms, no frontend time, at most 2 requests at once: A (3 tokens) and B (10 tokens) start in step 1.
    # A's 3rd token ends step 3 (30 ms), so C is sent then. Synchronous: C's prompt goes into step 4, first token at
    # 40 ms (TTFT 10 ms). Asynchronous: step 4 was scheduled when step 3 started (20 ms): C waits for step 5 (50 ms).
    lengths = [(10, 3), (10, 10), (10, 3)]
    for async_scheduling, ttft in ((False, 0.010), (True, 0.020)):
        run = simulate(tiny_shape(async_scheduling=async_scheduling), _settings(3, 2), TEN_MS, lengths=lengths)
        assert run.sent_s[2] == pytest.approx(0.030, abs=1e-9)
        assert run.ttft_s[2] == pytest.approx(ttft, abs=1e-9)
