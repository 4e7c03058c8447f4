"""Load Test: throughput benchmarks with ``vllm bench serve`` metrics, live progress, sweeps and side-by-side runs."""

from __future__ import annotations

import json
from datetime import datetime
from functools import partial

import pandas as pd
import streamlit as st

from pages import _endpoints as endpoints_ui
from pages import _max_rate
from pages import _state as state
from pages._numbers import accepted_value, field_boxes, number_box
from pages._tables import wide_table
from planner.capacity.charts import scenario_label
from planner.capacity.scenario import Scenario
from planner.errors import PlannerError
from planner.links import loadtest as loadtest_state
from planner.links.rules import parse_number
from planner.loadtest import ray_workers
from planner.loadtest import settings as load_settings
from planner.loadtest.charts import (
    LATENCY_AXES,
    PREFIX_CACHE_HEADLINE,
    RUNS_HEADLINE,
    curve_knees,
    curves_figure,
    display_runs,
    live_figure,
    live_frames,
    run_headline,
    runs_figure,
    sweep_figure,
    sweep_points,
    turns_figure,
)
from planner.loadtest.confidence import repeat_summary
from planner.loadtest.datasets import read_sharegpt, read_trace
from planner.loadtest.results import (
    batching_frame,
    failure_summary,
    group_sweeps,
    import_runs,
    prefix_cache_frame,
    requests_frame,
    runs_frame,
    same_model,
    spec_decode_frame,
    to_vllm_file,
    ttft_by_turn,
)
from planner.loadtest.sweep import find_knee
from planner.loadtest.worker import BenchmarkRun, BenchmarkSnapshot, plan_jobs
from planner.loadtest.workload import example_prompts, parse_prompts_jsonl
from planner.predict.charts import OVERLAY_HEADLINE, fit_table, overlay_caption, overlay_curves, overlay_errors
from planner.predict.overlay import recalibrate
from planner.serving.requests import IGNORE_EOS_KINDS
from planner.serving.server_metrics import compare_kv

RUN_KEY = "lt.current"  # {"run": BenchmarkRun, "recorded": int}
HISTORY_KEY = "lt.history"  # [SavedRun], oldest first
KV_KEY = "lt.kv"  # {endpoint name: MeasuredKV | None} from the last run
SETTINGS_KEY = "lt.settings"
STOPS_KEY = "lt.sweep_stops"  # {sweep id: why it stopped at saturation}
RECAL_KEY = "lt.recalibration"  # {"scenario": Scenario, "recalibration": Recalibration} fitted on shown runs
_SEEN_KEY = "lt.seen_query"
W = {field: f"lt.{field}" for field in ("endpoints", *(k for k in loadtest_state.KEYS if k != "endpoints"))}


def _rate_widget(rate: float) -> float | None:
    """The request-rate box shows "empty" for inf (a burst)."""
    return None if rate == float("inf") else rate


state.use_router()
st.title("Load Test")
st.caption(
    "Throughput benchmarks with the metric definitions of `vllm bench serve`: the same workload on each chosen "
    "endpoint, one after the other, live. Measured from this machine, so network time to each server is included."
)

available = endpoints_ui.available_endpoints("lt", W["endpoints"], required=False)  # imports need none
endpoints_ui.restore_from_link(
    loadtest_state.decode,
    load_settings.DEFAULT,
    W,
    lambda field, value: {"goodput_ms": load_settings.format_goodput, "request_rate": _rate_widget}.get(
        field, lambda v: v
    )(value),
    settings_key=SETTINGS_KEY,
    seen_key=_SEEN_KEY,
    probe_key=W["num_prompts"],
    available=available,
    own_keys=tuple(loadtest_state.KEYS.values()),
)
st.session_state[W["endpoints"]] = [n for n in st.session_state.get(W["endpoints"], []) if n in available]
names = st.multiselect("Endpoints to load", list(available), key=W["endpoints"], help="Run one after the other.")
chosen = [available[n] for n in names]
secrets = state.endpoint_secrets(chosen)
endpoints_ui.discovery_table(chosen, secrets, key="lt.discovery")

# --- settings --------------------------------------------------------------------------------------------------------
DATASET_LABELS = {
    "random": "synthetic",
    "examples": "8 examples",
    "custom": "JSONL file",
    "prefix_repetition": "shared prefixes",
    "multi_turn": "multi-turn chats",
    "sharegpt": "ShareGPT file",
    "timed_trace": "trace: Mooncake JSONL",
    "burstgpt": "trace: BurstGPT CSV",
}


def _kept(field: str) -> object:
    """A setting whose widget is not shown for this workload: the value it last had (or the default)."""
    return accepted_value(W[field], getattr(load_settings.DEFAULT, field))


box = field_boxes(loadtest_state.parse_field, load_settings.DEFAULT, W)


with st.expander("Workload", expanded=True):
    c = st.columns([2, 1, 1, 1, 1])
    dataset = c[0].selectbox(
        "Prompts",
        load_settings.DATASETS,
        key=W["dataset_name"],
        format_func=DATASET_LABELS.get,
        help="synthetic: text of input_len tokens, sized with the server's own tokenizer · shared prefixes: vLLM's "
        "prefix_repetition (num_prefixes prefixes, each with suffixes of its own) · multi-turn chats: each turn sends "
        "the conversation so far and a new message · files: prompts (JSONL, ShareGPT) or traces replayed at their "
        "timestamps (Mooncake's JSONL layout, BurstGPT's CSV).",
    )
    input_len = box(
        c[1],
        "input_len",
        "input_len",
        disabled=dataset not in ("random", "multi_turn"),
        help="multi-turn: the tokens of each turn's new user message.",
    )
    output_len = box(c[2], "output_len", "output_len", help="max_tokens (traces: the trace's own).")
    range_ratio = box(c[3], "range_ratio", "range_ratio", help="Lengths drawn from [L(1−r), L(1+r)].")
    ignore_eos = c[4].toggle(
        "ignore_eos",
        key=W["ignore_eos"],
        help="Generate exactly max_tokens (vLLM, SGLang, llama.cpp). TGI has no ignore_eos: it is not sent there.",
    )
    sizing = st.radio(
        "input_len sizing",
        load_settings.INPUT_SIZINGS,
        key=W["input_sizing"],
        horizontal=True,
        disabled=dataset not in ("random", "prefix_repetition", "timed_trace", "burstgpt"),
        format_func={
            "tokenize": "server tokenizer",
            "token_ids": "token ids (vLLM, SGLang)",
            "words": "one word per token (estimate)",
        }.get,
        help="server tokenizer: the prompt text has exactly input_len tokens by the server's /tokenize (the chat "
        "template adds its own few) · token ids: the prompt is sent as input_len token ids on /v1/completions, "
        "exact by construction (others fall back to the tokenizer) · one word per token: no server call.",
    )
    prompts: tuple[str, ...] = ()
    rows: tuple = ()
    prefix_len, suffix_len, num_prefixes = _kept("prefix_len"), _kept("suffix_len"), _kept("num_prefixes")
    num_turns, think_time = _kept("num_turns"), _kept("think_time_s")
    time_scale, chunk_hash = _kept("time_scale"), _kept("trace_chunk_hash_size")
    if dataset == "prefix_repetition":
        c = st.columns(4)
        prefix_len = box(c[0], "prefix_len", "prefix_len", help="Shared prefix.")
        suffix_len = box(c[1], "suffix_len", "suffix_len", help="Each its own.")
        num_prefixes = box(c[2], "num_prefixes", "num_prefixes")
        c[3].caption(
            "vLLM's `prefix_repetition`: num_prompts // num_prefixes requests share each prefix, byte for byte."
        )
    elif dataset == "multi_turn":
        c = st.columns(4)
        num_turns = box(c[0], "num_turns", "num_turns")
        think_time = box(c[1], "think_time_s", "think time (s)", help="Between an answer and the next turn.")
        c[2].caption(
            "Each turn sends the whole conversation so far (the answers as received) and a new message of input_len "
            "tokens. max_concurrency = conversations at once."
        )
    elif dataset in ("timed_trace", "burstgpt"):
        c = st.columns(4)
        time_scale = box(
            c[0],
            "time_scale",
            "time_scale",
            help="Arrival = timestamp × time_scale, seconds (vLLM --timed-trace-sec-multiplier): 1 = as recorded "
            "in seconds, 0.5 = twice as fast, 0.001 for millisecond timestamps (Mooncake's traces).",
        )
        chunk_hash = box(
            c[1],
            "trace_chunk_hash_size",
            "chunk hash size",
            disabled=dataset != "timed_trace",
            help="Tokens per hash_ids block (vLLM --timed-trace-chunk-hash-size; 512 for Mooncake's traces).",
        )
    if dataset == "examples":
        prompts = example_prompts()
        st.caption(
            f"{len(prompts)} built-in example prompts, cycled: " + " · ".join(p[:40] for p in prompts[:3]) + " …"
        )
    elif dataset in load_settings.FILE_DATASETS:
        kinds = {"custom": ["jsonl", "json"], "sharegpt": ["json", "jsonl"], "timed_trace": ["jsonl"]}
        upload = st.file_uploader(
            f"{DATASET_LABELS[dataset]} (never put in the link)",
            type=kinds.get(dataset, ["csv"]),
            key=f"lt.file.{dataset}",
        )
        if upload is None:
            st.info(f"Upload a {DATASET_LABELS[dataset]}, or pick another workload.")
        else:
            try:
                if dataset == "custom":
                    prompts = parse_prompts_jsonl(upload.getvalue())
                elif dataset == "sharegpt":
                    prompts = read_sharegpt(upload.getvalue(), limit=load_settings.MAX_PROMPTS)
                else:
                    limit = int(_kept("num_prompts")) + int(_kept("num_warmups"))  # type: ignore[call-overload]
                    rows = read_trace(upload.getvalue(), dataset, limit=limit, chunk_hash_size=int(chunk_hash))
            except PlannerError as exc:
                st.error(f"{upload.name}: {exc}")
            else:
                if rows:
                    span = (rows[-1].timestamp - rows[0].timestamp) * float(time_scale)
                    st.caption(f"{len(rows):,} requests from {upload.name}, spanning {span:,.1f} s at this time_scale.")
                else:
                    st.caption(f"{len(prompts):,} prompts from {upload.name}, cycled.")

with st.expander("Load", expanded=True):
    mode = st.radio(
        "Mode",
        load_settings.MODES,
        key=W["mode"],
        horizontal=True,
        format_func={"run": "one run per endpoint", "sweep": "concurrency sweep 1, 2, 4, …"}.get,
    )
    c = st.columns(6)
    num_prompts = box(c[0], "num_prompts", "num_prompts")
    max_concurrency = box(
        c[1],
        "max_concurrency",
        "max_concurrency",
        disabled=mode == "sweep",
        placeholder="no cap",
        help="Empty = no cap. A sweep sets it per level.",
    )
    request_rate = box(
        c[2],
        "request_rate",
        "request_rate (req/s)",
        optional=True,
        placeholder="inf",
        help="Empty or inf: every request is released at once (then only max_concurrency limits the load).",
    )
    burstiness = box(c[3], "burstiness", "burstiness", help="1 = Poisson.")
    num_warmups = box(c[4], "num_warmups", "num_warmups", help="Not counted.")
    seed = box(c[5], "seed", "seed")
    c = st.columns(6)
    duration = box(c[0], "duration_s", "duration cap (s)", help="Per run.")
    timeout = box(c[1], "timeout_s", "timeout (s)", help="Per request.")
    goodput = c[2].text_input("goodput SLOs", key=W["goodput_ms"], placeholder="ttft:500,tpot:50", help="ms.")
    sweep_max = box(c[3], "sweep_max", "sweep up to concurrency", disabled=mode != "sweep")
    scrape = c[4].toggle(
        "/metrics",
        key=W["scrape_metrics"],
        help="Poll the server's Prometheus /metrics during the run (running / waiting requests, KV-cache usage, "
        "the prefix-cache hit rate).",
    )
    flush = c[5].toggle(
        "flush cache",
        key=W["flush_cache"],
        help="Empty the server's prefix cache first (vLLM POST /reset_prefix_cache, which needs "
        "VLLM_SERVER_DEV_MODE=1; SGLang /flush_cache); the warm-up requests then prime it; then the measured run.",
    )
    c = st.columns([1, 2, 2, 2, 2])
    num_runs = box(
        c[0],
        "num_runs",
        "repeats",
        disabled=mode == "sweep",
        help="Run it K times: mean and 95% confidence interval of each headline metric.",
    )
    sweep_stop = c[1].toggle(
        "stop at saturation",
        key=W["sweep_stop"],
        disabled=mode != "sweep",
        help="Stop the sweep when output throughput gains < 10% over the best level so far while median TTFT or "
        "E2E latency rises ≥ 25% over the level before.",
    )
    sweep_refine = c[2].toggle(
        "refine at the stop",
        key=W["sweep_refine"],
        disabled=mode != "sweep",
        help="Add the level between the last growing level and the first saturated one.",
    )
    ray_address = ray_workers.configured_address()
    num_workers = number_box(
        "Ray workers",
        "lt.num_workers",
        partial(parse_number, low=0, high=load_settings.MAX_WORKERS, integer=True),
        default=0,
        where=c[3],
        help="Send the measured requests from N Ray workers, the concurrency cap and the rate split between them "
        f"(0 = one process on this machine); on {'the cluster at ' + ray_address if ray_address else 'this machine'}"
        " (set RAY_ADDRESS for a cluster). Needs requirements-ray.txt.",
    )
    batching = c[4].selectbox(
        "batching",
        load_settings.BATCHINGS,
        key=W["batching"],
        help="continuous: each request as a slot frees (the server batches them). static: fixed batches of "
        "max_concurrency, the next only when the slowest has ended. compare: a static run, then a continuous one "
        "at the same concurrency, and the throughput ratio (the source article claims 2–5×).",
    )
goodput_error = None
try:
    slos = load_settings.parse_goodput(goodput)
except Exception as exc:  # BadValue: the field keeps what was typed, and Run waits until it is fixed
    goodput_error = f"goodput SLOs {goodput!r} are not valid: expected {exc}"
    slos = ()
try:
    settings = load_settings.LoadSettings(
        endpoints=tuple(names),
        mode=mode,
        num_prompts=int(num_prompts),
        max_concurrency=None if max_concurrency is None else int(max_concurrency),
        request_rate=float("inf") if request_rate is None else float(request_rate),
        burstiness=float(burstiness),
        num_warmups=int(num_warmups),
        duration_s=float(duration),
        timeout_s=float(timeout),
        seed=int(seed),
        dataset_name=dataset,
        input_len=int(input_len),
        output_len=int(output_len),
        range_ratio=float(range_ratio),
        ignore_eos=bool(ignore_eos),
        input_sizing=sizing,
        goodput_ms=slos,
        sweep_max=int(sweep_max),
        scrape_metrics=bool(scrape),
        prefix_len=int(prefix_len),
        suffix_len=int(suffix_len),
        num_prefixes=int(num_prefixes),
        num_turns=int(num_turns),
        think_time_s=float(think_time),
        time_scale=float(time_scale),
        trace_chunk_hash_size=int(chunk_hash),
        flush_cache=bool(flush),
        num_runs=int(num_runs),
        sweep_stop=bool(sweep_stop),
        sweep_refine=bool(sweep_refine),
        num_workers=int(num_workers or 0) or None,
        ray_address=ray_address,
        batching=batching,
    )
except PlannerError as exc:  # e.g. fewer prompts than prefixes: the widgets keep what was typed
    st.error(f"Cannot run: {exc}")
    st.stop()
st.session_state[SETTINGS_KEY] = settings
endpoints_ui.write_link(loadtest_state.encode(settings), _SEEN_KEY)

try:
    jobs = plan_jobs(chosen, settings, prompts, trace_rows=rows)
    plan_error = goodput_error
except PlannerError as exc:
    jobs, plan_error = (), str(exc)
if plan_error:
    st.error(f"Cannot run: {plan_error}")
elif jobs:
    total = sum(j.settings.num_prompts for j in jobs)
    no_eos = sorted({e.kind for e in chosen if e.kind not in IGNORE_EOS_KINDS})
    st.caption(
        f"{len(jobs)} run(s), {total:,} measured requests at most, each run capped at {settings.duration_s:g} s "
        f"(≤ {len(jobs) * settings.duration_s / 60:,.0f} min in all)."
        + (f" ignore_eos is not sent to {', '.join(no_eos)} endpoints." if settings.ignore_eos and no_eos else "")
    )


# --- run -------------------------------------------------------------------------------------------------------------
def record_finished(entry: dict) -> bool:
    """Move the runs finished since the last call into the history; True when something was added."""
    snap: BenchmarkSnapshot = entry["run"].snapshot()
    new = snap.saved[entry["recorded"] :]
    if new:
        st.session_state.setdefault(HISTORY_KEY, []).extend(new)
        entry["recorded"] += len(new)
    if snap.sweep_stops:
        st.session_state.setdefault(STOPS_KEY, {}).update(dict(snap.sweep_stops))
    if snap.done:
        st.session_state[KV_KEY] = dict(snap.measured_kv)
    return bool(new)


entry = st.session_state.get(RUN_KEY)
if entry is not None:
    record_finished(entry)
active = entry is not None and not entry["run"].done
b1, b2, _ = st.columns([1, 1, 4])
if b1.button(
    "Run",
    type="primary",
    key="lt.run",
    disabled=not jobs or bool(plan_error) or active,
    icon=":material/play_arrow:",
    help="Cancel the run in progress first." if active else None,
):
    now = datetime.now()
    tagged = plan_jobs(chosen, settings, prompts, tag=now.strftime("%H:%M:%S"), trace_rows=rows)
    run = BenchmarkRun(tagged, scrape_metrics=settings.scrape_metrics, secrets=secrets, started=now)
    entry = {"run": run.start(), "recorded": 0}
    st.session_state[RUN_KEY] = entry
    active = True
if b2.button("Cancel", key="lt.cancel", disabled=not active, icon=":material/stop:"):
    entry["run"].cancel()


def render_live(snap: BenchmarkSnapshot) -> None:
    """Progress, counters and the live chart of the run in progress (or the last one); once done, each run's answer
    first, right under the Run button where the eye is (the Results below may be screens away)."""
    for line in snap.errors:
        st.error(line)
    if snap.done:
        for run in snap.saved:
            failed = run.metrics.failed or not run.metrics.completed
            (st.warning if failed else st.success)(run_headline(run))
        if snap.saved:
            st.caption("Every metric, chart and download: [Results](#results), below.")
    done_requests, total_requests = snap.requests_done, snap.requests_total
    if snap.done:
        text = f"{done_requests:,} / {total_requests:,} requests · {len(snap.saved)} of {snap.jobs_total} run(s) kept"
    else:
        run_no = min(snap.jobs_done + 1, snap.jobs_total)
        text = f"{done_requests:,} / {total_requests:,} requests · run {run_no} of {snap.jobs_total}"
    if snap.current is not None and not snap.done:
        text += f" · {snap.current.label}"
    st.progress(min(1.0, done_requests / max(1, total_requests)), text=text)
    p = snap.progress
    c = st.columns(5)
    c[0].metric("in flight", "n/a" if p is None else p.in_flight)
    c[1].metric("completed", "n/a" if p is None else p.completed)
    c[2].metric("failed", "n/a" if p is None else p.failed)
    c[3].metric("elapsed (s)", "n/a" if p is None else f"{p.elapsed_s:,.1f}")
    # while running, the latest scrape; once done, the run's peak (the last scrape, after the run, reads idle)
    usages = [u.kv_cache_usage_perc for u in snap.server if u.kv_cache_usage_perc is not None]
    kv = None if not usages else f"{(max(usages) if snap.done else usages[-1]):.0%}"
    kv_label = "KV cache usage (server, peak)" if snap.done else "KV cache usage (server)"
    c[4].metric(kv_label, kv or "n/a", help=snap.scrape_note or "From the server's /metrics.")
    if not snap.records and len(snap.in_flight) <= 1:
        if not snap.done and snap.current is not None:
            st.caption(f"{snap.current.label}: discovery, prompt sizing and warm-up before the first measured request…")
    else:
        windows, server = live_frames(snap.records, snap.run_start, snap.server)
        st.plotly_chart(live_figure(windows, snap.in_flight, server), key="lt.chart.live")
    if snap.done:
        st.caption("Done." if not snap.cancelled else "Cancelled: the requests that finished are kept below.")


def live_panel() -> None:
    """Fragment body: the latest snapshot; when runs finished, rerun the page so the results below update."""
    current = st.session_state.get(RUN_KEY)
    if current is None:
        return
    render_live(current["run"].snapshot())
    if record_finished(current) or (current["run"].done and not current.get("final")):
        current["final"] = current["run"].done
        st.rerun(scope="app")


st.fragment(run_every=1.0 if active else None)(live_panel)()
_max_rate.render(chosen, settings, prompts, secrets, HISTORY_KEY)

# --- results ---------------------------------------------------------------------------------------------------------
history = st.session_state.setdefault(HISTORY_KEY, [])
# open while files are chosen: a rerun (the link being written) must not fold the button that adds them out of sight
with st.expander(
    "Add earlier runs (vllm bench serve --save-result JSON, or this page's export)",
    expanded=bool(st.session_state.get("lt.import")),
):
    uploads = st.file_uploader("Result files", type=["json", "jsonl"], accept_multiple_files=True, key="lt.import")
    if uploads and st.button("Add to the results", key="lt.import.add"):
        known = {r.label for r in history}
        for upload in uploads:
            try:
                runs = import_runs(upload.getvalue(), upload.name)
            except PlannerError as exc:
                st.error(f"{upload.name} not added: {exc}")
                continue
            added = [run for run in runs if run.label not in known]
            history.extend(added)
            known.update(run.label for run in added)
            skipped = len(runs) - len(added)
            st.success(
                f"{upload.name}: {len(added)} run(s) added"
                + (f"; {skipped} already shown (same label) left out." if skipped else ".")
            )
        history[:] = group_sweeps(history)  # one vllm bench serve file per concurrency: one sweep

if not history:
    st.info("No results yet: choose endpoints and press Run, or add earlier runs above.")
    st.stop()

st.subheader("Results")
labels = [r.label for r in history]
known = st.session_state.setdefault("lt.known_labels", [])
if labels != known:  # new runs (or a cleared list): show the new ones, keep the user's choice for the rest
    kept = [label for label in st.session_state.get("lt.shown", []) if label in labels]
    st.session_state["lt.shown"] = kept + [label for label in labels if label not in known]
    known[:] = labels
shown_labels = st.multiselect("Runs shown", labels, key="lt.shown")
shown = [r for r in history if r.label in shown_labels]

# --- the prediction of the same workloads, beside the measured runs --------------------------------------------------
overlay = None
scenario = plan_result = model = scenario_text = None
recalibrated = None
if shown:
    c = st.columns([1, 3], vertical_alignment="bottom")
    if c[0].toggle(
        "Overlay the prediction",
        key="lt.predict",
        help="Predict each shown run's workload (its requests, concurrency, rate, burstiness and mean lengths) on a "
        "VRAM Budget scenario, the deployment the runs measured, and draw it beside them.",
    ):
        options = st.session_state.get(state.SCENARIOS_KEY) or (Scenario(),)
        pick = c[1].selectbox(
            "Deployment the runs measured (a VRAM Budget scenario; edit it there)",
            range(len(options)),
            format_func=lambda i: scenario_label(i, options[i]),
            key="lt.predict.scenario",
        )
        scenario = options[pick]
        scenario_text = scenario_label(pick, scenario)
        kept = st.session_state.get(RECAL_KEY)
        recalibrated = kept["recalibration"] if kept and kept["scenario"] == scenario else None
        ((model, plan_result),) = state.plan_scenarios([scenario])
        try:
            if isinstance(plan_result, PlannerError):
                raise plan_result
            overlay = state.cached_overlay(
                scenario, tuple(shown), recalibrated.profile if recalibrated else None, model.spec
            )
        except PlannerError as exc:
            st.warning(f"No prediction for {scenario_text}: {exc}")
        else:
            for line in overlay.skipped:
                st.caption(f"Not predicted: {line}")
predicted = list(overlay.predicted) if overlay is not None else []
tabled = [*shown, *predicted]

wide_table(display_runs(tabled), RUNS_HEADLINE, key="lt.table")
st.caption(
    "vLLM's key names; latencies in ms. TTFT = first token − sent · TPOT = (E2EL − TTFT)/(output tokens − 1) · "
    "ITL = gap between chunks (one sample per chunk) · E2EL = last token − sent · throughput = tokens / run "
    "duration · goodput = requests meeting every SLO / duration. `*_samples` = samples behind each percentile. "
    "TTFT here counts from the first token-bearing chunk; `median_ttft_first_chunk_ms` is TTFT as `vllm bench serve` "
    "measures it (first chunk with `choices`, vLLM's empty role chunk included)."
)
for run in shown:
    reason = failure_summary(run)
    if reason:
        st.warning(f"{run.label}: {reason}")
    for note in run.notes:
        st.warning(f"{run.label}: {note.removeprefix(run.endpoint + ': ')}", icon=":material/info:")
if shown:
    st.plotly_chart(runs_figure(shown), key="lt.chart.runs")

cache = prefix_cache_frame(shown)
if len(cache):
    st.subheader("Prefix cache")
    best = cache.dropna(subset=["prefix_cache_hit_rate"])
    if len(best):
        last = best.iloc[-1]
        c = st.columns(3)
        c[0].metric("hit rate (server)", f"{last.prefix_cache_hit_rate:.1%}", help=f"{last.run}")
        c[1].metric(
            "reusable prefix (workload)",
            "n/a" if pd.isna(last.reusable_prefix_share) else f"{last.reusable_prefix_share:.1%}",
            help="The most of the prompt tokens a prefix cache could serve on this workload (before block rounding).",
        )
        c[2].metric("median TTFT (ms)", "n/a" if pd.isna(last.median_ttft_ms) else f"{last.median_ttft_ms:,.1f}")
    shown_cache = cache.astype(object).where(cache.notna(), None)
    for col in ("prefix_cache_hit_rate", "reusable_prefix_share"):
        shown_cache[col] = [f"{v:.1%}" if v is not None else "n/a" for v in shown_cache[col]]
    for col in ("prefix_cache_hits", "prefix_cache_queries", "median_ttft_ms"):
        shown_cache[col] = [f"{v:,.0f}" if v is not None else "n/a" for v in shown_cache[col]]
    wide_table(shown_cache.fillna("n/a"), PREFIX_CACHE_HEADLINE, key="lt.cache.table")
    st.caption(
        "Hit rate = Δ hits / Δ queries of the server's counters over the measured requests (vLLM "
        "`prefix_cache_queries`/`prefix_cache_hits`, SGLang `cached_tokens`/`prompt_tokens`); n/a where the server "
        "exports none (llama.cpp, TGI). Reusable prefix = tokens at the start of each prompt that repeat an earlier "
        "prompt's start (a later turn: the conversation so far), over all prompt tokens."
    )
spec = spec_decode_frame(shown)
if len(spec):
    st.subheader("Speculative decoding")
    shown_spec = spec.astype(object).where(spec.notna(), None)
    shown_spec["acceptance_rate"] = [f"{v:.1%}" if v is not None else "n/a" for v in shown_spec["acceptance_rate"]]
    for col, fmt in (("mean_acceptance_length", "{:.2f}"), ("median_tpot_ms", "{:.2f}"), ("num_drafts", "{:,.0f}")):
        shown_spec[col] = [fmt.format(v) if v is not None else "n/a" for v in shown_spec[col]]
    shown_spec["output_throughput"] = [f"{v:,.1f}" if v is not None else "n/a" for v in shown_spec["output_throughput"]]
    st.dataframe(shown_spec.fillna("n/a"), hide_index=True, key="lt.spec.table")
    st.caption(
        "From the server's vLLM `spec_decode_*` counters over the measured requests: acceptance rate = accepted / "
        "draft tokens; mean acceptance length = 1 + accepted / drafts (tokens per target step, the bonus token "
        "included); per position = accepted at position i / drafts (vLLM's own definitions)."
    )
pairs = batching_frame(shown)
if len(pairs):
    st.subheader("Static vs continuous batching")
    shown_pairs = pairs.astype(object).where(pairs.notna(), None)
    shown_pairs["throughput_ratio"] = [f"{v:.2f}×" if v is not None else "n/a" for v in shown_pairs["throughput_ratio"]]
    for col in pairs.columns[2:]:
        if col != "throughput_ratio":
            shown_pairs[col] = [f"{v:,.1f}" if v is not None else "n/a" for v in shown_pairs[col]]
    st.dataframe(shown_pairs.fillna("n/a"), hide_index=True, key="lt.batching.table")
    st.caption(
        "The same load sent in fixed batches (the next only when the slowest ends) and continuously at the same "
        "concurrency; ratio = continuous / static output throughput (the source article claims 2–5×). The static run "
        "goes first: give warm-up requests so a cold server's first request does not count against it."
    )
turns = ttft_by_turn(shown)
if len(turns):
    st.subheader("TTFT by turn")
    st.plotly_chart(turns_figure(turns), key="lt.chart.turns")
    st.dataframe(
        turns.round({"median_ttft_ms": 1, "p90_ttft_ms": 1, "mean_input_tokens": 0}),
        hide_index=True,
        key="lt.turns.table",
    )
repeats = repeat_summary(shown)
if len(repeats):
    st.subheader("Repeats: mean and 95% confidence interval")
    st.dataframe(repeats, hide_index=True, key="lt.repeats.table")
    st.caption("mean ± t₀.₉₇₅ · s / √K over the K repeats of each run (Student's t).")

latency_axis = st.session_state.get("lt.sweep_axis", next(iter(LATENCY_AXES)))
points = sweep_points(shown, latency_axis)
if len(points):
    latency_axis = st.selectbox("Sweep latency axis", list(LATENCY_AXES), key="lt.sweep_axis")
    points = sweep_points(shown, latency_axis)
    knees = {
        sweep: find_knee(list(zip(g["concurrency"], g["output_throughput"], strict=True)))
        for sweep, g in points.groupby("sweep", sort=False)
    }
    st.plotly_chart(sweep_figure(points, knees, latency_axis), key="lt.chart.sweep")
    for sweep, reason in st.session_state.get(STOPS_KEY, {}).items():
        if sweep in knees:
            st.info(f"{sweep}: stopped at saturation — {reason}.", icon=":material/front_hand:")
    for sweep, knee in knees.items():
        st.caption(
            f"{sweep}: "
            + (
                f"knee at concurrency {knee} — beyond it throughput grows little while latency keeps rising."
                if knee is not None
                else "no knee found (throughput still grows, or too few levels)."
            )
        )
    curves = overlay_curves(tabled, overlay)
    st.plotly_chart(curves_figure(curves, knees=curve_knees(curves)), key="lt.chart.curves")
    st.caption(
        "Each sweep against concurrency: solid measured, dashed predicted (when overlaid) in the same colour, shaded "
        "by its error band (under Predicted against measured); the thin dotted lines are the p99."
    )

if overlay is not None and overlay.pairs:
    st.subheader("Predicted against measured")
    st.caption(
        f"The same workload as each run, predicted for {scenario_text}. Coefficients: {overlay.calibration}. "
        "Error = predicted / measured − 1."
    )
    wide_table(overlay_errors(overlay.pairs, overlay.bands), OVERLAY_HEADLINE, key="lt.predict.errors")
    band_line = overlay_caption(overlay)
    if band_line is not None:
        st.caption(band_line)
    for note in overlay.notes:
        st.caption(f"Note: {note}.")
    c = st.columns([1, 1, 1])
    if c[0].button(
        "Recalibrate from these runs",
        key="lt.recalibrate",
        icon=":material/tune:",
        help="Fit the step-time model's coefficients to the shown runs (least squares on their mean TPOT and TTFT "
        "and median ITL) and predict with them.",
    ):
        try:
            fitted = recalibrate(scenario, shown, plan=plan_result, spec=model.spec)
        except PlannerError as exc:
            st.error(f"Cannot recalibrate: {exc}")
        else:
            st.session_state[RECAL_KEY] = {"scenario": scenario, "recalibration": fitted}
            st.rerun()
    if recalibrated is not None:
        if c[1].button("Use the default coefficients", key="lt.recalibrate.reset"):
            st.session_state.pop(RECAL_KEY, None)
            st.rerun()
        st.markdown("**Fit error per run** (predicted / measured − 1, default coefficients and fitted)")
        st.dataframe(fit_table(recalibrated.before, recalibrated.fit.scores), hide_index=True, key="lt.fit.table")
        for line in recalibrated.skipped:
            st.caption(f"Not fitted: {line}")
        st.download_button(
            "Calibration profile (JSON)",
            recalibrated.profile.to_json(),
            "calibration_profile.json",
            "application/json",
            key="lt.dl.profile",
            help="Upload it on the Performance page, or pass it to python -m planner predict --calibration.",
        )

kv = st.session_state.get(KV_KEY) or {}
if kv:
    st.subheader("KV cache: plan vs measured")
    scenarios = st.session_state.get(state.SCENARIOS_KEY) or ()
    plan_tokens = None
    if scenarios:
        pick = st.selectbox(
            "VRAM Budget scenario to compare with",
            range(len(scenarios)),
            format_func=lambda i: scenario_label(i, scenarios[i]),
            key="lt.kv.scenario",
        )
        try:
            plan_tokens = state.cached_plan(scenarios[pick]).kv_cache_tokens
        except PlannerError as exc:
            st.warning(f"The scenario cannot be planned: {exc}")
    else:
        st.caption("Open VRAM Budget and describe the deployment to compare its plan with what the servers report.")
    served = {r.endpoint: r.model for r in history if r.model}
    planned_model = scenarios[pick].model if scenarios and plan_tokens is not None else None
    rows = []
    for name, measured in kv.items():
        cmp = compare_kv(plan_tokens, measured)
        model = served.get(name)
        if planned_model and model and not same_model(planned_model, model):
            st.warning(
                f"{name} serves {model}, the scenario plans {planned_model}: the two figures are not comparable."
            )
        rows.append(
            {
                "endpoint": name,
                "served model": model or "n/a",
                "measured KV tokens": "n/a" if cmp.measured_tokens is None else f"{cmp.measured_tokens:,}",
                "planned KV tokens": "n/a" if cmp.plan_tokens is None else f"{cmp.plan_tokens:,}",
                "(plan − measured) / measured": None if cmp.error_frac is None else f"{cmp.error_frac:+.1%}",
                "source": None if measured is None else (measured.error or measured.source),
            }
        )
    st.dataframe(pd.DataFrame(rows).astype(object).fillna("n/a"), hide_index=True, key="lt.kv.table")

d = st.columns([1, 1, 1, 3])
d[0].download_button(
    "Runs (JSONL)",
    "\n".join(json.dumps(to_vllm_file(r)) for r in tabled),
    "loadtest_runs.jsonl",
    "application/jsonl",
    key="lt.dl.json",
)
d[1].download_button(
    "Requests (CSV)", requests_frame(shown).to_csv(index=False), "loadtest_requests.csv", "text/csv", key="lt.dl.req"
)
d[2].download_button(
    "Metrics (CSV)", runs_frame(tabled).to_csv(index=False), "loadtest_metrics.csv", "text/csv", key="lt.dl.metrics"
)
if st.button("Clear results", key="lt.clear"):
    history.clear()
    st.rerun()
