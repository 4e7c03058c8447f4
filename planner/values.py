"""Values from text: the one reading of a number, a true/false flag, a choice and a list that a user types.

Links, number boxes, command-line lists and data files read text with these rules, so ``1e3`` means the same
everywhere and every refusal is one :class:`~planner.errors.BadValue` whose ``accepted`` says what is accepted. The
module imports nothing from ``planner`` but :mod:`planner.errors` (the ground floor: any package may use it).

* :func:`parse_number`: a bounded decimal (:data:`DECIMAL`), an integer where asked, ``inf`` or ``none`` where
  allowed; :func:`format_value` writes a value back as links write it (``2.0`` → ``2``).
* :func:`parse_flag`, :func:`parse_choice`: ``true``/``false`` and one of a set.
* :func:`split_list`: the one list splitter (commas, and spaces unless they belong to the items);
  :func:`parse_list` reads each part with an item parser and bounds the count.

Example:
    >>> parse_number("1e3", 1, 4096, integer=True)
    1000
    >>> parse_list("1, 2 4", lambda t: parse_number(t, 0, 10), accepted="rates")
    (1.0, 2.0, 4.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from planner.errors import BadValue

__all__ = [
    "DECIMAL",
    "format_value",
    "is_none",
    "number_accepted",
    "parse_choice",
    "parse_flag",
    "parse_list",
    "parse_number",
    "split_list",
]

T = TypeVar("T")

#: A decimal number as links write it. ``float()`` alone also reads ``1_0``, ``١٢٨`` (other scripts' digits) and
#: ``infinity``, which no link written here holds.
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: Texts of a true / false flag (compared in lower case).
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
#: Longest text read as a number (a number of any accepted range is far shorter).
_MAX_NUMBER_CHARS = 64


def format_value(value: object) -> str:
    """A number or string as a link writes it: ``2.0`` → ``"2"``, ``inf`` → ``"inf"``, ``True`` → ``"true"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def is_none(text: str) -> bool:
    """Whether text means "no value": ``""`` or ``none`` (any case, surrounding spaces ignored)."""
    return text.strip().lower() in ("", "none")


def parse_flag(text: str) -> bool:
    """A boolean from text: ``true``/``1``/``yes``/``on`` or ``false``/``0``/``no``/``off`` (any case).

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


def number_accepted(
    low: float,
    high: float,
    *,
    integer: bool = False,
    optional: bool = False,
    allow_inf: bool = False,
    low_open: bool = False,
) -> str:
    """What :func:`parse_number` accepts with these bounds, in words: ``an integer from 1 to 1024 (or none)``."""
    if integer:
        accepted = f"an integer from {int(low)} to {int(high)}"
    else:
        accepted = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
    if allow_inf:
        accepted += " or inf"
    if optional:
        accepted += " (or none)"
    return accepted


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
    """A number in ``[low, high]`` (``(low, high]`` with ``low_open``) from text.

    Args:
        text: The text, a decimal (:data:`DECIMAL`); spaces around and case ignored.
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
    accepted = number_accepted(low, high, integer=integer, optional=optional, allow_inf=allow_inf, low_open=low_open)
    stripped = text.strip().lower()
    if optional and is_none(stripped):
        return None
    if allow_inf and stripped in ("inf", "+inf", "infinity"):
        return math.inf
    if len(stripped) > _MAX_NUMBER_CHARS or not DECIMAL.fullmatch(stripped):
        raise BadValue(accepted)
    number = float(stripped)
    if not math.isfinite(number) or not low <= number <= high or (low_open and number == low):
        raise BadValue(accepted)
    if integer:
        if not number.is_integer():
            raise BadValue(accepted)
        return int(stripped) if re.fullmatch(r"\d+", stripped) else int(number)
    return number


def split_list(text: str, *, spaces: bool = True) -> list[str]:
    """The parts of a typed list: split at commas (and at spaces, unless ``spaces`` is False because an item may
    hold one, as a stop string does), each stripped, empty parts dropped.

    Example:
        >>> split_list("a, b  c,,")
        ['a', 'b', 'c']
        >>> split_list("Human: , ###", spaces=False)
        ['Human:', '###']
    """
    parts = re.split(r"[,\s]+" if spaces else ",", text)
    return [part.strip() for part in parts if part.strip()]


def parse_list(
    text: str,
    item: Callable[[str], T],
    *,
    accepted: str,
    least: int = 0,
    most: int | None = None,
    spaces: bool = True,
) -> tuple[T, ...]:
    """A typed list: :func:`split_list`, then ``item`` of each part.

    Args:
        text: The list as typed.
        item: One part's parser (raising :class:`~planner.errors.BadValue`).
        accepted: What the whole list accepts, for the error (an item's own refusal is replaced by it).
        least: Fewest parts.
        most: Most parts; None = no limit.
        spaces: Spaces separate parts too (see :func:`split_list`).

    Returns:
        Each part's value, in the order typed.

    Raises:
        BadValue: too few or too many parts, or a part ``item`` refuses; ``accepted`` is the list's.
    """
    parts = split_list(text, spaces=spaces)
    if len(parts) < least or (most is not None and len(parts) > most):
        raise BadValue(accepted)
    try:
        return tuple(item(part) for part in parts)
    except BadValue:
        raise BadValue(accepted) from None
