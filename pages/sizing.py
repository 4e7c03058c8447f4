"""Sizing: the cheapest GPU × parallelism × replicas that serves a target request rate within percentile SLOs, its
cost, the ranked alternatives with why each loses, and the Pareto view.

Widgets are the settings' declarations (pages/_fields.py); what is shown is :mod:`planner.views.sizing`'s."""

from __future__ import annotations

from functools import partial

import streamlit as st

from pages import _endpoints as endpoints_ui
from pages import _light as light
from pages import _state as state
from pages._cache import remembered
from pages._fields import Drawer
from pages._numbers import number_box
from planner import fields
from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.catalog.gpus import list_gpus
from planner.catalog.models import model_ids
from planner.errors import PlannerError
from planner.links import sizing as links
from planner.sizing.pareto import pareto_points
from planner.sizing.search import size
from planner.sizing.settings import (
    DEFAULT,
    DEFAULT_NODE_GPUS,
    MAX_NODE_GPUS,
    MAX_PRICE_USD_PER_HOUR,
    QUANTIZATIONS,
    SizingSettings,
)
from planner.values import parse_number
from planner.views import sizing as view

VIEW_KEY = "size.view"  # the last DecodedSizing read from the widgets
MEMO_KEY = "size.memo"  # {(settings, profile text): SizingResult}, the last searches of every session
PARETO_KEY = "size.pareto"  # {(settings, profile text): points}
_SEEN_KEY = "size.seen_query"
_PRICES_VERSION_KEY = "size.prices_version"  # the price editor's generation (see _price_editor)
_MEMO_SIZE = 8
#: Widget key of each setting: ``size.`` and its link key; the chosen row's.
W = {d.name: f"size.{d.key}" for d in fields.declared(SizingSettings)} | {"row": "size.row"}
CATALOG_GPUS = {g.id: g for g in list_gpus()}


def _memo(key: str, item: tuple, compute: object) -> object:
    """``compute()``, remembered for every session (the last few; :func:`pages._cache.remembered`): a fresh tab gets
    the search another tab already ran."""
    return remembered(key, item, compute, max_entries=_MEMO_SIZE)  # type: ignore[arg-type]


def _chosen_row() -> int:
    """The ranked row whose launch command is shown: the selectbox's value, 1 until it holds a row number (when the
    ranking changes, Streamlit can leave the old option's label in its state)."""
    value = st.session_state.get(W["row"])
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _price_editor(searched: list) -> None:
    """The price table of the searched GPUs; what is typed is kept in ``W["prices"]`` (the link's), so it outlives the
    editor while the expander is closed. A typed price draws a fresh editor (a new key, then a rerun): a data editor
    keeps showing the rows it was first given, so a typed row's source and date would stay the catalog's."""
    st.caption(
        "Prices in USD per GPU-hour: the catalog's public on-demand prices with where they were seen (never invented; "
        "most GPUs have none). Type a price to rank a GPU, or to replace the catalog's: it goes in the link."
    )
    version, before = st.session_state.get(_PRICES_VERSION_KEY, 0), st.session_state[W["prices"]]
    edited = st.data_editor(
        view.price_table(searched, before),
        key=f"size.prices_table.{version}",
        hide_index=True,
        disabled=["gpu", "source", "date"],
        column_config={
            "USD per GPU-hour": st.column_config.NumberColumn(
                min_value=0.01, max_value=MAX_PRICE_USD_PER_HOUR, format="$%.2f"
            ),
            "source": st.column_config.TextColumn(width="large"),
        },
        width="stretch",
    )
    after = view.typed_prices(edited, searched, before)
    if after != before:
        st.session_state[W["prices"]] = after
        st.session_state[_PRICES_VERSION_KEY] = version + 1
        st.rerun()


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
    decoded = links.decode(query) if new_link else st.session_state.get(VIEW_KEY, links.DecodedSizing())
    for line in decoded.warnings if new_link else ():
        st.warning(f"URL parameter — {line}")
    for name, value in view.widget_values(decoded.settings, CATALOG_GPUS).items():
        st.session_state[W[name]] = value
    st.session_state[W["row"]] = decoded.row

answer_box = st.container()  # the answer first; it is filled once the inputs below have been read
draw = Drawer(DEFAULT, W)
with st.expander("Target load and SLOs", expanded=True):
    c = st.columns([3, 1, 1, 1, 1])
    current, ids = st.session_state.get(W["model"]), list(model_ids())
    draw.values["model"] = c[0].selectbox(
        fields.widget(SizingSettings, "model").label,
        ids if not current or current in ids else [current, *ids],
        key=W["model"],
        accept_new_options=True,
        help="A catalog model or any Hugging Face repo id (type it and press Enter).",
    )
    for column, name in zip(c[1:], ("target_rate", "input_len", "output_len", "burstiness"), strict=True):
        draw(column, name)
    c = st.columns([3, 1, 2])
    slo_text = draw(c[0], "slos", placeholder="ttft_p99_ms=1000, tpot_p99_ms=50")
    draw(c[1], "headroom")
    draw(c[2], "slo_estimate")
    draw(c[2], "disaggregation")

# the price editor is a data grid (a 1.2 MB chunk): drawn only while its expander is open, not on every first screen
gpus_and_prices = st.expander("GPUs and prices", key="size.prices_open", on_change="rerun")
with gpus_and_prices:
    c = st.columns([4, 1, 1])
    draw.choose(c[0], "gpus", list(CATALOG_GPUS), format_func=lambda g: CATALOG_GPUS[g].name)
    node = number_box(
        "GPUs per node",
        W["node_gpus"],
        partial(parse_number, low=1, high=MAX_NODE_GPUS, integer=True),
        default=DEFAULT_NODE_GPUS,
        where=c[1],
        help="Tensor parallelism stays in a node.",
    )
    draw(c[2], "max_gpus")
    searched = [CATALOG_GPUS[g] for g in st.session_state[W["gpus"]]] or list(CATALOG_GPUS.values())
    if gpus_and_prices.open:
        _price_editor(searched)
    draw.values["prices"] = st.session_state[W["prices"]]

with st.expander("Weights, KV cache and engine"):
    c = st.columns(4)
    draw.choose(c[0], "quantizations", QUANTIZATIONS)
    draw.choose(c[1], "kv_cache_dtypes", KV_CACHE_DTYPES)
    draw(c[2], "max_model_len", placeholder="fitted to the workload")
    draw(c[3], "gpu_memory_utilization")
    c = st.columns(4)  # prefill/decode layouts: the KV transfer between the pools
    draw(c[0], "kv_transfer_gb_per_s", placeholder="from the GPUs' interconnect")
    draw(c[1], "kv_transfer_latency_ms", placeholder="1")

profile = state.profile_upload("size.profile")
built = view.build_settings({k: v for k, v in draw.values.items() if k != "slos"}, slo_text, node)
settings = built.settings or st.session_state.get(VIEW_KEY, links.DecodedSizing()).settings

# --- search --------------------------------------------------------------------------------------------------------
# the link holds the question before any answer, so a question the page cannot size still leaves a clean URL
endpoints_ui.write_link(links.encode(settings, row=_chosen_row()), _SEEN_KEY)
with answer_box:
    if built.problem:
        st.error(f"Cannot size: {built.problem}.")
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
    if _chosen_row() not in [o.rank for o in result.ranked]:
        st.session_state[W["row"]] = 1
    row = _chosen_row() if result.ranked else 1
    st.session_state[VIEW_KEY] = links.DecodedSizing(settings, row)
    endpoints_ui.write_link(links.encode(settings, row=row), _SEEN_KEY)
    shown = view.answer(result, settings, row)
    (st.success if shown.ok else st.warning)(shown.verdict)
    st.caption(shown.checked_at)  # what the answer's SLO checks stand on, beside the answer
    if shown.command is not None:
        for column, (label, value, help_text) in zip(st.columns(len(shown.tiles)), shown.tiles, strict=True):
            column.metric(label, value, help=help_text)
        st.selectbox("Launch command of", list(shown.rows), key=W["row"], format_func=shown.rows.get)
        light.command(shown.command)
        for column, (label, name, text) in zip(st.columns(4), shown.files, strict=False):
            column.download_button(label, text, name, "application/yaml", key=f"size.file.{label}")
        st.caption(shown.serves)
    st.caption(shown.counts)
    for note in shown.notes:
        st.caption(note)

st.subheader("Every configuration, cheapest first")
table = view.options(result)
# keyed by the verdicts there are: when a new question brings other verdicts, the filter starts again from the first
# three (a choice kept from the last question could hide every row that meets the SLOs, #1 included)
filtered = st.multiselect(
    "Show", table.verdicts, default=table.verdicts[:3], key=f"size.filter.{'|'.join(table.verdicts)}"
)
if not filtered:
    st.caption("No verdict chosen: pick one or more above to list their configurations.")
light.table(
    table.table[table.table["verdict"].isin(filtered)],
    table.headline,
    key="size.table",
    column_config={"$/M output tokens": st.column_config.TextColumn(help="USD per million output tokens.")},
    widths_px={"verdict": 100, "GPU": 150, "why": 260},
)
d = st.columns([1, 1, 4])
d[0].download_button("Table (CSV)", table.csv, "sizing.csv", "text/csv", key="size.csv")
d[1].download_button("Options (JSON)", table.json, "sizing.json", "application/json", key="size.json")

st.subheader("Pareto view")
st.caption(view.PARETO_CAPTION)
bar = st.progress(0.0, text="Exploring…")
points = _memo(
    PARETO_KEY,
    (settings, profile_key),
    lambda: pareto_points(result, on_progress=lambda f, text: bar.progress(min(1.0, f), text=text)),
)
bar.empty()
charts = view.pareto(points, result, row)
if charts.empty:
    st.info(charts.empty)
else:
    per_gpu, per_cost = st.tabs(["tokens/s per user vs tokens/s per GPU", "tokens/s per user vs cost"])
    with per_gpu:
        light.figure(charts.per_gpu, "size.pareto.gpu")
    with per_cost:
        light.figure(charts.per_cost, "size.pareto.cost")
    st.download_button("Points (CSV)", charts.csv, "sizing_pareto.csv", "text/csv", key="size.pareto.csv")
