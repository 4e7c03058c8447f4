"""The scenario editor: one column of widgets per scenario, keyed ``w{index}.{field}``.

Widgets never get a ``value=``: their session-state keys are seeded from the current scenarios, so a
URL, a preset or an advice can overwrite them, and keys Streamlit dropped (a widget not drawn on the
last run) are seeded again.

Streamlit drops the state of every widget not drawn on a run: the vLLM fields while the article
engine is selected, the fields of scenarios 3–4 while only two are shown, all of them on another
page. So each drawn column's values are also kept in a plain session-state dict
(:data:`pages._state.EDITOR_MEMORY_KEY`, up to four columns), and a dropped key is re-seeded from it
before the scenario's own value: what the user typed survives an engine switch, a lower scenario
count or a visit to another page for the session. A new link or preset clears that memory (``_state.load``).

A widget key must only ever hold a value on runs that draw its widget. A key written on a run that
does not draw the widget (a hidden field seeded from a preset) is kept by Streamlit under the key
itself, apart from the widget's own state once the widget is drawn, and outlives it: when the widget
is dropped on another page, that old seed reappears as the key's value, so the key looks present,
is not re-seeded from memory, and the field silently reverts (streamlit 1.67,
``SessionState._compact_state`` stores a drawn widget's value under its id, never under the key).
:func:`edit_scenario` therefore deletes the keys of the fields it did not draw, after remembering them.

The model box takes any Hugging Face repo id (typed, ``accept_new_options``) with the catalog as
suggestions. Under it, "Use a config.json instead" takes an uploaded or pasted config.json: an upload is
copied into the text area (so it can be edited and survives page switches, :data:`CONFIG_MEMORY_KEY`),
and while the text area holds a config the scenario's model is its label
(:func:`pages._state.upload_label`) and the model box is disabled, keeping what was typed there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import UTC, datetime
from functools import partial

import pandas as pd
import streamlit as st

from pages._numbers import Parse, number_box
from pages._state import CONFIG_MEMORY_KEY, EDITOR_MEMORY_KEY, UPLOADS_KEY, refuse_upload, upload_label
from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.capacity.scenario import (
    ARTICLE_PRECISIONS,
    DTYPES,
    ENGINES,
    ENTRY_POINTS,
    LIMITS,
    MAX_MODEL_LEN_AUTO,
    QUANTIZATION_CHOICES,
    Scenario,
)
from planner.capacity.speculative import (
    MAX_SPECULATIVE_TOKENS,
    SPECULATIVE_METHODS,
    SpeculativeConfig,
    parse_speculative_config,
)
from planner.catalog.gpus import CUSTOM_GPU_ID, list_gpus
from planner.catalog.hub import ResolvedModel, describe, model_from_config
from planner.catalog.models import model_ids
from planner.errors import BadValue, PlannerError
from planner.links.budget import DEFAULT_CUSTOM_GPU_MEMORY_GIB, parse_field
from planner.units import GIB
from planner.values import parse_number

__all__ = ["COUNT_WIDGET", "edit_scenario", "model_details", "seed", "widget_key"]

#: Key of the "how many scenarios" widget.
COUNT_WIDGET = "w.count"
_CHECKPOINT = "checkpoint"
#: Largest config.json accepted from an upload, bytes (real ones are a few KiB).
_MAX_CONFIG_BYTES = 1_000_000
_DEFAULT = Scenario()
#: The "auto" box beside the max model length (vLLM only): a widget of its own, not a Scenario field; ticked, the
#: scenario's max_model_len is MAX_MODEL_LEN_AUTO.
_AUTO = "max_model_len_auto"
#: The speculative-decoding widgets (not Scenario fields): method ("off" = none), draft model, tokens. Their
#: SpeculativeConfig is kept under the scenario field's own key, so a link's other vLLM keys survive unedited.
_SPEC_METHOD, _SPEC_MODEL, _SPEC_TOKENS = "spec_method", "spec_model", "spec_tokens"
_SPEC_OFF = "off"
#: Every widget name of a column: the Scenario fields, the auto box and the speculative-decoding widgets.
_WIDGET_NAMES = (*(f.name for f in fields(Scenario)), _AUTO, _SPEC_METHOD, _SPEC_MODEL, _SPEC_TOKENS)
_ENGINE_NAMES = {"vllm": "vLLM", "tgi": "TGI", "article": "Article rule of thumb"}
_SERVER_FIELDS = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "enforce_eager",
    "engine_version",
)
_TGI_FIELDS = ("max_input_tokens", "max_total_tokens", "max_batch_prefill_tokens", "cuda_memory_fraction")
_ARTICLE_FIELDS = ("params_b", "num_layers", "num_kv_heads", "head_dim", "gpu_memory_gb", "weight_quant", "kv_quant")
_WHAT_IF_FIELDS = ("speculative_config", "kv_compression_ratio")
_FIELDS_BY_ENGINE = {
    "vllm": set(_SERVER_FIELDS) | {"entry_point"} | set(_WHAT_IF_FIELDS),
    "tgi": set(_SERVER_FIELDS) | set(_TGI_FIELDS) | set(_WHAT_IF_FIELDS),
    "article": set(_ARTICLE_FIELDS),
}


def widget_key(index: int, field_name: str) -> str:
    """Session-state key of a scenario field's widget (``index`` 0-based)."""
    return f"w{index}.{field_name}"


def _to_widget(name: str, value: object) -> object:
    if name == "quantization":
        return value or _CHECKPOINT
    if name == "engine_version":
        return value or ""
    if name == "custom_gpu_memory_gib":
        return 80.0 if value is None else float(value)
    if name == "max_model_len" and value == MAX_MODEL_LEN_AUTO:
        return None  # auto is the box beside it
    if name in ("weight_quant", "kv_quant"):
        return value or "fp16"
    if name in (
        "gpu_memory_utilization",
        "cuda_memory_fraction",
        "params_b",
        "gpu_memory_gb",
        "kv_compression_ratio",
    ) and (value is not None):
        return float(value)
    return value


def seed(index: int, scenario: Scenario, *, overwrite: bool) -> None:
    """Fill the widget keys of column ``index``.

    With ``overwrite`` every key gets ``scenario``'s value (a link, preset or advice was loaded).
    Otherwise only keys Streamlit dropped are filled: from the column's remembered values (what the
    user last had there, including fields of another engine), else from ``scenario``.
    """
    memory = st.session_state.get(EDITOR_MEMORY_KEY, {}).get(index, {})
    keep_config = False
    if overwrite:
        # A scenario naming this column's pasted config (advice applied to it) keeps the config and the
        # model box; any other model replaces the config (a preset or a link says which model to plan).
        text = _config_text(index)
        keep_config = bool(text.strip()) and scenario.model == upload_label(text)
        if not keep_config:
            _set_config_text(index, "")
    for f in fields(Scenario):
        key = widget_key(index, f.name)
        if overwrite and not (keep_config and f.name == "model"):
            st.session_state[key] = _to_widget(f.name, getattr(scenario, f.name))
        elif key not in st.session_state:
            fallback = _DEFAULT if keep_config and f.name == "model" else scenario
            st.session_state[key] = memory.get(f.name, _to_widget(f.name, getattr(fallback, f.name)))
    auto_key, auto = widget_key(index, _AUTO), scenario.max_model_len == MAX_MODEL_LEN_AUTO
    if overwrite:
        st.session_state[auto_key] = auto
    elif auto_key not in st.session_state:
        st.session_state[auto_key] = memory.get(_AUTO, auto)
    cfg = scenario.speculative_config
    spec_values = {
        _SPEC_METHOD: _SPEC_OFF if cfg is None else cfg.method,
        _SPEC_MODEL: "" if cfg is None or cfg.model is None else cfg.model,
        _SPEC_TOKENS: 5 if cfg is None else cfg.num_speculative_tokens,
    }
    for name, value in spec_values.items():
        key = widget_key(index, name)
        if overwrite:
            st.session_state[key] = value
        elif key not in st.session_state:
            st.session_state[key] = memory.get(name, value)


def _config_text(index: int) -> str:
    """Column ``index``'s pasted config.json: the text area's value, or the remembered one if it was dropped."""
    text = st.session_state.get(widget_key(index, "config_text"))
    if text is None:
        text = st.session_state.get(CONFIG_MEMORY_KEY, {}).get(index, "")
    return text if isinstance(text, str) else ""


def _set_config_text(index: int, text: str) -> None:
    """Set column ``index``'s config text (call before its text area is drawn)."""
    st.session_state[widget_key(index, "config_text")] = text
    st.session_state[CONFIG_MEMORY_KEY] = {**st.session_state.get(CONFIG_MEMORY_KEY, {}), index: text}


def _remember(index: int) -> None:
    """Keep column ``index``'s widget values where Streamlit does not drop them."""
    memory = dict(st.session_state.get(EDITOR_MEMORY_KEY, {}))
    memory[index] = {
        name: st.session_state[widget_key(index, name)]
        for name in _WIDGET_NAMES
        if widget_key(index, name) in st.session_state
    }
    st.session_state[EDITOR_MEMORY_KEY] = memory


def _forget_hidden(index: int, drawn: set[str]) -> None:
    """Delete column ``index``'s keys of fields not drawn this run (remember them first; see the module doc)."""
    for name in _WIDGET_NAMES:
        key = widget_key(index, name)
        if name not in drawn and key in st.session_state:
            del st.session_state[key]


def _number(
    k: Callable[[str], str],
    numbers: dict[str, object],
    name: str,
    label: str,
    help_text: str | None = None,
    placeholder: str = "default",
    *,
    disabled: bool = False,
    parse: Parse | None = None,
) -> object:
    """A number box (:func:`pages._numbers.number_box`) for the scenario field ``name``, read as a link reads it
    (:func:`planner.links.budget.parse_field`); its value is put in ``numbers`` and returned."""
    default = getattr(_DEFAULT, name)
    if name == "custom_gpu_memory_gib":
        default = DEFAULT_CUSTOM_GPU_MEMORY_GIB
    numbers[name] = number_box(
        label,
        k(name),
        parse or partial(parse_field, name),
        default=_to_widget(name, default),
        optional=default is None,
        help=help_text,
        placeholder=placeholder,
        disabled=disabled,
    )
    return numbers[name]


def _max_model_len_parser(engine: str) -> Parse:
    """The max model length box's parser: the link's, where ``auto`` (or -1) is vLLM's only."""

    def parse(text: str) -> object:
        value = parse_field("max_model_len", text)
        if value == MAX_MODEL_LEN_AUTO and engine != "vllm":
            low, high = LIMITS["max_model_len"]
            raise BadValue(f"an integer from {int(low):,} to {int(high):,} (auto is for vLLM)")
        return value

    return parse


def _gpu_label(gpu_id: str) -> str:
    if gpu_id == CUSTOM_GPU_ID:
        return "Custom GPU…"
    gpu = next(g for g in list_gpus() if g.id == gpu_id)
    return f"{gpu.name} ({gpu.memory_total_gib:.1f} GiB)"


def edit_scenario(index: int) -> Scenario:
    """Draw the editor of scenario ``index`` (keys seeded beforehand) and return what it holds.

    Fields that the selected engine does not use are returned at their defaults, so they do not
    linger in the URL.
    """
    drawn: set[str] = set()  # the fields whose widgets this run draws: every widget takes its key from k()
    numbers: dict[str, object] = {}  # the number boxes' values, by field

    def k(name: str) -> str:
        drawn.add(name)
        return widget_key(index, name)

    engine = st.selectbox(
        "Engine",
        ENGINES,
        key=k("engine"),
        format_func=_ENGINE_NAMES.get,
        help="vLLM and TGI model the engines' own memory profiling; the article rule is "
        "the blog post's back-of-the-envelope formula.",
    )
    gpu_options = [g.id for g in list_gpus()] + [CUSTOM_GPU_ID]
    gpu = st.selectbox(
        "GPU",
        gpu_options,
        key=k("gpu"),
        format_func=_gpu_label,
        help="Memory shown is what the CUDA driver reports (GiB = 2^30 bytes).",
    )
    if gpu == CUSTOM_GPU_ID:
        _number(
            k,
            numbers,
            "custom_gpu_memory_gib",
            "Custom GPU memory (GiB)",
            "Total as the driver reports it (vLLM's total_gpu_memory).",
        )
    model_slot = st.container()  # the model box is drawn after the config expander, which can disable it
    uploaded = _config_input(index)
    with model_slot:
        current = st.session_state.get(k("model"))
        ids = list(model_ids())
        st.selectbox(
            "Model",
            ids if not current or current in ids else [current, *ids],
            key=k("model"),
            accept_new_options=True,
            disabled=uploaded is not None,
            help="Any Hugging Face repo id (namespace/name): type it and press Enter, or pick a catalog model. "
            "Others are read from the Hub: config.json and safetensors headers, never the weights."
            + (" Clear the config.json below to use this box again." if uploaded is not None else ""),
        )
    used = _FIELDS_BY_ENGINE[engine]
    if engine != "article":
        c1, c2 = st.columns(2)
        with c1:
            tp = _number(
                k,
                numbers,
                "tensor_parallel_size",
                "Tensor parallel",
                "GPUs per pipeline stage (--tensor-parallel-size).",
            )
        with c2:
            pp = _number(
                k, numbers, "pipeline_parallel_size", "Pipeline parallel", "Pipeline stages (--pipeline-parallel-size)."
            )
        st.caption(f"GPUs used: {tp * pp}")  # type: ignore[operator]
        st.selectbox("Weights dtype", DTYPES, key=k("dtype"), help="--dtype; auto follows the checkpoint.")
        quant_options = [q or _CHECKPOINT for q in QUANTIZATION_CHOICES]
        st.selectbox(
            "Quantization",
            quant_options,
            key=k("quantization"),
            format_func=lambda q: "follow the checkpoint" if q == _CHECKPOINT else q,
            help="--quantization; awq/gptq on an unquantized model mean an int4 export of it.",
        )
        st.selectbox("KV cache dtype", KV_CACHE_DTYPES, key=k("kv_cache_dtype"), help="--kv-cache-dtype")
        if engine == "vllm":
            st.slider(
                "GPU memory utilization",
                min_value=0.01,
                max_value=1.0,
                step=0.01,
                key=k("gpu_memory_utilization"),
                help="--gpu-memory-utilization: fraction of total memory vLLM may use.",
            )
        length, auto_box = st.columns([3, 1], vertical_alignment="bottom")
        auto = False
        if engine == "vllm":
            auto = auto_box.checkbox(
                "auto",
                key=k(_AUTO),
                help="--max-model-len auto: the longest that fits the KV cache, as vLLM v0.12+ resolves it at "
                "start-up (older versions get the resolved number in the launch command).",
            )
        with length:
            _number(
                k,
                numbers,
                "max_model_len",
                "Max model length (tokens)",
                "--max-model-len; empty = the model's maximum" + ("; auto for vLLM." if engine == "vllm" else "."),
                placeholder="fit to memory (auto)" if auto else "model maximum",
                disabled=auto,
                parse=_max_model_len_parser(engine),
            )
    _number(
        k,
        numbers,
        "target_context",
        "Target context (tokens)",
        "A second context length to report concurrency at; the article engine's context.",
        placeholder="none",
    )
    if engine == "tgi":
        with st.expander("TGI launcher settings"):
            _number(k, numbers, "max_input_tokens", "max-input-tokens", "--max-input-tokens")
            _number(k, numbers, "max_total_tokens", "max-total-tokens", "--max-total-tokens")
            _number(k, numbers, "max_batch_prefill_tokens", "max-batch-prefill-tokens", "--max-batch-prefill-tokens")
            st.slider(
                "cuda-memory-fraction",
                min_value=0.01,
                max_value=1.0,
                step=0.01,
                key=k("cuda_memory_fraction"),
                help="--cuda-memory-fraction",
            )
    if engine == "article":
        c1, c2 = st.columns(2)
        with c1:
            st.selectbox("Weight precision", ARTICLE_PRECISIONS, key=k("weight_quant"))
        with c2:
            st.selectbox("KV precision", ARTICLE_PRECISIONS, key=k("kv_quant"))
        with st.expander("Article inputs (empty = from the catalog)"):
            _number(k, numbers, "params_b", "Parameters (billions)", placeholder="from the catalog")
            _number(k, numbers, "num_layers", "Layers", "Transformer layers", placeholder="from the catalog")
            _number(k, numbers, "num_kv_heads", "KV heads", "Key/value heads", placeholder="from the catalog")
            _number(k, numbers, "head_dim", "Head dim", "Dimension of one head", placeholder="from the catalog")
            _number(k, numbers, "gpu_memory_gb", "GPU memory (GB, as marketed)", placeholder="from the catalog")
    else:
        with st.expander("Advanced"):
            _number(k, numbers, "max_num_seqs", "max-num-seqs", "--max-num-seqs; empty = the engine default.")
            _number(
                k,
                numbers,
                "max_num_batched_tokens",
                "max-num-batched-tokens",
                "--max-num-batched-tokens; empty = the engine default.",
            )
            _number(k, numbers, "block_size", "block-size", "--block-size (tokens per KV block).")
            st.checkbox("enforce-eager (no CUDA graphs)", key=k("enforce_eager"))
            st.text_input(
                "Engine version",
                key=k("engine_version"),
                max_chars=40,
                placeholder="newest known",
                help="e.g. 0.19.0 for vLLM, 3.3.7 for TGI. Empty for vLLM: the newest version's figures, with the "
                "range over the versions still in use.",
            )
            if engine == "vllm":
                st.selectbox(
                    "Started as",
                    ENTRY_POINTS,
                    key=k("entry_point"),
                    format_func={"serve": "vllm serve", "llm": "vllm.LLM (offline)"}.get,
                    help="vllm serve and the offline vllm.LLM class default to different max_num_seqs and "
                    "max_num_batched_tokens, which size the profile run.",
                )
    if engine != "article":
        _speculative_input(k, engine)
        _number(
            k,
            numbers,
            "kv_compression_ratio",
            "What-if KV compression ratio",
            placeholder="none",
            help_text="What-if — not an engine setting: KV bytes divided by this, for a KV-cache compression no engine "
            "ships (the article's DMS, KVTC-style). The launch command says it leaves it out.",
        )
    _remember(index)
    scenario = _collect(index, engine, gpu, used, uploaded, numbers)
    _forget_hidden(index, drawn)
    return scenario


def _speculative_input(k: Callable[[str], str], engine: str) -> None:
    """The "Speculative decoding" expander: method, draft model and tokens; the configuration they make (or None) is
    stored under the ``speculative_config`` key, and a bad one gives one error line and is not planned."""
    methods = (_SPEC_OFF, *SPECULATIVE_METHODS) if engine == "vllm" else (_SPEC_OFF, "ngram")
    if st.session_state.get(k(_SPEC_METHOD)) not in methods:
        st.session_state[k(_SPEC_METHOD)] = _SPEC_OFF  # a vLLM method under TGI: TGI has n-gram only
    with st.expander("Speculative decoding", expanded=st.session_state[k(_SPEC_METHOD)] != _SPEC_OFF):
        method = st.selectbox(
            "Method" if engine == "vllm" else "--speculate",
            methods,
            key=k(_SPEC_METHOD),
            help="vLLM's --speculative-config method: a draft model, an EAGLE / EAGLE-3 head, the model's own MTP "
            "layers, or n-gram prompt lookup (no memory). TGI: --speculate N (n-gram or the checkpoint's Medusa).",
        )
        needs_model = method in ("draft_model", "eagle", "eagle3")
        model = st.text_input(
            "Draft model or head",
            key=k(_SPEC_MODEL),
            disabled=not needs_model,
            placeholder="meta-llama/Llama-3.2-1B-Instruct" if needs_model else "not used by this method",
            help="A catalog id (meta-llama/Llama-3.2-1B-Instruct, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) or any Hugging "
            "Face repo id.",
        )
        tokens = number_box(
            "num_speculative_tokens",
            k(_SPEC_TOKENS),
            partial(parse_number, low=1, high=MAX_SPECULATIVE_TOKENS, integer=True),
            default=5,
        )
        kept = st.session_state.get(k("speculative_config"))
        config = None
        if method != _SPEC_OFF:
            given = {"method": method, "num_speculative_tokens": int(tokens)}
            if needs_model and model.strip():
                given["model"] = model.strip()
            try:
                config = parse_speculative_config(given)
            except PlannerError as exc:
                st.error(f"Speculative decoding not planned: {exc}")
            # unchanged from a link's configuration: keep its other vLLM keys
            if (
                isinstance(kept, SpeculativeConfig)
                and config is not None
                and (
                    (kept.method, kept.model, kept.num_speculative_tokens)
                    == (config.method, config.model, config.num_speculative_tokens)
                )
            ):
                config = kept
        st.session_state[k("speculative_config")] = config


def _config_input(index: int) -> str | None:
    """The "Use a config.json instead" expander of column ``index``: the label of the config pasted there (the model
    the scenario plans), or ``None`` when there is none.

    A parsed config is registered in :data:`pages._state.UPLOADS_KEY` under its label. A refused one keeps its text
    and its label, and is remembered with its error (:func:`pages._state.refuse_upload`): the scenario's verdict
    says, once, why it is not planned, instead of planning the model box's model as if it had been meant.
    """
    text_key, file_key, seen_key = (widget_key(index, n) for n in ("config_text", "config_file", "config_seen"))
    if text_key not in st.session_state:  # dropped on another page: restore what was pasted
        st.session_state[text_key] = _config_text(index)
    with st.expander("Use a config.json instead", expanded=bool(st.session_state[text_key].strip())):
        upload = st.file_uploader(
            "Upload config.json",
            type=["json"],
            key=file_key,
            max_upload_size=1,  # MB; real config.json files are a few KiB
            help="Copied into the text below, where you can edit it.",
        )
        if upload is not None and upload.file_id != st.session_state.get(seen_key):
            st.session_state[seen_key] = upload.file_id  # copy each upload once; later edits of the text win
            data = upload.getvalue()
            try:
                if len(data) > _MAX_CONFIG_BYTES:
                    raise ValueError(f"{len(data):,} bytes, more than {_MAX_CONFIG_BYTES:,}")
                st.session_state[text_key] = data.decode("utf-8")
            except ValueError as exc:  # UnicodeDecodeError is a ValueError
                st.error(f"{upload.name} was not read: {str(exc).splitlines()[0][:120]}")
        st.text_area(
            "…or paste it",
            key=text_key,
            height=160,
            placeholder='{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, ...}',
            help="The model's config.json from the Hub or a local checkpoint. Clear it to use the model box.",
        )
        text = st.session_state[text_key]
        st.session_state[CONFIG_MEMORY_KEY] = {**st.session_state.get(CONFIG_MEMORY_KEY, {}), index: text}
        if not text.strip():
            return None
        label = upload_label(text)
        try:
            resolved = model_from_config(text, label=label)
        except PlannerError as exc:
            refuse_upload(label, exc)
            st.caption(":material/arrow_upward: Not planned: the verdict at the top of the page says why.")
            return label
        st.session_state[UPLOADS_KEY] = {**st.session_state.get(UPLOADS_KEY, {}), label: resolved}
        st.caption(
            f"Planned as **{label}**. The link carries this name only, not the config: whoever opens it "
            "needs the same config.json pasted here."
        )
        return label


def _collect(
    index: int,
    engine: str,
    gpu: str,
    used: set[str],
    uploaded: str | None,
    numbers: dict[str, object],
) -> Scenario:
    typed = st.session_state[widget_key(index, "model")]
    values: dict[str, object] = {
        "engine": engine,
        "gpu": gpu,
        "model": uploaded if uploaded is not None else (typed or "").strip(),
        "target_context": numbers["target_context"],
    }
    if gpu == CUSTOM_GPU_ID:
        values["custom_gpu_memory_gib"] = numbers["custom_gpu_memory_gib"]
    for name in used:
        if name in numbers:
            value = numbers[name]
        else:
            value = st.session_state.get(widget_key(index, name), getattr(_DEFAULT, name))
        if name == "quantization":
            value = None if value == _CHECKPOINT else value
        elif name == "engine_version":
            value = value.strip() or None if isinstance(value, str) else None
        elif name == "gpu_memory_utilization" and engine != "vllm":
            value = _DEFAULT.gpu_memory_utilization
        elif name == "max_model_len" and engine == "vllm" and st.session_state.get(widget_key(index, _AUTO)):
            value = MAX_MODEL_LEN_AUTO
        values[name] = value
    return Scenario(**values)


def _na(value: object, fmt: str = "{}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _billions(count: int | None) -> str:
    return "n/a" if count is None else f"{count / 1e9:,.2f} B ({count:,})"


def _when(seconds: float | None) -> str:
    return "time unknown" if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _source(resolved: ResolvedModel) -> str:
    revision = f"revision {resolved.revision[:10]}" if resolved.revision else "revision unknown"
    if resolved.source == "hub":
        return f"Hugging Face Hub, {revision}, fetched {_when(resolved.fetched_at_s)}"
    if resolved.source == "cache":
        return f"on-disk cache of the Hub, {revision}, fetched {_when(resolved.fetched_at_s)}"
    if resolved.source == "upload":
        return "pasted/uploaded config.json"
    return "built-in catalog"


def model_details(resolved: ResolvedModel) -> None:
    """Draw what :func:`planner.catalog.hub.describe` says about ``resolved``; missing values read "n/a"."""
    d = describe(resolved)
    layers = d["layer_attention"] or {}
    kinds = ", ".join(f"{n} {kind}" for kind, n in layers.items()) or "n/a"
    if d["sliding_window"]:
        kinds += f" (window {d['sliding_window']:,} tokens)"
    experts = _na(d["num_experts"], "{:,}")
    if d["num_experts"] and d["num_experts_per_tok"]:
        experts += f" ({d['num_experts_per_tok']} active per token)"
    quant = d["quantization"] or "n/a"
    if quant != "none" and quant != "n/a":
        quant += f", {_na(d['quantization_bits'])}-bit, group size {_na(d['quantization_group_size'])}"
    params = _billions(d["params_computed"])
    if d["params_active_computed"] and d["params_active_computed"] != d["params_computed"]:
        params += f", {_billions(d['params_active_computed'])} active"
    if d["vision_params_computed"]:
        params += f", vision tower {_billions(d['vision_params_computed'])}"
    by_dtype = d["params_by_dtype"]
    checkpoint = d["checkpoint_bytes"]
    rows = {
        "Source": _source(resolved),
        "Architecture": f"{_na(d['architecture'])} ({_na(d['model_type'])})",
        "Attention": _na(d["attention"]),
        "Layers": _na(d["num_hidden_layers"]),
        "Attention heads / KV heads": f"{_na(d['num_attention_heads'])} / {_na(d['num_key_value_heads'])}",
        "Head dim": _na(d["head_dim"]),
        "Layer types": kinds,
        "MoE experts": experts,
        "MLA KV rank": _na(d["kv_lora_rank"]),
        "Quantization": quant,
        "Checkpoint dtype": _na(d["torch_dtype"]),
        "Context limit (tokens)": _na(d["max_position_embeddings"], "{:,}"),
        "Vocabulary": _na(d["vocab_size"], "{:,}"),
        "Parameters (computed)": params,
        "Parameters in checkpoint": ", ".join(f"{dtype} {n:,}" for dtype, n in by_dtype.items()) if by_dtype else "n/a",
        "Checkpoint size": "n/a" if checkpoint is None else f"{checkpoint / GIB:,.2f} GiB",
        "Read from": ", ".join(d["files"]) or "n/a",
    }
    st.table(pd.DataFrame({"value": rows}).rename_axis(None))
    for assumption in d["assumptions"]:
        st.caption(f":orange[:material/warning: Assumed: {assumption}]")
    for note in d["notes"]:
        st.caption(f"ℹ️ {note}")
