"""Concurrency vs Context: how many requests fit as the context per request grows."""

from __future__ import annotations

import streamlit as st

from pages import _cache as cache
from pages import _light as light
from pages import _state as state
from planner.capacity.charts import context_label
from planner.views.concurrency import concurrency_chart, concurrency_setup

_SAY = {"error": st.error, "warning": st.warning, "info": st.info, "success": st.success}

state.use_router()
st.title("Concurrency vs Context")
st.caption(
    "Concurrent requests the KV cache holds at each context length, from each engine's own block "
    "accounting. Edit the scenarios on the VRAM Budget page; the link restores them here too."
)

scenarios, warnings, fresh = state.load()
for line in warnings:
    st.warning(f"URL parameter — {line}")

setup = concurrency_setup(
    scenarios, cache.plan_scenarios(scenarios), st.session_state.get(state.VIEW_KEY, (None, None))
)
for message in setup.messages:
    _SAY[message.level](message.text)
if setup.nothing:
    state.save(scenarios)
    st.info(setup.nothing)
    st.stop()

chart_area = st.container()  # the chart first; the range slider that shapes it comes below it
if fresh:
    st.session_state.pop("w.context_range", None)  # a link's range wins over the widget's last value
low, high = st.select_slider(
    "Context range (tokens)",
    options=setup.options,
    value=setup.value,
    key="w.context_range",
    format_func=context_label,
)
chart = concurrency_chart(setup, low, high)
if chart.problem:
    st.info(chart.problem)
    st.stop()
state.save(scenarios, view=(low, high))

with chart_area:
    if chart.figure is None:
        st.info(chart.empty)
    else:
        light.figure(chart.figure, "concurrency_chart")
        for caption in chart.captions:
            st.caption(caption)
st.table(chart.table)
st.download_button(
    "Download table (CSV)", chart.csv, file_name="concurrency_vs_context.csv", mime="text/csv", key="w.csv"
)
