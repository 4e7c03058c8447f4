"""User-supplied JSON and TOML text parsed into Python values, with the package's one-line errors.

Every boundary that parses text a user gives (uploads, pasted configs, files named on the command line, link
values) goes through :func:`json_value` or :func:`toml_table`, so malformed text and text nested too deeply for
Python's parsers (``"[" * 5000``, which makes :mod:`json` and :mod:`tomllib` raise ``RecursionError``) both end
as one :class:`MalformedTextError` line naming the input, where it fails and what is accepted.
"""

from __future__ import annotations

import json
import math
import tomllib
from typing import Any

from planner.errors import MalformedTextError

__all__ = ["MAX_COUNT", "finite_number", "json_lines", "json_value", "toml_table"]

#: Largest count (requests, tokens) read from a user's file: 2^53, the last integer a float (and a JSON reader in
#: another language) holds exactly, far above any benchmark and within a table's 64-bit integer column.
MAX_COUNT = 2**53


def json_value(text: str | bytes, *, name: str, accepted: str, line: int | None = None) -> Any:
    """``json.loads(text)``, raising :class:`MalformedTextError` instead of a decode or recursion error.

    Args:
        text: the JSON text (bytes are read as UTF-8).
        name: what the text is, for the message (a file name, ``"pasted config.json"``, a flag).
        accepted: what is accepted, for the message (``"JSON from vllm bench serve --save-result"``).
        line: the text's line number in its file when it is one line of JSON Lines (the message then names it).

    Raises:
        MalformedTextError: not valid JSON (the message gives the line and the parser's reason), not UTF-8, or nested
            too deeply to parse.
    """
    where = name if line is None else f"{name} line {line}"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = where if line is not None else f"{name} line {exc.lineno}"
        raise MalformedTextError(where, f"not valid JSON ({exc.msg})", accepted) from None
    except UnicodeDecodeError:
        raise MalformedTextError(where, "not UTF-8 text", accepted) from None
    except RecursionError:
        raise MalformedTextError(where, "nested too deeply to read", accepted) from None


def toml_table(text: str | bytes, *, name: str, accepted: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, raising :class:`MalformedTextError` instead of a decode or recursion error.

    Args:
        text: the TOML text (bytes are read as UTF-8, as TOML requires).
        name: what the text is, for the message (a file name).
        accepted: what is accepted, for the message.

    Raises:
        MalformedTextError: not UTF-8, not valid TOML (the message gives the parser's reason, with its line and
            column), or nested too deeply to parse.
    """
    try:
        return tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except UnicodeDecodeError:
        raise MalformedTextError(name, "not UTF-8 text", accepted) from None
    except tomllib.TOMLDecodeError as exc:
        raise MalformedTextError(name, f"not valid TOML ({exc})", accepted) from None
    except RecursionError:
        raise MalformedTextError(name, "nested too deeply to read", accepted) from None


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float when it is a JSON number (not a bool); None for anything else: a string, null,
    NaN, ±Infinity, or an integer beyond a float's range (``10**400``, on which :func:`math.isfinite` raises)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def json_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of JSON Lines text, 1-based, blank lines included.

    A line ends at ``\\n`` (a ``\\r`` before it is dropped), as the JSON Lines format says. :meth:`str.splitlines`
    would also end one at U+2028, U+2029, U+0085, form feeds and other separators, which a JSON writer with
    ``ensure_ascii=False`` leaves raw inside strings, and so refuse a well-formed file.
    """
    return [(number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1)]
