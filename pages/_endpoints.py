"""Streamlit glue shared by the pages that talk to serving endpoints (Live Compare, Load Test). Not a page.

* :func:`available_endpoints`: endpoints from ``endpoints.toml`` plus, when ``allow_custom_endpoints`` is on, the
  ones added in this session (shared by both pages), with the add form and the empty state.
* :func:`discovery_table`: health, served model, context limit and version of the chosen endpoints.
* :func:`restore_from_link`: put a link's settings into the widgets when the link is new to this session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from pages import _state as state
from pages._cache import cached_discovery
from planner import fields
from planner.capacity.scenario import Scenario
from planner.errors import EndpointConfigError, PlannerError
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import KINDS, Endpoint, check_new_name, load_endpoints
from planner.views.endpoints import DISCOVERY_CAPTION, discovery_view, no_endpoints_message

CUSTOM_KEY = "endpoints.custom"  # {name: Endpoint} added in this session, shared by the endpoint pages
_ROOT = Path(__file__).resolve().parent.parent


def endpoints_path() -> tuple[Path, bool]:
    """The endpoints file: ``$LLM_PLANNER_ENDPOINTS``, else ``endpoints.toml`` at the repo root.

    Returns:
        ``(path, explicit)``: ``explicit`` is True when the environment named the file (then a missing file is
        an error; a missing default file just means "no endpoints configured").
    """
    named = os.environ.get("LLM_PLANNER_ENDPOINTS", "").strip()
    return (Path(named).expanduser(), True) if named else (_ROOT / "endpoints.toml", False)


def available_endpoints(prefix: str, selection_key: str, *, required: bool = True) -> dict[str, Endpoint]:
    """The endpoints this page may use, by name; explains how to add one when there are none.

    Args:
        prefix: Widget-key prefix of the calling page (``"cmp"``, ``"lt"``).
        selection_key: Widget key of the page's endpoint multiselect (a newly added endpoint is selected).
        required: Stop the page when there is none (Live Compare); Load Test goes on, to show imported runs.
    """
    path, explicit = endpoints_path()
    file_endpoints: tuple[Endpoint, ...] = ()
    if explicit or path.exists():
        try:
            file_endpoints = load_endpoints(path)
        except EndpointConfigError as exc:
            for line in exc.problems:
                st.error(line)
    custom: dict[str, Endpoint] = st.session_state.setdefault(CUSTOM_KEY, {})
    allow_custom = state.allow_custom_endpoints()
    if not allow_custom:
        custom.clear()
    file_names = {e.name for e in file_endpoints}
    available = {**{e.name: e for e in file_endpoints}, **{n: e for n, e in custom.items() if n not in file_names}}
    if allow_custom:
        _add_form(prefix, selection_key, available, custom, file_names, path.name)
    if not available:
        st.info(no_endpoints_message(allow_custom))
        if required:
            st.stop()
    return available


def _add_form(
    prefix: str,
    selection_key: str,
    available: dict[str, Endpoint],
    custom: dict[str, Endpoint],
    file_names: set[str],
    file_name: str,
) -> None:
    # a refusal is written above the expander: once an endpoint exists the expander is drawn collapsed, and an error
    # inside it (a second "Add endpoint" with the same name) went unseen
    notice = st.container()
    with st.expander("Add an endpoint for this session", expanded=not available):
        with st.form(f"{prefix}.add", clear_on_submit=False, border=False):
            c1, c2, c3 = st.columns([2, 1, 3])
            name = c1.text_input(
                "Name",
                key=f"{prefix}.new.name",
                placeholder="e.g. my-vllm",
                help="Letters, digits, '_', '.', '-'; unique among the endpoints.",
            )
            kind = c2.selectbox("Kind", KINDS, key=f"{prefix}.new.kind")
            base_url = c3.text_input(
                "Base URL",
                key=f"{prefix}.new.url",
                placeholder="e.g. http://127.0.0.1:8000",
                help="The server's root, http:// or https://, without /v1.",
            )
            c4, c5 = st.columns(2)
            model = c4.text_input(
                "Model (optional)",
                key=f"{prefix}.new.model",
                placeholder="discovered when empty",
                help="The served model id to request, e.g. Qwen/Qwen3-0.6B.",
            )
            key_env = c5.text_input(
                "API-key variable (optional)",
                key=f"{prefix}.new.key_env",
                placeholder="e.g. VLLM_API_KEY",
                help="The NAME of an environment variable or a secrets.toml entry that holds the key — never the "
                "key itself.",
            )
            added = st.form_submit_button("Add endpoint")
        if added:
            try:
                endpoint = Endpoint(
                    name=name.strip(),
                    kind=kind,
                    base_url=base_url.strip(),
                    model=model.strip() or None,
                    api_key_env=key_env.strip() or None,
                )
                taken = {**{n: "added in this session" for n in custom}, **{n: f"in {file_name}" for n in file_names}}
                check_new_name(endpoint.name, taken)
            except PlannerError as exc:  # the form keeps what was typed (clear_on_submit=False): fix and resubmit
                notice.error(f"Endpoint not added: {exc}")
            else:
                custom[endpoint.name] = endpoint
                available[endpoint.name] = endpoint
                selected = list(st.session_state.get(selection_key, []))
                st.session_state[selection_key] = [*selected, endpoint.name]
        if custom and st.button("Forget the endpoints added here", key=f"{prefix}.forget"):
            for n in list(custom):
                available.pop(n, None)
            custom.clear()


def discovery_table(endpoints: Sequence[Endpoint], secrets: Mapping[str, str], key: str) -> None:
    """Health, served model, context limit and version of each endpoint (cached 30 s), one row each."""
    if not endpoints:
        return
    found: list[EndpointInfo | PlannerError] = []
    for endpoint in endpoints:
        try:
            found.append(cached_discovery(endpoint, 5.0, dict(secrets)))
        except PlannerError as exc:
            found.append(exc)
    view = discovery_view(endpoints, found)
    st.dataframe(view.table, hide_index=True, key=key)
    for line in view.errors:
        st.caption(f":orange[:material/cloud_off: {line}]")
    st.caption(DISCOVERY_CAPTION)


def restore_from_link(
    decode: Callable[[Mapping[str, list[str]]], Any],
    default: Any,
    widgets: Mapping[str, str],
    to_widget: Callable[[str, Any], Any],
    *,
    settings_key: str,
    seen_key: str,
    probe_key: str,
    available: Mapping[str, Endpoint],
    own_keys: Collection[str],
) -> None:
    """Load a link's settings into the widgets when the link is new to this session (or on a first visit).

    Args:
        decode: The page's codec ``decode(query) -> object with .settings and .warnings``.
        default: The codec's defaults (a first visit without a link).
        widgets: Settings field → widget key.
        to_widget: ``(field, value) → widget value`` (e.g. a tuple of stop strings → text).
        settings_key: Session key of the last settings the page read from its widgets.
        seen_key: Session key of the last query this session applied.
        probe_key: A widget key other than the endpoint selection; when Streamlit has dropped it (first visit, or
            back from another page) the widgets are filled again.
        available: Endpoints this page may use (names a link gives that are not here warn).
        own_keys: The query keys of the page's codec (the rest of the link is the scenarios').
    """
    from dataclasses import replace

    # The link also carries the scenarios (the scenario codec's keys, read here into the session as on every page):
    # only this page's own keys make a new link for its widgets.
    _, warnings, _ = state.load(foreign=own_keys)
    for line in warnings:
        st.warning(f"URL parameter — {line}")
    query = {key: st.query_params.get_all(key) for key in st.query_params if key in own_keys}
    flat = {key: values[-1] if values else "" for key, values in query.items()}
    new_link = bool(query) and flat != st.session_state.get(seen_key)
    if probe_key in st.session_state and not new_link:
        return
    if new_link:
        decoded = decode(query)
        for line in decoded.warnings:
            st.warning(f"URL parameter — {line}")  # each line says itself what was ignored or used
        settings = decoded.settings
        for missing in (n for n in settings.endpoints if n not in available):
            st.warning(
                f"URL parameter ep: endpoint {missing!r} is not configured here; add it above or in endpoints.toml"
            )
    else:
        settings = st.session_state.get(settings_key) or default
    if not settings.endpoints:  # a link without ep, or a first visit: the first four configured endpoints
        settings = replace(settings, endpoints=tuple(list(available)[:4]))
    for field, key in widgets.items():
        value = fields.get(settings, field)
        if field == "endpoints":
            value = [n for n in value if n in available]
        st.session_state[key] = to_widget(field, value)
    st.session_state[seen_key] = flat


def write_link(params: dict[str, str], seen_key: str) -> None:
    """Put the page's encoded settings in the URL after the session's scenarios, so the link restores both."""
    state.save(st.session_state.get(state.SCENARIOS_KEY) or (Scenario(),), extra=params)
    st.session_state[seen_key] = params
