"""A scenario changed in the browser, copied as a link and opened in a fresh browser context restores exactly."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def _figures(st) -> list[str]:
    """The verdict's metric tiles and success/error lines, as shown."""
    tiles = st.page.get_by_test_id("stMetric").all_inner_texts()
    alerts = st.page.get_by_test_id("stAlertContainer").all_inner_texts()
    return tiles + alerts


def test_budget_link_restores_the_scenario_in_a_new_context(open_page):
    first = open_page()
    first.select("GPU", "NVIDIA GeForce RTX 4090 (23.4 GiB)", search="4090")
    first.type_option("Model", "Qwen/Qwen2.5-7B-Instruct")
    first.number("Max model length (tokens)", 8192)
    first.radio("Scenarios to compare", "2")  # the second scenario starts as a copy of the first
    first.select("Engine", "TGI", nth=1)
    first.select("KV cache dtype", "fp8", nth=1)
    first.number("Target context (tokens)", 4096, nth=1)
    first.assert_no_exception()

    link = first.page.url
    # Worked out from the changes above and planner/url_state.py's scheme (defaults omitted, s2. prefix).
    assert _query(link) == {
        "model": ["Qwen/Qwen2.5-7B-Instruct"],
        "gpu": ["rtx-4090"],
        "max_model_len": ["8192"],
        "scenarios": ["2"],
        "s2.model": ["Qwen/Qwen2.5-7B-Instruct"],
        "s2.gpu": ["rtx-4090"],
        "s2.max_model_len": ["8192"],
        "s2.engine": ["tgi"],
        "s2.kv_cache_dtype": ["fp8"],
        "s2.target_context": ["4096"],
    }
    values = first.widget_values()
    assert ("GPU", "NVIDIA GeForce RTX 4090 (23.4 GiB)") in values
    assert ("Engine", "TGI") in values and ("Scenarios to compare", "2") in values
    figures = _figures(first)
    first.screenshot("link-original")

    second = open_page(url=link)  # a new browser context: no cookies, storage or Streamlit session in common
    assert second.page.url == link
    assert second.widget_values() == values
    assert _figures(second) == figures
    second.assert_no_exception()
    second.screenshot("link-restored")


def test_link_carries_the_scenario_to_the_concurrency_page(open_page):
    first = open_page()
    first.select("GPU", "NVIDIA L40S (44.4 GiB)", search="L40S")
    link = first.page.url
    assert _query(link) == {"gpu": ["l40s"]}
    other = open_page("concurrency", urlsplit(link).query)
    other.interactive("concurrency_chart")
    expect(other.page.get_by_test_id("stTable")).to_contain_text("· l40s ·")  # the table's column is the scenario
    assert _query(other.page.url)["gpu"] == ["l40s"]
    other.assert_no_exception()


def test_loaded_preset_survives_a_visit_to_another_page(open_page):
    # Regression: after "Load preset" and a visit to another page, scenario 1 came back with fp16 instead of int4
    # weights and without params_b=8 (fields the preset set while the vLLM editor was shown).
    budget = open_page()
    budget.page.get_by_text("Presets: the article's scenarios").click()
    budget.act(budget.keyed("w.load_preset").get_by_role("button").click)
    budget.assert_no_exception()
    loaded = _query(budget.page.url)
    # Scenario 1 of the first preset, "Article scenarios 1–4 — article rule" (planner/presets.py): the article's
    # RTX 4090, Llama 3.1 8B (the default model, so not in the link), int4 weights, fp16 KV, 8,192 tokens.
    assert {k: loaded[k] for k in ("engine", "gpu", "params_b", "weight_quant", "kv_quant", "target_context")} == {
        "engine": ["article"],
        "gpu": ["rtx-4090"],
        "params_b": ["8"],
        "weight_quant": ["int4"],
        "kv_quant": ["fp16"],
        "target_context": ["8192"],
    }
    values = budget.widget_values()
    figures = _figures(budget)
    for title in ("Concurrency vs Context", "VRAM Budget", "Load Test", "VRAM Budget"):
        budget.navigate(title)
        budget.assert_no_exception()
    back = _query(budget.page.url)
    for key in ("min_context", "max_context"):  # the concurrency page adds its chart range to the link
        back.pop(key, None)
    assert back == loaded
    assert budget.widget_values() == values
    assert _figures(budget) == figures
