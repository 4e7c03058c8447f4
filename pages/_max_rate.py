"""Load Test's maximum-rate search: the highest request rate (or concurrency) an endpoint serves within percentile
SLOs, by bisection over short bounded runs (:mod:`planner.loadtest.max_rate`). Streamlit glue drawn inside the Load
Test page, not a page (st.navigation lists pages explicitly).

The search uses the page's workload (prompts, lengths, burstiness, per-run duration cap, timeouts, input sizing) on
the first endpoint chosen; it runs in a worker process (:class:`planner.loadtest.max_rate_worker.MaxRateRun`) and
its steps join the page's results when it ends, so they can be overlaid with the prediction and recalibrate it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

import streamlit as st

from pages._numbers import number_box
from planner.errors import PlannerError
from planner.links.rules import parse_number
from planner.loadtest.max_rate import VARIABLES, MaxRateSpec
from planner.loadtest.max_rate_charts import steps_figure, steps_table
from planner.loadtest.max_rate_worker import MaxRateRun, MaxRateSnapshot
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint

__all__ = ["render"]

RUN_KEY = "lt.mr.current"  # {"run": MaxRateRun, "spec": MaxRateSpec, "recorded": bool}
_DEFAULT_SLOS = "ttft_p99_ms=1000, tpot_p99_ms=50"


def _show(snap: MaxRateSnapshot, spec: MaxRateSpec) -> None:
    """Progress, the steps' chart and table, and the answer."""
    for line in snap.errors:
        st.error(line)
    steps = snap.steps
    text = f"{len(steps)} of at most {snap.max_steps} runs"
    p = snap.progress
    if not snap.done and p is not None:
        text += f" · run {len(steps) + 1}: {p.completed + p.failed:,} / {p.total:,} requests"
    st.progress(min(1.0, len(steps) / snap.max_steps) if not snap.done else 1.0, text=text)
    if snap.result is not None:
        (st.success if snap.result.best is not None else st.warning)(snap.result.answer)
    if steps:
        answer = snap.result.value if snap.result is not None else None
        st.plotly_chart(steps_figure(steps, spec, answer), key="lt.mr.chart")
        st.dataframe(steps_table(steps, spec), hide_index=True, key="lt.mr.table")
    if snap.done and snap.cancelled:
        st.caption("Cancelled: the runs that finished are kept.")


def render(
    chosen: Sequence[Endpoint],
    settings: LoadSettings,
    prompts: Sequence[str],
    secrets: Mapping[str, Any] | None,
    history_key: str,
) -> None:
    """The search's expander: its SLOs and limits, Run and Cancel, live progress and the answer.

    Args:
        chosen: the page's endpoints (the search loads the first).
        settings: the page's load settings (their workload is the search's).
        prompts: the page's prompts (examples or an uploaded file), if any.
        secrets: where the endpoint's API key is.
        history_key: session key of the page's results, which the finished steps join.
    """
    entry = st.session_state.get(RUN_KEY)
    active = entry is not None and not entry["run"].done
    with st.expander("Find the highest request rate under SLOs (as vllm bench sweep serve_sla)", expanded=active):
        st.caption(
            "A burst first (what the endpoint sustains at full load), then runs at chosen request rates: the "
            "highest that meets every SLO is found by bisection, each run bounded in requests and by the duration "
            "cap above. The workload is the one above; the first endpoint chosen is loaded."
        )
        c = st.columns([3, 2, 1, 1, 1])
        slo_text = c[0].text_input(
            "SLOs (percentiles)",
            value=_DEFAULT_SLOS,
            key="lt.mr.slo",
            help="METRIC_STAT_ms=LIMIT, comma separated: METRIC ttft, tpot, itl or e2el; STAT p50, p90, p99, mean.",
        )
        variable = c[1].radio(
            "Search",
            VARIABLES,
            key="lt.mr.variable",
            horizontal=True,
            format_func={"request_rate": "request rate", "max_concurrency": "concurrency"}.get,
        )
        max_steps = number_box(
            "max runs", "lt.mr.steps", partial(parse_number, low=2, high=30, integer=True), default=8, where=c[2]
        )
        tolerance = number_box(
            "tolerance", "lt.mr.tol", partial(parse_number, low=0.01, high=0.5), default=0.05, where=c[3]
        )
        probe_s = number_box(
            "s per run", "lt.mr.probe_s", partial(parse_number, low=1.0, high=600.0), default=20.0, where=c[4]
        )
        problem = None
        spec = None
        try:
            spec = MaxRateSpec(
                base=settings,
                slos=parse_slos([slo_text]) if slo_text.strip() else (),
                variable=variable,
                max_steps=int(max_steps),
                tolerance=float(tolerance),
                probe_s=float(probe_s),
                step_duration_s=float(settings.duration_s or 120.0),
            )
        except PlannerError as exc:
            problem = str(exc)
        if problem:
            st.error(f"Cannot search: {problem}.")
        elif not chosen:
            st.info("Choose an endpoint above to search it.")
        b1, b2, _ = st.columns([2, 1, 3])
        if b1.button(
            "Find the max rate",
            key="lt.mr.run",
            type="primary",
            icon=":material/search:",
            disabled=active or not chosen or spec is None or (settings.dataset_name != "random" and not prompts),
        ):
            now = datetime.now()
            assert spec is not None
            if settings.dataset_name != "random":
                spec = replace(spec, base=replace(spec.base, prompts=tuple(prompts)))
            run = MaxRateRun(chosen[0], spec, started=now, tag=now.strftime("%H:%M:%S"), secrets=secrets)
            entry = {"run": run.start(), "spec": spec, "recorded": False}
            st.session_state[RUN_KEY] = entry
            active = True
        if b2.button("Cancel", key="lt.mr.cancel", disabled=not active, icon=":material/stop:"):
            entry["run"].cancel()

        def panel() -> None:
            current = st.session_state.get(RUN_KEY)
            if current is None:
                return
            snap = current["run"].snapshot()
            _show(snap, current["spec"])
            if snap.done and not current["recorded"]:
                current["recorded"] = True
                history = st.session_state.setdefault(history_key, [])
                known = {r.label for r in history}
                history.extend(r for r in snap.saved if r.label not in known)
                st.rerun(scope="app")

        st.fragment(run_every=1.0 if active else None)(panel)()
        if entry is not None and entry["recorded"]:
            st.caption("The runs are in the results below: overlay the prediction there, and recalibrate it from them.")
