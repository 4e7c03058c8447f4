"""Live Compare and Load Test in the browser against the session's real llama.cpp server (``llama_url``:
llama-cpp-python with the gemma3 270M GGUF, tests/conftest.py), which the app's endpoints file names ``llama``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
#: A whole run seen from the browser: a few short requests to a 270M model on a busy 2-core machine.
LIVE_TIMEOUT_S = 120
STATUS_DONE = re.compile(r"^llama · .*\bdone\b")


def answer_column(st):
    """The Live Compare column of the ``llama`` endpoint once its status line says done."""
    status = st.page.get_by_test_id("stMarkdown").filter(has_text=STATUS_DONE)
    return st.page.get_by_test_id("stColumn").filter(has=status)


def run_compare(st, prompt: str, *, max_tokens: int = 8, repeat: int = 1) -> list[dict[str, str]]:
    """Set the prompt and limits, press Run, wait for the final metrics and history; return the metrics rows."""
    st.text_area("Prompt", prompt)
    st.number("max_tokens", max_tokens)
    if repeat != 1:
        st.number("repeat", repeat)
    st.act(st.keyed("cmp.run").locator("button").click)
    # The live fragment reruns the whole page once the run ends; the history table is drawn by that run.
    st.table("run", timeout_s=LIVE_TIMEOUT_S)
    st.settle()
    return st.table("TTFT ms")


def test_live_compare_streams_an_answer_from_llama_cpp(open_page, llama_url):
    st = open_page("compare")
    assert st.keyed("cmp.endpoints").inner_text().count("llama") == 1
    (discovery,) = st.table("health")
    assert discovery["endpoint"] == "llama" and discovery["health"] == "up", discovery

    (metrics,) = run_compare(st, "Name three colours.", max_tokens=8)
    assert metrics["endpoint"] == "llama"
    assert metrics["ok / requests"] == "1/1"
    assert metrics["TTFT ms"] != "n/a" and metrics["E2E ms"] != "n/a"
    assert 1 <= int(metrics["output tokens"].split()[0]) <= 8  # max_tokens caps it; EOS may end it sooner

    column = answer_column(st)
    texts = [t.strip() for t in column.get_by_test_id("stMarkdown").all_inner_texts()]
    assert len(texts) == 2 and texts[1], texts  # the status line, then the answer
    assert "waiting for the first token" not in column.inner_text()
    (history,) = st.table("run")
    assert history["run"] == "1" and history["endpoint"] == "llama"
    assert st.keyed("cmp.chart.tokens-static").locator("svg").count() == 1  # drawn as SVG, live
    assert st.interactive("cmp.chart.tokens").locator(".js-plotly-plot").count() == 1  # Plotly on demand
    st.assert_no_exception()
    st.screenshot("compare-llama-run")


def test_load_test_runs_against_llama_cpp(open_page, llama_url):
    st = open_page("loadtest")
    if "llama" not in st.keyed("lt.endpoints").inner_text():
        st.select("Endpoints to load", "llama")
    st.select("Prompts", "8 examples")
    st.number("num_prompts", 4)
    st.number("max_concurrency", 2)
    st.number("output_len", 8)
    st.number("num_warmups", 0)
    st.act(st.keyed("lt.run").locator("button").click)
    st.table("completed", timeout_s=LIVE_TIMEOUT_S)  # the results table, drawn once the run is recorded
    st.page.get_by_text("Done.", exact=True).wait_for(timeout=LIVE_TIMEOUT_S * 1000)
    st.settle()
    rows = st.table("completed")
    assert len(rows) == 1, rows
    (row,) = rows
    if "completed" in row:
        assert row["completed"] == "4", row
    if "failed" in row:
        assert row["failed"] == "0", row
    # issue 24: the answer was below the fold, so after Run the first screen looked unchanged
    answer = st.page.get_by_test_id("stAlert").filter(has_text=" completed, ").first
    box = answer.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= st.page.viewport_size["height"], box
    assert answer.inner_text().startswith("llama · ") and "4 completed, 0 failed" in answer.inner_text()
    assert st.overflowing_grids() == []  # the results' headline columns fit the page
    st.assert_no_exception()
    st.screenshot("loadtest-llama-run")
