"""Load Test's maximum-rate search with AppTest, against the demo server with 4 slots (20 req/s by hand): the search
runs in its worker process, its steps and answer are shown, and its runs join the page's results; a bad SLO is one
line. AppTest does not fire ``st.fragment(run_every=...)`` timers, so the test polls with plain ``at.run()``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.servers.timed_sse import TimedServer

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "loadtest.py")
TIMEOUT_S = 30


@pytest.fixture
def slotted(tmp_path, monkeypatch):
    with TimedServer(max_num_seqs=4, flags=("--ttft-ms", "50", "--itl-ms", "10")) as server:
        path = tmp_path / "endpoints.toml"
        path.write_text(f'[[endpoint]]\nname = "demo"\nkind = "vllm"\nbase_url = "{server.url}"\n', encoding="utf-8")
        monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
        monkeypatch.delenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", raising=False)
        yield server


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


LINK = {"ep": "demo", "output_len": "16", "ignore_eos": "true", "burstiness": "100", "num_prompts": "16"}


def test_search_runs_and_its_steps_join_the_results(slotted) -> None:
    at = _app(**LINK, input_sizing="words", scrape_metrics="false", duration="30")
    assert not at.exception
    at.text_input(key="lt.mr.slo").set_value("ttft_p99_ms=150").run(timeout=TIMEOUT_S)
    at.text_input(key="lt.mr.steps").input("3").run(timeout=TIMEOUT_S)
    at.text_input(key="lt.mr.probe_s").input("1").run(timeout=TIMEOUT_S)
    at.button(key="lt.mr.run").click().run(timeout=TIMEOUT_S)
    deadline = time.monotonic() + 120
    while not at.session_state["lt.mr.current"]["run"].done:
        assert time.monotonic() < deadline, "the search did not finish"
        time.sleep(0.5)
        at.run(timeout=TIMEOUT_S)
    at.run(timeout=TIMEOUT_S)
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    snap = at.session_state["lt.mr.current"]["run"].snapshot()
    assert snap.result is not None and len(snap.steps) == 3 and not snap.errors
    assert snap.steps[0].level == float("inf")  # the burst first
    labels = {r.label for r in at.session_state["lt.history"]}
    assert {s.label for s in snap.steps} <= labels  # the steps are results of the page


def test_bad_slo_is_one_line(slotted) -> None:
    at = _app(**LINK)
    at.text_input(key="lt.mr.slo").set_value("ttft_p99=150").run(timeout=TIMEOUT_S)
    assert not at.exception
    errors = [e.value for e in at.error if "Cannot search" in e.value]
    assert errors == [
        "Cannot search: slo='ttft_p99=150' is not valid: expected METRIC_STAT_ms=LIMIT with METRIC ttft, tpot, itl or "
        "e2el, STAT p50, p90, p99 or mean and 0 < LIMIT ≤ 3,600,000 ms, e.g. ttft_p99_ms=1000."
    ]
    assert at.button(key="lt.mr.run").disabled
