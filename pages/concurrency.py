"""Concurrency vs Context: how many requests fit as the context per request grows."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _state as state
from planner.capacity.charts import (
    concurrency_figure,
    concurrency_table,
    context_label,
    context_points,
    is_empty_concurrency,
    model_context_limit,
    scenario_label,
)
from planner.capacity.explain import version_range_text
from planner.errors import PlannerError

state.use_router()
st.title("Concurrency vs Context")
st.caption(
    "Concurrent requests the KV cache holds at each context length, from each engine's own block "
    "accounting. Edit the scenarios on the VRAM Budget page; the link restores them here too."
)

scenarios, warnings, fresh = state.load()
for line in warnings:
    st.warning(f"URL parameter — {line}")

plans, labels = [], []
for index, (scenario, (_, result)) in enumerate(zip(scenarios, state.plan_scenarios(scenarios), strict=True)):
    if isinstance(result, PlannerError):
        st.error(f"Scenario {index + 1} cannot be planned: {result}")
        continue
    plans.append(result)
    labels.append(scenario_label(index, scenario))
    if not result.fits:
        drawn = (
            " Its line is grey and dotted: what the KV cache would hold if the engine started."
            if result.kv_cache_tokens
            else ""
        )
        st.warning(f"Scenario {index + 1} does not fit: {result.reason}.{drawn}")

if not plans:
    state.save(scenarios)
    st.info(
        "No scenario could be planned, so there is nothing to chart. Fix the scenarios on the VRAM Budget "
        "page (left sidebar)."
    )
    st.stop()

chart_area = st.container()  # the chart first; the range slider that shapes it comes below it
saved_low, saved_high = st.session_state.get(state.VIEW_KEY, (None, None))
longest = max(model_context_limit(p) for p in plans)
options = sorted({*context_points(128, max(longest, 256)), *(v for v in (saved_low, saved_high) if v)})
low = saved_low if saved_low in options else 512
high = saved_high if saved_high in options else longest
if fresh:
    st.session_state.pop("w.context_range", None)  # a link's range wins over the widget's last value
low, high = st.select_slider(
    "Context range (tokens)",
    options=options,
    value=(low, high) if low < high else (options[0], options[-1]),
    key="w.context_range",
    format_func=context_label,
)
if low >= high:
    st.info("Pick a range with two different ends.")
    st.stop()
state.save(scenarios, view=(low, high))

table = concurrency_table(plans, labels, context_points(low, high))
with chart_area:
    if is_empty_concurrency(table):
        st.info(
            f"Nothing to chart from {context_label(low)} to {context_label(high)} tokens: no scenario holds even "
            "part of one request there (its KV cache is empty, or the range is beyond the model's context "
            "limit, n/a). See the lines above for why; change the scenarios on the VRAM Budget page or the range."
        )
    else:
        st.plotly_chart(concurrency_figure(plans, labels, min_context=low, max_context=high), key="concurrency_chart")
        st.caption(
            "Solid: up to the scenario's max_model_len (diamond). Dotted: longer contexts the model supports, if "
            '--max-model-len were raised with the same KV memory. Grey dotted, "(does not fit)": a scenario the '
            "engine rejects. n/a beyond a model's own limit (max_position_embeddings)."
        )
        ranges = [(label, p) for label, p in zip(labels, plans, strict=True) if version_range_text(p)]
        for label, p in ranges:
            st.caption(f"Shaded, {label}: no vLLM version set, {version_range_text(p)}.")
shown = table.astype(object).map(lambda v: "n/a" if pd.isna(v) else v)
shown["context_tokens"] = table["context_tokens"].map(context_label)
st.table(
    shown.rename(columns={"context_tokens": "context (tokens)"})
    .set_index("context (tokens)")
    .map(lambda v: v if isinstance(v, str) else f"{v:,.2f}")
)
st.download_button(
    "Download table (CSV)",
    table.to_csv(index=False),
    file_name="concurrency_vs_context.csv",
    mime="text/csv",
    key="w.csv",
)
