"""Streamlit glue shared by the pages: URL/session state, model resolution and cached plans. Not a page
(st.navigation lists pages explicitly).

The query string (decoded by :mod:`planner.links.budget`) is read when it changes; session state keeps
the scenarios for pages opened without one (switching pages drops the query string), and every page
writes the canonical query string back, so the link in the address bar always restores the view.

Models are resolved by :func:`resolve`: a config.json pasted in this session (:data:`UPLOADS_KEY`), else
:func:`planner.catalog.hub.resolve_model` (catalog, on-disk cache, then the Hub) behind ``st.cache_data``. The Hub
token comes from ``st.secrets["HF_TOKEN"]`` or ``$HF_TOKEN`` and is passed as the unhashed ``_token``
argument: it is never part of a cache key, the URL, a message or an export.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import streamlit as st

from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import ResolvedModel, resolve_model
from planner.catalog.launch import UPLOADED_PREFIX
from planner.catalog.model_spec import ModelSpec
from planner.errors import MalformedTextError, PlannerError, UnsupportedModelError
from planner.links import budget as url_state
from planner.loadtest.results import SavedRun
from planner.loadtest.settings import LoadSettings
from planner.parsing import json_value
from planner.predict.api import Outlook, outlook
from planner.predict.calibration import CalibrationProfile, load_profile
from planner.predict.curves import PredictedCurve, predict_curve
from planner.predict.overlay import Overlay, predict_runs
from planner.serving.discovery import EndpointInfo, discover_sync
from planner.serving.endpoints import Endpoint

__all__ = [
    "CONFIG_MEMORY_KEY",
    "CURVES_KEY",
    "EDITOR_MEMORY_KEY",
    "REFUSED_KEY",
    "SCENARIOS_KEY",
    "UPLOADS_KEY",
    "UPLOAD_NAMESPACE",
    "VIEW_KEY",
    "allow_custom_endpoints",
    "cached_curve",
    "cached_discovery",
    "cached_outlook",
    "cached_overlay",
    "cached_plan",
    "endpoint_secrets",
    "endpoints_path",
    "hub_token",
    "load",
    "plan_scenarios",
    "profile_upload",
    "refuse_upload",
    "resolve",
    "save",
    "set_scenarios",
    "upload_label",
]

#: Session-state key of the current scenarios (a tuple of :class:`Scenario`).
SCENARIOS_KEY = "planner.scenarios"
#: Session-state key of the concurrency chart's range ``(min_context, max_context)``, tokens.
VIEW_KEY = "planner.view"
#: Session-state key of the editor's remembered widget values, ``{index: {field: value}}`` (see
#: ``pages/_editor.py``); dropped whenever scenarios are loaded afresh from a URL or a preset.
EDITOR_MEMORY_KEY = "planner.editor_memory"
#: Session-state key of the models parsed from pasted/uploaded config.json files, ``{label: ResolvedModel}``.
UPLOADS_KEY = "planner.uploads"
#: Session-state key of the pasted config.json texts that were refused, ``{label: why}``: a scenario naming one is not
#: planned, and its verdict says why (never the model box's model in its place).
REFUSED_KEY = "planner.refused_uploads"
#: Most refused pastes remembered (a label per text).
_MAX_REFUSED = 16
#: Session-state key of each editor column's pasted config.json text, ``{index: text}`` (kept where
#: Streamlit does not drop it, like :data:`EDITOR_MEMORY_KEY`).
CONFIG_MEMORY_KEY = "planner.config_memory"
#: Namespace of the model name a pasted config.json gets in a scenario (and so in the URL).
UPLOAD_NAMESPACE = UPLOADED_PREFIX.rstrip("/")
_SEEN_KEY = "planner.seen_query"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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


def hub_token() -> str | None:
    """``HF_TOKEN`` from ``.streamlit/secrets.toml``, or ``None`` (then ``resolve_model`` reads ``$HF_TOKEN``)."""
    try:
        token = st.secrets.get("HF_TOKEN")
    except FileNotFoundError:  # StreamlitSecretNotFoundError: no secrets.toml at all
        return None
    return token.strip() if isinstance(token, str) and token.strip() else None


@st.cache_data(ttl=3600, show_spinner=False, max_entries=256)
def _cached_resolve(model_id: str, _token: str | None) -> ResolvedModel:
    """:func:`planner.catalog.hub.resolve_model`, cached by id for an hour; ``_token`` is not hashed (not in the key).

    Raises:
        PlannerError: as :func:`planner.catalog.hub.resolve_model`; errors are not cached.
    """
    return resolve_model(model_id, token=_token)


def resolve(model_id: str) -> ResolvedModel:
    """The model a scenario names: a config.json pasted this session, else catalog, disk cache or the Hub.

    Raises:
        PlannerError: one line saying why and what to do (not found, gated, offline, malformed id, a
            link naming a config.json pasted in another session).
    """
    uploaded = st.session_state.get(UPLOADS_KEY, {}).get(model_id)
    if uploaded is not None:
        return uploaded
    refused = st.session_state.get(REFUSED_KEY, {}).get(model_id)
    if refused is not None:
        raise UnsupportedModelError(f"pasted {refused}")
    if isinstance(model_id, str) and model_id.startswith(UPLOAD_NAMESPACE + "/"):
        raise UnsupportedModelError(
            f"{model_id} names a config.json pasted in another session: paste the same config.json under "
            "'Use a config.json instead' to plan it, or pick a model"
        )
    shown = model_id if len(str(model_id)) <= 80 else str(model_id)[:79] + "…"
    with st.spinner(f"Fetching {shown} from the Hub…"):  # shown only if it takes over half a second
        return _cached_resolve(model_id, hub_token())


def refuse_upload(label: str, error: PlannerError) -> None:
    """Remember that the pasted config.json named ``label`` was refused with ``error`` (see :func:`resolve`); the
    message calls it config.json, not by its label (a hash the user never typed)."""
    refused = {k: v for k, v in st.session_state.get(REFUSED_KEY, {}).items() if k != label}
    refused[label] = str(error).replace(label, "config.json", 1)
    st.session_state[REFUSED_KEY] = dict(list(refused.items())[-_MAX_REFUSED:])


def upload_label(text: str) -> str:
    """The model name a pasted config.json gets: ``uploaded-config/<name>-<hash>``, a valid repo id.

    ``<name>`` is the last part of the config's ``_name_or_path`` (or its ``model_type``), reduced to
    ``[A-Za-z0-9._-]``; ``<hash>`` is the first 8 hex digits of the SHA-256 of the config's canonical JSON, so
    the same config always gets the same name (and a link names exactly one config). A text that is not a JSON
    object is named ``uploaded-config/config-<hash of the text>``: a refused paste is a scenario too, whose verdict
    says why it is not planned.
    """
    try:
        data = json_value(text, name="config.json", accepted="a JSON object")
    except MalformedTextError:
        data = None
    if isinstance(data, dict):
        name = str(data.get("_name_or_path") or data.get("model_type") or "model").rstrip("/").split("/")[-1]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    else:
        name, canonical = "config", text
    slug = _UNSAFE.sub("-", name).strip("-._")[:40].strip("-._") or "model"
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{UPLOAD_NAMESPACE}/{slug}-{digest}"


@st.cache_data(show_spinner=False, max_entries=512)
def cached_plan(scenario: Scenario, spec: ModelSpec | None = None) -> Plan:
    """:func:`planner.capacity.plan.plan`, cached by ``(scenario, spec)`` (frozen, hashable).

    Args:
        scenario: what to plan.
        spec: the resolved model (see :func:`resolve`); ``None`` lets the planner resolve ``scenario.model``.

    Raises:
        PlannerError: as :func:`planner.capacity.plan.plan`; errors are not cached.
    """
    return plan(scenario, spec=spec)


def plan_scenarios(
    scenarios: Sequence[Scenario],
) -> list[tuple[ResolvedModel | PlannerError, Plan | PlannerError]]:
    """Resolve and plan each scenario; a failure stays with its scenario and the others still plan.

    Returns:
        One ``(model, plan)`` per scenario; a model that cannot be resolved gives its error in both places.
    """
    out: list[tuple[ResolvedModel | PlannerError, Plan | PlannerError]] = []
    for scenario in scenarios:
        try:
            resolved = resolve(scenario.model)
        except PlannerError as exc:
            out.append((exc, exc))
            continue
        try:
            out.append((resolved, cached_plan(scenario, resolved.spec)))
        except PlannerError as exc:
            out.append((resolved, exc))
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def cached_outlook(scenario: Scenario, spec: ModelSpec | None = None) -> Outlook | None:
    """:func:`planner.predict.api.outlook` of the scenario's (cached) plan, cached by ``(scenario, spec)``."""
    return outlook(cached_plan(scenario, spec), spec)


# --- Predictions ------------------------------------------------------------------------------------------------------
#: Session-state key of the predicted curves computed this session, ``{key: PredictedCurve}`` (see
#: :func:`cached_curve`).
CURVES_KEY = "planner.curves"
_MAX_CURVES = 32


def cached_curve(
    scenario: Scenario,
    settings: LoadSettings,
    levels: Sequence[float],
    *,
    axis: str,
    profile: CalibrationProfile | None,
    spec: ModelSpec | None,
    plan: Plan,
    on_level: Callable[[int, int], object] | None = None,
) -> PredictedCurve:
    """:func:`planner.predict.curves.predict_curve`, remembered for this session (the last 32 curves).

    Not ``st.cache_data``: a cached function may not update a progress bar made outside it (Streamlit refuses to
    replay it), and the curve's progress is the point of ``on_level``. The key is the scenario, the workload, the
    levels, the axis and the profile's text; ``spec`` and ``plan`` follow from the scenario.

    Raises:
        PlannerError: as :func:`~planner.predict.curves.predict_curve` (not remembered).
    """
    key = (scenario, settings, tuple(levels), axis, None if profile is None else profile.to_json())
    memo: dict = st.session_state.setdefault(CURVES_KEY, {})
    if key in memo:
        memo[key] = memo.pop(key)  # most recently used last
        return memo[key]
    curve = predict_curve(
        scenario, settings, levels, axis=axis, profile=profile, on_level=on_level, spec=spec, plan=plan
    )
    memo[key] = curve
    while len(memo) > _MAX_CURVES:
        memo.pop(next(iter(memo)))
    return curve


@st.cache_data(show_spinner="Predicting the runs' workloads…", max_entries=64)
def cached_overlay(
    scenario: Scenario, runs: tuple[SavedRun, ...], profile: CalibrationProfile | None, spec: ModelSpec | None
) -> Overlay:
    """:func:`planner.predict.overlay.predict_runs` on ``scenario``'s plan (:func:`cached_plan`), cached by its
    arguments.

    Raises:
        PlannerError: as :func:`~planner.predict.overlay.predict_runs`; errors are not cached.
    """
    return predict_runs(scenario, runs, profile=profile, plan=cached_plan(scenario, spec), spec=spec)


# --- Live compare -----------------------------------------------------------------------------------------------------
_ROOT = Path(__file__).resolve().parent.parent
_OFF = ("0", "false", "no", "off")


def _secret(name: str) -> object:
    """``st.secrets[name]``, or ``None`` (also when there is no secrets.toml at all)."""
    try:
        return st.secrets.get(name)
    except FileNotFoundError:  # StreamlitSecretNotFoundError: no secrets.toml
        return None


def endpoints_path() -> tuple[Path, bool]:
    """The endpoints file: ``$LLM_PLANNER_ENDPOINTS``, else ``endpoints.toml`` at the repo root.

    Returns:
        ``(path, explicit)``: ``explicit`` is True when the environment named the file (then a missing file is
        an error; a missing default file just means "no endpoints configured").
    """
    named = os.environ.get("LLM_PLANNER_ENDPOINTS", "").strip()
    return (Path(named).expanduser(), True) if named else (_ROOT / "endpoints.toml", False)


def allow_custom_endpoints() -> bool:
    """Whether the page may add endpoints: ``allow_custom_endpoints`` in secrets, else
    ``$LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS``; on by default (a local run). Turn it off on a shared deployment,
    where a visitor could otherwise make the server send requests to any URL."""
    value = _secret("allow_custom_endpoints")
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
            value = _secret(endpoint.api_key_env)
            if isinstance(value, str) and value:
                out[endpoint.api_key_env] = value
    return out


@st.cache_data(ttl=30, show_spinner=False, max_entries=64)
def cached_discovery(endpoint: Endpoint, timeout_s: float, _secrets: dict[str, str]) -> EndpointInfo:
    """:func:`planner.serving.discovery.discover_sync`, cached for 30 s per endpoint; ``_secrets`` is not hashed.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set (not cached).
    """
    return discover_sync(endpoint, timeout_s, secrets=_secrets)


def profile_upload(key: str) -> CalibrationProfile | None:
    """A "Calibration" expander with a profile uploader (widget key ``key``), and the profile it holds: None without
    a file, or with one line of error when the file is not a profile. A profile is a file: never in the link."""
    with st.expander("Calibration"):
        upload = st.file_uploader(
            "Calibration profile (JSON written by `python -m planner calibrate`, or the Load Test's recalibration)",
            type=["json"],
            key=key,
            help="Coefficients fitted to measured runs. A profile is a file: it is never put in the link.",
        )
    if upload is None:
        return None
    try:
        return load_profile(upload.getvalue(), name=upload.name)
    except PlannerError as exc:
        st.error(f"{upload.name} not used: {exc}")
        return None
