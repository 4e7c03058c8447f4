"""Load Test's runs against a VRAM Budget scenario: the prediction beside the measured runs (the toggle, the scenario
it predicts on, the predicted-against-measured table and the recalibration from the shown runs), and the KV cache the
servers report against the plan. Streamlit glue drawn inside the Load Test page, not a page (st.navigation lists
pages explicitly); the text it shows is :mod:`planner.views.loadtest`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from pages import _state as state
from pages._tables import wide_table
from planner.capacity.charts import scenario_label
from planner.capacity.scenario import Scenario
from planner.errors import PlannerError
from planner.loadtest.results import SavedRun
from planner.predict.charts import OVERLAY_HEADLINE, fit_table
from planner.predict.overlay import Overlay, recalibrate
from planner.views import loadtest as view
from planner.views import loadtest_results as shown_view

__all__ = ["RECAL_KEY", "Chosen", "choose", "kv_section", "render"]

RECAL_KEY = "lt.recalibration"  # {"scenario": Scenario, "recalibration": Recalibration} fitted on shown runs


@dataclass(frozen=True)
class Chosen:
    """The scenario the shown runs are predicted on, its plan, and the prediction (None when it failed)."""

    scenario: Scenario
    text: str
    model: Any
    plan: Any
    recalibrated: Any
    overlay: Overlay | None


def choose(shown: Sequence[SavedRun]) -> Chosen | None:
    """The toggle and the scenario; the prediction of each shown run's workload on it. None while the toggle is off
    (or no run is shown)."""
    if not shown:
        return None
    c = st.columns([1, 3], vertical_alignment="bottom")
    if not c[0].toggle(
        "Overlay the prediction",
        key="lt.predict",
        help="Predict each shown run's workload (its requests, concurrency, rate, burstiness and mean lengths) on a "
        "VRAM Budget scenario, the deployment the runs measured, and draw it beside them.",
    ):
        return None
    options = st.session_state.get(state.SCENARIOS_KEY) or (Scenario(),)
    pick = c[1].selectbox(
        "Deployment the runs measured (a VRAM Budget scenario; edit it there)",
        range(len(options)),
        format_func=lambda i: scenario_label(i, options[i]),
        key="lt.predict.scenario",
    )
    scenario, text = options[pick], scenario_label(pick, options[pick])
    kept = st.session_state.get(RECAL_KEY)
    recalibrated = kept["recalibration"] if kept and kept["scenario"] == scenario else None
    ((model, plan_result),) = state.plan_scenarios([scenario])
    overlay = None
    try:
        if isinstance(plan_result, PlannerError):
            raise plan_result
        profile = recalibrated.profile if recalibrated else None
        overlay = state.cached_overlay(scenario, tuple(shown), profile, model.spec)
    except PlannerError as exc:
        st.warning(f"No prediction for {text}: {exc}")
    else:
        for line in overlay.skipped:
            st.caption(f"Not predicted: {line}")
    return Chosen(scenario, text, model, plan_result, recalibrated, overlay)


def render(chosen: Chosen, shown: Sequence[SavedRun]) -> None:
    """Predicted against measured, and the recalibration's buttons, fit table and profile download."""
    overlay = chosen.overlay
    if overlay is None or not overlay.pairs:
        return
    st.subheader("Predicted against measured")
    caption, lines = shown_view.overlay_lines(overlay, chosen.text)
    st.caption(caption)
    wide_table(shown_view.overlay_table(overlay), OVERLAY_HEADLINE, key="lt.predict.errors")
    for line in lines:
        st.caption(line)
    c = st.columns([1, 1, 1])
    if c[0].button(
        "Recalibrate from these runs",
        key="lt.recalibrate",
        icon=":material/tune:",
        help="Fit the step-time model's coefficients to the shown runs (least squares on their mean TPOT and TTFT "
        "and median ITL) and predict with them.",
    ):
        try:
            fitted = recalibrate(chosen.scenario, shown, plan=chosen.plan, spec=chosen.model.spec)
        except PlannerError as exc:
            st.error(f"Cannot recalibrate: {exc}")
        else:
            st.session_state[RECAL_KEY] = {"scenario": chosen.scenario, "recalibration": fitted}
            st.rerun()
    recalibrated = chosen.recalibrated
    if recalibrated is None:
        return
    if c[1].button("Use the default coefficients", key="lt.recalibrate.reset"):
        st.session_state.pop(RECAL_KEY, None)
        st.rerun()
    st.markdown("**Fit error per run** (predicted / measured − 1, default coefficients and fitted)")
    st.dataframe(fit_table(recalibrated.before, recalibrated.fit.scores), hide_index=True, key="lt.fit.table")
    for line in recalibrated.skipped:
        st.caption(f"Not fitted: {line}")
    st.download_button(
        "Calibration profile (JSON)",
        recalibrated.profile.to_json(),
        "calibration_profile.json",
        "application/json",
        key="lt.dl.profile",
        help="Upload it on the Performance page, or pass it to python -m planner predict --calibration.",
    )


def kv_section(history: view.History) -> None:
    """The KV cache the servers of the last finished queue report, against the plan of a chosen scenario."""
    st.subheader("KV cache: plan vs measured")
    scenarios = st.session_state.get(state.SCENARIOS_KEY) or ()
    plan_tokens = planned_model = None
    if scenarios:
        pick = st.selectbox(
            "VRAM Budget scenario to compare with",
            range(len(scenarios)),
            format_func=lambda i: scenario_label(i, scenarios[i]),
            key="lt.kv.scenario",
        )
        try:
            plan_tokens, planned_model = state.cached_plan(scenarios[pick]).kv_cache_tokens, scenarios[pick].model
        except PlannerError as exc:
            st.warning(f"The scenario cannot be planned: {exc}")
    else:
        st.caption("Open VRAM Budget and describe the deployment to compare its plan with what the servers report.")
    kv = shown_view.kv_view(history.measured_kv, plan_tokens, history.runs, planned_model)
    for line in kv.warnings:
        st.warning(line)
    st.dataframe(kv.table, hide_index=True, key="lt.kv.table")
