"""Live Compare: one prompt to several serving endpoints at once, answers and latency side by side as they stream."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from pages import _state as state
from planner import compare_state
from planner.compare import CompareRun, CompareSnapshot, to_csv, to_json
from planner.compare_charts import (
    METRIC_HELP,
    display_metrics,
    endpoint_metrics,
    endpoint_status,
    history_csv,
    history_figure,
    history_frame,
    itl_figure,
    tokens_figure,
    ttft_figure,
)
from planner.endpoints import KINDS, Endpoint, EndpointConfigError, load_endpoints
from planner.errors import PlannerError

CUSTOM_KEY = "compare.custom"  # {name: Endpoint} added in this session
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
EXAMPLE_TOML = """[[endpoint]]
name = "vllm-a"
kind = "vllm"                       # vllm | tgi | openai | sglang | llamacpp
base_url = "http://127.0.0.1:8000"
model = "Qwen/Qwen3-0.6B"           # optional: discovered when absent
api_key_env = "VLLM_API_KEY"        # optional: the NAME of the env var / secret holding the key"""

st.title("Live Compare")
st.caption(
    "Send one prompt to several endpoints at once and watch the answers, time to first token and inter-token "
    "latency side by side. Measured on this machine, so network time to each server is included."
)

# --- endpoints -------------------------------------------------------------------------------------------------------
path, explicit = state.endpoints_path()
file_endpoints: tuple[Endpoint, ...] = ()
if explicit or path.exists():
    try:
        file_endpoints = load_endpoints(path)
    except EndpointConfigError as exc:
        for line in exc.problems:
            st.error(line)
custom: dict[str, Endpoint] = st.session_state.setdefault(CUSTOM_KEY, {})
allow_custom = state.allow_custom_endpoints()
if not allow_custom:
    custom.clear()
file_names = {e.name for e in file_endpoints}
available = {**{e.name: e for e in file_endpoints}, **{n: e for n, e in custom.items() if n not in file_names}}

if allow_custom:
    with st.expander("Add an endpoint for this session", expanded=not available):
        with st.form("cmp.add", clear_on_submit=False, border=False):
            c1, c2, c3 = st.columns([2, 1, 3])
            name = c1.text_input("Name", key="cmp.new.name", placeholder="vllm-a")
            kind = c2.selectbox("Kind", KINDS, key="cmp.new.kind")
            base_url = c3.text_input("Base URL", key="cmp.new.url", placeholder="http://127.0.0.1:8000")
            c4, c5 = st.columns(2)
            model = c4.text_input("Model (optional)", key="cmp.new.model", help="Discovered when left empty.")
            key_env = c5.text_input(
                "API-key variable (optional)",
                key="cmp.new.key_env",
                placeholder="VLLM_API_KEY",
                help="The NAME of an environment variable or a secrets.toml entry that holds the key — never the "
                "key itself.",
            )
            added = st.form_submit_button("Add endpoint")
        if added:
            try:
                endpoint = Endpoint(
                    name=name.strip(),
                    kind=kind,
                    base_url=base_url.strip(),
                    model=model.strip() or None,
                    api_key_env=key_env.strip() or None,
                )
            except PlannerError as exc:
                st.error(f"Endpoint not added: {exc}")
            else:
                if endpoint.name in file_names:
                    st.error(f"Endpoint not added: {endpoint.name!r} is already in {path.name}; pick another name")
                else:
                    custom[endpoint.name] = endpoint
                    available[endpoint.name] = endpoint
                    selected = list(st.session_state.get(W["endpoints"], []))
                    st.session_state[W["endpoints"]] = [*selected, endpoint.name]
        if custom and st.button("Forget the endpoints added here", key="cmp.forget"):
            for n in list(custom):
                available.pop(n, None)
            custom.clear()

if not available:
    st.info(
        "No endpoint is configured. Put an `endpoints.toml` at the repository root (or point "
        "`LLM_PLANNER_ENDPOINTS` at one) with one table per server:\n\n"
        f"```toml\n{EXAMPLE_TOML}\n```\n\n"
        + (
            "or add one above for this session."
            if allow_custom
            else "Adding endpoints in the page is turned off on this deployment."
        )
    )
    st.stop()

# --- settings from the link ------------------------------------------------------------------------------------------
query = {key: st.query_params.get_all(key) for key in st.query_params}
flat = {key: values[-1] if values else "" for key, values in query.items()}
if W["prompt"] not in st.session_state or (query and flat != st.session_state.get(_SEEN_KEY)):
    if query and flat != st.session_state.get(_SEEN_KEY):
        decoded = compare_state.decode(query)
        for line in decoded.warnings:
            st.warning(f"URL parameter ignored — {line}")
        settings = decoded.settings
        for missing in (n for n in settings.endpoints if n not in available):
            st.warning(
                f"URL parameter ep: endpoint {missing!r} is not configured here; add it above or in endpoints.toml"
            )
    else:
        settings = st.session_state.get(SETTINGS_KEY) or compare_state.DEFAULT
    if not settings.endpoints:  # a link without ep, or a first visit: the first four configured endpoints
        settings = replace(settings, endpoints=tuple(list(available)[:4]))
    for field, key in W.items():
        value = getattr(settings, field)
        if field == "endpoints":
            value = [n for n in value if n in available]
        elif field == "stop":
            value = ", ".join(value)
        st.session_state[key] = value
    st.session_state[_SEEN_KEY] = flat
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
if chosen:
    rows = []
    for endpoint in chosen:
        try:
            info = state.cached_discovery(endpoint, 5.0, secrets)
        except PlannerError as exc:
            rows.append({"endpoint": endpoint.name, "kind": endpoint.kind, "health": "down", "error": str(exc)})
            continue
        context = "n/a" if info.max_model_len_tokens is None else f"{info.max_model_len_tokens:,}"
        if info.max_input_tokens is not None:
            context = f"input {info.max_input_tokens:,} / total {context}"
        rows.append(
            {
                "endpoint": endpoint.name,
                "kind": endpoint.kind,
                "health": "up" if info.healthy else "down",
                "model": info.model or "n/a",
                "context (tokens)": context,
                "version": info.version or "n/a",
                "error": info.error or "",
            }
        )
    st.dataframe(
        pd.DataFrame(rows).fillna(""),
        hide_index=True,
        column_config={"error": st.column_config.TextColumn("error", width="large")},
        key="cmp.discovery",
    )
    st.caption("Discovery (health, served model, context limit, version) is cached for 30 s.")

# --- shared settings -------------------------------------------------------------------------------------------------
with st.expander("Prompt and sampling", expanded=True):
    system = st.text_input("System prompt (optional)", key=W["system"])
    prompt = st.text_area("Prompt", key=W["prompt"], height=90)
    c = st.columns(7)
    temperature = c[0].number_input(
        "temperature",
        min_value=0.0,
        max_value=2.0,
        step=0.1,
        value=None,
        key=W["temperature"],
        help="Empty = server default.",
    )
    top_p = c[1].number_input(
        "top_p", min_value=0.0, max_value=1.0, step=0.05, value=None, key=W["top_p"], help="Empty = server default."
    )
    max_tokens = c[2].number_input("max_tokens", min_value=1, max_value=32768, step=16, key=W["max_tokens"])
    stop = c[3].text_input("stop (comma separated)", key=W["stop"])
    seed = c[4].number_input("seed", min_value=0, step=1, value=None, key=W["seed"], help="Empty = no seed.")
    repeat = c[5].number_input(
        "repeat", min_value=1, max_value=20, step=1, key=W["repeat"], help="Requests per endpoint, one after the other."
    )
    timeout_s = c[6].number_input("timeout (s)", min_value=1.0, max_value=600.0, step=5.0, key=W["timeout_s"])

settings = compare_state.CompareSettings(
    endpoints=tuple(names),
    system=system,
    prompt=prompt,
    temperature=temperature,
    top_p=top_p,
    max_tokens=int(max_tokens),
    stop=compare_state.parse_stop(stop),
    seed=None if seed is None else int(seed),
    repeat=int(repeat),
    timeout_s=float(timeout_s),
)
st.session_state[SETTINGS_KEY] = settings
params = compare_state.encode(settings)
if params != st.query_params.to_dict() or any(len(st.query_params.get_all(k)) > 1 for k in st.query_params):
    st.query_params.from_dict(params)
st.session_state[_SEEN_KEY] = params
if len(settings.prompt) > compare_state.MAX_PROMPT_CHARS:
    st.caption(f"The prompt is longer than {compare_state.MAX_PROMPT_CHARS} characters, so the link leaves it out.")


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
        request = compare_state.to_request(settings)
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


def render_live(snap: CompareSnapshot, repeat: int) -> None:
    """The live columns, charts and (when done) the final metrics table of one snapshot."""
    if snap.error:
        st.error(f"The run failed: {snap.error}")
    if not snap.endpoints:
        return
    for col, progress in zip(st.columns(len(snap.endpoints)), snap.endpoints, strict=True):
        status = endpoint_status(progress, repeat)
        with col:
            st.markdown(f"**{progress.endpoint}** · {ICON[status.state]} {status.label}")
            if status.error:
                st.error(status.error, icon=":material/error:")
            if not (progress.text or progress.reasoning_text) and status.state in ("error", "cancelled"):
                continue
            with st.container(height=240, border=True):
                if progress.reasoning_text:
                    st.caption(f"Reasoning: {progress.reasoning_text}")
                if progress.text:
                    st.markdown(progress.text)
                elif status.state in ("waiting", "streaming"):
                    st.caption("waiting for the first token…")
                if status.state == "cut":
                    st.caption(":material/content_cut: cut: the stream failed after this partial answer")
    c1, c2, c3 = st.columns(3)
    c1.plotly_chart(tokens_figure(snap.endpoints), key="cmp.chart.tokens")
    c2.plotly_chart(ttft_figure(snap.endpoints), key="cmp.chart.ttft")
    c3.plotly_chart(itl_figure(snap.endpoints), key="cmp.chart.itl")
    if snap.done and snap.result is not None and snap.result.records:
        st.subheader("Metrics" + (" (cancelled run)" if snap.result.cancelled else ""))
        st.dataframe(
            display_metrics(endpoint_metrics(snap.result)),
            hide_index=True,
            column_config={name: st.column_config.TextColumn(name, help=text) for name, text in METRIC_HELP.items()},
            key="cmp.metrics",
        )
        st.caption(
            "TTFT = first token − request sent · ITL = gap between token-bearing chunks, split per token · "
            "TPOT = (E2E − TTFT) / (output tokens − 1) · E2E = last token − request sent · tokens/s = output "
            "tokens / E2E. Medians over the ok requests with sample counts; n/a where undefined."
        )


def live_panel() -> None:
    """Fragment body: render the latest snapshot; when the run has just finished, rerun the page for the history."""
    current = st.session_state.get(RUN_KEY)
    if current is None:
        return
    snap = current["run"].snapshot()
    render_live(snap, current["repeat"])
    if snap.done and record_if_done(current):
        st.rerun(scope="app")


st.fragment(run_every=0.3 if active else None)(live_panel)()

# --- history ---------------------------------------------------------------------------------------------------------
history = st.session_state.get(HISTORY_KEY, [])
if history:
    st.subheader("Run history")
    frame = history_frame(history)
    shown = frame.astype(object).map(lambda v: "n/a" if v is None or (isinstance(v, float) and pd.isna(v)) else v)
    st.dataframe(shown.map(lambda v: f"{v:,.1f}" if isinstance(v, float) else v), hide_index=True, key="cmp.history")
    st.plotly_chart(history_figure(frame), key="cmp.chart.history")
    d1, d2, d3, _ = st.columns([1, 1, 1, 3])
    d1.download_button("Last run (CSV)", to_csv(history[-1]), "compare_last_run.csv", "text/csv", key="cmp.dl.csv")
    d2.download_button(
        "Last run (JSON)", to_json(history[-1]), "compare_last_run.json", "application/json", key="cmp.dl.json"
    )
    d3.download_button("History (CSV)", history_csv(history), "compare_history.csv", "text/csv", key="cmp.dl.history")
