"""Every page of ``streamlit run app.py`` in a real Chromium: it loads, draws what it should, shows no exception, and
leaves a full-page screenshot in the artifacts directory."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTIFACTS

pytestmark = pytest.mark.e2e

# (url path, title, screenshot name) of every page app.py routes.
ROUTES = [
    ("", "VRAM Budget", "budget"),
    ("concurrency", "Concurrency vs Context", "concurrency"),
    ("performance", "Performance", "performance"),
    ("sizing", "Sizing", "sizing"),
    ("fleet", "Fleet", "fleet"),
    ("compare", "Live Compare", "compare"),
    ("loadtest", "Load Test", "loadtest"),
]


@pytest.mark.parametrize(("path", "title", "shot"), ROUTES)
def test_page_loads_without_exception(open_page, path, title, shot):
    st = open_page(path)
    assert st.page.get_by_role("heading", level=1).first.inner_text() == title
    st.assert_no_exception()
    assert st.external == []  # nothing fetched off this machine (a material page icon came from fonts.gstatic.com)
    st.screenshot(f"page-{shot}")


def test_budget_draws_verdict_and_memory_chart(open_page):
    st = open_page()
    st.keyed("memory_chart-static").locator("svg").first.wait_for()  # drawn at once as SVG
    st.interactive("memory_chart")  # and as Plotly on demand
    assert "Fits — " in st.text()  # the default scenario (Llama 3.1 8B on one H100) fits
    assert st.page.get_by_test_id("stMetric").count() == 7
    st.assert_no_exception()


def test_concurrency_renders_its_chart(open_page):
    st = open_page("concurrency")
    st.keyed("concurrency_chart-static").locator("svg").first.wait_for()
    chart = st.interactive("concurrency_chart")
    assert chart.locator(".scatterlayer .trace").count() >= 1  # a line per scenario
    assert st.page.get_by_test_id("stTable").count() == 1
    st.assert_no_exception()
    st.screenshot("concurrency-chart")


def test_sidebar_navigation_reaches_every_page(open_page):
    st = open_page()
    listed = st.page.get_by_test_id("stSidebarNav").get_by_role("link").all_inner_texts()
    assert len(listed) == len(ROUTES), listed
    for _, title, _ in reversed(ROUTES):  # ends back on the default page
        assert any(title in text for text in listed), (title, listed)
        st.navigate(title)
        assert st.page.get_by_role("heading", level=1).first.inner_text() == title
        st.assert_no_exception()


def test_a_deep_link_as_first_visit_goes_through_the_router(app):
    # Streamlit keeps its legacy pages/ mode until a script calls st.navigation: without pages/_state.use_router()
    # the first visitor of /loadtest would get the page alone, with every module of pages/ in the sidebar.
    assert app.first_visit["nav"] == [
        "VRAM Budget",
        "Concurrency vs Context",
        "Performance",
        "Sizing",
        "Fleet",
        "Live Compare",
        "Load Test",
    ]
    assert app.first_visit["num_prompts"] == "5"
    assert "/loadtest?" in str(app.first_visit["url"]) and "num_prompts=5" in str(app.first_visit["url"])


def test_the_answer_is_on_the_first_screen(open_page):
    # 1400 x 900 (VIEWPORT), one scenario: the verdict, concurrency, KV tokens, the explanation's expander, the launch
    # command and the top of the memory chart are visible without scrolling; the editors come after them
    st = open_page()
    chart = st.keyed("memory_chart-static").locator("svg").first
    chart.wait_for()
    height = st.page.viewport_size["height"]

    def top_and_bottom(locator):
        box = locator.bounding_box()
        return box["y"], box["y"] + box["height"]

    verdict = st.page.get_by_test_id("stAlert").filter(has_text="Fits — ").first
    concurrency = st.page.get_by_test_id("stMetric").filter(has_text="Concurrency @ 131,072").first
    tokens = st.page.get_by_test_id("stMetric").filter(has_text="KV cache tokens").first
    command = st.command("vllm serve").first  # as text, its copy button beside it (pages/_light.py)
    # the explanation is one collapsed line beside "Model details", not between the answer and the command
    why = st.page.get_by_test_id("stExpander").filter(has_text="Why these numbers").first
    for element in (verdict, concurrency, tokens, why, command):
        assert top_and_bottom(element)[1] <= height, element
    assert top_and_bottom(chart)[0] < height  # the memory chart starts on screen
    assert top_and_bottom(st.page.get_by_role("heading", name="Scenarios"))[0] > top_and_bottom(command)[1]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    st.page.screenshot(path=str(ARTIFACTS / "budget-first-screen.png"))  # the first screen only, 1400 x 900
