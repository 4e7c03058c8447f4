"""Shared rules of the pages' URL codecs: bounded numbers, short echoes, one warning per bad parameter.

A codec module (:mod:`planner.compare_state`, :mod:`planner.loadtest_state`) declares its keys and a per-field
parser; :func:`decode_query` applies the common policy:

* at most ``max_params`` parameters are read (a link cannot make the server loop over an unbounded query);
* a repeated key warns and its LAST value is used;
* a value the field parser rejects warns ``key=<value> is not valid: expected <accepted>; the default is used``
  with the value cut to :data:`SHOWN_CHARS` characters;
* unknown keys are listed by name only: their values are never echoed (one could be a pasted API key).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

__all__ = [
    "DECIMAL",
    "MAX_ENDPOINTS",
    "NAME_RE",
    "SHOWN_CHARS",
    "BadValue",
    "decode_query",
    "format_value",
    "parse_endpoint_names",
    "parse_number",
    "show",
]

#: Longest echo of a rejected value or key, characters.
SHOWN_CHARS = 40
#: A decimal number as links write it. ``float()`` alone also reads ``1_0``, ``١٢٨`` (other scripts' digits) and
#: ``infinity``, which no link written here holds.
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


#: An endpoint NAME as links carry it (:class:`planner.endpoints.Endpoint` names), so a URL, a port or a key
#: cannot be one.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
#: Most endpoint names a link selects.
MAX_ENDPOINTS = 16


class BadValue(Exception):
    """Raised by a field parser: the text is not acceptable; ``accepted`` says what is."""

    def __init__(self, accepted: str) -> None:
        super().__init__(accepted)
        self.accepted = accepted


def show(text: str) -> str:
    """``repr(text)`` cut to :data:`SHOWN_CHARS` characters (with an ellipsis), safe to put in a warning."""
    shown = repr(text)
    return shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 1] + "…"


def format_value(value: object) -> str:
    """A number or string as a link writes it: ``2.0`` → ``"2"``, ``inf`` → ``"inf"``, ``True`` → ``"true"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def parse_number(
    text: str,
    low: float,
    high: float,
    *,
    integer: bool = False,
    optional: bool = False,
    allow_inf: bool = False,
    low_open: bool = False,
) -> int | float | None:
    """A number in ``[low, high]`` (``(low, high]`` with ``low_open``) from link text.

    Args:
        text: The parameter's text.
        low: Smallest accepted value.
        high: Largest accepted finite value.
        integer: Only whole numbers; returns an ``int``.
        optional: ``""`` or ``"none"`` gives None.
        allow_inf: ``"inf"`` gives ``math.inf`` (e.g. a burst request rate).
        low_open: ``low`` itself is refused.

    Returns:
        The number (or None / inf as allowed).

    Raises:
        BadValue: anything else (NaN, out of range, not a number, a fraction for an integer).
    """
    if integer:
        accepted = f"an integer from {int(low)} to {int(high)}"
    else:
        accepted = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
    if allow_inf:
        accepted += " or inf"
    if optional:
        accepted += " (or none)"
    stripped = text.strip().lower()
    if optional and stripped in ("", "none"):
        return None
    if allow_inf and stripped in ("inf", "+inf", "infinity"):
        return math.inf
    if len(stripped) > 64 or not DECIMAL.fullmatch(stripped):
        raise BadValue(accepted)
    number = float(stripped)
    if not math.isfinite(number) or not low <= number <= high or (low_open and number == low):
        raise BadValue(accepted)
    if integer:
        if not number.is_integer():
            raise BadValue(accepted)
        return int(stripped) if re.fullmatch(r"\d+", stripped) else int(number)
    return number


def parse_endpoint_names(text: str) -> tuple[str, ...]:
    """Comma-separated endpoint names, duplicates dropped in order.

    Raises:
        BadValue: more than :data:`MAX_ENDPOINTS` names, or a part that is not a name (:data:`NAME_RE`).
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    if len(names) > MAX_ENDPOINTS or any(not NAME_RE.match(n) for n in names):
        raise BadValue(f"up to {MAX_ENDPOINTS} endpoint names (letters, digits, '_', '.', '-'), comma separated")
    return tuple(dict.fromkeys(names))


def format_endpoint_names(names: Sequence[str]) -> str | None:
    """``"a,b"`` for the valid names (:data:`NAME_RE`) of ``names``; None when none is valid."""
    valid = [n for n in names if NAME_RE.match(n)]
    return ",".join(valid) if valid else None


def encode_settings(
    settings: Any, default: Any, keys: Mapping[str, str], special: Mapping[str, Callable[[Any], str | None]]
) -> dict[str, str]:
    """Query parameters of a settings dataclass: only fields that differ from ``default``.

    Args:
        settings: A dataclass instance.
        default: The instance a page opens with.
        keys: Field name → query key.
        special: Field name → formatter for fields that are not plain numbers/strings; a formatter returning None
            leaves the field out of the link.

    Returns:
        Query key → text; None values are written ``"none"``, numbers with :func:`format_value`.
    """
    out: dict[str, str] = {}
    for f in fields(settings):
        value = getattr(settings, f.name)
        if value == getattr(default, f.name):
            continue
        plain = "none" if value is None else format_value(value)
        text = special[f.name](value) if f.name in special else plain
        if text is not None:
            out[keys[f.name]] = text
    return out


def decode_query(
    query: Mapping[str, str | Sequence[str]],
    field_of: Mapping[str, str],
    parse: Callable[[str, str], object],
    *,
    max_params: int = 32,
) -> tuple[dict[str, object], list[str]]:
    """Parse a query string with a codec's keys; never raises.

    Args:
        query: Parameter name to its value or to all its values.
        field_of: Query key → field name.
        parse: ``parse(field_name, text)`` → value, raising :class:`BadValue`.
        max_params: Most parameters read.

    Returns:
        ``(values by field name, warning lines)``.
    """
    warnings: list[str] = []
    values: dict[str, object] = {}
    unknown: list[str] = []
    items = list(query.items())
    if len(items) > max_params:
        warnings.append(f"only the first {max_params} of {len(items)} parameters are read")
        items = items[:max_params]
    for key, raw in items:
        name = field_of.get(key)
        if name is None:
            unknown.append(key if len(key) <= SHOWN_CHARS else key[: SHOWN_CHARS - 1] + "…")
            continue
        all_values = [raw] if isinstance(raw, str) else list(raw)
        if not all_values:
            continue
        if len(all_values) > 1:
            warnings.append(f"{key} is given {len(all_values)} times; the last value is used")
        text = str(all_values[-1])
        try:
            values[name] = parse(name, text)
        except BadValue as bad:
            warnings.append(f"{key}={show(text)} is not valid: expected {bad.accepted}; the default is used")
    if unknown:
        warnings.append(f"unknown parameter(s) {', '.join(unknown)} ignored; a link holds only {', '.join(field_of)}")
    return values, warnings
