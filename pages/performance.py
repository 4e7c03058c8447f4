"""Performance: predicted throughput and latency of each scenario under one workload, with the knee and the load at
which the KV cache fills."""

from __future__ import annotations

import streamlit as st

from pages import _state as state
from pages._numbers import field_boxes
from pages._tables import wide_table
from planner import fields
from planner.capacity.charts import scenario_label
from planner.errors import BadValue, PlannerError
from planner.links import performance as perf_links
from planner.links.loadtest import parse_field
from planner.predict.charts import (
    POINTS_HEADLINE,
    band_caption,
    curve_points,
    headline_metrics,
    performance_figure,
    points_table,
    workload_caption,
)
from planner.predict.curves import (
    AXES,
    DEFAULT_RATES,
    DEFAULT_WORKLOAD,
    MAX_PAGE_OUTPUT_TOKENS,
    curve_levels,
    format_rates,
    parse_rates,
    simulated_output_tokens,
)

VIEW_KEY = "perf.view"  # the last DecodedPerformance read from the widgets
_SEEN_KEY = "perf.seen_query"
W = {name: f"perf.{name}" for name in perf_links.KEYS}
KEYS = tuple(perf_links.KEYS.values())

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
query = {key: st.query_params.get_all(key) for key in st.query_params}
own = {key: values[-1] if values else "" for key, values in query.items() if key in KEYS}
new_link = bool(query) and own != st.session_state.get(_SEEN_KEY)
if new_link or W["input_len"] not in st.session_state:
    if new_link:
        view = perf_links.decode(query)
        for line in view.warnings:
            st.warning(f"URL parameter — {line}")
    else:
        view = st.session_state.get(VIEW_KEY) or perf_links.DecodedPerformance()
    for name in perf_links.FIELDS:
        st.session_state[W[name]] = fields.get(view.settings, name)
    st.session_state[W["axis"]] = view.axis
    st.session_state[W["rates"]] = format_rates(view.rates).replace(",", ", ")

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

profile = state.profile_upload("perf.profile")

rates_error = None
try:
    rates = parse_rates(rates_text)
except BadValue as bad:
    rates_error = f"request rates {rates_text!r} are not valid: expected {bad.accepted}"
    rates = DEFAULT_RATES
settings = fields.replace(
    DEFAULT_WORKLOAD,
    input_len=int(input_len),
    output_len=int(output_len),
    num_prompts=int(num_prompts),
    range_ratio=float(range_ratio),
    sweep_max=int(sweep_max),
    burstiness=float(burstiness),
)
st.session_state[VIEW_KEY] = perf_links.DecodedPerformance(settings, axis, rates)
params = perf_links.encode(settings, axis=axis, rates=rates)
state.save(scenarios, extra=params)
st.session_state[_SEEN_KEY] = params

# --- predict ---------------------------------------------------------------------------------------------------------
levels = curve_levels(settings, axis, rates)
cost = simulated_output_tokens(settings, levels, axis)
problems: list[str] = []
todo = []
for index, (scenario, (model, result)) in enumerate(zip(scenarios, state.plan_scenarios(scenarios), strict=True)):
    label = scenario_label(index, scenario)
    if isinstance(result, PlannerError):
        problems.append(f"Scenario {index + 1} cannot be planned: {result}")
    elif scenario.engine != "vllm":
        problems.append(
            f"Scenario {index + 1} ({label}): the prediction simulates vLLM V1's scheduler; {scenario.engine} is not "
            "modelled. Set its engine to vLLM on the VRAM Budget page to predict it."
        )
    elif not result.fits:
        problems.append(f"Scenario {index + 1} ({label}) does not fit, so it has no performance: {result.reason}.")
    else:
        todo.append((label, scenario, model.spec, result))

with answer:
    for line in problems:
        st.warning(line)
    if rates_error:
        st.error(f"Cannot predict: {rates_error}.")
        st.stop()
    if cost > MAX_PAGE_OUTPUT_TOKENS:
        st.error(
            f"Cannot predict here: this workload simulates {cost:,} output tokens a curve, more than this page's "
            f"{MAX_PAGE_OUTPUT_TOKENS:,}. Lower num_prompts, output_len or the sweep's top level, or run "
            "`python -m planner predict` (no cap)."
        )
        st.stop()
    if not todo:
        st.info(
            "Nothing to predict: no scenario is a vLLM deployment that fits (see above why). Change the scenarios on "
            "the VRAM Budget page (left sidebar)."
        )
        st.stop()
    bar = st.progress(0.0, text="Predicting…")
    curves, labels = [], []
    for i, (label, scenario, spec, result) in enumerate(todo):

        def _progress(done: int, total: int, i: int = i, label: str = label) -> None:
            bar.progress((i + done / total) / len(todo), text=f"Predicting {label}: level {done} of {total}")

        try:
            curve = state.cached_curve(
                scenario, settings, levels, axis=axis, profile=profile, spec=spec, plan=result, on_level=_progress
            )
        except PlannerError as exc:
            st.warning(f"Scenario {label}: no prediction: {exc}")
            continue
        curves.append(curve)
        labels.append(label)
    bar.empty()
    if not curves:
        st.info("No scenario could be predicted for this workload (see above why).")
        st.stop()
    for curve, label in zip(curves, labels, strict=True):
        if len(curves) > 1:
            st.markdown(f"**{label}**")
        for column, (name, value, help_text, band) in zip(st.columns(5), headline_metrics(curve), strict=True):
            column.metric(name, value, delta=band, delta_color="off", delta_arrow="off", help=help_text)
    st.caption(f"{workload_caption(settings, axis, levels)} Coefficients: {curves[0].calibration}.")
    st.plotly_chart(performance_figure(curves, labels), key="perf.chart")
    band_line = band_caption(curves)
    if band_line is not None:
        st.caption(band_line)
    for note in dict.fromkeys(n for c in curves for n in c.notes):
        st.caption(f"Note: {note}.")

points = curve_points(curves, labels)
st.subheader("All points")
wide_table(points_table(points), POINTS_HEADLINE, key="perf.table")
st.download_button(
    "Download points (CSV)", points.to_csv(index=False), "predicted_performance.csv", "text/csv", key="perf.csv"
)
