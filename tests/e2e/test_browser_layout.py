"""Answers that fit the page (issue 24, item 10), at the browser size of every e2e test (1400 x 900): a launch
command wraps instead of running past its box, a table's headline columns fit the main column (the rest fold into
"All N columns"), and four scenario editors show whole model and GPU names. The Load Test's answer under the Run
button is checked in ``test_browser_live.py``, which runs one."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_sizing_launch_command_and_table_fit(open_page):
    st = open_page("sizing")
    st.keyed("size.pareto.gpu-static").locator("svg").first.wait_for()
    st.html_table("size.table")  # the table has drawn its rows
    assert st.command("vllm serve").count() == 1
    assert st.clipped_code() == []  # was cut at "--max-model-len 40…" on the first screen
    assert st.overflowing_grids() == [] and st.overflowing_html_tables() == []
    st.assert_no_exception()
    st.screenshot("layout-sizing")


def test_performance_table_fits(open_page):
    st = open_page("performance")
    st.table("scenario")
    assert st.overflowing_grids() == []
    st.assert_no_exception()


def test_four_scenarios_show_whole_model_and_gpu_names(open_page):
    query = (
        "scenarios=4&s2.model=Qwen/Qwen2.5-72B-Instruct&s2.gpu=a100-sxm4-40gb"
        "&s4.model=mistralai/Mixtral-8x7B-Instruct-v0.1"
    )
    st = open_page("", query)
    assert st.page.locator("input[aria-label='Model']").count() == 4
    assert st.cut_inputs("Model") == []
    assert st.cut_inputs("GPU") == []
    st.assert_no_exception()
    st.screenshot("layout-budget-four")
