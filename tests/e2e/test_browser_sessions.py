"""Many sessions: two browser contexts with different scenarios and Live Compare runs going at once each see only
their own state and results (Streamlit keeps state per session on the server; nothing here is shared)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from .test_browser_live import LIVE_TIMEOUT_S

pytestmark = pytest.mark.e2e
# Each prompt carries a marker the other session's answer cannot plausibly produce.
PROMPT_A = "Name a colour. (ref ka71)"
PROMPT_B = "Name an animal. (ref qz58)"


def _gpu_in_url(st) -> list[str]:
    return parse_qs(urlsplit(st.page.url).query).get("gpu", [])


def test_two_sessions_keep_their_own_scenarios_and_runs(open_page, llama_url):
    a, b = open_page(), open_page()
    a.select("GPU", "NVIDIA GeForce RTX 4090 (23.4 GiB)", search="4090")
    b.select("GPU", "NVIDIA L40S (44.4 GiB)", search="L40S")
    b.type_option("Model", "Qwen/Qwen2.5-7B-Instruct")
    assert _gpu_in_url(a) == ["rtx-4090"] and "model" not in parse_qs(urlsplit(a.page.url).query)
    assert _gpu_in_url(b) == ["l40s"]
    assert ("GPU", "NVIDIA GeForce RTX 4090 (23.4 GiB)") in a.widget_values()
    assert ("Model", "meta-llama/Llama-3.1-8B-Instruct") in a.widget_values()  # B's model change stayed in B

    # The sidebar link carries no query string: each page restores the scenario from its own session.
    for st, label in ((a, "· rtx-4090 ·"), (b, "· l40s ·")):
        st.navigate("Concurrency vs Context")
        st.keyed("concurrency_chart-static").locator("svg").wait_for()
        expect(st.page.get_by_test_id("stTable")).to_contain_text(label)  # the table's column is the scenario

    # Both sessions start a Live Compare run against the same server before either finishes.
    a.navigate("Live Compare")
    b.navigate("Live Compare")
    a.text_area("Prompt", PROMPT_A)
    a.number("max_tokens", 8)
    b.text_area("Prompt", PROMPT_B)
    b.number("max_tokens", 8)
    b.number("repeat", 2)
    a.act(a.keyed("cmp.run").locator("button").click)
    b.act(b.keyed("cmp.run").locator("button").click)
    for st in (a, b):
        st.table("run", timeout_s=LIVE_TIMEOUT_S)
        st.settle()

    assert [(r["endpoint"], r["ok / requests"]) for r in a.table("TTFT ms")] == [("llama", "1/1")]
    assert [(r["endpoint"], r["ok / requests"]) for r in b.table("TTFT ms")] == [("llama", "2/2")]
    assert [(r["run"], r["requests"]) for r in a.table("run")] == [("1", "1")]
    assert [(r["run"], r["requests"]) for r in b.table("run")] == [("1", "2")]
    assert ("Prompt", PROMPT_A) in a.widget_values()
    assert ("Prompt", PROMPT_B) in b.widget_values()
    assert parse_qs(urlsplit(a.page.url).query)["prompt"] == [PROMPT_A]
    assert parse_qs(urlsplit(b.page.url).query)["prompt"] == [PROMPT_B]
    assert "qz58" not in a.text() and "ka71" not in b.text()
    for st in (a, b):
        st.assert_no_exception()
    a.screenshot("sessions-a-compare")
    b.screenshot("sessions-b-compare")

    # A third session sees neither run.
    c = open_page("compare")
    assert c.page.get_by_text("Run history").count() == 0
    assert c.dataframe("TTFT ms").count() == 0 and c.dataframe("run").count() == 0
    c.assert_no_exception()
