"""How the pages and tables write a value: "n/a" for missing data, GiB, ms, percentages, counts and rates.

The one place numbers become display text (house rule: SI units stored, missing data ``None`` shown as "n/a").
Every function takes the value in its SI unit (bytes, seconds, a fraction, per second) and returns text with
thousands separators; ``None`` and NaN give :data:`NA`. Nothing here reads or rounds for arithmetic: it is for
showing only.

=================  =====================================  ==========================
function           takes                                  writes
=================  =====================================  ==========================
:func:`text`       anything                               ``"vllm"``, ``"n/a"``
:func:`number`     a number                               ``"1,234.57"``
:func:`count`      a count (tokens, blocks, requests)     ``"131,072"``
:func:`gib`        bytes                                  ``"15.02 GiB"`` (2^30 B)
:func:`ms`         seconds                                ``"12.3 ms"``
:func:`percent`    a fraction                             ``"95%"``, ``"+12.3%"``
:func:`rate`       a per-second value and its unit        ``"2,345 tok/s"``
:func:`cell`       a table cell                           ``"1,234.57"``, ``"yes"``
=================  =====================================  ==========================

Examples:
    >>> gib(16_060_522_496), ms(0.0123), percent(0.95, 0), percent(-0.042, signed=True)
    ('14.96 GiB', '12.3 ms', '95%', '-4.2%')
    >>> count(131_072), rate(2345.4, "tok/s"), number(None)
    ('131,072', '2,345 tok/s', 'n/a')
"""

from __future__ import annotations

import math

import pandas as pd

from planner.units import GIB

__all__ = ["NA", "cell", "count", "gib", "is_missing", "ms", "number", "percent", "rate", "text"]

#: What a missing value reads.
NA = "n/a"


def is_missing(value: object) -> bool:
    """Whether ``value`` is missing data: ``None``, a float NaN (pandas writes a missing number as NaN), or pandas'
    ``NA`` / ``NaT``."""
    if isinstance(value, float):
        return math.isnan(value)
    return value is None or value is pd.NA or value is pd.NaT


def text(value: object) -> str:
    """``str(value)``, or :data:`NA` when it is missing or empty (``None``, NaN, ``""``)."""
    return NA if is_missing(value) or value == "" else str(value)


def number(value: float | None, digits: int = 2) -> str:
    """``value`` with thousands separators and ``digits`` decimals: ``"1,234.57"``; :data:`NA` when missing."""
    return NA if is_missing(value) else f"{value:,.{digits}f}"


def count(value: float | None) -> str:
    """A whole count (tokens, blocks, requests, bytes) with thousands separators: ``"131,072"``; a float is rounded
    to the nearest whole; :data:`NA` when missing."""
    if is_missing(value):
        return NA
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def gib(value_bytes: float | None, digits: int = 2, *, unit: bool = True) -> str:
    """Bytes in GiB (2^30 bytes, :data:`planner.units.GIB`): ``"14.96 GiB"``; ``unit=False`` leaves out ``" GiB"``
    (a column already headed in GiB); :data:`NA` when missing."""
    if is_missing(value_bytes):
        return NA
    return number(value_bytes / GIB, digits) + (" GiB" if unit else "")


def ms(value_s: float | None, digits: int = 1, *, unit: bool = True) -> str:
    """Seconds in milliseconds: ``"12.3 ms"``; ``unit=False`` leaves out ``" ms"`` (a column headed in ms);
    :data:`NA` when missing."""
    if is_missing(value_s):
        return NA
    return number(value_s * 1000.0, digits) + (" ms" if unit else "")


def percent(fraction: float | None, digits: int = 1, *, signed: bool = False) -> str:
    """A fraction as a percentage: ``0.95`` → ``"95.0%"``; ``signed`` writes the sign of a relative error
    (``"+12.3%"``); :data:`NA` when missing."""
    if is_missing(fraction):
        return NA
    return f"{fraction:{'+' if signed else ''}.{digits}%}"


def rate(value_per_s: float | None, unit: str, digits: int = 0) -> str:
    """A per-second value with its unit: ``rate(2345.4, "tok/s")`` → ``"2,345 tok/s"``; :data:`NA` when missing."""
    return NA if is_missing(value_per_s) else f"{number(value_per_s, digits)} {unit}"


def cell(value: object, digits: int = 2) -> object:
    """A table cell for reading: :data:`NA` when missing, ``"yes"``/``"no"`` for a boolean, a float as
    :func:`number`; any other value (an integer, text) as it is, for the data grid to show."""
    if is_missing(value):
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value, digits)
    return value
