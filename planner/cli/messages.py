"""The CLI's one way to report bad input: one line per problem on stderr, ``PROG: error: ...``, exit code 2."""

from __future__ import annotations

import argparse
import os
import sys

from planner.errors import shown

__all__ = ["error", "file_path", "not_valid"]


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
