"""The scenario editor: one column of widgets per scenario, keyed ``w{index}.{field}``. Not a page.

:func:`edit_scenario` draws a column whose keys :func:`pages._editor_memory.seed` filled, and returns the scenario it
holds (:func:`planner.views.editor.scenario_from_widgets`); ``pages/_editor_memory.py`` says why widgets never get a
``value=`` and how a dropped value comes back.

The model box takes any Hugging Face repo id (typed, ``accept_new_options``) with the catalog as suggestions. Under it,
"Use a config.json instead" (:func:`pages._model_inputs.config_input`) takes a pasted or uploaded config.json, and
while it holds one the scenario's model is its label and the model box is disabled, keeping what was typed there.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from pages._editor_memory import forget_hidden, remember, widget_key
from pages._model_inputs import config_input, speculative_input
from pages._numbers import Parse, number_box
from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.capacity.scenario import ARTICLE_PRECISIONS, DTYPES, ENGINES, ENTRY_POINTS, QUANTIZATION_CHOICES, Scenario
from planner.catalog.gpus import CUSTOM_GPU_ID
from planner.catalog.models import model_ids
from planner.links.budget import DEFAULT_CUSTOM_GPU_MEMORY_GIB, parse_field
from planner.views.editor import (
    AUTO,
    CHECKPOINT,
    ENGINE_NAMES,
    fields_for,
    gpu_label,
    gpu_options,
    max_model_len_parser,
    model_options,
    scenario_from_widgets,
    to_widget,
)

__all__ = ["edit_scenario"]

_DEFAULT = Scenario()


def _number(
    key: str,
    name: str,
    label: str,
    help_text: str | None = None,
    placeholder: str = "default",
    *,
    disabled: bool = False,
    parse: Parse | None = None,
) -> object:
    """A number box (:func:`pages._numbers.number_box`) for the scenario field ``name``, read as a link reads it
    (:func:`planner.links.budget.parse_field`); returns its value."""
    default = getattr(_DEFAULT, name)
    if name == "custom_gpu_memory_gib":
        default = DEFAULT_CUSTOM_GPU_MEMORY_GIB
    return number_box(
        label,
        key,
        parse or partial(parse_field, name),
        default=to_widget(name, default),
        optional=default is None,
        help=help_text,
        placeholder=placeholder,
        disabled=disabled,
    )


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

    def box(name: str, label: str, help_text: str | None = None, placeholder: str = "default", **kw: Any) -> object:
        numbers[name] = _number(k(name), name, label, help_text, placeholder, **kw)
        return numbers[name]

    engine = st.selectbox(
        "Engine",
        ENGINES,
        key=k("engine"),
        format_func=ENGINE_NAMES.get,
        help="vLLM and TGI model the engines' own memory profiling; the article rule is "
        "the blog post's back-of-the-envelope formula.",
    )
    gpu = st.selectbox(
        "GPU",
        gpu_options(),
        key=k("gpu"),
        format_func=gpu_label,
        help="Memory shown is what the CUDA driver reports (GiB = 2^30 bytes).",
    )
    if gpu == CUSTOM_GPU_ID:
        box(
            "custom_gpu_memory_gib",
            "Custom GPU memory (GiB)",
            "Total as the driver reports it (vLLM's total_gpu_memory).",
        )
    model_slot = st.container()  # the model box is drawn after the config expander, which can disable it
    uploaded = config_input(index)
    with model_slot:
        st.selectbox(
            "Model",
            model_options(st.session_state.get(k("model")), model_ids()),
            key=k("model"),
            accept_new_options=True,
            disabled=uploaded is not None,
            help="Any Hugging Face repo id (namespace/name): type it and press Enter, or pick a catalog model. "
            "Others are read from the Hub: config.json and safetensors headers, never the weights."
            + (" Clear the config.json below to use this box again." if uploaded is not None else ""),
        )
    if engine != "article":
        c1, c2 = st.columns(2)
        with c1:
            tp = box(
                "tensor_parallel_size",
                "Tensor parallel",
                "GPUs per pipeline stage (--tensor-parallel-size).",
            )
        with c2:
            pp = box("pipeline_parallel_size", "Pipeline parallel", "Pipeline stages (--pipeline-parallel-size).")
        st.caption(f"GPUs used: {tp * pp}")  # type: ignore[operator]
        st.selectbox("Weights dtype", DTYPES, key=k("dtype"), help="--dtype; auto follows the checkpoint.")
        st.selectbox(
            "Quantization",
            [q or CHECKPOINT for q in QUANTIZATION_CHOICES],
            key=k("quantization"),
            format_func=lambda q: "follow the checkpoint" if q == CHECKPOINT else q,
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
                key=k(AUTO),
                help="--max-model-len auto: the longest that fits the KV cache, as vLLM v0.12+ resolves it at "
                "start-up (older versions get the resolved number in the launch command).",
            )
        with length:
            box(
                "max_model_len",
                "Max model length (tokens)",
                "--max-model-len; empty = the model's maximum" + ("; auto for vLLM." if engine == "vllm" else "."),
                placeholder="fit to memory (auto)" if auto else "model maximum",
                disabled=auto,
                parse=max_model_len_parser(engine),
            )
    box(
        "target_context",
        "Target context (tokens)",
        "A second context length to report concurrency at; the article engine's context.",
        placeholder="none",
    )
    if engine == "tgi":
        with st.expander("TGI launcher settings"):
            box("max_input_tokens", "max-input-tokens", "--max-input-tokens")
            box("max_total_tokens", "max-total-tokens", "--max-total-tokens")
            box("max_batch_prefill_tokens", "max-batch-prefill-tokens", "--max-batch-prefill-tokens")
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
            box("params_b", "Parameters (billions)", placeholder="from the catalog")
            box("num_layers", "Layers", "Transformer layers", placeholder="from the catalog")
            box("num_kv_heads", "KV heads", "Key/value heads", placeholder="from the catalog")
            box("head_dim", "Head dim", "Dimension of one head", placeholder="from the catalog")
            box("gpu_memory_gb", "GPU memory (GB, as marketed)", placeholder="from the catalog")
    else:
        with st.expander("Advanced"):
            box("max_num_seqs", "max-num-seqs", "--max-num-seqs; empty = the engine default.")
            box(
                "max_num_batched_tokens",
                "max-num-batched-tokens",
                "--max-num-batched-tokens; empty = the engine default.",
            )
            box("block_size", "block-size", "--block-size (tokens per KV block).")
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
        speculative_input(k, engine)
        box(
            "kv_compression_ratio",
            "What-if KV compression ratio",
            placeholder="none",
            help_text="What-if — not an engine setting: KV bytes divided by this, for a KV-cache compression no engine "
            "ships (the article's DMS, KVTC-style). The launch command says it leaves it out.",
        )
    remember(index)
    scenario = scenario_from_widgets(
        engine=engine,
        gpu=gpu,
        model=uploaded if uploaded is not None else st.session_state[widget_key(index, "model")] or "",
        numbers=numbers,
        values={
            name: st.session_state[key]
            for name in fields_for(engine)
            if (key := widget_key(index, name)) in st.session_state
        },
        auto=bool(st.session_state.get(widget_key(index, AUTO))),
    )
    forget_hidden(index, drawn)
    return scenario
