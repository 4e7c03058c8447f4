"""One explicit codec between the Sizing page's settings and a URL query string.

The settings (:class:`~planner.sizing.settings.SizingSettings`, its defaults, limits and list formats) live in
:mod:`planner.sizing.settings`; the SLO format in :mod:`planner.metrics.slo`. Keys follow ``python -m planner size``'s
flags (``--target-rate`` → ``target_rate``) and the Load Test's names where they mean the same (``input_len``,
``output_len``, ``burstiness``); every key is optional and only values that differ from
:data:`~planner.sizing.settings.DEFAULT` are written:

* ``model`` (a catalog id or a Hugging Face repo id, the scenario links' rule); ``target_rate`` (req/s,
  0.001–100000); ``input_len`` (1–131072), ``output_len`` (1–32768), ``burstiness`` (0.01–100);
* ``slo``: percentile SLOs, ``ttft_p99_ms=1000,tpot_p99_ms=50``;
* each setting with a fixed set of values under its field's name (:data:`~planner.sizing.settings.CHOICE_SETTINGS`):
  ``slo_estimate`` (``pessimistic`` or ``point``: what the SLOs are checked against);
* ``gpus``: catalog GPU ids with an optional GPUs per node, ``h100-sxm-80gb:8,l4`` (none = the whole catalog);
  ``max_gpus`` (per replica, 1–64);
* ``price``: the user's prices, ``h100-sxm-80gb=2.49,l4=0.8`` (USD per GPU-hour);
* ``headroom`` (0–1); ``quantization`` (``none,fp8,awq,...``); ``kv_cache_dtype`` (``auto,fp8``);
  ``max_model_len`` (16–10485760 or none), ``gpu_memory_utilization`` (0.01–1);
* ``row``: the rank of the option whose launch command is shown (1 = the cheapest).

:func:`decode` never raises (the rules of :mod:`planner.links.rules`): a bad value warns, naming the key, its value
and what is accepted, and the default is used.

Example:
    >>> encode(DEFAULT, row=2)
    {'row': '2'}
    >>> decode({"target_rate": "5", "slo": "tpot_p99_ms=40"}).settings.target_rate
    5.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.errors import InvalidParameterError
from planner.links.budget import parse_model
from planner.links.rules import BadValue, decode_query, format_value, parse_choice, parse_number, show
from planner.metrics.slo import SLO_ACCEPTED, format_slos, parse_slos
from planner.sizing.settings import (
    CHOICE_SETTINGS,
    DEFAULT,
    LIMITS,
    QUANTIZATIONS,
    SizingSettings,
    format_gpus,
    format_prices,
    parse_choices,
    parse_gpus,
    parse_prices,
)

__all__ = ["KEYS", "MAX_ROW", "DecodedSizing", "decode", "encode", "parse_field"]

#: Query keys, in the order they are written.
KEYS: tuple[str, ...] = (
    "model",
    "target_rate",
    "input_len",
    "output_len",
    "burstiness",
    "slo",
    *(choice.name for choice in CHOICE_SETTINGS),
    "gpus",
    "max_gpus",
    "price",
    "headroom",
    "quantization",
    "kv_cache_dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "row",
)
#: Highest ``row`` a link may ask for.
MAX_ROW = 1000
_INTEGERS = ("input_len", "output_len", "max_gpus", "max_model_len")
_CHOICES = {choice.name: choice.choices for choice in CHOICE_SETTINGS}
_MAX_PARAMS = 32


@dataclass(frozen=True)
class DecodedSizing:
    """What a query string holds.

    Attributes:
        settings: the settings (defaults where the link is silent or wrong).
        row: the rank of the option whose launch command is shown.
        warnings: one line per bad parameter.
    """

    settings: SizingSettings = DEFAULT
    row: int = 1
    warnings: tuple[str, ...] = ()


def parse_field(name: str, text: str) -> object:
    """One setting (a query key of :data:`KEYS`) from its text, as a link gives it (the page's number boxes read typed
    text with it too).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    if name == "model":
        return parse_model(text.strip())  # the scenario links' rule: a catalog id or a Hub repo id
    if name == "slo":
        try:
            return parse_slos([text])
        except InvalidParameterError:
            raise BadValue(SLO_ACCEPTED + " (comma separated)") from None
    if name == "gpus":
        return parse_gpus(text)
    if name == "price":
        return parse_prices([text])
    if name == "quantization":
        return parse_choices(text, QUANTIZATIONS)
    if name == "kv_cache_dtype":
        return parse_choices(text, KV_CACHE_DTYPES)
    if name == "row":
        return parse_number(text, 1, MAX_ROW, integer=True)
    if name in _CHOICES:
        return parse_choice(text.strip(), _CHOICES[name])
    low, high = LIMITS[name]
    return parse_number(
        text,
        low,
        high,
        integer=name in _INTEGERS,
        optional=name == "max_model_len",
    )


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedSizing:
    """The settings and the chosen row from query parameters; never raises.

    Args:
        query: parameter name to its value or to all its values (a repeated key warns; its last value is used).
    """
    values, warnings = decode_query(query, {k: k for k in KEYS}, parse_field, max_params=_MAX_PARAMS)
    row = int(values.pop("row", 1))  # type: ignore[call-overload]
    fields: dict[str, object] = {}
    for key, value in values.items():
        if key == "gpus":
            pairs = value  # type: ignore[assignment]
            fields["gpus"] = tuple(g for g, _ in pairs)  # type: ignore[attr-defined]
            fields["node_gpus"] = tuple((g, n) for g, n in pairs if n is not None)  # type: ignore[attr-defined]
        else:
            fields[
                {
                    "slo": "slos",
                    "price": "prices",
                    "quantization": "quantizations",
                    "kv_cache_dtype": "kv_cache_dtypes",
                }.get(key, key)
            ] = value
    settings = DEFAULT
    for name, value in fields.items():  # one field at a time, so one that does not go with the rest is named
        try:
            settings = replace(settings, **{name: value})
        except InvalidParameterError as exc:
            warnings.append(f"{name}={show(value)} is not valid: expected {exc.accepted}; the default is used")
    return DecodedSizing(settings, row, tuple(warnings))


def encode(settings: SizingSettings, *, row: int = 1) -> dict[str, str]:
    """Query parameters of ``settings`` and the chosen ``row``: only what differs from the defaults."""
    out: dict[str, str] = {}
    for key in KEYS:
        if key == "row":
            if row != 1:
                out["row"] = str(row)
            continue
        if key == "gpus":
            if settings.gpus:  # node sizes go with the GPUs they size
                out["gpus"] = format_gpus(settings.gpus, settings.node_gpus)
            continue
        name = {
            "slo": "slos",
            "price": "prices",
            "quantization": "quantizations",
            "kv_cache_dtype": "kv_cache_dtypes",
        }.get(key, key)
        value = getattr(settings, name)
        if value == getattr(DEFAULT, name):
            continue
        if key == "slo":
            out[key] = format_slos(value)
        elif key == "price":
            out[key] = format_prices(value)
        elif key in ("quantization", "kv_cache_dtype"):
            out[key] = ",".join(value)
        else:
            out[key] = "none" if value is None else format_value(value)
    return out
