"""The CLI's one way to report bad input: one line per problem on stderr, ``PROG: error: ...``, exit code 2; and the
one line that says why a command whose requests all failed exits 1."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.errors import shown

if TYPE_CHECKING:
    from planner.serving.streaming import RequestRecord

__all__ = ["all_failed", "error", "file_path", "not_valid", "verdict"]


def error(prog: str, message: object) -> int:
    """Print each line of ``message`` as ``prog: error: <line>`` on stderr; returns the exit code 2."""
    for line in str(message).splitlines() or [""]:
        print(f"{prog}: error: {line}", file=sys.stderr)
    return 2


def not_valid(prog: str, what: str, value: object, accepted: str) -> int:
    """Print ``prog: error: <what> <value!r> is not valid: expected <accepted>`` (``what`` "" for none; the value cut
    to 80 characters, :func:`planner.errors.shown`); returns 2."""
    echo = f"{what} {shown(value)}" if what else shown(value)
    return error(prog, f"{echo} is not valid: expected {accepted}")


def file_path(text: str) -> str:
    """The argparse ``type`` of every flag that names a file: the text as typed, refused at parse time (one line, exit
    code 2) when no file can have that name. A NUL character or a lone surrogate makes Python's file calls raise
    ValueError, which the commands' ``except OSError`` would let through as a traceback.

    Raises:
        argparse.ArgumentTypeError: the text holds NUL or cannot be encoded as a file name.
    """
    try:
        name = os.fsencode(text)
    except UnicodeError:
        name = b"\x00"
    if b"\x00" in name:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a file name: expected a path without NUL characters")
    return text


def all_failed(records: Sequence[RequestRecord]) -> str | None:
    """When requests were sent and none succeeded: "all N requests failed; most common: KIND (M of N): MESSAGE"
    (MESSAGE from the first request of that kind); else None."""
    if not records or any(r.ok for r in records):
        return None
    kinds = Counter(r.error_kind or "error" for r in records)
    kind, count = kinds.most_common(1)[0]
    example = next(r.error for r in records if (r.error_kind or "error") == kind)
    n = len(records)
    what = f"all {n} request{'s' if n != 1 else ''} failed"
    return f"{what}; most common: {kind} ({count} of {n})" + (f": {example}" if example else "")


def verdict(prog: str, records: Sequence[RequestRecord]) -> int:
    """The exit code of a command that sent ``records``: 0 when one succeeded (or none was sent), else 1 after one line
    on stderr, ``prog: error: all N requests failed; ...`` (:func:`all_failed`), printed after the results."""
    failure = all_failed(records)
    if failure is None:
        return 0
    sys.stdout.flush()  # the results first, then the verdict as the last stderr line
    print(f"{prog}: error: {failure}", file=sys.stderr)
    return 1
