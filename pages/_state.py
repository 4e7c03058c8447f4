"""Streamlit glue shared by the pages: URL/session state. Not a page (st.navigation lists pages explicitly).

The query string (decoded by :mod:`planner.url_state`) is read when it changes; session state keeps
the scenarios for pages opened without one (switching pages drops the query string), and every page
writes the canonical query string back, so the link in the address bar always restores the view.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from planner import url_state
from planner.plan import plan
from planner.result import Plan
from planner.scenario import Scenario

__all__ = ["EDITOR_MEMORY_KEY", "SCENARIOS_KEY", "VIEW_KEY", "cached_plan", "load", "save", "set_scenarios"]

#: Session-state key of the current scenarios (a tuple of :class:`Scenario`).
SCENARIOS_KEY = "planner.scenarios"
#: Session-state key of the concurrency chart's range ``(min_context, max_context)``, tokens.
VIEW_KEY = "planner.view"
#: Session-state key of the editor's remembered widget values, ``{index: {field: value}}`` (see
#: ``pages/_editor.py``); dropped whenever scenarios are loaded afresh from a URL or a preset.
EDITOR_MEMORY_KEY = "planner.editor_memory"
_SEEN_KEY = "planner.seen_query"


def _query() -> dict[str, list[str]]:
    """Every query parameter with all its values (repeated keys kept, so decode can warn)."""
    return {key: st.query_params.get_all(key) for key in st.query_params}


def load() -> tuple[tuple[Scenario, ...], tuple[str, ...], bool]:
    """The current scenarios.

    Returns:
        ``(scenarios, warnings, fresh)``: ``fresh`` is ``True`` when they were just read from a
        query string this session had not seen (a link was opened or a preset written), so editor
        widgets must be reset to them; ``warnings`` are the decoder's, non-empty only then.
    """
    query = _query()
    flat = {key: values[-1] if values else "" for key, values in query.items()}
    known = st.session_state.get(SCENARIOS_KEY)
    if known is not None and (flat == st.session_state.get(_SEEN_KEY) or not query):
        return known, (), False
    decoded = url_state.decode(query)
    st.session_state[SCENARIOS_KEY] = decoded.scenarios
    st.session_state[VIEW_KEY] = (decoded.min_context, decoded.max_context)
    st.session_state[_SEEN_KEY] = flat
    st.session_state.pop(EDITOR_MEMORY_KEY, None)  # a new link or preset: forget hidden fields
    return decoded.scenarios, decoded.warnings, True


def save(scenarios: Sequence[Scenario], *, view: tuple[int | None, int | None] | None = None) -> None:
    """Keep ``scenarios`` (and the chart range ``view``) in session state and in the URL."""
    if view is None:
        view = st.session_state.get(VIEW_KEY, (None, None))
    st.session_state[SCENARIOS_KEY] = tuple(scenarios)
    st.session_state[VIEW_KEY] = view
    params = url_state.encode(scenarios, min_context=view[0], max_context=view[1])
    if params != st.query_params.to_dict() or any(len(st.query_params.get_all(k)) > 1 for k in st.query_params):
        st.query_params.from_dict(params)
    st.session_state[_SEEN_KEY] = params


def set_scenarios(scenarios: Sequence[Scenario]) -> None:
    """Replace the scenarios from a callback (preset, advice); the editor reloads on the next run."""
    st.session_state[SCENARIOS_KEY] = tuple(scenarios)
    st.session_state[_SEEN_KEY] = None  # forces load() to treat the URL written below as new
    view = st.session_state.get(VIEW_KEY, (None, None))
    st.query_params.from_dict(url_state.encode(scenarios, min_context=view[0], max_context=view[1]))


@st.cache_data(show_spinner=False, max_entries=512)
def cached_plan(scenario: Scenario) -> Plan:
    """:func:`planner.plan.plan`, cached by scenario (frozen, hashable).

    Raises:
        PlannerError: as :func:`planner.plan.plan`; errors are not cached.
    """
    return plan(scenario)
