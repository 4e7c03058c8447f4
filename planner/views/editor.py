"""The scenario editor's logic: which fields each engine shows, a field's value as its widget holds it, the
speculative-decoding configuration the widgets make, and the :class:`~planner.capacity.scenario.Scenario` the widgets
hold (``pages/_editor.py`` draws the widgets).

A widget holds a field as the user reads it: ``quantization=None`` is :data:`CHECKPOINT` ("follow the checkpoint"),
``engine_version=None`` is empty text, ``max_model_len=auto`` is empty (the "auto" box beside it is ticked), and the
speculative configuration is three widgets (method, draft model, tokens) of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import fields

from planner.capacity.scenario import LIMITS, MAX_MODEL_LEN_AUTO, Scenario
from planner.capacity.speculative import SPECULATIVE_METHODS, SpeculativeConfig, parse_speculative_config
from planner.catalog.gpus import CUSTOM_GPU_ID, list_gpus
from planner.errors import BadValue, PlannerError
from planner.links.budget import parse_field

__all__ = [
    "AUTO",
    "CHECKPOINT",
    "DEFAULT_SPECULATIVE_TOKENS",
    "ENGINE_NAMES",
    "MAX_CONFIG_BYTES",
    "SPEC_METHOD",
    "SPEC_MODEL",
    "SPEC_OFF",
    "SPEC_TOKENS",
    "WIDGET_NAMES",
    "config_from_upload",
    "fields_for",
    "gpu_label",
    "gpu_options",
    "max_model_len_parser",
    "model_options",
    "needs_draft_model",
    "scenario_from_widgets",
    "speculative_config",
    "speculative_methods",
    "speculative_widgets",
    "to_widget",
]

#: The quantization widget's value for ``quantization=None``: follow the checkpoint.
CHECKPOINT = "checkpoint"
#: The "auto" box beside the max model length (vLLM only): a widget of its own, not a Scenario field; ticked, the
#: scenario's max_model_len is MAX_MODEL_LEN_AUTO.
AUTO = "max_model_len_auto"
#: The speculative-decoding widgets (not Scenario fields): method (:data:`SPEC_OFF` = none), draft model, tokens.
SPEC_METHOD, SPEC_MODEL, SPEC_TOKENS = "spec_method", "spec_model", "spec_tokens"
SPEC_OFF = "off"
#: The tokens box's value when no speculative configuration is set.
DEFAULT_SPECULATIVE_TOKENS = 5
#: Every widget name of an editor column: the Scenario fields, the auto box and the speculative-decoding widgets.
WIDGET_NAMES = (*(f.name for f in fields(Scenario)), AUTO, SPEC_METHOD, SPEC_MODEL, SPEC_TOKENS)
#: Each engine's name in the engine box.
ENGINE_NAMES = {"vllm": "vLLM", "tgi": "TGI", "article": "Article rule of thumb"}
#: Largest config.json accepted from an upload, bytes (real ones are a few KiB).
MAX_CONFIG_BYTES = 1_000_000

_DEFAULT = Scenario()
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
    "vllm": frozenset(_SERVER_FIELDS) | {"entry_point"} | set(_WHAT_IF_FIELDS),
    "tgi": frozenset(_SERVER_FIELDS) | set(_TGI_FIELDS) | set(_WHAT_IF_FIELDS),
    "article": frozenset(_ARTICLE_FIELDS),
}
_FLOAT_FIELDS = ("gpu_memory_utilization", "cuda_memory_fraction", "params_b", "gpu_memory_gb", "kv_compression_ratio")


def fields_for(engine: str) -> frozenset[str]:
    """The Scenario fields the engine uses, besides engine, GPU, model and target context (the others are left at
    their defaults, so they do not linger in the URL)."""
    return _FIELDS_BY_ENGINE[engine]


def to_widget(name: str, value: object) -> object:
    """Scenario field ``name``'s ``value`` as its widget holds it (see the module doc)."""
    if name == "quantization":
        return value or CHECKPOINT
    if name == "engine_version":
        return value or ""
    if name == "custom_gpu_memory_gib":
        return 80.0 if value is None else float(value)
    if name == "max_model_len" and value == MAX_MODEL_LEN_AUTO:
        return None  # auto is the box beside it
    if name in ("weight_quant", "kv_quant"):
        return value or "fp16"
    if name in _FLOAT_FIELDS and value is not None:
        return float(value)
    return value


def speculative_widgets(scenario: Scenario) -> dict[str, object]:
    """The speculative-decoding widgets' values for ``scenario``: method, draft model and tokens."""
    cfg = scenario.speculative_config
    return {
        SPEC_METHOD: SPEC_OFF if cfg is None else cfg.method,
        SPEC_MODEL: "" if cfg is None or cfg.model is None else cfg.model,
        SPEC_TOKENS: DEFAULT_SPECULATIVE_TOKENS if cfg is None else cfg.num_speculative_tokens,
    }


def speculative_methods(engine: str) -> tuple[str, ...]:
    """The method box's choices: vLLM's ``--speculative-config`` methods; TGI's ``--speculate`` is n-gram only."""
    return (SPEC_OFF, *SPECULATIVE_METHODS) if engine == "vllm" else (SPEC_OFF, "ngram")


def needs_draft_model(method: str) -> bool:
    """Whether the method names a draft model or head."""
    return method in ("draft_model", "eagle", "eagle3")


def speculative_config(
    method: str, model: str, tokens: float, kept: object
) -> tuple[SpeculativeConfig | None, str | None]:
    """The speculative configuration the widgets make.

    Args:
        method: the method box (:data:`SPEC_OFF` for none).
        model: the draft model box (read only for :func:`needs_draft_model` methods).
        tokens: ``num_speculative_tokens``.
        kept: the configuration the scenario held (a link's): kept as it is when the widgets still say the same
            method, model and tokens, so its other vLLM keys survive.

    Returns:
        ``(config, error)``: the configuration (None for none or a bad one), and one line saying why a bad one is not
        planned.
    """
    if method == SPEC_OFF:
        return None, None
    given: dict[str, object] = {"method": method, "num_speculative_tokens": int(tokens)}
    if needs_draft_model(method) and model.strip():
        given["model"] = model.strip()
    try:
        config = parse_speculative_config(given)
    except PlannerError as exc:
        return None, f"Speculative decoding not planned: {exc}"
    same = (config.method, config.model, config.num_speculative_tokens)
    if isinstance(kept, SpeculativeConfig) and (kept.method, kept.model, kept.num_speculative_tokens) == same:
        return kept, None
    return config, None


def gpu_options() -> list[str]:
    """The GPU box's choices: every catalog GPU, then a custom one."""
    return [g.id for g in list_gpus()] + [CUSTOM_GPU_ID]


def gpu_label(gpu_id: str) -> str:
    """A GPU's name with its memory as the driver reports it: ``"H100 SXM 80GB (79.2 GiB)"``."""
    if gpu_id == CUSTOM_GPU_ID:
        return "Custom GPU…"
    gpu = next(g for g in list_gpus() if g.id == gpu_id)
    return f"{gpu.name} ({gpu.memory_total_gib:.1f} GiB)"


def model_options(current: str | None, ids: Collection[str]) -> list[str]:
    """The model box's choices: the catalog ``ids``, with a ``current`` model from outside it first."""
    return list(ids) if not current or current in ids else [current, *ids]


def max_model_len_parser(engine: str) -> Callable[[str], object]:
    """The max model length box's parser: the link's (:func:`planner.links.budget.parse_field`), where ``auto``
    (or -1) is vLLM's only.

    The parser raises :class:`~planner.errors.BadValue` naming what is accepted.
    """

    def parse(text: str) -> object:
        value = parse_field("max_model_len", text)
        if value == MAX_MODEL_LEN_AUTO and engine != "vllm":
            low, high = LIMITS["max_model_len"]
            raise BadValue(f"an integer from {int(low):,} to {int(high):,} (auto is for vLLM)")
        return value

    return parse


def config_from_upload(data: bytes) -> tuple[str | None, str | None]:
    """An uploaded config.json's text: ``(text, None)``, or ``(None, why)`` for a file over :data:`MAX_CONFIG_BYTES`
    or not UTF-8 (one line)."""
    try:
        if len(data) > MAX_CONFIG_BYTES:
            raise ValueError(f"{len(data):,} bytes, more than {MAX_CONFIG_BYTES:,}")
        return data.decode("utf-8"), None
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        return None, str(exc).splitlines()[0][:120]


def scenario_from_widgets(
    *,
    engine: str,
    gpu: str,
    model: str,
    numbers: Mapping[str, object],
    values: Mapping[str, object],
    auto: bool,
) -> Scenario:
    """The scenario an editor column holds.

    Args:
        engine: the engine box.
        gpu: the GPU box.
        model: the model planned: the pasted config's label, else the model box's text.
        numbers: the number boxes' values by field (``target_context`` always, ``custom_gpu_memory_gib`` for a
            custom GPU).
        values: the other widgets' values by field; a field of :func:`fields_for` without one is its default.
        auto: the "auto" box beside the max model length.

    Returns:
        The scenario; the fields the engine does not use keep their defaults.

    Raises:
        InvalidParameterError: as :class:`~planner.capacity.scenario.Scenario` does for a value it refuses.
    """
    out: dict[str, object] = {
        "engine": engine,
        "gpu": gpu,
        "model": model.strip(),
        "target_context": numbers["target_context"],
    }
    if gpu == CUSTOM_GPU_ID:
        out["custom_gpu_memory_gib"] = numbers["custom_gpu_memory_gib"]
    for name in fields_for(engine):
        value = numbers[name] if name in numbers else values.get(name, getattr(_DEFAULT, name))
        if name == "quantization":
            value = None if value == CHECKPOINT else value
        elif name == "engine_version":
            value = value.strip() or None if isinstance(value, str) else None
        elif name == "gpu_memory_utilization" and engine != "vllm":
            value = _DEFAULT.gpu_memory_utilization
        elif name == "max_model_len" and engine == "vllm" and auto:
            value = MAX_MODEL_LEN_AUTO
        out[name] = value
    return Scenario(**out)
