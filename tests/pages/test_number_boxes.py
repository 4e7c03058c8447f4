"""Number boxes on every page (AppTest): what is typed is taken exactly, or refused with one line naming the text, what
is accepted and the value still in use; the link carries the value the box shows (issue 24, item 9).

``st.number_input`` read ``1e3`` in an integer box as 1 (JavaScript ``parseInt`` in the browser, see
``tests/e2e/test_browser_numbers.py``) and only turned an out-of-range box red. The boxes are now text read by the
link codecs' own parsers (``pages/_numbers.py``); every box a page draws is listed under
:data:`pages._numbers.ACCEPTED_KEY`, which is how the parametrised test below finds them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._numbers import ACCEPTED_KEY

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90
JUNK = "12abc"  # parseFloat/parseInt read this as 12: a box must refuse it


@pytest.fixture(autouse=True)
def _endpoints_file(tmp_path, monkeypatch):
    """One configured endpoint (never contacted: nothing here presses Run), so Live Compare draws its boxes."""
    path = tmp_path / "endpoints.toml"
    path.write_text('[[endpoint]]\nname = "a"\nkind = "vllm"\nbase_url = "http://127.0.0.1:9"\n', encoding="utf-8")
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))


def _app(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def _type(at: AppTest, key: str, text: str) -> AppTest:
    return at.text_input(key=key).input(text).run(timeout=TIMEOUT_S)


def test_exponent_in_an_integer_box_is_taken_exactly_and_linked() -> None:
    at = _type(_app("budget.py"), "w0.target_context", "1e3")
    assert not at.exception and not _errors(at)
    assert at.text_input(key="w0.target_context").value == "1000"  # the box shows what the link carries
    assert at.query_params["target_context"] == "1000"
    assert any(m.label == "Concurrency @ 1,000" for m in at.metric)


def test_a_number_past_the_range_is_refused_in_one_line_and_nothing_changes() -> None:
    at = _type(_app("budget.py", target_context="4096"), "w0.target_context", "1e30")
    assert not at.exception
    assert _errors(at) == [
        "Target context (tokens): '1e30' is not used: expected an integer from 1 to 10485760, or empty; "
        "still using 4096."
    ]
    assert at.text_input(key="w0.target_context").value == "1e30"  # nothing typed is lost
    assert at.query_params["target_context"] == "4096"
    at = _type(at, "w0.tensor_parallel_size", "65")
    assert "Tensor parallel: '65' is not used: expected an integer from 1 to 64; still using 1." in _errors(at)
    assert "tensor_parallel_size" not in at.query_params
    at = _type(at, "w0.target_context", "8192")  # fixed: the line goes, the value is used
    assert at.query_params["target_context"] == "8192"
    assert not any("Target context" in e for e in _errors(at))


def test_auto_is_refused_for_tgi_max_model_len() -> None:
    at = _type(_app("budget.py", engine="tgi"), "w0.max_model_len", "auto")
    assert not at.exception
    (line,) = _errors(at)
    assert line.startswith("Max model length (tokens): 'auto' is not used: expected an integer from 16 to 10,485,760")
    assert "max_model_len" not in at.query_params


@pytest.mark.parametrize(
    ("page", "key", "typed", "shown", "param"),
    [
        ("loadtest.py", "lt.num_prompts", "1e2", "100", ("num_prompts", "100")),
        ("loadtest.py", "lt.request_rate", "2.50", "2.5", ("request_rate", "2.5")),
        ("performance.py", "perf.input_len", "2E3", "2000", ("input_len", "2000")),
        ("sizing.py", "size.target_rate", "0.5e1", "5", ("target_rate", "5")),
        ("compare.py", "cmp.max_tokens", "1e2", "100", ("max_tokens", "100")),
    ],
)
def test_each_page_takes_typed_numbers_exactly(page: str, key: str, typed: str, shown: str, param: tuple) -> None:
    at = _type(_app(page), key, typed)
    assert not at.exception and not _errors(at)
    assert at.text_input(key=key).value == shown
    assert at.query_params[param[0]] == param[1]


@pytest.mark.parametrize("page", ["budget.py", "performance.py", "sizing.py", "compare.py", "loadtest.py"])
def test_every_number_box_refuses_text_with_one_line(page: str) -> None:
    at = _app(page)
    boxes = sorted(at.session_state[ACCEPTED_KEY])
    assert len(boxes) >= 4, boxes
    link = dict(at.query_params)
    for key in boxes:
        if at.text_input(key=key).disabled:
            continue
        before = at.text_input(key=key).value
        at = _type(at, key, JUNK)
        assert not at.exception, key
        lines = _errors(at)
        assert len(lines) == 1 and f"'{JUNK}' is not used: expected " in lines[0] and "still using" in lines[0], (
            key,
            lines,
        )
        assert dict(at.query_params) == link, key  # no value changed without a word
        at = _type(at, key, before)
        assert not _errors(at), (key, _errors(at))
