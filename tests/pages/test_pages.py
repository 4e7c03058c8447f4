"""Page tests with Streamlit's AppTest: every page opens, survives hostile links, and widgets work.

Pages are found by file; widgets by their keys (``w{index}.{field}``, see ``pages/_editor_memory.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("pages/budget.py", "pages/concurrency.py")
TIMEOUT_S = 30


def _app(path: str, **params: str | list[str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def test_router_runs():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.title[0].value == "VRAM Budget"


@pytest.mark.parametrize("page", PAGES)
def test_page_default_state(page):
    at = _app(page)
    assert not at.exception
    assert not at.warning
    assert not at.error


HOSTILE = {
    "gpu": "nan",
    "max_model_len": "1e309",
    "gpu_memory_utilization": "inf",
    "tensor_parallel_size": "-1",
    "s2.model": "🙂" * 300,
    "s2.block_size": "",
    "engine": ["vllm", "warp-drive"],
    "bogus_key": "1",
}


@pytest.mark.parametrize("page", PAGES)
def test_page_with_hostile_params(page):
    at = _app(page, **HOSTILE)
    assert not at.exception
    shown = " ".join(w.value for w in at.warning)
    for key in HOSTILE:
        assert key in shown, key
    assert len(at.warning) == len(HOSTILE)  # one line per bad parameter; unknown keys share one


@pytest.mark.parametrize("page", PAGES)
def test_link_restores_scenarios(page):
    at = _app(
        page,
        scenarios="2",
        gpu="rtx-4090",
        model="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        max_model_len="8192",
        **{"s2.gpu": "l40s"},
    )
    assert not at.exception and not at.warning
    assert at.query_params["gpu"] == "rtx-4090"
    assert at.query_params["s2.gpu"] == "l40s"


def test_budget_widgets_change_gpu_and_add_scenario():
    at = _app("pages/budget.py")
    at.selectbox(key="w0.gpu").set_value("rtx-4090").run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["gpu"] == "rtx-4090"
    at.radio(key="w.count").set_value(2).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["scenarios"] == "2"
    assert at.selectbox(key="w1.gpu").value == "rtx-4090"  # a new scenario starts as a copy
    at.selectbox(key="w1.engine").set_value("article").run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["s2.engine"] == "article"


def test_budget_not_fitting_scenario_shows_reason_and_advice_loads():
    at = _app("pages/budget.py", model="meta-llama/Llama-3.1-70B-Instruct")
    assert not at.exception
    assert any("Does not fit" in e.value for e in at.error)
    advice = [b for b in at.button if b.key and b.key.startswith("w0.advice")]
    assert advice
    advice[0].click().run(timeout=TIMEOUT_S)
    assert not at.exception
    assert any("Fits" in s.value for s in at.success)
    assert "engine_version" not in at.query_params


def test_budget_preset_loads():
    at = _app("pages/budget.py")
    at.selectbox(key="w.preset").set_value("article-vllm")
    at.button(key="w.load_preset").click().run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.radio(key="w.count").value == 4
    assert "s4.gpu" not in at.query_params  # the H100 is the default, so the link omits it
    assert at.query_params["s4.model"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert at.selectbox(key="w0.gpu").value == "rtx-4090"


@pytest.mark.parametrize("page", PAGES)
def test_custom_gpu_without_memory_warns_and_plans_80_gib(page):
    at = _app(page, gpu="custom")
    assert not at.exception
    assert [w.value for w in at.warning] == [
        "URL parameter — custom_gpu_memory_gib missing; using 80 (GiB) for gpu=custom"
    ]
    assert not at.error  # both pages plan the same 80 GiB GPU
    assert at.query_params["custom_gpu_memory_gib"] == "80"


def test_budget_planner_error_is_one_line():
    at = _app("pages/budget.py", pipeline_parallel_size="64")  # more stages than the model's 32 layers
    assert not at.exception
    assert len(at.error) == 1 and "pipeline_parallel_size" in at.error[0].value
    at = _app(
        "pages/budget.py",
        engine="article",
        params_b="0.001",
        num_layers="1",
        num_kv_heads="1",
        head_dim="1",
        gpu_memory_gb="0.1",
    )
    assert not at.exception


def test_concurrency_empty_state():
    at = _app("pages/concurrency.py", pipeline_parallel_size="64")  # more stages than layers: no plan
    assert not at.exception
    assert at.error and "pipeline_parallel_size" in at.error[0].value
    assert at.info


def _chart(at: AppTest) -> dict:
    """The concurrency chart's plotly spec."""
    import json

    charts = at.get("plotly_chart")
    assert len(charts) == 1
    return json.loads(charts[0].proto.spec)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"tensor_parallel_size": "64"}, "not divisible by tensor_parallel_size 64"),
        ({"max_model_len": "10000000"}, "exceeds the model's max_position_embeddings"),
    ],
)
def test_concurrency_shows_verdict_of_non_fitting_scenarios(params, reason):
    at = _app("pages/concurrency.py", scenarios="2", **{f"s2.{k}": v for k, v in params.items()})
    assert not at.exception
    assert len(at.warning) == 1
    assert "Scenario 2 does not fit" in at.warning[0].value and reason in at.warning[0].value
    traces = _chart(at)["data"]
    grey = [t for t in traces if t.get("name", "").endswith("(does not fit)")]
    assert len(grey) == 1 and grey[0]["line"]["dash"] == "dot"
    assert max(x for t in traces for x in t["x"]) <= 131_072  # nothing past Llama 3.1's limit


def test_concurrency_context_beyond_model_limit_is_na():
    at = _app("pages/concurrency.py", max_model_len="10000000", max_context="10485760")
    assert not at.exception
    table = at.table[0].value
    assert table.loc["256K"].iloc[0] == "n/a" and table.loc["10M"].iloc[0] == "n/a"
    assert table.loc["128K"].iloc[0] != "n/a"


def test_concurrency_empty_chart_explains_itself():
    at = _app("pages/concurrency.py", gpu_memory_utilization="0.01")
    assert not at.exception
    assert "weights alone" in at.warning[0].value
    assert at.info and "Nothing to chart" in at.info[0].value
    assert not at.get("plotly_chart")


def test_budget_four_scenarios_show_a_compact_table():
    at = _app("pages/budget.py")
    at.selectbox(key="w.preset").set_value("article-vllm")
    at.button(key="w.load_preset").click().run(timeout=TIMEOUT_S)
    assert not at.exception
    assert not at.metric  # no truncated metric grid with four columns
    (table,) = _key_figures(at)
    assert list(table.columns) == ["Scenario 1", "Scenario 2", "Scenario 3", "Scenario 4"]
    assert "Concurrency @ max_model_len" in table.index
    at.radio(key="w.count").set_value(2).run(timeout=TIMEOUT_S)
    assert at.metric and not _key_figures(at)


def _key_figures(at: AppTest) -> list:
    """The compact key-figures tables (the model details' tables have one "value" column)."""
    return [t.value for t in at.table if "Scenario 1" in t.value.columns]


def test_concurrency_range_control_and_table():
    at = _app("pages/concurrency.py", min_context="1024", max_context="16384")
    assert not at.exception
    assert at.select_slider(key="w.context_range").value == (1024, 16384)
    assert list(at.table[0].value.index) == ["1K", "2K", "4K", "8K", "16K"]
    at.select_slider(key="w.context_range").set_value((512, 4096)).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["max_context"] == "4096"


def test_engine_switch_keeps_typed_fields():
    at = _app("pages/budget.py")
    at.text_input(key="w0.tensor_parallel_size").input("2")
    at.selectbox(key="w0.quantization").set_value("fp8")
    at.selectbox(key="w0.kv_cache_dtype").set_value("fp8")
    at.text_input(key="w0.max_model_len").input("8192")
    at.slider(key="w0.gpu_memory_utilization").set_value(0.8).run(timeout=TIMEOUT_S)
    assert not at.exception
    for engine in ("article", "vllm", "tgi", "vllm"):
        at.selectbox(key="w0.engine").set_value(engine).run(timeout=TIMEOUT_S)
        assert not at.exception
    assert at.text_input(key="w0.tensor_parallel_size").value == "2"
    assert at.selectbox(key="w0.quantization").value == "fp8"
    assert at.selectbox(key="w0.kv_cache_dtype").value == "fp8"
    assert at.text_input(key="w0.max_model_len").value == "8192"
    assert at.slider(key="w0.gpu_memory_utilization").value == pytest.approx(0.8)
    assert at.query_params["tensor_parallel_size"] == "2"
    assert at.query_params["gpu_memory_utilization"] == "0.8"


def test_hidden_scenarios_survive_a_lower_count():
    at = _app("pages/budget.py")
    at.selectbox(key="w.preset").set_value("article-vllm")
    at.button(key="w.load_preset").click().run(timeout=TIMEOUT_S)
    third, fourth = at.selectbox(key="w2.model").value, at.selectbox(key="w3.model").value
    assert third != at.selectbox(key="w1.model").value or fourth != at.selectbox(key="w1.model").value
    at.radio(key="w.count").set_value(2).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["scenarios"] == "2" and "s3.model" not in at.query_params
    at.radio(key="w.count").set_value(4).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.selectbox(key="w2.model").value == third
    assert at.selectbox(key="w3.model").value == fourth
    assert at.query_params["s4.model"] == fourth


@pytest.mark.parametrize("page", [*PAGES, "pages/compare.py"])
def test_every_page_loads_without_exception(page):
    # The smoke test over every page the router lists.
    assert not _app(page).exception


def _router(**params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _load_first_preset(at: AppTest) -> None:
    at.button(key="w.load_preset").click().run(timeout=TIMEOUT_S)  # "Article scenarios 1–4 — article rule"


def _apply_first_advice(at: AppTest) -> None:
    advice = [b for b in at.button if b.key and b.key.startswith("w0.advice")]
    advice[0].click().run(timeout=TIMEOUT_S)


def _type_article_fields(at: AppTest) -> None:
    at.text_input(key="w0.tensor_parallel_size").input("2").run(timeout=TIMEOUT_S)  # hidden by the switch below
    at.selectbox(key="w0.engine").set_value("article").run(timeout=TIMEOUT_S)
    at.selectbox(key="w0.weight_quant").set_value("int4")
    at.selectbox(key="w0.kv_quant").set_value("fp8")
    at.text_input(key="w0.params_b").input("8").run(timeout=TIMEOUT_S)


# Each way of changing scenarios, then parameters the query string must then hold (from the preset's scenarios
# 1 and 4 in planner/presets.py and from the typed values; an advice's numbers are the planner's, so only the
# change itself is checked for it).
ROUND_TRIPS = {
    "preset": ({}, _load_first_preset, {"weight_quant": "int4", "params_b": "8", "s4.weight_quant": "int4"}),
    "advice": (
        {"model": "meta-llama/Llama-3.1-70B-Instruct"},
        _apply_first_advice,
        {},
    ),
    "typed": (
        {},
        _type_article_fields,
        {"engine": "article", "weight_quant": "int4", "kv_quant": "fp8", "params_b": "8"},
    ),
}


@pytest.mark.parametrize("other", ["pages/concurrency.py", "pages/performance.py", "pages/loadtest.py"])
@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_scenarios_survive_leaving_the_budget_page(how, other):
    # Regression: a preset's hidden fields (seeded while another engine was shown) came back as the old seed
    # after a visit to another page: scenario 1 went from int4 to fp16 weights and lost params_b=8.
    params, change, expected = ROUND_TRIPS[how]
    at = _router(**params)
    untouched = dict(at.query_params)
    change(at)
    assert not at.exception
    before = dict(at.query_params)
    assert before != untouched and expected.items() <= before.items()
    scenarios = at.session_state["planner.scenarios"]
    at.switch_page(other).run(timeout=TIMEOUT_S)
    assert not at.exception
    at.switch_page("pages/budget.py").run(timeout=TIMEOUT_S)
    assert not at.exception
    after = {k: v for k, v in dict(at.query_params).items() if k not in ("min_context", "max_context")}
    assert after == {k: v for k, v in before.items() if k not in ("min_context", "max_context")}
    assert at.session_state["planner.scenarios"] == scenarios
    if how == "typed":  # a field hidden by the engine switch is still what was typed
        at.selectbox(key="w0.engine").set_value("vllm").run(timeout=TIMEOUT_S)
        assert at.text_input(key="w0.tensor_parallel_size").value == "2"


def test_concurrency_band_of_the_vllm_versions_in_use():
    # no version set: the chart shades the range over the versions in use and a caption says it in words
    at = _app("pages/concurrency.py", max_model_len="8192")
    assert not at.exception
    captions = [c.value for c in at.caption if c.value.startswith("Shaded, ")]
    assert captions and "0.14.0 sets the low end, 0.28.0 the high end" in captions[0]
