"""Performance: predicted throughput and latency of each scenario under one workload, with the knee and the load at
which the KV cache fills."""

from __future__ import annotations

import streamlit as st

from pages import _cache as cache
from pages import _light as light
from pages import _state as state
from pages._numbers import field_boxes
from pages._tables import wide_table
from planner import fields
from planner.links import performance as perf_links
from planner.links.loadtest import parse_field
from planner.predict.charts import POINTS_HEADLINE
from planner.predict.curves import AXES, DEFAULT_WORKLOAD, format_rates
from planner.views.performance import performance_plan, performance_view, workload

VIEW_KEY = "perf.view"  # the last DecodedPerformance read from the widgets
_SEEN_KEY = "perf.seen_query"
W = {name: f"perf.{name}" for name in perf_links.KEYS}
KEYS = tuple(perf_links.KEYS.values())
_SAY = {"error": st.error, "warning": st.warning, "info": st.info}

state.use_router()
st.title("Performance")
st.caption(
    "Predicted throughput and latency of each scenario under one workload: vLLM V1's scheduler (chunked prefill, "
    "KV-block admission, preemption) simulated on a step-time model of the GPU. Edit the scenarios on the VRAM "
    "Budget page; the link restores them and this workload."
)

scenarios, warnings, _ = state.load(foreign=KEYS)
for line in warnings:
    st.warning(f"URL parameter — {line}")

# --- the workload: a link's values go into the widgets when the link is new (or the widgets were dropped) ----------
query, new_link = state.new_link(KEYS, _SEEN_KEY)
if new_link or W["input_len"] not in st.session_state:
    if new_link:
        link = perf_links.decode(query)
        for line in link.warnings:
            st.warning(f"URL parameter — {line}")
    else:
        link = st.session_state.get(VIEW_KEY) or perf_links.DecodedPerformance()
    for name in perf_links.FIELDS:
        st.session_state[W[name]] = fields.get(link.settings, name)
    st.session_state[W["axis"]] = link.axis
    st.session_state[W["rates"]] = format_rates(link.rates).replace(",", ", ")

answer = st.container()  # the answer first; it is filled once the workload below has been read

_box = field_boxes(parse_field, DEFAULT_WORKLOAD, W)

with st.expander("Workload", expanded=True):
    c = st.columns(4)
    input_len = _box(c[0], "input_len", "input_len")
    output_len = _box(c[1], "output_len", "output_len")
    num_prompts = _box(
        c[2], "num_prompts", "num_prompts", help="Requests a level; a concurrency level sends at least 4 per slot."
    )
    range_ratio = _box(c[3], "range_ratio", "range_ratio", help="Lengths in L(1 ± r).")
    c = st.columns([2, 1, 2, 1])
    axis = c[0].radio(
        "Sweep",
        AXES,
        key=W["axis"],
        horizontal=True,
        format_func={"concurrency": "concurrency", "rate": "request rates"}.get,
        help="concurrency: closed loop at 1, 2, 4, … requests in flight · request rates: open loop, requests arrive "
        "at each rate.",
    )
    sweep_max = _box(c[1], "sweep_max", "up to concurrency", disabled=axis != "concurrency")
    rates_text = c[2].text_input(
        "request rates (req/s)", key=W["rates"], disabled=axis != "rate", help="Comma separated, e.g. 1, 2, 4, 8."
    )
    burstiness = _box(
        c[3],
        "burstiness",
        "burstiness",
        disabled=axis != "rate",
        help="Gamma shape of the arrival gaps: 1 = Poisson, below 1 burstier.",
    )

profile = cache.profile_upload("perf.profile")

load = workload(
    {
        "input_len": input_len,
        "output_len": output_len,
        "num_prompts": num_prompts,
        "range_ratio": range_ratio,
        "sweep_max": sweep_max,
        "burstiness": burstiness,
    },
    axis,
    rates_text,
)
st.session_state[VIEW_KEY] = perf_links.DecodedPerformance(load.settings, load.axis, load.rates)
params = perf_links.encode(load.settings, axis=load.axis, rates=load.rates)
state.save(scenarios, extra=params)
st.session_state[_SEEN_KEY] = params

# --- predict ---------------------------------------------------------------------------------------------------------
plan = performance_plan(scenarios, cache.plan_scenarios(scenarios), load)
with answer:
    for message in plan.messages:
        st.warning(message.text)
    if plan.stop is not None:
        _SAY[plan.stop.level](plan.stop.text)
        st.stop()
    bar = st.progress(0.0, text="Predicting…")
    view = performance_view(
        plan, load, profile=profile, curve=cache.cached_curve, on_progress=lambda done, text: bar.progress(done, text)
    )
    bar.empty()
    for message in view.messages:
        st.warning(message.text)
    if view.nothing:
        st.info(view.nothing)
        st.stop()
    for headline in view.headlines:
        if headline.label:
            st.markdown(f"**{headline.label}**")
        for column, (name, value, help_text, band) in zip(st.columns(5), headline.metrics, strict=True):
            column.metric(name, value, delta=band, delta_color="off", delta_arrow="off", help=help_text)
    st.caption(view.caption)
    light.figure(view.figure, "perf.chart")
    if view.band_caption is not None:
        st.caption(view.band_caption)
    for note in view.notes:
        st.caption(f"Note: {note}.")

st.subheader("All points")
wide_table(view.table, POINTS_HEADLINE, key="perf.table")
st.download_button("Download points (CSV)", view.csv, "predicted_performance.csv", "text/csv", key="perf.csv")
