"""Streamlit's caches in front of the planner: model resolution, plans, predictions, endpoint discovery, and the
calibration profile a page is given. Not a page.

Work that draws a progress bar while it runs (a predicted curve, a sizing search, its Pareto points) cannot be an
``st.cache_data`` function (Streamlit refuses to replay an element made outside it); :func:`remembered` keeps its
results for every session instead, so a fresh tab gets the answer another tab already computed (a sizing search is
0.8-1.5 s of CPU, a Performance curve 0.3 s).

Models are resolved by :func:`resolve`: a config.json pasted in this session (:data:`UPLOADS_KEY`), else
:func:`planner.catalog.hub.resolve_model` (catalog, on-disk cache, then the Hub) behind ``st.cache_data``. The Hub
token comes from ``st.secrets["HF_TOKEN"]`` or ``$HF_TOKEN`` and is passed as the unhashed ``_token``
argument: it is never part of a cache key, the URL, a message or an export.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import streamlit as st

from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import ResolvedModel, resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.errors import PlannerError, UnsupportedModelError
from planner.loadtest.results import SavedRun
from planner.loadtest.settings import LoadSettings
from planner.predict.api import Outlook, outlook
from planner.predict.calibration import CalibrationProfile, load_profile
from planner.predict.curves import PredictedCurve, predict_curve
from planner.predict.overlay import Overlay, predict_runs
from planner.serving.discovery import EndpointInfo, discover_sync
from planner.serving.endpoints import Endpoint
from planner.views.model import UPLOAD_NAMESPACE

__all__ = [
    "CURVES_KEY",
    "REFUSED_KEY",
    "UPLOADS_KEY",
    "cached_curve",
    "cached_discovery",
    "cached_outlook",
    "cached_overlay",
    "cached_plan",
    "hub_token",
    "plan_scenarios",
    "profile_upload",
    "refuse_upload",
    "remembered",
    "resolve",
]

_T = TypeVar("_T")

#: Session-state key of the models parsed from pasted/uploaded config.json files, ``{label: ResolvedModel}``.
UPLOADS_KEY = "planner.uploads"
#: Session-state key of the pasted config.json texts that were refused, ``{label: why}``: a scenario naming one is not
#: planned, and its verdict says why (never the model box's model in its place).
REFUSED_KEY = "planner.refused_uploads"
#: Most refused pastes remembered (a label per text).
_MAX_REFUSED = 16


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


# --- Work remembered for every session ---------------------------------------------------------------------------
class _Memo:
    """The last ``max_entries`` results of one kind of work, least recently used first; safe across sessions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: OrderedDict[Hashable, object] = OrderedDict()


@st.cache_resource(show_spinner=False)
def _memo(name: str) -> _Memo:
    """The process-wide memo called ``name`` (one per server, shared by every session)."""
    return _Memo()


def remembered(name: str, key: Hashable, compute: Callable[[], _T], *, max_entries: int) -> _T:
    """``compute()``, remembered under ``key`` in the memo ``name`` for every session (the last ``max_entries``).

    Not ``st.cache_data``: the work may update a progress bar drawn outside it, which ``st.cache_data`` refuses to
    replay. Two sessions asking for the same new key at once both compute it (the second result is kept); an error
    is not remembered.

    Args:
        name: which memo (one per kind of work).
        key: what the result depends on, hashable (frozen dataclasses, tuples, text).
        compute: the work.
        max_entries: results kept in this memo.
    """
    memo = _memo(name)
    with memo.lock:
        if key in memo.values:
            memo.values.move_to_end(key)
            return memo.values[key]  # type: ignore[return-value]
    value = compute()
    with memo.lock:
        memo.values[key] = value
        while len(memo.values) > max_entries:
            memo.values.popitem(last=False)
    return value


# --- Predictions ------------------------------------------------------------------------------------------------------
#: Name of the memo of predicted curves (:func:`cached_curve`).
CURVES_KEY = "planner.curves"
_MAX_CURVES = 64


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
    """:func:`planner.predict.curves.predict_curve`, remembered for every session (:func:`remembered`, the last 64).

    The key is the scenario, the resolved model, the workload, the levels, the axis and the profile's text (the
    model: a pasted config.json may give another session's label a different model); ``plan`` follows from them.
    ``on_level`` is called only when the curve is computed.

    Raises:
        PlannerError: as :func:`~planner.predict.curves.predict_curve` (not remembered).
    """
    key = (scenario, spec, settings, tuple(levels), axis, None if profile is None else profile.to_json())
    return remembered(
        CURVES_KEY,
        key,
        lambda: predict_curve(
            scenario, settings, levels, axis=axis, profile=profile, on_level=on_level, spec=spec, plan=plan
        ),
        max_entries=_MAX_CURVES,
    )


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
