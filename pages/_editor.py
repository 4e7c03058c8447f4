"""The scenario editor: one column of widgets per scenario, keyed ``w{index}.{field}``.

Widgets never get a ``value=``: their session-state keys are seeded from the current scenarios, so a
URL, a preset or an advice can overwrite them, and keys Streamlit dropped (a widget not drawn on the
last run) are seeded again.

Streamlit drops the state of every widget not drawn on a run: the vLLM fields while the article
engine is selected, the fields of scenarios 3–4 while only two are shown, all of them on another
page. So each drawn column's values are also kept in a plain session-state dict
(:data:`pages._state.EDITOR_MEMORY_KEY`, up to four columns), and a dropped key is re-seeded from it
before the scenario's own value: what the user typed survives an engine switch or a lower scenario
count for the session. A new link or preset clears that memory (``_state.load``).
"""

from __future__ import annotations

from dataclasses import fields

import streamlit as st

from pages._state import EDITOR_MEMORY_KEY
from planner.gpus import CUSTOM_GPU_ID, list_gpus
from planner.kv_cache import KV_CACHE_DTYPES
from planner.models import model_ids
from planner.scenario import ARTICLE_PRECISIONS, DTYPES, ENGINES, LIMITS, QUANTIZATION_CHOICES, Scenario

__all__ = ["COUNT_WIDGET", "edit_scenario", "seed", "widget_key"]

#: Key of the "how many scenarios" widget.
COUNT_WIDGET = "w.count"
_CHECKPOINT = "checkpoint"
_DEFAULT = Scenario()
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
_FIELDS_BY_ENGINE = {
    "vllm": set(_SERVER_FIELDS),
    "tgi": set(_SERVER_FIELDS) | set(_TGI_FIELDS),
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
    if name in ("weight_quant", "kv_quant"):
        return value or "fp16"
    if name in ("gpu_memory_utilization", "cuda_memory_fraction", "params_b", "gpu_memory_gb") and value is not None:
        return float(value)
    return value


def seed(index: int, scenario: Scenario, *, overwrite: bool) -> None:
    """Fill the widget keys of column ``index``.

    With ``overwrite`` every key gets ``scenario``'s value (a link, preset or advice was loaded).
    Otherwise only keys Streamlit dropped are filled: from the column's remembered values (what the
    user last had there, including fields of another engine), else from ``scenario``.
    """
    memory = st.session_state.get(EDITOR_MEMORY_KEY, {}).get(index, {})
    for f in fields(Scenario):
        key = widget_key(index, f.name)
        if overwrite:
            st.session_state[key] = _to_widget(f.name, getattr(scenario, f.name))
        elif key not in st.session_state:
            st.session_state[key] = memory.get(f.name, _to_widget(f.name, getattr(scenario, f.name)))


def _remember(index: int) -> None:
    """Keep column ``index``'s widget values where Streamlit does not drop them."""
    memory = dict(st.session_state.get(EDITOR_MEMORY_KEY, {}))
    memory[index] = {
        f.name: st.session_state[widget_key(index, f.name)]
        for f in fields(Scenario)
        if widget_key(index, f.name) in st.session_state
    }
    st.session_state[EDITOR_MEMORY_KEY] = memory


def _int_input(index: int, name: str, label: str, help_text: str, placeholder: str = "default") -> None:
    low, high = LIMITS[name]
    st.number_input(
        label,
        min_value=int(low),
        max_value=int(high),
        step=1,
        key=widget_key(index, name),
        placeholder=placeholder,
        help=help_text,
    )


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
    k = lambda name: widget_key(index, name)  # noqa: E731 - a local shorthand for widget keys
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
        st.number_input(
            "Custom GPU memory (GiB)",
            min_value=0.1,
            max_value=4096.0,
            step=1.0,
            key=k("custom_gpu_memory_gib"),
            help="Total as the driver reports it (vLLM's total_gpu_memory).",
        )
    st.selectbox("Model", model_ids(), key=k("model"), help="Type to search the catalog's Hugging Face ids.")
    used = _FIELDS_BY_ENGINE[engine]
    if engine != "article":
        c1, c2 = st.columns(2)
        with c1:
            _int_input(
                index, "tensor_parallel_size", "Tensor parallel", "GPUs per pipeline stage (--tensor-parallel-size)."
            )
        with c2:
            _int_input(
                index, "pipeline_parallel_size", "Pipeline parallel", "Pipeline stages (--pipeline-parallel-size)."
            )
        st.caption(
            f"GPUs used: {st.session_state[k('tensor_parallel_size')] * st.session_state[k('pipeline_parallel_size')]}"
        )
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
        _int_input(
            index,
            "max_model_len",
            "Max model length (tokens)",
            "--max-model-len; empty = the model's maximum.",
            placeholder="model maximum",
        )
    _int_input(
        index,
        "target_context",
        "Target context (tokens)",
        "A second context length to report concurrency at; the article engine's context.",
        placeholder="none",
    )
    if engine == "tgi":
        with st.expander("TGI launcher settings"):
            _int_input(index, "max_input_tokens", "max-input-tokens", "--max-input-tokens")
            _int_input(index, "max_total_tokens", "max-total-tokens", "--max-total-tokens")
            _int_input(index, "max_batch_prefill_tokens", "max-batch-prefill-tokens", "--max-batch-prefill-tokens")
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
            st.number_input(
                "Parameters (billions)",
                min_value=0.001,
                max_value=10_000.0,
                key=k("params_b"),
                placeholder="from the catalog",
            )
            _int_input(index, "num_layers", "Layers", "Transformer layers", placeholder="from the catalog")
            _int_input(index, "num_kv_heads", "KV heads", "Key/value heads", placeholder="from the catalog")
            _int_input(index, "head_dim", "Head dim", "Dimension of one head", placeholder="from the catalog")
            st.number_input(
                "GPU memory (GB, as marketed)",
                min_value=0.1,
                max_value=4096.0,
                key=k("gpu_memory_gb"),
                placeholder="from the catalog",
            )
    else:
        with st.expander("Advanced"):
            _int_input(index, "max_num_seqs", "max-num-seqs", "--max-num-seqs; empty = the engine default.")
            _int_input(
                index,
                "max_num_batched_tokens",
                "max-num-batched-tokens",
                "--max-num-batched-tokens; empty = the engine default.",
            )
            _int_input(index, "block_size", "block-size", "--block-size (tokens per KV block).")
            st.checkbox("enforce-eager (no CUDA graphs)", key=k("enforce_eager"))
            st.text_input(
                "Engine version",
                key=k("engine_version"),
                max_chars=40,
                placeholder="newest known",
                help="e.g. 0.19.0 for vLLM, 3.3.7 for TGI.",
            )
    _remember(index)
    return _collect(index, engine, gpu, used)


def _collect(index: int, engine: str, gpu: str, used: set[str]) -> Scenario:
    values: dict[str, object] = {
        "engine": engine,
        "gpu": gpu,
        "model": st.session_state[widget_key(index, "model")],
        "target_context": st.session_state[widget_key(index, "target_context")],
    }
    if gpu == CUSTOM_GPU_ID:
        values["custom_gpu_memory_gib"] = st.session_state[widget_key(index, "custom_gpu_memory_gib")]
    for name in used:
        value = st.session_state.get(widget_key(index, name), getattr(_DEFAULT, name))
        if name == "quantization":
            value = None if value == _CHECKPOINT else value
        elif name == "engine_version":
            value = value.strip() or None if isinstance(value, str) else None
        elif name == "gpu_memory_utilization" and engine != "vllm":
            value = _DEFAULT.gpu_memory_utilization
        values[name] = value
    return Scenario(**values)
