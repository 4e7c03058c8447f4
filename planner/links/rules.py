"""The link policy every page's URL codec follows: bounded reading, short echoes, one warning per bad parameter.

Text → value rules (numbers, flags, choices, lists) are the ground floor's (:mod:`planner.values`), and each setting's
rule is declared on its field (:mod:`planner.fields`); this module holds what is particular to reading a URL:

* at most ``max_params`` parameters are read (a link cannot make the server loop over an unbounded query);
* a repeated key warns and its LAST value is used; a value that is not a string warns and is skipped, and so does one
  longer than :data:`MAX_VALUE_CHARS`;
* a value the field parser rejects warns ``key=<value> is not valid: expected <accepted>; the default is used``
  with the value cut to :data:`SHOWN_CHARS` characters;
* unknown keys are listed by name only: their values are never echoed (one could be a pasted API key).

:func:`decode_query` applies it; :class:`planner.links.codec.SettingsCodec` and the scenario codec
(:mod:`planner.links.budget`) are built on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from planner.errors import BadValue

__all__ = [
    "MAX_VALUE_CHARS",
    "SHOWN_CHARS",
    "cut",
    "decode_query",
    "last_value",
    "no_usable_value",
    "show",
]

#: Longest echo of a rejected value or key, characters.
SHOWN_CHARS = 40
#: Longest value :func:`decode_query` hands to a field parser, characters: the longest any parameter takes (the Live
#: Compare prompt, :data:`planner.compare.settings.MAX_PROMPT_CHARS`), so no parser reads a megabyte of a link.
MAX_VALUE_CHARS = 2000


def cut(text: str) -> str:
    """``text`` cut to :data:`SHOWN_CHARS` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def show(value: object) -> str:
    """``repr(value)`` cut to :data:`SHOWN_CHARS` characters (with an ellipsis), safe to put in a warning."""
    return cut(repr(value))


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
