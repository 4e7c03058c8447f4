"""Load Test: throughput benchmarks with ``vllm bench serve`` metrics, live progress, sweeps and side-by-side runs.

Widgets are the settings' declarations (pages/_fields.py); what is shown is :mod:`planner.views.loadtest`'s."""

from __future__ import annotations

import math
from datetime import datetime
from functools import partial

import streamlit as st

from pages import _against_plan, _max_rate
from pages import _endpoints as endpoints_ui
from pages import _light as light
from pages import _state as state
from pages._fields import Drawer
from pages._numbers import number_box
from pages._tables import wide_table
from planner import fields
from planner.links import loadtest as links
from planner.loadtest import ray_workers
from planner.loadtest.charts import LATENCY_AXES, RUNS_HEADLINE
from planner.loadtest.settings import DEFAULT, FILE_DATASETS, MAX_WORKERS, TRACE_DATASETS, LoadSettings, format_goodput
from planner.loadtest.worker import BenchmarkRun, plan_jobs
from planner.serving.worker_process import warm_worker
from planner.values import parse_number
from planner.views import loadtest as view
from planner.views import loadtest_results as shown_view

RUN_KEY = "lt.current"  # {"run": BenchmarkRun, "id": its start time}
HISTORY_KEY = "lt.history"  # [SavedRun], oldest first
MEMORY_KEY = "lt.memory"  # what view.History remembers between reruns
SETTINGS_KEY = "lt.settings"
_SEEN_KEY = "lt.seen_query"
W = {name: f"lt.{name}" for name in links.KEYS}  # a widget per linked setting, and the Ray workers' box
_WIDGETS = {**W, "num_workers": "lt.num_workers"}


def _to_widget(field: str, value: object) -> object:
    """A link's value as its widget holds it: SLOs as text, a burst's rate as an empty box."""
    if field == "goodput_ms":
        return format_goodput(value)  # type: ignore[arg-type]
    return None if field == "request_rate" and value == math.inf else value


state.use_router()
warm_worker()  # the worker process of the next run imports now, not after the click
st.title("Load Test")
st.caption(
    "Throughput benchmarks with the metric definitions of `vllm bench serve`: the same workload on each chosen "
    "endpoint, one after the other, live. Measured from this machine, so network time to each server is included."
)
available = endpoints_ui.available_endpoints("lt", W["endpoints"], required=False)  # imports need none
endpoints_ui.restore_from_link(
    links.decode,
    DEFAULT,
    W,
    _to_widget,
    settings_key=SETTINGS_KEY,
    seen_key=_SEEN_KEY,
    probe_key=W["num_prompts"],
    available=available,
    own_keys=tuple(links.KEYS.values()),
)
st.session_state[W["endpoints"]] = [n for n in st.session_state.get(W["endpoints"], []) if n in available]
names = st.multiselect("Endpoints to load", list(available), key=W["endpoints"], help="Run one after the other.")
chosen = [available[n] for n in names]
secrets = state.endpoint_secrets(chosen)
endpoints_ui.discovery_table(chosen, secrets, key="lt.discovery")

# --- settings: one widget per declared setting -----------------------------------------------------------------------
draw = Drawer(DEFAULT, _WIDGETS)
with st.expander("Workload", expanded=True):
    c = st.columns([2, 1, 1, 1, 1])
    dataset = draw(c[0], "dataset_name")
    draw(c[1], "input_len", disabled=dataset not in ("random", "multi_turn"))
    for column, name in zip(c[2:], ("output_len", "range_ratio", "ignore_eos"), strict=True):
        draw(column, name)
    draw(st, "input_sizing", disabled=dataset not in ("random", "prefix_repetition", *TRACE_DATASETS))
    for name in ("prefix_len", "suffix_len", "num_prefixes", "num_turns", "think_time_s", "time_scale"):
        draw.kept(name)  # not drawn for this workload: the value each last had
    draw.kept("trace_chunk_hash_size")
    c = st.columns(4)
    if dataset == "prefix_repetition":
        for column, name in zip(c, ("prefix_len", "suffix_len", "num_prefixes"), strict=False):
            draw(column, name)
        c[3].caption(
            "vLLM's `prefix_repetition`: num_prompts // num_prefixes requests share each prefix, byte for byte."
        )
    elif dataset == "multi_turn":
        draw(c[0], "num_turns")
        draw(c[1], "think_time_s")
        c[2].caption(
            "Each turn sends the whole conversation so far (the answers as received) and a new message of input_len "
            "tokens. max_concurrency = conversations at once."
        )
    elif dataset in TRACE_DATASETS:
        draw(c[0], "time_scale")
        draw(c[1], "trace_chunk_hash_size", disabled=dataset != "timed_trace")
    prompts = view.Prompts()
    if dataset == "examples":
        prompts = view.example_caption()
    elif dataset in FILE_DATASETS:
        shown_name = fields.widget(LoadSettings, "dataset_name").show(dataset)
        upload = st.file_uploader(
            f"{shown_name} (never put in the link)", type=view.UPLOAD_TYPES[dataset], key=f"lt.file.{dataset}"
        )
        if upload is None:
            st.info(f"Upload a {shown_name}, or pick another workload.")
        else:
            read = {**draw.values, "num_prompts": draw.kept("num_prompts"), "num_warmups": draw.kept("num_warmups")}
            prompts = view.read_upload(dataset, upload.name, upload.getvalue(), read)
    if prompts.error:
        st.error(prompts.error)
    elif prompts.caption:
        st.caption(prompts.caption)

with st.expander("Load", expanded=True):
    mode = draw(st, "mode")
    c = st.columns(6)
    draw(c[0], "num_prompts")
    draw(c[1], "max_concurrency", disabled=mode == "sweep", placeholder="no cap")
    draw(c[2], "request_rate", optional=True, placeholder="inf")
    for column, name in zip(c[3:], ("burstiness", "num_warmups", "seed"), strict=True):
        draw(column, name)
    c = st.columns(6)
    draw(c[0], "duration_s")
    draw(c[1], "timeout_s")
    goodput = draw(c[2], "goodput_ms", placeholder="ttft:500,tpot:50")
    draw(c[3], "sweep_max", disabled=mode != "sweep")
    draw(c[4], "scrape_metrics")
    draw(c[5], "flush_cache")
    c = st.columns([1, 2, 2, 2, 2])
    draw(c[0], "num_runs", disabled=mode == "sweep")
    draw(c[1], "sweep_stop", disabled=mode != "sweep")
    draw(c[2], "sweep_refine", disabled=mode != "sweep")
    ray_address = ray_workers.configured_address()
    workers = number_box(
        "Ray workers",
        _WIDGETS["num_workers"],
        partial(parse_number, low=0, high=MAX_WORKERS, integer=True),
        default=0,
        where=c[3],
        help="Send the measured requests from N Ray workers, the concurrency cap and the rate split between them "
        f"(0 = one process on this machine); on {'the cluster at ' + ray_address if ray_address else 'this machine'}"
        " (set RAY_ADDRESS for a cluster). Needs requirements-ray.txt.",
    )
    draw(c[4], "batching")
values = {name: value for name, value in draw.values.items() if name != "goodput_ms"}
values |= {"endpoints": tuple(names), "num_workers": int(workers or 0) or None, "ray_address": ray_address}
values["request_rate"] = math.inf if values["request_rate"] is None else values["request_rate"]
built = view.build_settings(values, goodput)
if built.settings is None:
    st.error(f"Cannot run: {built.error}")
    st.stop()
settings = built.settings
st.session_state[SETTINGS_KEY] = settings
endpoints_ui.write_link(links.encode(settings), _SEEN_KEY)
planned = view.plan_runs(chosen, settings, prompts.prompts, prompts.rows, built.error)
if planned.error:
    st.error(f"Cannot run: {planned.error}")
elif planned.caption:
    st.caption(planned.caption)

# --- run -------------------------------------------------------------------------------------------------------------
history = view.History(st.session_state.setdefault(HISTORY_KEY, []), st.session_state.setdefault(MEMORY_KEY, {}))
entry = st.session_state.get(RUN_KEY)
if entry is not None:
    history.record(entry["id"], entry["run"].snapshot())
active = entry is not None and not entry["run"].done
b1, b2, _ = st.columns([1, 1, 4])
if b1.button(
    "Run",
    type="primary",
    key="lt.run",
    disabled=not planned.jobs or bool(planned.error) or active,
    icon=":material/play_arrow:",
    help="Cancel the run in progress first." if active else None,
):
    now = datetime.now()
    tagged = plan_jobs(chosen, settings, prompts.prompts, tag=now.strftime("%H:%M:%S"), trace_rows=prompts.rows)
    run = BenchmarkRun(tagged, scrape_metrics=settings.scrape_metrics, secrets=secrets, started=now)
    entry = st.session_state[RUN_KEY] = {"run": run.start(), "id": now.isoformat()}
    active = True
if b2.button("Cancel", key="lt.cancel", disabled=not active, icon=":material/stop:"):
    entry["run"].cancel()


def live_panel() -> None:
    """Fragment body: the latest snapshot; once done, each run's answer first, right under the Run button where the
    eye is (the Results below may be screens away); when runs finished, rerun the page so the results update."""
    current = st.session_state.get(RUN_KEY)
    if current is None:
        return
    snap = current["run"].snapshot()
    live = view.live_view(snap)
    for line in live.errors:
        st.error(line)
    for ok, line in live.headlines:
        (st.success if ok else st.warning)(line)
    if live.headlines:
        st.caption("Every metric, chart and download: [Results](#results), below.")
    st.progress(live.progress[0], text=live.progress[1])
    for column, tile in zip(st.columns(len(live.tiles)), live.tiles, strict=True):
        column.metric(tile.label, tile.value, help=tile.help)
    if live.waiting:
        st.caption(live.waiting)
    if live.figure is not None:
        light.figure(live.figure, "lt.chart.live")
    if live.footer:
        st.caption(live.footer)
    if history.record(current["id"], snap) or (snap.done and not current.get("final")):
        current["final"] = snap.done
        st.rerun(scope="app")


# 0.5 s: the live chart is an SVG drawing now, cheap to redraw; at 1 s the first figure came up to 1 s after the data
st.fragment(run_every=0.5 if active else None)(live_panel)()
_max_rate.render(chosen, settings, prompts.prompts, secrets, HISTORY_KEY)

# --- results ---------------------------------------------------------------------------------------------------------
# open while files are chosen: a rerun (the link being written) must not fold the button that adds them out of sight
with st.expander(
    "Add earlier runs (vllm bench serve --save-result JSON, or this page's export)",
    expanded=bool(st.session_state.get("lt.import")),
):
    uploads = st.file_uploader("Result files", type=["json", "jsonl"], accept_multiple_files=True, key="lt.import")
    if uploads and st.button("Add to the results", key="lt.import.add"):
        for ok, line in history.import_files((u.name, u.getvalue()) for u in uploads):
            (st.success if ok else st.error)(line)
if not history.runs:
    st.info("No results yet: choose endpoints and press Run, or add earlier runs above.")
    st.stop()

st.subheader("Results")
relabelled = history.labels_to_show(st.session_state.get("lt.shown"))
if relabelled is not None:  # new runs (or a cleared list): the new ones shown, the reader's choice kept for the rest
    st.session_state["lt.shown"] = relabelled
shown = history.selected(st.multiselect("Runs shown", [r.label for r in history.runs], key="lt.shown"))

# --- the prediction of the same workloads, beside the measured runs --------------------------------------------------
chosen_overlay = _against_plan.choose(shown)
overlay = chosen_overlay.overlay if chosen_overlay is not None else None
predicted = list(overlay.predicted) if overlay is not None else []
tabled = [*shown, *predicted]

results = shown_view.results_view(shown, predicted)
wide_table(results.runs, RUNS_HEADLINE, key="lt.table")
st.caption(shown_view.RUNS_CAPTION)
for is_note, line in results.warnings:
    st.warning(line, icon=":material/info:" if is_note else None)
if results.figure is not None:
    st.plotly_chart(results.figure, key="lt.chart.runs")
for section in results.sections:
    st.subheader(section.title)
    for column, tile in zip(st.columns(len(section.tiles)) if section.tiles else (), section.tiles, strict=True):
        column.metric(tile.label, tile.value, help=tile.help)
    if section.figure is not None:
        st.plotly_chart(section.figure, key=f"lt.chart.{section.key}")
    if section.headline:
        wide_table(section.table, section.headline, key=f"lt.{section.key}.table")
    else:
        st.dataframe(section.table, hide_index=True, key=f"lt.{section.key}.table")
    if section.caption:
        st.caption(section.caption)

if shown_view.has_sweeps(shown):
    axis = st.selectbox("Sweep latency axis", list(LATENCY_AXES), key="lt.sweep_axis")
    sweeps = shown_view.sweep_view(shown, tabled, overlay, axis, history.sweep_stops)
    st.plotly_chart(sweeps.figure, key="lt.chart.sweep")
    for line in sweeps.stops:
        st.info(line, icon=":material/front_hand:")
    for line in sweeps.knees:
        st.caption(line)
    st.plotly_chart(sweeps.curves, key="lt.chart.curves")
    st.caption(sweeps.caption)

if chosen_overlay is not None:
    _against_plan.render(chosen_overlay, shown)

if history.measured_kv:
    _against_plan.kv_section(history)

for column, d in zip(st.columns([1, 1, 1, 3]), shown_view.downloads(shown, tabled), strict=False):
    column.download_button(d.label, d.data, d.file_name, d.mime, key=d.key)
if st.button("Clear results", key="lt.clear"):
    history.runs.clear()
    st.rerun()
