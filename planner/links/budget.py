"""One explicit codec between up to four scenarios and a URL query string.

Scheme
------
* Scenario 1 uses plain keys, spelled as vLLM's flags in snake case: ``model``, ``gpu``, ``engine``,
  ``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ``kv_cache_dtype``, ... —
  exactly the field names of :class:`planner.capacity.scenario.Scenario`.
* Scenarios 2–4 use the same keys with a prefix: ``s2.gpu``, ``s3.max_model_len``, ``s4.engine``.
* ``scenarios`` is the number of scenarios (1–4); written only when it is more than 1.
* Only fields that differ from :class:`Scenario`'s defaults are written, so links stay short.
* ``model`` is a catalog id (normalised: ``llama-3.1-8b-instruct`` becomes ``meta-llama/Llama-3.1-8B-Instruct``)
  or any syntactically valid Hugging Face repo id (:func:`planner.catalog.hub.validate_model_id`); whether that
  repo exists is the page's business, not the codec's.
* ``gpu=custom`` needs ``custom_gpu_memory_gib``; without it :func:`decode` warns and uses
  :data:`DEFAULT_CUSTOM_GPU_MEMORY_GIB`.
* ``speculative_config`` is vLLM's ``--speculative-config`` JSON as one value
  (``{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}``), read by
  :func:`planner.capacity.speculative.parse_speculative_config` and written back by its ``to_text``.
* ``kv_compression_ratio`` is the what-if KV compression (not an engine setting), a number from 1 to 64.
* ``max_model_len=auto`` (or ``-1``) is vLLM's ``--max-model-len auto``, the longest that fits
  (:data:`planner.capacity.scenario.MAX_MODEL_LEN_AUTO` in the scenario); links write ``auto``.
* Page-level selections that are not scenario fields: ``min_context`` and ``max_context`` (tokens,
  the concurrency chart's range).
* A page whose link also carries settings of its own (the Performance page's workload,
  :mod:`planner.links.performance`) passes their keys as ``foreign``: :func:`decode` leaves them to that page's
  codec, and its one warning about unknown keys lists them among the accepted ones. So the two codecs of a link
  never report each other's keys, and a key neither knows is reported once.

Values: integers in decimal, floats as Python's shortest round-tripping ``repr``, booleans as ``true``
/ ``false``, strings as is (the URL layer percent-encodes them).

:func:`decode` never raises: each bad parameter gives one warning line naming the parameter, its value
(truncated) and what is accepted, and the field keeps its default. It reads at most
:data:`MAX_PARAMS` parameters and builds at most :data:`MAX_SCENARIOS` scenarios. Numbers, flags, choices, the last
value of a repeated key and the echo of a value follow the shared rules of :mod:`planner.links.rules`.

Example:
    >>> from planner.capacity.scenario import Scenario
    >>> encode([Scenario(gpu="rtx-4090", max_model_len=8192)])
    {'gpu': 'rtx-4090', 'max_model_len': '8192'}
    >>> decode({"gpu": "rtx-4090", "max_model_len": "8192"}).scenarios[0].max_model_len
    8192
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.capacity.scenario import (
    ARTICLE_PRECISIONS,
    DTYPES,
    ENGINES,
    ENTRY_POINTS,
    INT_FIELDS,
    LIMITS,
    MAX_MODEL_LEN_AUTO,
    QUANTIZATION_CHOICES,
    Scenario,
    parse_max_model_len,
    validate,
)
from planner.capacity.speculative import SpeculativeConfig, parse_speculative_config
from planner.catalog.gpus import CUSTOM_GPU_ID, get_gpu
from planner.catalog.hub import parse_model
from planner.errors import BadValue, InvalidParameterError, PlannerError
from planner.links.rules import SHOWN_CHARS, last_value, no_usable_value, show
from planner.values import format_value, parse_choice, parse_flag, parse_number

__all__ = [
    "COUNT_KEY",
    "DEFAULT_CUSTOM_GPU_MEMORY_GIB",
    "MAX_PARAMS",
    "MAX_SCENARIOS",
    "MAX_SPEC_VALUE_CHARS",
    "MAX_VALUE_CHARS",
    "PAGE_KEYS",
    "DecodedState",
    "decode",
    "encode",
    "parse_field",
    "scenario_key",
]

#: Most scenarios a URL can hold.
MAX_SCENARIOS = 4
#: Most query parameters :func:`decode` reads; the rest are ignored with one warning.
MAX_PARAMS = 64
#: Longest string value accepted.
MAX_VALUE_CHARS = 200
#: Longest ``speculative_config`` accepted (a JSON object with a draft's repo id and a few of vLLM's keys).
MAX_SPEC_VALUE_CHARS = 1000
#: The key holding the number of scenarios.
COUNT_KEY = "scenarios"
#: Page-level keys (context range of the concurrency chart, tokens).
PAGE_KEYS = ("min_context", "max_context")
#: Range of the page-level context keys, tokens.
_CONTEXT_LIMITS = (1, 10_485_760)
#: Memory a ``gpu=custom`` link without ``custom_gpu_memory_gib`` gets, GiB (the editor's default too).
DEFAULT_CUSTOM_GPU_MEMORY_GIB = 80.0

_DEFAULT = Scenario()
_FIELDS = tuple(f.name for f in fields(Scenario))
_CHOICES: dict[str, tuple[str | None, ...]] = {
    "engine": ENGINES,
    "entry_point": ENTRY_POINTS,
    "dtype": DTYPES,
    "quantization": QUANTIZATION_CHOICES,
    "kv_cache_dtype": KV_CACHE_DTYPES,
    "weight_quant": ARTICLE_PRECISIONS,
    "kv_quant": ARTICLE_PRECISIONS,
}
_INT_FIELDS = INT_FIELDS
_FLOAT_FIELDS = frozenset(LIMITS) - INT_FIELDS
_BOOL_FIELDS = frozenset({"enforce_eager"})
#: ``0.19.0``, ``v0.11``, ``3.3.7``, ``0.9.0-v0``: major.minor, optional patch and an ASCII suffix.
_VERSION = re.compile(r"v?[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,6})?([-+.][A-Za-z0-9.]{1,20})?")


@dataclass(frozen=True)
class DecodedState:
    """What a query string holds.

    Attributes:
        scenarios: one to four scenarios (defaults where the URL says nothing or something bad).
        warnings: one line per bad or ignored parameter, naming it, its value and what is accepted.
        min_context / max_context: the concurrency chart's context range in tokens, or ``None``.
    """

    scenarios: tuple[Scenario, ...]
    warnings: tuple[str, ...] = ()
    min_context: int | None = None
    max_context: int | None = None


def scenario_key(index: int, field_name: str) -> str:
    """The query key of ``field_name`` for scenario ``index`` (0-based): ``gpu``, ``s2.gpu``, ..."""
    return field_name if index == 0 else f"s{index + 1}.{field_name}"


def parse_field(name: str, text: str) -> object:
    """One scenario field from its text, as a link gives it (the editor's number boxes read typed text with it too).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    if name in _CHOICES:
        return parse_choice(text, _CHOICES[name])
    if name in _BOOL_FIELDS:
        return parse_flag(text)
    if name == "speculative_config":
        try:
            return parse_speculative_config(text)
        except InvalidParameterError as exc:
            raise BadValue(exc.accepted) from None
    if name == "max_model_len":
        try:
            return parse_max_model_len(text)
        except InvalidParameterError as exc:
            raise BadValue(exc.accepted) from None
    if name in _INT_FIELDS or name in _FLOAT_FIELDS:
        low, high = LIMITS[name]
        return parse_number(text, low, high, integer=name in _INT_FIELDS)
    if name == "gpu":
        if text == CUSTOM_GPU_ID:
            return text
        try:
            return get_gpu(text).id
        except PlannerError:
            raise BadValue("a catalog GPU id such as h100-sxm-80gb, or custom") from None
    if name == "model":
        return parse_model(text)
    if name == "engine_version":
        if len(text) > 40 or not _VERSION.fullmatch(text):
            raise BadValue("a version such as 0.19.0")
        return text
    raise BadValue("a known parameter")  # pragma: no cover - every field is handled above


def _split_key(key: str) -> tuple[int, str] | None:
    """``"s3.gpu"`` → ``(2, "gpu")``; ``"gpu"`` → ``(0, "gpu")``; anything else → ``None``."""
    index, name = 0, key
    if len(key) > 3 and key[0] == "s" and key[1] in "234" and key[2] == ".":
        index, name = int(key[1]) - 1, key[3:]
    return (index, name) if name in _FIELDS else None


def decode(params: Mapping[str, str | Sequence[str]], *, foreign: Collection[str] = ()) -> DecodedState:
    """Read scenarios from query parameters; never raises.

    Args:
        params: ``st.query_params.to_dict()`` (one string per key) or a dict of lists (every value
            of a repeated key; the last one is used).
        foreign: keys another codec of the same page reads (e.g. :data:`planner.links.performance.KEYS`):
            skipped here, neither parsed nor reported, and named among the accepted keys of the unknown-key
            warning.

    Returns:
        The scenarios (at least one), one warning per bad or ignored parameter, and the page keys.
    """
    warnings: list[str] = []
    values: list[dict[str, object]] = [{} for _ in range(MAX_SCENARIOS)]
    page: dict[str, int] = {}
    unknown: list[str] = []
    count: int | None = None
    highest = 0
    items = list(params.items()) if isinstance(params, Mapping) else []
    if len(items) > MAX_PARAMS:
        warnings.append(
            f"{len(items) - MAX_PARAMS} parameters after the first {MAX_PARAMS} were ignored "
            f"(accepted: at most {MAX_PARAMS})"
        )
        items = items[:MAX_PARAMS]
    for raw_key, raw_value in items:
        key = raw_key if isinstance(raw_key, str) else str(raw_key)
        if key in foreign:
            continue
        if len(key) > SHOWN_CHARS:
            unknown.append(show(key))
            continue
        text, times = last_value(raw_value)
        if text is None:
            warnings.append(no_usable_value(key, raw_value))
            continue
        text = text.strip()
        split = _split_key(key)
        if split is not None:
            highest = max(highest, split[0] + 1)
        try:
            limit = MAX_SPEC_VALUE_CHARS if split is not None and split[1] == "speculative_config" else MAX_VALUE_CHARS
            if len(text) > limit:
                raise BadValue(f"at most {limit} characters")
            if key == COUNT_KEY:
                count = int(parse_number(text, 1, MAX_SCENARIOS, integer=True))  # type: ignore[arg-type]
            elif key in PAGE_KEYS:
                page[key] = int(parse_number(text, *_CONTEXT_LIMITS, integer=True))  # type: ignore[arg-type]
            elif split is not None:
                index, name = split
                values[index][name] = parse_field(name, text)
            else:
                unknown.append(show(key))
                continue
        except BadValue as bad:
            warnings.append(f"{key}={show(text)} is not valid: expected {bad.accepted}; using the default")
            continue
        if times > 1:
            warnings.append(f"{key} was given {times} times; using the last value {show(text)}")
    if unknown:
        warnings.append(
            "ignored unknown parameters: "
            + ", ".join(unknown)
            + f" (accepted: Scenario fields, s2.–s{MAX_SCENARIOS}. prefixes, {COUNT_KEY}, "
            + ", ".join((*PAGE_KEYS, *foreign))
            + ")"
        )
    n = count or max(1, highest)
    if highest > n:
        warnings.append(f"{COUNT_KEY}={n}: parameters of scenarios {n + 1}–{highest} were ignored")
    scenarios = tuple(_build(values[i], i, warnings) for i in range(n))
    low, high = page.get("min_context"), page.get("max_context")
    if low is not None and high is not None and low >= high:
        warnings.append(f"min_context={low} is not below max_context={high}: expected min < max; using defaults")
        low = high = None
    return DecodedState(scenarios, tuple(warnings), low, high)


def _build(given: dict[str, object], index: int, warnings: list[str]) -> Scenario:
    """A scenario from decoded fields; a field the planner's ``validate`` still rejects is dropped.

    ``gpu=custom`` without ``custom_gpu_memory_gib`` gets :data:`DEFAULT_CUSTOM_GPU_MEMORY_GIB` and a
    warning, so every page plans the same scenario (the planner itself rejects a custom GPU without
    memory).
    """
    if given.get("gpu") == CUSTOM_GPU_ID and given.get("custom_gpu_memory_gib") is None:
        key = scenario_key(index, "custom_gpu_memory_gib")
        # a value given but refused has its own line already ("…; using the default"): one line per parameter
        if not any(w.startswith(f"{key}=") for w in warnings):
            warnings.append(f"{key} missing; using {DEFAULT_CUSTOM_GPU_MEMORY_GIB:g} (GiB) for gpu=custom")
        given["custom_gpu_memory_gib"] = DEFAULT_CUSTOM_GPU_MEMORY_GIB
    for _ in range(len(given) + 1):
        try:
            return validate(Scenario(**given))
        except InvalidParameterError as exc:
            if exc.name not in given:
                break
            warnings.append(f"{scenario_key(index, exc.name)}: {exc}; using the default")
            given.pop(exc.name)
    return Scenario()


def encode(
    scenarios: Sequence[Scenario], *, min_context: int | None = None, max_context: int | None = None
) -> dict[str, str]:
    """Write scenarios (and the page keys) as query parameters, non-default fields only.

    Args:
        scenarios: one to four scenarios.
        min_context / max_context: the concurrency chart's range in tokens, or ``None``.

    Returns:
        A flat ``{key: value}`` dict for ``st.query_params.from_dict``; ``decode(encode(x))``
        gives ``x`` back for valid scenarios whose ``gpu`` is a catalog id and whose ``model``
        is a catalog id or a Hub repo id.

    Raises:
        InvalidParameterError: no scenario, or more than :data:`MAX_SCENARIOS`.
    """
    if not 1 <= len(scenarios) <= MAX_SCENARIOS:
        raise InvalidParameterError("scenarios", len(scenarios), f"1 to {MAX_SCENARIOS} scenarios")
    out: dict[str, str] = {}
    if len(scenarios) > 1:
        out[COUNT_KEY] = str(len(scenarios))
    for index, scenario in enumerate(scenarios):
        for name in _FIELDS:
            value = getattr(scenario, name)
            if value != getattr(_DEFAULT, name) and value is not None:
                auto = name == "max_model_len" and value == MAX_MODEL_LEN_AUTO
                if isinstance(value, SpeculativeConfig):
                    out[scenario_key(index, name)] = value.to_text()
                else:
                    out[scenario_key(index, name)] = "auto" if auto else format_value(value)
    if min_context is not None:
        out["min_context"] = str(min_context)
    if max_context is not None:
        out["max_context"] = str(max_context)
    return out
