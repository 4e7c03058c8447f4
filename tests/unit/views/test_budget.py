"""planner/views/budget.py: what the VRAM Budget page shows, from plans made here.

Llama-3.1-8B-Instruct keeps 2 (K and V) × 32 layers × 8 KV heads × 128 dimensions × 2 bytes (bf16) = 131,072 bytes
of KV cache per token (its public config.json); its context limit is 131,072 tokens.
"""

from __future__ import annotations

import json

import pytest

from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError, UnsupportedModelError
from planner.views.budget import budget_view, markdown_bullets


def _no_forecast(scenario, spec):
    return None


def test_one_scenario_has_its_metrics_four_a_row_and_its_details(planned):
    scenarios = [Scenario(max_model_len=8192, engine_version="0.28.0")]
    view = budget_view(scenarios, planned(scenarios), forecast=_no_forecast)
    (answer,) = view.answers
    assert answer.label == "1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · vllm"
    assert answer.error is None and answer.verdict_level == "fits" and answer.verdict_text.startswith("Fits")
    assert [len(row) for row in answer.metric_rows] == [4, 3]
    metrics = {m.label: m.value for row in answer.metric_rows for m in row}
    assert metrics["KV bytes per token (per GPU)"] == "131,072 B"
    assert "Concurrency @ 8,192" in metrics and metrics["Concurrency @ target"] == "n/a"
    assert answer.range_info is None  # a version is set
    assert answer.explanation is not None and answer.explanation.sources.startswith("Formulas: ")
    assert not view.compact and view.key_figures is None
    assert view.launch is not None and view.launch.command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct")
    (detail,) = view.details
    assert detail.forecast is None and detail.file_name == "plan-1.json"
    assert json.loads(detail.plan_json)["kv_bytes_per_token"] == 131_072
    assert view.memory_figure is not None


def test_two_scenarios_two_metrics_a_row_and_no_launch_in_the_answer(planned):
    scenarios = [Scenario(max_model_len=8192), Scenario(gpu="a10", max_model_len=8192)]
    view = budget_view(scenarios, planned(scenarios), forecast=_no_forecast)
    assert [len(row) for row in view.answers[0].metric_rows] == [2, 2, 2, 1]
    assert view.launch is None and len(view.details) == 2
    assert view.answers[0].range_info.startswith("vLLM version not set: between ")


def test_three_scenarios_share_one_key_figures_table(planned):
    scenarios = [Scenario(), Scenario(engine="tgi"), Scenario(engine="article", target_context=8192)]
    view = budget_view(scenarios, planned(scenarios), forecast=_no_forecast)
    assert view.compact and all(not a.metric_rows for a in view.answers)
    assert list(view.key_figures.columns) == ["Scenario 1", "Scenario 2", "Scenario 3"]
    assert view.key_figures.loc["KV bytes per token (per GPU)", "Scenario 1"] == "131,072 B"


def test_a_scenario_that_cannot_be_planned_says_why_and_the_others_still_plan(planned):
    scenarios = [Scenario(), Scenario(model="nobody/none-such")]
    failed = UnsupportedModelError("nobody/none-such is not in the catalog")
    pairs = [planned(scenarios[:1])[0], (failed, failed)]
    view = budget_view(scenarios, pairs, forecast=_no_forecast)
    assert view.answers[1].error == "Cannot plan this scenario: nobody/none-such is not in the catalog"
    assert view.answers[1].model is None
    assert [d.index for d in view.details] == [0]


def test_each_advice_carries_the_scenarios_it_loads(planned):
    # Llama-3.1-70B in bf16 (141 GB of weights) does not fit one 24 GB RTX 4090: every advice changes scenario 1 only
    scenarios = [Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"), Scenario()]
    view = budget_view(scenarios, planned(scenarios), forecast=_no_forecast)
    first = view.answers[0]
    assert first.verdict_level == "no_fit" and first.advice
    for advice in first.advice:
        assert advice.scenarios[1] == scenarios[1] and advice.scenarios[0] != scenarios[0]
        assert " → **" in advice.text and "req. on" in advice.text


def test_the_forecast_is_asked_for_each_plan(planned):
    calls = []

    def forecast(scenario, spec):
        calls.append((scenario, spec))
        return None

    scenarios = [Scenario()]
    ((model, result),) = pairs = planned(scenarios)
    budget_view(scenarios, pairs, forecast=forecast)
    assert calls == [(result.scenario, model.spec)]  # the plan's resolved scenario, as the page's cache is keyed


def test_planned_must_match_the_scenarios():
    with pytest.raises(InvalidParameterError, match="planned"):
        budget_view([Scenario()], [], forecast=_no_forecast)


def test_markdown_characters_of_the_planners_text_are_escaped():
    assert markdown_bullets(["_report_kv_cache_config costs $5", "a*b"]) == (
        "- \\_report\\_kv\\_cache\\_config costs \\$5\n- a\\*b"
    )


def test_a_refused_configuration_draws_no_memory_bar(planned):
    # the new-user trial: tensor_parallel_size=3 on Llama-3.1-8B (32 attention heads) said "Refused" over a full
    # memory bar with a large KV cache, a budget vLLM never reaches since it does not start
    refused, fine = Scenario(tensor_parallel_size=3), Scenario()
    alone = budget_view([refused], planned([refused]), forecast=_no_forecast)
    assert alone.answers[0].verdict_text.startswith("Refused")
    assert alone.memory_figure is None
    both = budget_view([refused, fine], planned([refused, fine]), forecast=_no_forecast)
    names = {trace.y[0] for trace in both.memory_figure.data if trace.y is not None and len(trace.y)}
    assert names == {both.answers[1].label}  # only the scenario that starts
