"""Predicted sweeps: their levels, their cost measure and what a curve reports."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.loadtest.settings import SweepSettings
from planner.predict.curves import DEFAULT_WORKLOAD, curve_levels, predict_curve, simulated_output_tokens


def test_levels_of_each_axis():
    assert curve_levels(replace(DEFAULT_WORKLOAD, sweep=SweepSettings(sweep_max=12)), "concurrency") == (
        1.0,
        2.0,
        4.0,
        8.0,
        12.0,
    )
    assert curve_levels(DEFAULT_WORKLOAD, "rate", (4, 1, 2, 1)) == (1.0, 2.0, 4.0)
    for axis, rates in (("tokens", (1,)), ("rate", ()), ("rate", (0,)), ("rate", (float("inf"),))):
        with pytest.raises(InvalidParameterError):
            curve_levels(DEFAULT_WORKLOAD, axis, rates)


def test_simulated_output_tokens_by_hand():
    # concurrency 1, 2, 4, 8 with 8 prompts: max(8, 4 × level) = 8, 8, 16, 32 requests; 100 × (1 + 0.5) tokens each
    work = replace(DEFAULT_WORKLOAD, num_prompts=8, output_len=100, range_ratio=0.5)
    assert simulated_output_tokens(work, (1, 2, 4, 8)) == (8 + 8 + 16 + 32) * 150
    # a rate sweep sends num_prompts at every rate
    assert simulated_output_tokens(work, (1, 2, 4), "rate") == 3 * 8 * 150
    # the page's default workload is well within the page's cap
    assert simulated_output_tokens(DEFAULT_WORKLOAD, curve_levels(DEFAULT_WORKLOAD, "concurrency")) == 425_984


def test_curve_with_a_given_plan_reports_progress_and_the_kv_bound():
    scenario = Scenario(gpu="l4", max_model_len=4096)
    work = replace(DEFAULT_WORKLOAD, input_len=2048, output_len=512, num_prompts=16, sweep=SweepSettings(sweep_max=32))
    done = []
    curve = predict_curve(scenario, work, plan=plan(scenario, advise=False), on_level=lambda i, n: done.append((i, n)))
    assert done == [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]
    assert [p.level for p in curve.points] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    # an L4 (21.94 GiB x 0.9 = 19.75 GiB) holds 19.75 - 14.96 weights - 0.22 activation (the V2 model runner's
    # forward of 2,048 tokens; vLLM 0.24+ runs Llama there) - 0.25 non-torch = 4.32 GiB of KV, about 13.8 requests of
    # 2,560 tokens at 128 KiB per token (10.9 before issue 16 counted a V1 sampler and a CUDA-graph estimate that
    # the V2 runner does not have): the KV cache fills at 16 in flight, not before
    assert curve.kv_max_concurrency == pytest.approx(13.8, abs=0.1)
    assert curve.saturation_level == 16.0
    assert [p.kv_saturated for p in curve.points] == [False, False, False, False, True, True]
