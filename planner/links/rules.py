"""Shared rules of the pages' URL codecs: bounded numbers, short echoes, one warning per bad parameter.

Every parsing and formatting rule that more than one codec uses lives here, once: numbers (:func:`parse_number`),
flags (:func:`parse_flag`), choices (:func:`parse_choice`), endpoint names, the last value of a repeated key
(:func:`last_value`), short echoes (:func:`show`) and link text of a value (:func:`format_value`). The module imports
nothing from ``planner``, so a domain settings module may use its parsers too (e.g. the goodput SLO format of
:mod:`planner.loadtest.settings`).

A codec module (:mod:`planner.links.compare`, :mod:`planner.links.loadtest`) declares its keys and a per-field
parser; :func:`decode_query` (and :func:`decode_settings` on top of it) applies the common policy:

* at most ``max_params`` parameters are read (a link cannot make the server loop over an unbounded query);
* a repeated key warns and its LAST value is used; a value that is not a string warns and is skipped, and so does one
  longer than :data:`MAX_VALUE_CHARS`;
* a value the field parser rejects warns ``key=<value> is not valid: expected <accepted>; the default is used``
  with the value cut to :data:`SHOWN_CHARS` characters;
* unknown keys are listed by name only: their values are never echoed (one could be a pasted API key).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

__all__ = [
    "DECIMAL",
    "MAX_ENDPOINTS",
    "MAX_VALUE_CHARS",
    "NAME_RE",
    "SHOWN_CHARS",
    "BadValue",
    "cut",
    "decode_query",
    "decode_settings",
    "encode_settings",
    "format_endpoint_names",
    "format_value",
    "is_none",
    "last_value",
    "no_usable_value",
    "parse_choice",
    "parse_endpoint_names",
    "parse_flag",
    "parse_number",
    "show",
]

#: Longest echo of a rejected value or key, characters.
SHOWN_CHARS = 40
#: Longest value :func:`decode_query` hands to a field parser, characters: the longest any parameter takes (the Live
#: Compare prompt, :data:`planner.compare.settings.MAX_PROMPT_CHARS`), so no parser reads a megabyte of a link.
MAX_VALUE_CHARS = 2000
#: A decimal number as links write it. ``float()`` alone also reads ``1_0``, ``١٢٨`` (other scripts' digits) and
#: ``infinity``, which no link written here holds.
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


#: An endpoint NAME as links carry it (:class:`planner.serving.endpoints.Endpoint` names), so a URL, a port or a key
#: cannot be one.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
#: Most endpoint names a link selects.
MAX_ENDPOINTS = 16
#: Texts of a true / false flag (compared in lower case).
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class BadValue(Exception):
    """Raised by a field parser: the text is not acceptable; ``accepted`` says what is."""

    def __init__(self, accepted: str) -> None:
        super().__init__(accepted)
        self.accepted = accepted


def cut(text: str) -> str:
    """``text`` cut to :data:`SHOWN_CHARS` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def show(value: object) -> str:
    """``repr(value)`` cut to :data:`SHOWN_CHARS` characters (with an ellipsis), safe to put in a warning."""
    return cut(repr(value))


def format_value(value: object) -> str:
    """A number or string as a link writes it: ``2.0`` → ``"2"``, ``inf`` → ``"inf"``, ``True`` → ``"true"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def is_none(text: str) -> bool:
    """Whether link text means "no value": ``""`` or ``none`` (any case, surrounding spaces ignored)."""
    return text.strip().lower() in ("", "none")


def parse_flag(text: str) -> bool:
    """A boolean from link text: ``true``/``1``/``yes``/``on`` or ``false``/``0``/``no``/``off`` (any case).

    Raises:
        BadValue: anything else.
    """
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadValue("true or false")


def parse_choice(text: str, choices: Sequence[str | None]) -> str | None:
    """One of ``choices``, exactly as written; ``""`` or ``none`` gives None when None is one of them.

    Raises:
        BadValue: anything else; the accepted text lists the choices.
    """
    if None in choices and is_none(text):
        return None
    if text in choices:
        return text
    raise BadValue("one of " + ", ".join(c for c in choices if c is not None))


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
    if optional and is_none(stripped):
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


def last_value(raw: object) -> tuple[str | None, int]:
    """The value a parameter is read as, and how many values it was given.

    Args:
        raw: One value, or every value of a repeated key (a sequence).

    Returns:
        ``(last value, count)``; the value is None when it is not a string (count 0 for an empty sequence).
    """
    if isinstance(raw, str):
        return raw, 1
    if isinstance(raw, Sequence):
        if not raw:
            return None, 0
        last = raw[-1]
        return (last if isinstance(last, str) else None), len(raw)
    return None, 1


def no_usable_value(key: str, raw: object) -> str:
    """The warning for a parameter whose (last) value is not a string."""
    return f"{key}: no usable value in {show(raw)}; expected a string"


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
            unknown.append(cut(key))
            continue
        text, times = last_value(raw)
        if times == 0:
            continue
        if text is None:
            warnings.append(no_usable_value(key, raw))
            continue
        if times > 1:
            warnings.append(f"{key} is given {times} times; the last value is used")
        try:
            if len(text) > MAX_VALUE_CHARS:
                raise BadValue(f"at most {MAX_VALUE_CHARS:,} characters")
            values[name] = parse(name, text)
        except BadValue as bad:
            warnings.append(f"{key}={show(text)} is not valid: expected {bad.accepted}; the default is used")
    if unknown:
        warnings.append(f"unknown parameter(s) {', '.join(unknown)} ignored; a link holds only {', '.join(field_of)}")
    return values, warnings


def decode_settings(
    query: Mapping[str, str | Sequence[str]],
    default: Any,
    keys: Mapping[str, str],
    parse: Callable[[str, str], object],
    *,
    max_params: int = 32,
) -> tuple[Any, tuple[str, ...]]:
    """A settings dataclass from a query string (:func:`decode_query`'s policy); the inverse of :func:`encode_settings`.

    Args:
        query: Parameter name to its value or to all its values.
        default: The settings a page opens with; a field the query does not give (or gives wrong) keeps its value.
        keys: Field name → query key.
        parse: ``parse(field_name, text)`` → value, raising :class:`BadValue`.
        max_params: Most parameters read.

    Returns:
        ``(settings, warning lines)``.
    """
    field_of = {key: name for name, key in keys.items()}
    values, warnings = decode_query(query, field_of, parse, max_params=max_params)
    return replace(default, **values), tuple(warnings)
