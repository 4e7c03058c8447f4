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
from typing import Any

import streamlit as st

from pages._fields import Drawer
from planner.errors import PlannerError
from planner.loadtest.max_rate import MaxRateSpec
from planner.loadtest.max_rate_charts import steps_figure, steps_table
from planner.loadtest.max_rate_worker import MaxRateRun, MaxRateSnapshot
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint

__all__ = ["render"]

RUN_KEY = "lt.mr.current"  # {"run": MaxRateRun, "spec": MaxRateSpec, "recorded": bool}
_DEFAULT_SLOS = "ttft_p99_ms=1000, tpot_p99_ms=50"
#: The search the expander opens with (its widgets' defaults); its workload is the page's.
_DEFAULT = MaxRateSpec(LoadSettings(), parse_slos([_DEFAULT_SLOS]))
#: Widget key of each of the search's settings.
_KEYS = {"slos": "lt.mr.slo", "variable": "lt.mr.variable", "max_steps": "lt.mr.steps", "tolerance": "lt.mr.tol"}
_KEYS["probe_s"] = "lt.mr.probe_s"


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
        draw = Drawer(_DEFAULT, _KEYS)
        c = st.columns([3, 2, 1, 1, 1])
        slo_text = draw(c[0], "slos", value=_DEFAULT_SLOS)
        for column, name in zip(c[1:], ("variable", "max_steps", "tolerance", "probe_s"), strict=True):
            draw(column, name)
        problem = None
        spec = None
        try:
            spec = MaxRateSpec(
                base=settings,
                slos=parse_slos([slo_text]) if slo_text.strip() else (),
                step_duration_s=float(settings.duration_s or 120.0),
                **{name: value for name, value in draw.values.items() if name != "slos"},
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
