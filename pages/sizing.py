"""Sizing: the cheapest GPU × parallelism × replicas that serves a target request rate within percentile SLOs, its
cost, the ranked alternatives with why each loses, and the Pareto view."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import partial

import pandas as pd
import streamlit as st

from pages import _endpoints as endpoints_ui
from pages import _state as state
from pages._numbers import field_boxes, number_box
from pages._tables import wide_table
from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.catalog.gpus import list_gpus
from planner.catalog.models import model_ids
from planner.errors import PlannerError
from planner.links import sizing as sizing_links
from planner.links.rules import parse_number
from planner.metrics.slo import format_slos, parse_slos
from planner.sizing.charts import OPTIONS_HEADLINE, VERDICT_TEXT, headline, options_table, pareto_figure, prices_frame
from planner.sizing.estimate import describe_estimate
from planner.sizing.pareto import pareto_points
from planner.sizing.search import size
from planner.sizing.settings import (
    CHOICE_SETTINGS,
    DEFAULT,
    DEFAULT_NODE_GPUS,
    QUANTIZATIONS,
    SizingSettings,
    choice_setting,
)

VIEW_KEY = "size.view"  # the last DecodedSizing read from the widgets
MEMO_KEY = "size.memo"  # {(settings, profile text): SizingResult}, this session's last searches
PARETO_KEY = "size.pareto"  # {(settings, profile text): points}
_SEEN_KEY = "size.seen_query"
_MEMO_SIZE = 8
#: Widget key of each setting: the link's keys, the GPUs per node and the price table's prices.
W = {name: f"size.{name}" for name in (*sizing_links.KEYS, "node_gpus", "prices")}
CATALOG_GPUS = {g.id: g for g in list_gpus()}
#: Most GPUs of one node the page takes (the link's GPU list says the same per GPU).
_MAX_NODE_GPUS = 64
box = field_boxes(sizing_links.parse_field, DEFAULT, W)


def _to_widgets(decoded: sizing_links.DecodedSizing) -> None:
    """Put a link's (or the session's last) settings into the widgets."""
    s = decoded.settings
    st.session_state[W["model"]] = s.model
    for name in ("target_rate", "input_len", "output_len", "burstiness", "headroom", "max_gpus"):
        st.session_state[W[name]] = getattr(s, name)
    st.session_state[W["gpu_memory_utilization"]] = s.gpu_memory_utilization
    st.session_state[W["max_model_len"]] = s.max_model_len
    st.session_state[W["slo"]] = format_slos(s.slos).replace(",", ", ")
    for choice in CHOICE_SETTINGS:
        st.session_state[W[choice.name]] = getattr(s, choice.name)
    st.session_state[W["gpus"]] = [g for g in s.gpus if g in CATALOG_GPUS]
    st.session_state[W["node_gpus"]] = min((n for _, n in s.node_gpus), default=DEFAULT_NODE_GPUS)
    st.session_state[W["quantization"]] = list(s.quantizations)
    st.session_state[W["kv_cache_dtype"]] = list(s.kv_cache_dtypes)
    st.session_state[W["prices"]] = s.prices
    st.session_state[W["row"]] = decoded.row


def _memo(key: str, item: tuple, compute: object) -> object:
    """``compute()``, remembered for this session (the last few): not ``st.cache_data``, because the work updates a
    progress bar drawn outside it, which ``st.cache_data`` refuses to replay."""
    memo: dict = st.session_state.setdefault(key, {})
    if item in memo:
        memo[item] = memo.pop(item)
        return memo[item]
    memo[item] = value = compute()  # type: ignore[operator]
    while len(memo) > _MEMO_SIZE:
        memo.pop(next(iter(memo)))
    return value


state.use_router()
st.title("Sizing")
st.caption(
    "The cheapest deployment that serves a target request rate within percentile SLOs: every GPU × tensor/pipeline "
    "parallelism × weight quantization × KV-cache dtype planned for memory, bounded by the step-time model, and the "
    "promising ones simulated (vLLM V1's scheduler) at their share of the load; replicas with headroom, cost per "
    "hour and per million output tokens. The link holds every input."
)

query = {key: st.query_params.get_all(key) for key in st.query_params}
own = {key: values[-1] if values else "" for key, values in query.items()}
new_link = bool(query) and own != st.session_state.get(_SEEN_KEY)
if new_link or W["target_rate"] not in st.session_state:
    decoded = sizing_links.decode(query) if new_link else st.session_state.get(VIEW_KEY, sizing_links.DecodedSizing())
    for line in decoded.warnings if new_link else ():
        st.warning(f"URL parameter — {line}")
    _to_widgets(decoded)

answer = st.container()  # the answer first; it is filled once the inputs below have been read

with st.expander("Target load and SLOs", expanded=True):
    c = st.columns([3, 1, 1, 1, 1])
    current = st.session_state.get(W["model"])
    ids = list(model_ids())
    c[0].selectbox(
        "Model",
        ids if not current or current in ids else [current, *ids],
        key=W["model"],
        accept_new_options=True,
        help="A catalog model or any Hugging Face repo id (type it and press Enter).",
    )
    target_rate = box(c[1], "target_rate", "target rate (req/s)", help="For all replicas.")
    input_len = box(c[2], "input_len", "input_len", help="Prompt tokens.")
    output_len = box(c[3], "output_len", "output_len", help="Output tokens (ignore_eos).")
    burstiness = box(c[4], "burstiness", "burstiness", help="Gamma shape of the arrivals: 1 = Poisson.")
    c = st.columns([3, 1, 2])
    slo_text = c[0].text_input(
        "SLOs (percentiles)",
        key=W["slo"],
        placeholder="ttft_p99_ms=1000, tpot_p99_ms=50",
        help="METRIC_STAT_ms=LIMIT, comma separated: METRIC ttft, tpot, itl or e2el; STAT p50, p90, p99 or mean. "
        "Every replica must meet them at its share of the load (percentiles over the simulated requests).",
    )
    headroom = box(
        c[1],
        "headroom",
        "headroom",
        help="Spare capacity: replicas = ⌈target rate × (1 + headroom) / capacity of one replica⌉.",
    )
    for choice in CHOICE_SETTINGS:
        c[2].radio(choice.label, choice.choices, key=W[choice.name], help=choice.help + ".", horizontal=True)

with st.expander("GPUs and prices"):
    c = st.columns([4, 1, 1])
    c[0].multiselect(
        "GPUs to consider (none = the whole catalog)",
        list(CATALOG_GPUS),
        key=W["gpus"],
        format_func=lambda g: CATALOG_GPUS[g].name,
    )
    node = number_box(
        "GPUs per node",
        W["node_gpus"],
        partial(parse_number, low=1, high=_MAX_NODE_GPUS, integer=True),
        default=DEFAULT_NODE_GPUS,
        where=c[1],
        help="Tensor parallelism stays in a node.",
    )
    max_gpus = box(c[2], "max_gpus", "max GPUs per replica", help="Tensor × pipeline parallel.")
    searched = [CATALOG_GPUS[g] for g in st.session_state[W["gpus"]]] or list(CATALOG_GPUS.values())
    st.caption(
        "Prices in USD per GPU-hour: the catalog's public on-demand prices with where they were seen (never invented; "
        "most GPUs have none). Type a price to rank a GPU, or to replace the catalog's: it goes in the link."
    )
    edited = st.data_editor(
        prices_frame(searched, st.session_state[W["prices"]]),
        key="size.prices_table",
        hide_index=True,
        disabled=["gpu", "source", "date"],
        column_config={
            "USD per GPU-hour": st.column_config.NumberColumn(min_value=0.01, max_value=1000.0, format="$%.2f"),
            "source": st.column_config.TextColumn(width="large"),
        },
        width="stretch",
    )
    typed = []
    for _, row in edited.iterrows():
        value = row["USD per GPU-hour"]
        catalog = CATALOG_GPUS[row["gpu"]].price_usd_per_hour
        if pd.notna(value) and (catalog is None or abs(float(value) - catalog) > 1e-9):
            typed.append((row["gpu"], float(value)))
    kept = [(g, p) for g, p in st.session_state[W["prices"]] if g not in {c.id for c in searched}]
    st.session_state[W["prices"]] = tuple(kept + typed)

with st.expander("Weights, KV cache and engine"):
    c = st.columns(4)
    c[0].multiselect(
        "weight quantizations",
        QUANTIZATIONS,
        key=W["quantization"],
        help="none: the checkpoint as published · fp8: vLLM's --quantization fp8 · awq, gptq, int8, mxfp4: the "
        "catalog's export of the model in that scheme, when there is one.",
    )
    c[1].multiselect("KV-cache dtypes", KV_CACHE_DTYPES, key=W["kv_cache_dtype"], help="--kv-cache-dtype.")
    max_model_len = box(
        c[2],
        "max_model_len",
        "max_model_len",
        placeholder="fitted to the workload",
        help="Empty: the next power of two at or above input_len + output_len (at least 2,048).",
    )
    gpu_memory_utilization = box(c[3], "gpu_memory_utilization", "gpu_memory_utilization")

profile = state.profile_upload("size.profile")

# --- the settings the widgets hold --------------------------------------------------------------------------------
problem = None
try:
    slos = parse_slos([slo_text]) if slo_text.strip() else ()
    gpus = tuple(st.session_state[W["gpus"]])
    settings = SizingSettings(
        model=str(st.session_state[W["model"]] or DEFAULT.model),
        target_rate=float(target_rate),
        input_len=int(input_len),
        output_len=int(output_len),
        burstiness=float(burstiness),
        slos=slos,
        gpus=gpus,
        node_gpus=tuple((g, node) for g in gpus) if node != DEFAULT_NODE_GPUS else (),
        max_gpus=int(max_gpus),
        prices=st.session_state[W["prices"]],
        headroom=float(headroom),
        quantizations=tuple(st.session_state[W["quantization"]]),
        kv_cache_dtypes=tuple(st.session_state[W["kv_cache_dtype"]]),
        max_model_len=max_model_len,
        gpu_memory_utilization=float(gpu_memory_utilization),
        **{choice.name: st.session_state[W[choice.name]] for choice in CHOICE_SETTINGS},
    )
except PlannerError as exc:
    problem, settings = str(exc), st.session_state.get(VIEW_KEY, sizing_links.DecodedSizing()).settings


def _chosen_row() -> int:
    """The ranked row whose launch command is shown: the selectbox's value, 1 until it holds a row number (when the
    ranking changes, Streamlit can leave the old option's label in its state)."""
    value = st.session_state.get(W["row"])
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


# --- search --------------------------------------------------------------------------------------------------------
# the link holds the question before any answer, so a question the page cannot size still leaves a clean URL
endpoints_ui.write_link(sizing_links.encode(settings, row=_chosen_row()), _SEEN_KEY)
with answer:
    if problem:
        st.error(f"Cannot size: {problem}.")
        st.stop()
    try:
        spec = state.resolve(settings.model).spec
    except PlannerError as exc:
        st.error(f"Cannot size {settings.model}: {exc}")
        st.stop()
    profile_key = None if profile is None else profile.to_json()
    bar = st.progress(0.0, text="Sizing…")
    try:
        result = _memo(
            MEMO_KEY,
            (settings, profile_key),
            lambda: size(
                settings, profile=profile, spec=spec, on_progress=lambda f, text: bar.progress(min(1.0, f), text=text)
            ),
        )
    except PlannerError as exc:
        bar.empty()
        st.error(f"Cannot size: {exc}")
        st.stop()
    bar.empty()
    ranked = result.ranked
    rows = [o.rank for o in ranked]
    if _chosen_row() not in rows:
        st.session_state[W["row"]] = 1
    row = _chosen_row() if rows else 1
    st.session_state[VIEW_KEY] = sizing_links.DecodedSizing(settings, row)
    endpoints_ui.write_link(sizing_links.encode(settings, row=row), _SEEN_KEY)
    estimate = choice_setting("slo_estimate")
    # what the answer's SLO checks stand on, beside the answer, with the widget that changes it
    checked_at = describe_estimate(settings.slo_estimate, switch=f'"{estimate.label}: {{}}" below')
    (st.warning if result.best is None else st.success)(result.answer)
    st.caption(checked_at)
    if result.best is not None:
        chosen = ranked[row - 1]
        tiles = headline(chosen, settings.target_rate)
        for column, (label, value, help_text) in zip(st.columns(len(tiles)), tiles, strict=True):
            column.metric(label, value, help=help_text)
        st.selectbox(
            "Launch command of",
            rows,
            key=W["row"],
            format_func=lambda r: (
                f"#{r}: {ranked[r - 1].replicas} × {ranked[r - 1].config.label}, ${ranked[r - 1].usd_per_hour:,.2f}/h"
            ),
        )
        st.code(chosen.launch_command, language="bash", wrap_lines=True)
        st.caption(
            f"Run {chosen.replicas} replica(s) of this command behind a load balancer; each is predicted to meet the "
            f"SLOs up to at least {chosen.replica_rate:.3g} req/s"
            + (
                f" and to miss them at {min(missed):.3g} req/s"
                if (missed := [p.rate for p, met in chosen.probes if not met])
                else f" (at most {chosen.replica_rate_limit:.3g} req/s by the step model's bound)"
                if chosen.replica_rate_limit
                else ""
            )
            + "."
        )
    counts = result.counts()
    st.caption(
        f"{len(result.options):,} configurations: "
        + ", ".join(f"{n} {VERDICT_TEXT[k]}" for k, n in counts.items() if n)
        + f" · {result.probes_run} simulations in {result.elapsed_s:.2f} s · coefficients: {result.calibration}."
    )
    for note in result.notes:
        st.caption(f"Note: {note}.")

st.subheader("Every configuration, cheapest first")
table = options_table(result)
verdicts = [VERDICT_TEXT[v] for v in counts if counts[v]]
shown = st.multiselect("Show", verdicts, default=verdicts[:3], key="size.filter")
wide_table(
    table[table["verdict"].isin(shown)],
    OPTIONS_HEADLINE,
    key="size.table",
    # the reasons are sentences: wrapped in a fixed width (rows tall enough for three lines) rather than past the edge
    column_config={
        "GPU": st.column_config.TextColumn(width=130),
        "$/M output tokens": st.column_config.TextColumn("$/M output", help="USD per million output tokens."),
        "why": st.column_config.TextColumn(width=220),
    },
    row_height=70,
)
d = st.columns([1, 1, 4])
d[0].download_button("Table (CSV)", table.to_csv(index=False), "sizing.csv", "text/csv", key="size.csv")
d[1].download_button(
    "Options (JSON)",
    json.dumps(result.to_json(), indent=2),
    "sizing.json",
    "application/json",
    key="size.json",
)

st.subheader("Pareto view")
st.caption(
    "Each point: one replica simulated at one request rate — the search's own simulations and, for each priced GPU, "
    "its most promising configuration at 25%, 50% and 85% of its rate bound. Filled: meets every SLO; hollow: "
    "misses one; ★: a ranked option. The dotted line is the frontier: no point beats it on both axes."
)
bar = st.progress(0.0, text="Exploring…")
points = _memo(
    PARETO_KEY,
    (settings, profile_key),
    lambda: pareto_points(result, on_progress=lambda f, text: bar.progress(min(1.0, f), text=text)),
)
bar.empty()
if not points:
    st.info("No simulated operating point to draw: no priced configuration fits and meets its latency floors.")
else:
    chosen_label = ranked[row - 1].config.label if ranked else None
    per_gpu, per_cost = st.tabs(["tokens/s per user vs tokens/s per GPU", "tokens/s per user vs cost"])
    with per_gpu:
        st.plotly_chart(pareto_figure(points, chosen=chosen_label), key="size.pareto.gpu")
    with per_cost:
        st.plotly_chart(pareto_figure(points, cost=True, chosen=chosen_label), key="size.pareto.cost")
    st.download_button(
        "Points (CSV)",
        pd.DataFrame([asdict(p) for p in points]).to_csv(index=False),
        "sizing_pareto.csv",
        "text/csv",
        key="size.pareto.csv",
    )
