"""Tests of planner.capacity.charts: figures are built from the plans' own numbers, n/a terms left out."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import pytest

from planner.capacity.charts import (
    MEMORY_TERMS,
    NOT_FIT_COLOR,
    NOT_FIT_SUFFIX,
    concurrency_figure,
    concurrency_table,
    context_label,
    context_points,
    is_empty_concurrency,
    key_figures_table,
    memory_breakdown_figure,
    model_context_limit,
    scenario_label,
)
from planner.capacity.plan import plan
from planner.capacity.presets import article_scenarios
from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
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


def _stack_end(fig, index):
    """Where bar ``index``'s stack ends, GiB."""
    return sum(t.x[index] or 0 for t in fig.data if t.type == "bar")


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(gpu_memory_utilization=0.01),  # weights exceed the budget: unused must not pad past the total
        Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"),  # weights exceed the device
        Scenario(gpu="rtx-4090"),  # fits
    ],
)
def test_memory_bar_never_passes_the_total_unless_marked_over(scenario):
    p = plan(scenario, advise=False)
    fig = memory_breakdown_figure([p], ["x"])
    total = p.per_gpu.total_bytes / GIB
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    over = bars.get("Over GPU total")
    below = sum(t.x[0] or 0 for name, t in bars.items() if name != "Over GPU total")
    assert below == pytest.approx(total, rel=1e-9) or below < total
    used = sum(getattr(p.per_gpu, a) or 0 for a, _, _ in MEMORY_TERMS[:-1]) / GIB
    if used > total:
        assert over.x[0] == pytest.approx(used - total)
        assert _stack_end(fig, 0) == pytest.approx(used)
        assert over.marker.color == "#D62728"
    else:
        assert over is None
        assert _stack_end(fig, 0) == pytest.approx(total)


def test_memory_total_is_a_labelled_line(plans):
    fig = memory_breakdown_figure(plans, LABELS)
    lines = [s for s in fig.layout.shapes if s.line.color == "black"]
    assert [s.x0 for s in lines] == pytest.approx([p.per_gpu.total_bytes / GIB for p in plans])
    assert all("total" in a.text and "GiB" in a.text for a in fig.layout.annotations)


def test_model_context_limit_is_not_raised_by_max_model_len():
    p = plan(Scenario(max_model_len=10_000_000), advise=False)
    assert model_context_limit(p) == 131_072


def test_concurrency_figure_draws_a_non_fitting_plan_grey_and_stops_at_the_model_limit():
    p = plan(Scenario(max_model_len=10_000_000), advise=False)
    fig = concurrency_figure([p], ["x"], min_context=512, max_context=10_485_760)
    (line,) = [t for t in fig.data if t.type == "scatter"]
    assert line.name == "x" + NOT_FIT_SUFFIX and line.line.dash == "dot" and line.line.color == NOT_FIT_COLOR
    assert max(line.x) == 131_072
    assert p.reason in line.hovertemplate
    table = concurrency_table([p], ["x"], [131_072, 262_144, 10_000_000])
    column = table["x" + NOT_FIT_SUFFIX]
    assert not math.isnan(column[0]) and column[1:].isna().all()


def test_is_empty_concurrency():
    empty = plan(Scenario(gpu_memory_utilization=0.01), advise=False)
    full = plan(Scenario(), advise=False)
    assert is_empty_concurrency(concurrency_table([empty], ["x"], [512, 4096]))
    assert not is_empty_concurrency(concurrency_table([empty, full], ["x", "y"], [512, 4096]))
    assert is_empty_concurrency(concurrency_table([full], ["y"], [262_144]))  # beyond the model: n/a


def test_key_figures_table(plans):
    table = key_figures_table(plans, ["a", "b"])
    assert list(table.columns) == ["a", "b"]
    assert table.loc["Verdict", "a"] == "fits"
    assert table.loc["max_model_len (tokens)", "a"] == f"{plans[0].max_model_len:,}"
    assert table.loc["Concurrency @ max_model_len", "b"] == f"{plans[1].max_concurrency:,.2f}"
    assert table.loc["KV blocks per GPU", "b"] == (
        "n/a" if plans[1].num_gpu_blocks is None else f"{plans[1].num_gpu_blocks:,}"
    )
    with pytest.raises(InvalidParameterError):
        key_figures_table(plans, ["a"])


def test_version_range_is_a_band_in_the_scenario_colour() -> None:
    # Llama-3.1-8B on an H100, no version: the band runs from v0.14 (51.42x at 8,192) to v0.28 (55.19x);
    # tests/unit/capacity/test_version_range.py works the ends out
    result = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_model_len=8192), advise=False)
    fig = concurrency_figure([result], ["A"], min_context=1024, max_context=8192)
    band = [t for t in fig.data if t.fill == "tonexty"]
    assert len(band) == 1 and band[0].name == "A: vLLM 0.14.0 … 0.28.0"
    assert band[0].fillcolor == "rgba(99, 110, 250, 0.18)"  # COLORS[0] #636EFA
    x = list(band[0].x)
    assert band[0].y[x.index(8192)] == pytest.approx(result.version_range.high.max_concurrency)
    lower = fig.data[fig.data.index(band[0]) - 1]
    assert lower.y[x.index(8192)] == pytest.approx(result.version_range.low.max_concurrency)
    pinned = plan(result.scenario, advise=False)  # engine_version 0.28.0 now: no range, no band
    assert not [t for t in concurrency_figure([pinned], ["A"]).data if t.fill == "tonexty"]


def test_version_band_legend_names_the_older_version_first() -> None:
    # Qwen2.5-7B on an H100 at 8,192: v0.14 sets the low end, v0.10 the high end; the legend reads 0.10.0 … 0.14.0
    result = plan(Scenario(model="Qwen/Qwen2.5-7B-Instruct", gpu="h100", max_model_len=8192), advise=False)
    assert (result.version_range.low.version, result.version_range.high.version) == ("0.14.0", "0.10.0")
    band = [t for t in concurrency_figure([result], ["A"], min_context=1024, max_context=8192).data if t.fill]
    assert [t.name for t in band] == ["A: vLLM 0.10.0 … 0.14.0"]
