"""Page tests with Streamlit's AppTest: every page opens, survives hostile links, and widgets work.

Pages are found by file; widgets by their keys (``w{index}.{field}``, see ``ui/editor.py``).
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


def test_budget_planner_error_is_one_line():
    at = _app("pages/budget.py", gpu="custom")  # custom GPU without memory: the editor supplies 80 GiB
    assert not at.exception
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
    at = _app("pages/concurrency.py", gpu="custom")  # no custom memory: the plan fails
    assert not at.exception
    assert at.error and "custom_gpu_memory_gib" in at.error[0].value
    assert at.info


def test_concurrency_range_control_and_table():
    at = _app("pages/concurrency.py", min_context="1024", max_context="16384")
    assert not at.exception
    assert at.select_slider(key="w.context_range").value == (1024, 16384)
    assert list(at.table[0].value.index) == ["1K", "2K", "4K", "8K", "16K"]
    at.select_slider(key="w.context_range").set_value((512, 4096)).run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.query_params["max_context"] == "4096"
