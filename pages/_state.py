"""The scenarios in the URL and the session, and the secrets the pages read. Not a page (st.navigation lists pages
explicitly).

The query string (decoded by :mod:`planner.links.budget`) is read when it changes; session state keeps
the scenarios for pages opened without one (switching pages drops the query string), and every page
writes the canonical query string back, so the link in the address bar always restores the view.

The Streamlit caches in front of the planner (model resolution, plans, predictions, discovery) are in
``pages/_cache.py``; their names are also importable from here for the pages that import them from here.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence

import streamlit as st

# The Load Test and Sizing pages read these caches as ``state.<name>`` (issue 25 moved them to pages/_cache.py).
from pages._cache import cached_overlay, cached_plan, plan_scenarios, profile_upload, resolve
from planner.capacity.scenario import Scenario
from planner.links import budget as url_state
from planner.serving.endpoints import Endpoint

__all__ = [
    "CONFIG_MEMORY_KEY",
    "EDITOR_MEMORY_KEY",
    "SCENARIOS_KEY",
    "VIEW_KEY",
    "allow_custom_endpoints",
    "cached_overlay",
    "cached_plan",
    "endpoint_secrets",
    "load",
    "plan_scenarios",
    "profile_upload",
    "resolve",
    "save",
    "secret",
    "set_scenarios",
    "use_router",
]

#: Session-state key of the current scenarios (a tuple of :class:`Scenario`).
SCENARIOS_KEY = "planner.scenarios"
#: Session-state key of the concurrency chart's range ``(min_context, max_context)``, tokens.
VIEW_KEY = "planner.view"
#: Session-state key of the editor's remembered widget values, ``{index: {field: value}}`` (see
#: ``pages/_editor_memory.py``); dropped whenever scenarios are loaded afresh from a URL or a preset.
EDITOR_MEMORY_KEY = "planner.editor_memory"
#: Session-state key of each editor column's pasted config.json text, ``{index: text}`` (kept where
#: Streamlit does not drop it, like :data:`EDITOR_MEMORY_KEY`).
CONFIG_MEMORY_KEY = "planner.config_memory"
_SEEN_KEY = "planner.seen_query"
_OFF = ("0", "false", "no", "off")


def use_router() -> None:
    """Make sure this page runs under ``app.py``'s ``st.navigation``; call it first on every page.

    Streamlit keeps its old multipage mode for a process until some script calls ``st.navigation``: because this
    repository has a ``pages/`` folder, the FIRST visit after a server start that opens a deep link (``/loadtest?…``)
    would run the page file alone, without the router, and list every module of ``pages/`` in the sidebar. Here
    that mode is switched off and the run restarted, so ``app.py`` runs and routes the same URL. Streamlit has no
    public switch for it (``PagesManager.uses_pages_directory``, streamlit 1.67), hence the private attribute.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def _query() -> dict[str, list[str]]:
    """Every query parameter with all its values (repeated keys kept, so decode can warn)."""
    return {key: st.query_params.get_all(key) for key in st.query_params}


def new_link(keys: Collection[str], seen_key: str) -> tuple[dict[str, list[str]], bool]:
    """The query and whether its ``keys`` differ from those seen at ``seen_key`` (a link just opened or edited by
    hand, whose values go into the page's widgets; the page stores what it writes back under ``seen_key``)."""
    query = _query()
    own = {key: values[-1] if values else "" for key, values in query.items() if key in keys}
    return query, bool(query) and own != st.session_state.get(seen_key)


def load(*, foreign: Collection[str] = ()) -> tuple[tuple[Scenario, ...], tuple[str, ...], bool]:
    """The current scenarios.

    Args:
        foreign: query keys of the page's own settings (another codec reads them, e.g.
            :data:`planner.links.performance.KEYS`): they are not scenario keys, and a change to them is not a new
            link for the scenarios.

    Returns:
        ``(scenarios, warnings, fresh)``: ``fresh`` is ``True`` when they were just read from a
        query string this session had not seen (a link was opened or a preset written), so editor
        widgets must be reset to them; ``warnings`` are the decoder's, non-empty only then (unknown keys
        included, named once for the whole link).
    """
    query = _query()
    flat = {key: values[-1] if values else "" for key, values in query.items() if key not in foreign}
    known = st.session_state.get(SCENARIOS_KEY)
    if known is not None and (flat == st.session_state.get(_SEEN_KEY) or not flat):
        return known, (), False
    decoded = url_state.decode(query, foreign=foreign)
    st.session_state[SCENARIOS_KEY] = decoded.scenarios
    st.session_state[VIEW_KEY] = (decoded.min_context, decoded.max_context)
    st.session_state[_SEEN_KEY] = flat
    st.session_state.pop(EDITOR_MEMORY_KEY, None)  # a new link or preset: forget hidden fields
    return decoded.scenarios, decoded.warnings, True


def save(
    scenarios: Sequence[Scenario],
    *,
    view: tuple[int | None, int | None] | None = None,
    extra: Mapping[str, str] | None = None,
) -> None:
    """Keep ``scenarios`` (and the chart range ``view``) in session state and in the URL.

    Args:
        scenarios: the scenarios.
        view: the concurrency chart's range; None keeps the session's.
        extra: the page's own query parameters (its other codec's, e.g. the Performance page's workload), written
            after the scenario keys.
    """
    if view is None:
        view = st.session_state.get(VIEW_KEY, (None, None))
    st.session_state[SCENARIOS_KEY] = tuple(scenarios)
    st.session_state[VIEW_KEY] = view
    params = url_state.encode(scenarios, min_context=view[0], max_context=view[1])
    full = params | dict(extra or {})
    if full != st.query_params.to_dict() or any(len(st.query_params.get_all(k)) > 1 for k in st.query_params):
        st.query_params.from_dict(full)
    st.session_state[_SEEN_KEY] = params


def set_scenarios(scenarios: Sequence[Scenario]) -> None:
    """Replace the scenarios from a callback (preset, advice); the editor reloads on the next run."""
    st.session_state[SCENARIOS_KEY] = tuple(scenarios)
    st.session_state[_SEEN_KEY] = None  # forces load() to treat the URL written below as new
    view = st.session_state.get(VIEW_KEY, (None, None))
    st.query_params.from_dict(url_state.encode(scenarios, min_context=view[0], max_context=view[1]))


def secret(name: str) -> object:
    """``st.secrets[name]``, or ``None`` (also when there is no secrets.toml at all)."""
    try:
        return st.secrets.get(name)
    except FileNotFoundError:  # StreamlitSecretNotFoundError: no secrets.toml
        return None


def allow_custom_endpoints() -> bool:
    """Whether the page may add endpoints: ``allow_custom_endpoints`` in secrets, else
    ``$LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS``; on by default (a local run). Turn it off on a shared deployment,
    where a visitor could otherwise make the server send requests to any URL."""
    value = secret("allow_custom_endpoints")
    if value is None:
        value = os.environ.get("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "1")
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in _OFF


def endpoint_secrets(endpoints: Sequence[Endpoint]) -> dict[str, str]:
    """The API keys the endpoints name that are set in ``st.secrets`` (the environment is read by the planner).

    Only the named entries are copied, so no other secret travels with a run. Never show or log the result.
    """
    out: dict[str, str] = {}
    for endpoint in endpoints:
        if endpoint.api_key_env:
            value = secret(endpoint.api_key_env)
            if isinstance(value, str) and value:
                out[endpoint.api_key_env] = value
    return out
