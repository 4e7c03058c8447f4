"""pages/_cache.py ``remembered``: work a page shows a progress bar for is done once for every session, so a fresh tab
gets the answer another tab computed (a new AppTest is a new session; the process, and its caches, stay)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import pages._cache
import planner.sizing.pareto
import planner.sizing.search
from pages._cache import remembered

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120


def _counting(monkeypatch, module, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _fresh_session(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=TIMEOUT_S).run(timeout=TIMEOUT_S)
    assert not at.exception
    return at


def test_a_predicted_curve_is_computed_once_for_every_session(monkeypatch):
    calls = _counting(monkeypatch, pages._cache, "predict_curve")
    first = _fresh_session("performance.py")
    second = _fresh_session("performance.py")
    assert len(calls) == 1  # the default scenario's curve, once
    assert [m.value for m in second.metric] == [m.value for m in first.metric]


def test_a_sizing_search_and_its_pareto_points_are_computed_once_for_every_session(monkeypatch):
    searches = _counting(monkeypatch, planner.sizing.search, "size")
    paretos = _counting(monkeypatch, planner.sizing.pareto, "pareto_points")
    first = _fresh_session("sizing.py")
    second = _fresh_session("sizing.py")
    assert (len(searches), len(paretos)) == (1, 1)
    assert second.success[0].value == first.success[0].value


def test_remembered_keeps_the_last_entries_and_not_errors():
    computed: list[str] = []

    def work(key: str) -> str:
        computed.append(key)
        return key.upper()

    for key in ("a", "b", "a", "c"):  # "a" used again: "b" is the least recently used when "c" comes
        assert remembered("test.memo", key, lambda key=key: work(key), max_entries=2) == key.upper()
    assert computed == ["a", "b", "c"]
    remembered("test.memo", "b", lambda: work("b"), max_entries=2)
    assert computed[-1] == "b"  # "b" had been dropped

    def fail() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError):
        remembered("test.memo", "d", fail, max_entries=2)
    assert remembered("test.memo", "d", lambda: work("d"), max_entries=2) == "D"  # the error was not remembered
