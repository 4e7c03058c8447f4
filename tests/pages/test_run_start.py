"""Live Compare and Load Test start a run on a worker process that was already importing before the click
(planner/serving/worker_process.py ``warm_worker``): the page starts the spare, the click takes it.

AppTest with the timed server (planner/serving/demo_server.py) as the endpoint. Times are not asserted here:
bench/page_load.py measures click to first request."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.serving import worker_process

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60
#: page -> (its Run button, the session-state key of its run)
PAGES = {"compare": ("cmp.run", "compare.run"), "loadtest": ("lt.run", "lt.current")}


@pytest.fixture
def timed_endpoint(tmp_path, monkeypatch, timed_server):
    path = tmp_path / "endpoints.toml"
    path.write_text(f'[[endpoint]]\nname = "timed"\nkind = "vllm"\nbase_url = "{timed_server.url}"\n', encoding="utf-8")
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
    monkeypatch.delenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", raising=False)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_warms_a_worker_and_the_click_takes_it(page, timed_endpoint):
    button, run_key = PAGES[page]
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=TIMEOUT_S)
    at.query_params["ep"] = "timed"
    at.query_params["num_prompts" if page == "loadtest" else "max_tokens"] = "4"
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    spare = worker_process.spare_pid()
    assert spare is not None, "opening the page started no worker process"

    at.button(key=button).click().run(timeout=TIMEOUT_S)
    run = at.session_state[run_key]["run"]
    assert run.pid == spare  # the click started no process: it took the one that was importing
    deadline = time.monotonic() + TIMEOUT_S
    while not run.done:
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.2)
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert worker_process.spare_pid() not in (None, spare)  # the page's next run started the next spare
