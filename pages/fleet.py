"""Fleet: N replicas of a deployment behind a router, each routing policy simulated on one workload: TTFT, prefix-cache
hit rate and load per replica side by side, and the deployment files."""

from __future__ import annotations

import json
from dataclasses import replace

import streamlit as st

from pages import _state as state
from pages._numbers import field_boxes
from planner import fields
from planner.capacity.charts import scenario_label
from planner.capacity.scenario import Scenario
from planner.errors import PlannerError
from planner.fleet.charts import hit_rate_figure, load_figure, policies_table, ttft_figure
from planner.fleet.routers import ROUTERS
from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD, FleetSettings
from planner.fleet.view import FleetView, fleet_view
from planner.links import fleet as fleet_links
from planner.loadtest.settings import LoadSettings

VIEW_KEY = "fleet.view"  # the last DecodedFleet read from the widgets
_SEEN_KEY = "fleet.seen_query"
W = {name: f"fleet.{name}" for name in fleet_links.KEYS}
KEYS = tuple(fleet_links.KEYS.values())


@st.cache_data(show_spinner=False, max_entries=16)
def _simulate(scenario: Scenario, workload: LoadSettings, fleet: FleetSettings) -> FleetView:
    return fleet_view(scenario, workload, fleet)


state.use_router()
st.title("Fleet")
st.caption(
    "Replicas of one deployment behind a router: each routing policy (round robin, least loaded, KV-aware, "
    "prefix-aware) simulated on the same workload on one event clock, every replica with its own prefix cache, so "
    "the hits a policy keeps or loses show in TTFT. The deployment is the first VRAM Budget scenario; the link holds "
    "every input."
)

scenarios, warnings, _ = state.load(foreign=KEYS)
for line in warnings:
    st.warning(f"URL parameter — {line}")

query, new_link = state.new_link(KEYS, _SEEN_KEY)
if new_link or W["replicas"] not in st.session_state:
    if new_link:
        view = fleet_links.decode(query)
        for line in view.warnings:
            st.warning(f"URL parameter — {line}")
    else:
        view = st.session_state.get(VIEW_KEY) or fleet_links.DecodedFleet()
    for name in fleet_links.KEYS:
        if name in fleet_links.FLEET.keys:
            st.session_state[W[name]] = list(view.fleet.routers) if name == "routers" else getattr(view.fleet, name)
        else:
            st.session_state[W[name]] = getattr(view.workload, name)

answer = st.container()  # the answer first; it is filled once the inputs below have been read
work_box = field_boxes(fleet_links.parse_field, DEFAULT_WORKLOAD, W)
fleet_box = field_boxes(fleet_links.parse_field, DEFAULT, W)

with st.expander("Fleet", expanded=True):
    c = st.columns([1, 4, 1])
    replicas = fleet_box(c[0], "replicas")
    routers = fields.widget(FleetSettings, "routers")
    c[1].multiselect(routers.label, ROUTERS, key=W["routers"], help=routers.help)
    refresh = fleet_box(c[2], "router_refresh_s")

with st.expander("Workload", expanded=True):
    c = st.columns([2, 1, 1, 1, 1, 1])
    datasets = fields.widget(LoadSettings, "dataset_name")
    dataset = c[0].radio(
        "prompts",
        fleet_links.DATASETS,
        key=W["dataset_name"],
        horizontal=True,
        format_func=datasets.show,
        help="random: prompts of their own · prefix_repetition: shared prefixes (vLLM's dataset) · multi_turn: "
        "conversations, each turn sending the whole conversation so far.",
    )
    num_prompts = work_box(c[1], "num_prompts", "num_prompts", help="Requests in all.")
    max_concurrency = work_box(
        c[2], "max_concurrency", "max_concurrency", optional=True, help="In flight; empty: no cap."
    )
    request_rate = work_box(c[3], "request_rate", "request_rate", help="Requests/s (inf: all at once).")
    input_len = work_box(c[4], "input_len", "input_len", help="Prompt tokens (multi_turn: each new message).")
    output_len = work_box(c[5], "output_len", "output_len", help="Output tokens.")
    c = st.columns(6)
    num_turns = work_box(c[0], "num_turns", "num_turns", disabled=dataset != "multi_turn")
    think_time = work_box(c[1], "think_time_s", "think time (s)", disabled=dataset != "multi_turn")
    prefix_len = work_box(c[2], "prefix_len", "prefix_len", disabled=dataset != "prefix_repetition")
    suffix_len = work_box(c[3], "suffix_len", "suffix_len", disabled=dataset != "prefix_repetition")
    num_prefixes = work_box(c[4], "num_prefixes", "num_prefixes", disabled=dataset != "prefix_repetition")
    seed = work_box(c[5], "seed", "seed")

problem = None
workload, fleet = DEFAULT_WORKLOAD, DEFAULT
try:
    workload = replace(
        DEFAULT_WORKLOAD,
        dataset_name=dataset,
        num_prompts=int(num_prompts),
        max_concurrency=None if max_concurrency is None else int(max_concurrency),
        request_rate=float(request_rate),
        input_len=int(input_len),
        output_len=int(output_len),
        num_turns=int(num_turns),
        think_time_s=float(think_time),
        prefix_len=int(prefix_len),
        suffix_len=int(suffix_len),
        num_prefixes=int(num_prefixes),
        seed=int(seed),
    )
    fleet = FleetSettings(
        replicas=int(replicas), routers=tuple(st.session_state[W["routers"]]), router_refresh_s=float(refresh)
    )
except PlannerError as exc:
    problem = str(exc)
st.session_state[VIEW_KEY] = fleet_links.DecodedFleet(workload, fleet)
params = fleet_links.encode(workload, fleet)
state.save(scenarios, extra=params)
st.session_state[_SEEN_KEY] = params

with answer:
    scenario = scenarios[0]
    st.caption(f"Each replica: {scenario_label(0, scenario)} (scenario 1: edit it on the VRAM Budget page).")
    if problem:
        st.error(f"Cannot simulate: {problem}.")
        st.stop()
    try:
        with st.spinner("Simulating each policy…"):
            result = _simulate(scenario, workload, fleet)
    except PlannerError as exc:
        st.error(f"Cannot simulate this fleet: {exc}")
        st.stop()
    best = result.best
    st.success(result.answer)
    st.dataframe(policies_table(result.runs), hide_index=True, width="stretch", key="fleet.table")
    cols = st.columns(3)
    cols[0].plotly_chart(ttft_figure(result.runs), key="fleet.ttft")
    cols[1].plotly_chart(hit_rate_figure(result.runs), key="fleet.hits")
    cols[2].plotly_chart(load_figure(result.runs), key="fleet.load")
    cpu = sum(run.cpu_s for run in result.runs)
    st.caption(
        f"{workload.num_prompts:,} requests per policy, simulated in {cpu:.2f} s of CPU · coefficients: "
        f"{result.calibration}."
    )
    for note in result.notes:
        st.caption(f"Note: {note}.")

st.subheader("Deployment files")
st.caption(
    f"{fleet.replicas} replicas of this deployment: Kubernetes manifests (Deployment running vllm serve, GPU "
    "requests, /health probes, Service), the vLLM production-stack chart's values (its router set to "
    f"{best.router if best is not None else 'round_robin'}) or llm-d's modelservice values."
)
d = st.columns(4)
for column, (target, files) in zip(d, result.files.items(), strict=False):
    for name, text in files.items():
        column.download_button(
            f"{target}: {name}", text, f"{target}-{name}", "application/yaml", key=f"fleet.file.{target}"
        )
d[3].download_button(
    "Results (JSON)", json.dumps(result.to_json(), indent=2), "fleet.json", "application/json", key="fleet.json"
)
