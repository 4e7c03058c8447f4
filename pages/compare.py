"""Live Compare: one prompt to several serving endpoints at once, answers and latency side by side as they stream."""

from __future__ import annotations

import streamlit as st

from pages import _endpoints as endpoints_ui
from pages import _light as light
from pages import _state as state
from pages._numbers import field_boxes
from planner.compare.charts import METRIC_HELP
from planner.compare.run import CompareRun
from planner.compare.settings import DEFAULT, MAX_PROMPT_CHARS, CompareSettings, parse_stop, to_request
from planner.errors import PlannerError
from planner.links import compare as compare_state
from planner.serving.worker_process import warm_worker
from planner.views.compare import METRICS_CAPTION, LiveView, history_view, live_view

RUN_KEY = "compare.run"  # {"run": CompareRun, "repeat": int, "recorded": bool}
HISTORY_KEY = "compare.history"  # [CompareResult], oldest first
SETTINGS_KEY = "compare.settings"  # last CompareSettings read from the widgets
_SEEN_KEY = "compare.seen_query"
W = {  # widget key of each setting
    "endpoints": "cmp.endpoints",
    "system": "cmp.system",
    "prompt": "cmp.prompt",
    "temperature": "cmp.temperature",
    "top_p": "cmp.top_p",
    "max_tokens": "cmp.max_tokens",
    "stop": "cmp.stop",
    "seed": "cmp.seed",
    "repeat": "cmp.repeat",
    "timeout_s": "cmp.timeout",
}
ICON = {
    "waiting": ":gray[:material/hourglass_empty:]",
    "streaming": ":blue[:material/stream:]",
    "done": ":green[:material/check_circle:]",
    "error": ":red[:material/error:]",
    "cut": ":orange[:material/content_cut:]",
    "cancelled": ":gray[:material/cancel:]",
}

state.use_router()
warm_worker()  # the worker process of the next run imports now, not after the click
st.title("Live Compare")
st.caption(
    "Send one prompt to several endpoints at once and watch the answers, time to first token and inter-token "
    "latency side by side. Measured on this machine, so network time to each server is included."
)

# --- endpoints -------------------------------------------------------------------------------------------------------
# required=False: a link's parameters are read (and a bad one reported) before the page stops for want of an endpoint
available = endpoints_ui.available_endpoints("cmp", W["endpoints"], required=False)
allow_custom = state.allow_custom_endpoints()
endpoints_ui.restore_from_link(
    compare_state.decode,
    DEFAULT,
    W,
    lambda field, value: ", ".join(value) if field == "stop" else value,
    settings_key=SETTINGS_KEY,
    seen_key=_SEEN_KEY,
    probe_key=W["prompt"],
    available=available,
    own_keys=tuple(compare_state.KEYS.values()),
)
if not available:
    st.stop()
st.session_state[W["endpoints"]] = [n for n in st.session_state.get(W["endpoints"], []) if n in available]

names = st.multiselect(
    "Endpoints to run",
    list(available),
    key=W["endpoints"],
    help="From endpoints.toml" + (" and the ones added above" if allow_custom else "") + ".",
)

# --- discovery -------------------------------------------------------------------------------------------------------
chosen = [available[n] for n in names]
secrets = state.endpoint_secrets(chosen)
endpoints_ui.discovery_table(chosen, secrets, key="cmp.discovery")

# --- shared settings -------------------------------------------------------------------------------------------------
with st.expander("Prompt and sampling", expanded=True):
    system = st.text_input("System prompt (optional)", key=W["system"])
    prompt = st.text_area("Prompt", key=W["prompt"], height=90)
    c = st.columns(7)
    box = field_boxes(compare_state.parse_field, DEFAULT, W)
    temperature = box(
        c[0], "temperature", "temperature", optional=True, placeholder="default", help="Empty = server default."
    )
    top_p = box(c[1], "top_p", "top_p", optional=True, placeholder="default", help="Empty = server default.")
    max_tokens = box(c[2], "max_tokens", "max_tokens")
    stop = c[3].text_input("stop (comma separated)", key=W["stop"])
    seed = box(c[4], "seed", "seed", placeholder="none", help="Empty = no seed.")
    repeat = box(c[5], "repeat", "repeat", help="Requests per endpoint, one after the other.")
    timeout_s = box(c[6], "timeout_s", "timeout (s)")

settings = CompareSettings(
    endpoints=tuple(names),
    system=system,
    prompt=prompt,
    temperature=temperature,
    top_p=top_p,
    max_tokens=int(max_tokens),
    stop=parse_stop(stop),
    seed=None if seed is None else int(seed),
    repeat=int(repeat),
    timeout_s=float(timeout_s),
)
st.session_state[SETTINGS_KEY] = settings
endpoints_ui.write_link(compare_state.encode(settings), _SEEN_KEY)
if len(settings.prompt) > MAX_PROMPT_CHARS:
    st.caption(f"The prompt is longer than {MAX_PROMPT_CHARS} characters, so the link leaves it out.")


# --- run -------------------------------------------------------------------------------------------------------------
def record_if_done(entry: dict) -> bool:
    """Add a finished run's result to the history once; True when it was added now."""
    if entry["recorded"] or not entry["run"].done:
        return False
    entry["recorded"] = True
    result = entry["run"].snapshot().result
    if result is not None:
        st.session_state.setdefault(HISTORY_KEY, []).append(result)
    return True


entry = st.session_state.get(RUN_KEY)
if entry is not None:
    record_if_done(entry)
active = entry is not None and not entry["run"].done
b1, b2, _ = st.columns([1, 1, 4])
if b1.button("Run", type="primary", key="cmp.run", disabled=not names, icon=":material/play_arrow:"):
    try:
        request = to_request(settings)
        run = CompareRun(chosen, request, repeat=settings.repeat, timeout_s=settings.timeout_s, secrets=secrets)
    except PlannerError as exc:
        st.error(f"Cannot run: {exc}")
    else:
        if active:
            entry["run"].cancel()
        entry = {"run": run.start(), "repeat": settings.repeat, "recorded": False}
        st.session_state[RUN_KEY] = entry
        active = True
if b2.button("Cancel", key="cmp.cancel", disabled=not active, icon=":material/stop:"):
    entry["run"].cancel()


def render_live(view: LiveView) -> None:
    """The live columns, charts and (when done) the final metrics table of one snapshot."""
    if view.error:
        st.error(view.error)
    if not view.columns:
        return
    for col, live in zip(st.columns(len(view.columns)), view.columns, strict=True):
        with col:
            st.markdown(f"**{live.endpoint}** · {ICON[live.state]} {live.label}")
            if live.error:
                st.error(live.error, icon=":material/error:")
            if not live.boxed:
                continue
            with st.container(height=240, border=True):
                if live.reasoning:
                    st.caption(f"Reasoning: {live.reasoning}")
                if live.text:
                    st.markdown(live.text)
                elif live.waiting:
                    st.caption("waiting for the first token…")
                if live.cut:
                    st.caption(":material/content_cut: cut: the stream failed after this partial answer")
    for col, figure, key in zip(st.columns(3), view.figures, ("tokens", "ttft", "itl"), strict=True):
        with col:
            light.figure(figure, f"cmp.chart.{key}", width_px=300)  # a third of the main column
    if view.metrics_title is not None:
        st.subheader(view.metrics_title)
        st.dataframe(
            view.metrics,
            hide_index=True,
            column_config={name: st.column_config.TextColumn(name, help=text) for name, text in METRIC_HELP.items()},
            key="cmp.metrics",
        )
        for line in view.notes:
            st.warning(line, icon=":material/info:")
        st.caption(METRICS_CAPTION)


def live_panel() -> None:
    """Fragment body: render the latest snapshot; when the run has just finished, rerun the page for the history."""
    current = st.session_state.get(RUN_KEY)
    if current is None:
        return
    snap = current["run"].snapshot()
    render_live(live_view(snap, current["repeat"]))
    if snap.done and record_if_done(current):
        st.rerun(scope="app")


st.fragment(run_every=0.3 if active else None)(live_panel)()

# --- history ---------------------------------------------------------------------------------------------------------
history = history_view(st.session_state.get(HISTORY_KEY, []))
if history is not None:
    st.subheader("Run history")
    st.dataframe(history.table, hide_index=True, key="cmp.history")
    st.plotly_chart(history.figure, key="cmp.chart.history")
    d1, d2, d3, _ = st.columns([1, 1, 1, 3])
    d1.download_button("Last run (CSV)", history.last_csv, "compare_last_run.csv", "text/csv", key="cmp.dl.csv")
    d2.download_button(
        "Last run (JSON)", history.last_json, "compare_last_run.json", "application/json", key="cmp.dl.json"
    )
    d3.download_button("History (CSV)", history.history_csv, "compare_history.csv", "text/csv", key="cmp.dl.history")
