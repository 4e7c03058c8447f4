"""Tests of planner.charts: figures are built from the plans' own numbers, n/a terms left out."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import pytest

from planner.charts import (
    concurrency_figure,
    concurrency_table,
    context_label,
    context_points,
    memory_breakdown_figure,
    scenario_label,
)
from planner.errors import InvalidParameterError
from planner.plan import plan
from planner.presets import article_scenarios
from planner.scenario import Scenario
from planner.units import GIB


@pytest.fixture(scope="module")
def plans():
    return [plan(article_scenarios("vllm")[0]), plan(article_scenarios("article")[0])]


LABELS = ["vllm", "article"]


@pytest.mark.parametrize(
    ("tokens", "text"), [(512, "512"), (1024, "1K"), (131072, "128K"), (2**20, "1M"), (1500, "1,500")]
)
def test_context_label(tokens, text):
    assert context_label(tokens) == text


def test_context_points():
    assert context_points(512, 4096) == [512, 1024, 2048, 4096]
    assert context_points(600, 3000) == [600, 1024, 2048, 3000]
    with pytest.raises(InvalidParameterError):
        context_points(4096, 512)


def test_memory_breakdown_values_and_na_terms(plans):
    fig = memory_breakdown_figure(plans, LABELS)
    assert isinstance(fig, go.Figure)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    assert bars["Weights"].x[0] == pytest.approx(plans[0].per_gpu.weights_bytes / GIB)
    assert bars["KV cache"].x[1] == pytest.approx(plans[1].per_gpu.kv_cache_bytes / GIB)
    # the article engine has no activation or CUDA-graph term: left out, not zero
    assert bars["Activation (peak)"].x[1] is None
    assert bars["CUDA graphs"].x[1] is None
    assert bars["Activation (peak)"].customdata[1][0] == "n/a"
    assert fig.layout.barmode == "stack"


def test_memory_breakdown_omits_a_term_no_plan_has():
    fig = memory_breakdown_figure([plan(article_scenarios("article")[0])], ["a"])
    assert "Activation (peak)" not in {t.name for t in fig.data}


def test_memory_breakdown_label_mismatch(plans):
    with pytest.raises(InvalidParameterError):
        memory_breakdown_figure(plans, ["one"])


def test_concurrency_figure_uses_plan_values(plans):
    fig = concurrency_figure(plans, LABELS, min_context=512, max_context=32768)
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["512", "1K", "2K", "4K", "8K", "16K", "32K"]
    line = next(t for t in fig.data if t.name == "vllm")
    for x, y in zip(line.x, line.y, strict=True):
        assert y == pytest.approx(plans[0].concurrency_at(x))
    assert max(line.x) == plans[0].max_model_len
    markers = [t for t in fig.data if t.marker.symbol == "diamond"]
    assert [m.x[0] for m in markers] == [8192, 8192]


def test_concurrency_figure_defaults_to_model_limit(plans):
    fig = concurrency_figure(plans, LABELS)
    assert fig.layout.xaxis.ticktext[-1] == "128K"
    dotted = next(t for t in fig.data if t.name == "vllm (beyond max_model_len)")
    assert dotted.line.dash == "dot" and max(dotted.x) == 131072


def test_concurrency_figure_drops_zero_on_log_axis():
    failing = plan(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"), advise=False)
    fig = concurrency_figure([failing], ["x"], min_context=512, max_context=4096)
    assert all(y is None for t in fig.data if t.type == "scatter" for y in t.y)


def test_concurrency_table(plans):
    contexts = [512, 8192, 131072, 262144]
    table = concurrency_table(plans, LABELS, contexts)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["context_tokens", "vllm", "article"]
    assert table["vllm"][1] == pytest.approx(plans[0].concurrency_at(8192))
    assert table["article"][0] == pytest.approx(153_802 / 512)
    assert math.isnan(table["vllm"][3])  # beyond Llama 3.1's 131,072-token limit: n/a


def test_concurrency_table_unique_columns(plans):
    assert len(set(concurrency_table(plans, ["x", "x"], [512]).columns)) == 3


def test_scenario_label():
    assert scenario_label(1, Scenario(gpu="l4", tensor_parallel_size=2)) == "2 · Llama-3.1-8B-Instruct · l4 ×2 · vllm"
