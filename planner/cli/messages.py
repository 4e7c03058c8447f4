"""The CLI's one way to report bad input: one line per problem on stderr, ``PROG: error: ...``, exit code 2."""

from __future__ import annotations

import sys

__all__ = ["error", "not_valid"]


def error(prog: str, message: object) -> int:
    """Print each line of ``message`` as ``prog: error: <line>`` on stderr; returns the exit code 2."""
    for line in str(message).splitlines() or [""]:
        print(f"{prog}: error: {line}", file=sys.stderr)
    return 2


def not_valid(prog: str, what: str, value: object, accepted: str) -> int:
    """Print ``prog: error: <what> <value!r> is not valid: expected <accepted>`` (``what`` "" for none); returns 2."""
    shown = f"{what} {value!r}" if what else repr(value)
    return error(prog, f"{shown} is not valid: expected {accepted}")
