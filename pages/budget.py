"""VRAM Budget: edit up to four scenarios, see where each GPU's memory goes and what fits."""

from __future__ import annotations

import streamlit as st

from pages import _cache as cache
from pages import _light as light
from pages import _state as state
from pages._editor import edit_scenario
from pages._editor_memory import COUNT_WIDGET, seed
from planner.capacity.launch import Launch
from planner.capacity.presets import presets
from planner.links.budget import MAX_SCENARIOS
from planner.views.budget import KEY_FIGURES_CAPTION, MEMORY_CAPTION, ExplanationView, budget_view
from planner.views.model import ModelDetails

state.use_router()
st.title("VRAM Budget")
st.caption(
    "Where each GPU's memory goes — weights, activations, CUDA graphs, KV cache — and how many "
    "requests fit. GiB = 2^30 bytes. The link in the address bar restores these scenarios."
)

scenarios, warnings, fresh = state.load()
for line in warnings:
    st.warning(f"URL parameter — {line}")

PRESETS = {p.key: p for p in presets()}
# The answer comes first on the page; it is filled once the scenario editors below have been read.
answer = st.container()


def _load_preset() -> None:
    state.set_scenarios(PRESETS[st.session_state["w.preset"]].scenarios)


st.header("Scenarios")
with st.expander("Presets: the article's scenarios and deployment recipes", expanded=False):
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    with c1:
        chosen = st.selectbox("Preset", list(PRESETS), key="w.preset", format_func=lambda key: PRESETS[key].name)
    with c2:
        st.button("Load preset", key="w.load_preset", on_click=_load_preset, width="stretch")
    st.caption(PRESETS[chosen].description + " Loading replaces the scenarios below.")

if fresh or COUNT_WIDGET not in st.session_state:
    st.session_state[COUNT_WIDGET] = len(scenarios)
count = st.radio("Scenarios to compare", range(1, MAX_SCENARIOS + 1), key=COUNT_WIDGET, horizontal=True)


def _editor_cells(count: int) -> list:
    """One bordered cell per scenario editor, at most two a row: four side by side cut model and GPU names."""
    per_row = min(count, 2)
    cells = []
    for start in range(0, count, per_row):
        cells += [column.container(border=True) for column in st.columns(per_row)[: count - start]]
    return cells


edited = []
for index, column in enumerate(_editor_cells(count)):
    # A column hidden by a lower count keeps its remembered values; a brand-new one copies the last.
    seed(index, scenarios[min(index, len(scenarios) - 1)], overwrite=fresh)
    with column:
        st.subheader(f"Scenario {index + 1}")
        edited.append(edit_scenario(index))
state.save(edited)

view = budget_view(edited, cache.plan_scenarios(edited), forecast=cache.cached_outlook)


def _model_details(details: ModelDetails) -> None:
    st.table(details.table)
    for assumption in details.assumptions:
        st.caption(f":orange[:material/warning: Assumed: {assumption}]")
    for note in details.notes:
        st.caption(f"ℹ️ {note}")


def _show_explanation(explanation: ExplanationView) -> None:
    """Draw an explanation: the layout table, the reasons, the longest that fits, the sources."""
    st.table(explanation.layout)
    st.markdown(explanation.reasons)
    st.markdown("**The longest that fits**")
    st.markdown(explanation.longest_fit)
    st.caption(explanation.sources)


def _launch(command: Launch, *, heading: bool) -> None:
    """The launch command, its warning and the command that fits (under a heading in the Details tabs), each as text
    with a copy button (:func:`pages._light.command`): no syntax highlighter for the page to load."""
    if heading:
        st.markdown("**Launch command**")
    light.command(command.command)
    if command.warning:
        st.warning(command.warning)
    if command.corrected:
        if heading:
            st.markdown(f"**Launch command that fits** ({command.change})")
        else:
            st.caption(f"Launch command that fits ({command.change}):")
        light.command(command.corrected)


_SAY = {"fits": st.success, "warning": st.warning}

with answer:
    st.header("Verdict")
    for index, (column, said) in enumerate(zip(st.columns(count), view.answers, strict=True)):
        with column:
            st.markdown(f"**{said.label}**")
            if said.error is not None:
                st.error(said.error)
                if said.model is not None:
                    with st.expander("Model details"):
                        _model_details(said.model)
                continue
            _SAY.get(said.verdict_level, st.error)(said.verdict_text)
            if said.topology_warning:
                st.warning(said.topology_warning)
            if said.range_info:
                st.info(said.range_info)
            for row in said.metric_rows:
                cells = st.columns(4 if count == 1 else 2) if len(row) > 1 else [st]
                for cell, metric in zip(cells, row, strict=False):
                    cell.metric(metric.label, metric.value, help=metric.help)
            # one scenario: the two expanders side by side, so the launch command stays on the first screen
            spots = st.columns(2) if count == 1 and said.explanation is not None else (st, st)
            with spots[0].expander("Model details"):
                _model_details(said.model)
            if said.explanation is not None:
                with spots[1].expander("Why these numbers: the KV layout"):
                    _show_explanation(said.explanation)
            if said.advice:
                st.markdown("**What would make it fit** (each re-planned):")
                for a_index, advice in enumerate(said.advice):
                    # The change as wrapping text and a short button: long button labels get cut off.
                    text, button = st.columns([3, 2], vertical_alignment="center")
                    text.markdown(advice.text)
                    button.button(
                        "Apply",
                        key=f"w{index}.advice{a_index}",
                        on_click=state.set_scenarios,
                        args=(advice.scenarios,),
                        help=f"Load this change into scenario {index + 1}.",
                        width="stretch",
                    )
    for change in view.version_changes:
        with st.expander(change.title):
            st.markdown(change.reasons)
            st.table(change.table)
    if view.key_figures is not None:
        st.table(view.key_figures)
        st.caption(KEY_FIGURES_CAPTION)
    if view.launch is not None:  # one scenario: its launch command belongs to the answer
        _launch(view.launch, heading=False)
    if view.memory_figure is not None:
        light.figure(view.memory_figure, "memory_chart")
        st.caption(MEMORY_CAPTION)
if view.details:
    st.header("Details")
    for tab, detail in zip(st.tabs([d.label for d in view.details]), view.details, strict=True):
        with tab:
            _launch(detail.launch, heading=True)
            if detail.upload_note:
                st.caption(detail.upload_note)
            if detail.forecast is not None:
                st.markdown(detail.forecast.title)
                # st.table, not st.dataframe: the data grid's 0.5 MB of browser code for a table of two rows
                st.table(detail.forecast.table, hide_index=True)
                st.caption(detail.forecast.caption)
            with st.expander("Formulas with your numbers", expanded=False):
                # st.table, not st.dataframe: the data grid's code costs every fresh visit ~0.4 s of browser CPU on
                # a 2-core machine, for a table that starts folded (bench/data/README.md, page loads)
                st.table(list(detail.formulas), hide_index=True)
            for note in detail.notes:
                st.caption(f"ℹ️ {note}")
            st.download_button(
                "Download plan (JSON)",
                detail.plan_json,
                file_name=detail.file_name,
                mime="application/json",
                key=f"w.json.{detail.index}",
            )
