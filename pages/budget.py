"""VRAM Budget: edit up to four scenarios, see where each GPU's memory goes and what fits."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from pages import _editor as editor
from pages import _state as state
from planner.capacity.charts import key_figures_table, memory_breakdown_figure, scenario_label
from planner.capacity.explain import (
    Explanation,
    explain,
    layout_rows,
    version_changes,
    version_range_text,
)
from planner.capacity.result import Plan
from planner.capacity.verdict import verdict
from planner.catalog.launch import launch
from planner.catalog.presets import presets, scenario_from_advice
from planner.errors import PlannerError
from planner.links.budget import MAX_SCENARIOS

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

if fresh or editor.COUNT_WIDGET not in st.session_state:
    st.session_state[editor.COUNT_WIDGET] = len(scenarios)
count = st.radio("Scenarios to compare", range(1, MAX_SCENARIOS + 1), key=editor.COUNT_WIDGET, horizontal=True)


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
    editor.seed(index, scenarios[min(index, len(scenarios) - 1)], overwrite=fresh)
    with column:
        st.subheader(f"Scenario {index + 1}")
        edited.append(editor.edit_scenario(index))
state.save(edited)

labels = [scenario_label(i, s) for i, s in enumerate(edited)]
models, results = zip(*state.plan_scenarios(edited), strict=True)


#: Characters Streamlit's markdown would read as formatting (``_report_kv_cache_config``, ``$``) in the planner's text.
_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|~$"})


def _bullets(lines: tuple[str, ...]) -> None:
    """Draw the planner's sentences as a bulleted list, their markdown characters escaped."""
    st.markdown("\n".join(f"- {line.translate(_MARKDOWN)}" for line in lines))


def _show_explanation(explanation: Explanation) -> None:
    """Draw an explanation: the layout table, the reasons, the longest that fits, the sources."""
    # a column per attention type, a row per figure: narrow enough for half the page
    st.table(pd.DataFrame(layout_rows(explanation.layout)).set_index("attention").T.rename_axis(None))
    _bullets(explanation.lines)
    st.markdown("**The longest that fits**")
    _bullets(explanation.longest_fit.lines)
    st.caption("Formulas: " + "; ".join(explanation.sources))


def _apply_advice(index: int, advice_index: int) -> None:
    plan = results[index]
    new = list(edited)
    new[index] = scenario_from_advice(edited[index], plan, plan.advice[advice_index])
    state.set_scenarios(new)


with answer:
    st.header("Verdict")
    compact = count >= 3  # four metric grids side by side truncate their values: one table instead
    for index, (column, result) in enumerate(zip(st.columns(count), results, strict=True)):
        with column:
            st.markdown(f"**{labels[index]}**")
            if isinstance(result, PlannerError):
                st.error(f"Cannot plan this scenario: {result}")
                if not isinstance(models[index], PlannerError):
                    with st.expander("Model details"):
                        editor.model_details(models[index])
                continue
            said = verdict(result)
            {"fits": st.success, "warning": st.warning}.get(said.level, st.error)(said.text)
            if result.topology is not None and result.topology.warning:
                needs = " or ".join(result.topology.needs)
                st.warning(f"{result.topology.warning}." + (f" vLLM launches it with {needs}." if needs else ""))
            range_text = version_range_text(result)
            if range_text:
                st.info(f"vLLM version not set: {range_text}.")
            if not compact and not result.refused:  # a refused configuration has no start-up to describe
                terms = result.per_gpu.as_gib()
                target = result.scenario.target_context
                # the answer first (concurrency, KV tokens), then where the memory went; 4 a row for one scenario
                wide = count == 1
                row = st.columns(4) if wide else st.columns(2)
                row[0].metric(
                    f"Concurrency @ {result.max_model_len:,}",
                    f"{result.max_concurrency:,.2f}",
                    help="Requests of max_model_len tokens that fit in the KV cache at once.",
                )
                row[1].metric(
                    f"Concurrency @ {target:,}" if target else "Concurrency @ target",
                    "n/a" if result.max_concurrency_at_target is None else f"{result.max_concurrency_at_target:,.2f}",
                    help="Set a target context to see concurrency at it.",
                )
                row = row[2:] if wide else st.columns(2)
                row[0].metric("KV cache tokens", f"{result.kv_cache_tokens:,}")
                blocks = "n/a" if result.num_gpu_blocks is None else f"{result.num_gpu_blocks:,}"
                row[1].metric("KV blocks per GPU", blocks)
                row = st.columns(4) if wide else st.columns(2)
                row[0].metric("Weights per GPU", f"{terms['weights_gib']:.2f} GiB")
                row[1].metric("KV cache per GPU", f"{terms['kv_cache_gib']:.2f} GiB")
                (row[2] if wide else st).metric("KV bytes per token (per GPU)", f"{result.kv_bytes_per_token:,.0f} B")
            explanation = explain(result)
            # one scenario: the two expanders side by side, so the launch command stays on the first screen
            spots = st.columns(2) if count == 1 and explanation is not None else (st, st)
            with spots[0].expander("Model details"):
                editor.model_details(models[index])
            if explanation is not None:
                with spots[1].expander("Why these numbers: the KV layout"):
                    _show_explanation(explanation)
            if result.advice:
                st.markdown("**What would make it fit** (each re-planned):")
                for a_index, advice in enumerate(result.advice):
                    # The change as wrapping text and a short button: long button labels get cut off.
                    text, button = st.columns([3, 2], vertical_alignment="center")
                    text.markdown(
                        f"{advice.change} → **{advice.max_concurrency:,.1f}** req. on {advice.num_gpus} GPU"
                        f"{'s' if advice.num_gpus > 1 else ''}"
                    )
                    button.button(
                        "Apply",
                        key=f"w{index}.advice{a_index}",
                        on_click=_apply_advice,
                        args=(index, a_index),
                        help=f"Load this change into scenario {index + 1}.",
                        width="stretch",
                    )

planned = [
    (i, label, r) for i, (label, r) in enumerate(zip(labels, results, strict=True)) if not isinstance(r, PlannerError)
]
with answer:
    for first, second, change in version_changes([r if isinstance(r, Plan) else None for r in results]):
        versions = f"vLLM {change.old_version} to {change.new_version}"
        with st.expander(f"What changed from {versions} (scenarios {first + 1} and {second + 1})"):
            _bullets(change.lines)
            st.table(pd.DataFrame(change.rows()).set_index("figure").rename_axis(None))
    if planned and compact:
        st.table(
            key_figures_table([r for *_, r in planned], [f"Scenario {i + 1}" for i, *_ in planned]).rename_axis(None)
        )
        st.caption("Concurrency: requests of that many tokens each that fit in the KV cache at once.")
    if len(planned) == 1:  # one scenario: its launch command belongs to the answer
        command = launch(planned[0][2])
        st.code(command.command, language="bash", wrap_lines=True)
        if command.warning:
            st.warning(command.warning)
        if command.corrected:
            st.caption(f"Launch command that fits ({command.change}):")
            st.code(command.corrected, language="bash", wrap_lines=True)
    if planned:
        st.plotly_chart(
            memory_breakdown_figure([r for *_, r in planned], [label for _, label, _ in planned]), key="memory_chart"
        )
        st.caption(
            "Memory per GPU: the limiting GPU of each scenario; terms an engine does not model are left out. The "
            "black line (labelled) is the device's total memory, the dashed one the engine's budget (total × "
            "utilization); anything past the total is the red hatched over-budget segment."
        )
if planned:
    st.header("Details")
    for tab, (index, _, result) in zip(st.tabs([label for _, label, _ in planned]), planned, strict=True):
        with tab:
            st.markdown("**Launch command**")
            command = launch(result)
            st.code(command.command, language="bash", wrap_lines=True)
            if command.warning:
                st.warning(command.warning)
            if command.corrected:
                st.markdown(f"**Launch command that fits** ({command.change})")
                st.code(command.corrected, language="bash", wrap_lines=True)
            if models[index].source == "upload":
                st.caption(
                    f"{result.scenario.model} stands for the pasted config.json: put the checkpoint's path or "
                    "repo id there."
                )
            forecast = state.cached_outlook(result.scenario, models[index].spec)
            if forecast is not None:
                st.markdown(
                    f"**Predicted performance** ({forecast.input_len:,} prompt + {forecast.output_len} output tokens "
                    "per request)"
                )
                st.dataframe(forecast.table(), hide_index=True, width="stretch")
                band_line = forecast.band_line
                st.caption(
                    f"{forecast.full.calibration}. Full load: {forecast.full_concurrency:,} requests in flight, what "
                    "the KV cache holds at this length (at most max_num_seqs). "
                    + (f"In parentheses: {band_line}. " if band_line else "")
                    + "Curves for any workload, and calibration on your own runs: the Performance page or "
                    "python -m planner predict."
                )
            with st.expander("Formulas with your numbers", expanded=False):
                # st.table, not st.dataframe: the data grid's code costs every fresh visit ~0.4 s of browser CPU on
                # a 2-core machine, for a table that starts folded (bench/data/README.md, page loads)
                st.table(
                    [
                        {"what": f.label, "formula": f.expression, "value": f.value, "source": f.source}
                        for f in result.formulas
                    ],
                    hide_index=True,
                )
            for note in result.notes:
                st.caption(f"ℹ️ {note}")
            st.download_button(
                "Download plan (JSON)",
                json.dumps(result.to_json(), indent=2),
                file_name=f"plan-{index + 1}.json",
                mime="application/json",
                key=f"w.json.{index}",
            )
