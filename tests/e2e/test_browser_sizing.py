"""The Sizing page in a real Chromium: the answer and the launch command on the first screen, the ranked table, the
two Pareto views, and a link that restores a narrower question."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def _bottom(locator) -> float:
    box = locator.bounding_box()
    return box["y"] + box["height"]


def test_sizing_answers_first_with_its_pareto_view(open_page):
    st = open_page("sizing")
    st.keyed("size.pareto.gpu-static").locator("svg").first.wait_for()
    st.assert_no_exception()
    height = st.page.viewport_size["height"]
    answer = st.page.get_by_test_id("stAlert").first
    assert " × " in answer.inner_text() and "per million output tokens" in answer.inner_text()
    metrics = st.page.get_by_test_id("stMetric")
    assert metrics.count() == 6
    assert all(_bottom(metrics.nth(i)) <= height for i in range(6))  # the answer on the first screen (1400 x 900)
    command = st.command("vllm serve").first  # as text, its copy button beside it (pages/_light.py)
    assert _bottom(command) <= height
    rows = st.html_table("size.table")  # plain HTML first, the data grid on demand (pages/_light.py)
    assert rows[0]["rank"] == "1" and rows[0]["verdict"] == "meets the SLOs"
    assert st.external == []
    st.screenshot("sizing-default")
    st.page.get_by_role("tab", name="tokens/s per user vs cost").click()  # tabs switch in the browser: no rerun
    st.keyed("size.pareto.cost-static").locator("svg").first.wait_for()  # drawn at once as SVG
    st.interactive("size.pareto.cost")  # and as Plotly on demand
    st.assert_no_exception()


def test_sizing_link_restores_a_narrower_question(open_page):
    query = "gpus=h100-sxm-80gb,a100-sxm4-80gb&max_gpus=1&quantization=none&target_rate=6&row=2"
    st = open_page("sizing", query)
    st.keyed("size.pareto.gpu-static").locator("svg").first.wait_for()
    st.assert_no_exception()
    assert "row=2" in st.page.url and "target_rate=6" in st.page.url
    values = dict(st.widget_values())
    assert values["target rate (req/s)"] == "6"
    assert values["Launch command of"].startswith("#2: ")


def test_editing_the_target_rate_twice_keeps_the_page_working(open_page):
    # the new-user trial: 20 -> 25 req/s worked, 25 -> 30 raised "invalid literal for int() with base 10: '#1: 2 ×
    # GH200 ...'" from the link writer: after the ranking changed, the launch-command box's state held its old label
    st = open_page("sizing", "gpus=h100-sxm-80gb,a100-sxm4-80gb&max_gpus=2&quantization=none&target_rate=6")
    st.keyed("size.pareto.gpu-static").locator("svg").first.wait_for()
    for rate in ("12", "18", "24"):
        st.number("target rate (req/s)", rate)
        st.keyed("size.pareto.gpu-static").locator("svg").first.wait_for()
        st.assert_no_exception()
        assert f"target_rate={rate}" in st.page.url


def test_a_typed_price_outlives_its_closed_expander(open_page):
    # the price editor is drawn only while "GPUs and prices" is open (its data grid held the first screen back): a
    # price typed in it stays in the link and the answer when the expander is closed, and is there when it reopens
    st = open_page("sizing", "gpus=h100-sxm-80gb,a100-sxm4-80gb&max_gpus=1&quantization=none&target_rate=6")
    prices = st.page.locator('[class*="st-key-size-prices_table"]')  # the editor (its key carries a generation)
    assert not prices.count()
    expander = st.page.get_by_test_id("stExpander").filter(has_text="GPUs and prices").locator("summary")
    st.act(expander.click)
    rows = st.table("gpu")  # waits for the grid's rows
    assert list(rows[0])[:2] == ["gpu", "USD per GPU-hour"] and rows[0]["gpu"] == "h100-sxm-80gb"
    # the first row's price (the gpu column is ~150 px wide, the header and rows 35 px): a double click opens its editor
    prices.locator(".dvn-scroller").dblclick(position={"x": 250, "y": 52})
    editor = st.page.locator("#portal input.gdg-input")
    editor.wait_for()
    assert editor.input_value() == "2.99"  # the catalog's H100 price, the row clicked
    editor.fill("50")
    st.act(lambda: editor.press("Enter"))
    assert "price=h100-sxm-80gb%3D50" in st.page.url
    answer = st.page.get_by_test_id("stAlert").first.inner_text()
    assert "× A100" in answer.split(" · ")[0]  # H100 at $50/h is no longer the cheapest
    row = st.table("gpu")[0]  # the typed row says whose price it is at once (it kept the catalog's source)
    assert row["USD per GPU-hour"] == "50" and row["source"].startswith("your price")
    st.act(expander.click)  # closed: no editor, the price kept
    assert not prices.count()
    assert "price=h100-sxm-80gb%3D50" in st.page.url
    assert st.page.get_by_test_id("stAlert").first.inner_text() == answer
    st.act(expander.click)  # open again: the editor shows the typed price
    row = st.table("gpu")[0]
    assert row["USD per GPU-hour"] == "50" and row["source"].startswith("your price")
    st.assert_no_exception()
