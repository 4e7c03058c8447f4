"""Load Test in the browser: a multi-turn run against the session's real llama.cpp server (``llama``), opened from a
link, run, and its TTFT by turn and prefix-cache table drawn (llama-cpp-python exports no counters: hit rate n/a)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

#: A whole run seen from the browser: a few short requests to a 270M model on a busy 2-core machine.
LIVE_TIMEOUT_S = 180


def test_multi_turn_run_from_a_link_shows_ttft_by_turn(open_page, llama_url):
    st = open_page(
        "loadtest",
        "ep=llama&dataset_name=multi_turn&num_turns=2&num_prompts=4&max_concurrency=1&input_len=16&output_len=4"
        "&ignore_eos=true&num_warmups=0",
    )
    st.act(st.keyed("lt.run").locator("button").click)
    st.page.get_by_text("Done.", exact=True).wait_for(timeout=LIVE_TIMEOUT_S * 1000)
    st.settle()
    st.page.get_by_text("TTFT by turn", exact=True).first.wait_for(timeout=30_000)
    turns = st.table("mean_input_tokens")
    assert [row["turn"] for row in turns] == ["1", "2"] and {row["requests"] for row in turns} == {"2"}
    (cache,) = st.table("cache_flushed")
    assert cache["dataset_name"] == "multi_turn" and cache["prefix_cache_hit_rate"] == "n/a"
    assert cache["reusable_prefix_share"].endswith("%")
    st.assert_no_exception()
    st.screenshot("loadtest-multiturn-llama")


def test_batching_compare_from_a_link_shows_the_ratio(open_page, llama_url):
    st = open_page(
        "loadtest",
        "ep=llama&batching=compare&num_prompts=4&max_concurrency=2&input_len=16&output_len=4&ignore_eos=true"
        "&num_warmups=0",
    )
    st.act(st.keyed("lt.run").locator("button").click)
    st.page.get_by_text("Done.", exact=True).wait_for(timeout=LIVE_TIMEOUT_S * 1000)
    st.settle()
    st.page.get_by_text("Static vs continuous batching", exact=True).first.wait_for(timeout=30_000)
    (pair,) = st.table("throughput_ratio")
    assert pair["endpoint"] == "llama" and pair["max_concurrency"] == "2" and pair["throughput_ratio"].endswith("×")
    st.assert_no_exception()
    st.screenshot("loadtest-batching-compare-llama")
