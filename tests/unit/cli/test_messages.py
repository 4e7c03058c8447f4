"""planner.cli.messages: ``PROG: error: ...`` lines with exit 2, file names argparse can refuse, and the one line
saying why a command whose requests all failed exits 1."""

from __future__ import annotations

import argparse

import pytest

from planner.cli.messages import all_failed, error, file_path, not_valid, verdict
from planner.serving.streaming import RequestRecord

PROG = "python -m planner bench"


def test_error_prints_one_line_per_line_of_the_message(capsys) -> None:
    assert error(PROG, "first\nsecond") == 2
    assert capsys.readouterr().err == f"{PROG}: error: first\n{PROG}: error: second\n"
    assert error(PROG, "") == 2
    assert capsys.readouterr().err == f"{PROG}: error: \n"


def test_not_valid_echoes_the_value_cut_to_80_characters(capsys) -> None:
    assert not_valid(PROG, "--num-prompts", -3, "a whole number ≥ 1") == 2
    assert capsys.readouterr().err == f"{PROG}: error: --num-prompts -3 is not valid: expected a whole number ≥ 1\n"
    not_valid(PROG, "", "x" * 500, "a model id")
    line = capsys.readouterr().err
    assert line == f"{PROG}: error: '{'x' * 76}... is not valid: expected a model id\n"


def test_file_path_refuses_what_no_file_can_be_named() -> None:
    assert file_path("runs/results.json") == "runs/results.json"
    with pytest.raises(argparse.ArgumentTypeError, match="is not a file name: expected a path without NUL"):
        file_path("a\x00b")
    with pytest.raises(argparse.ArgumentTypeError):
        file_path("\ud800")  # a lone high surrogate: os.fsencode cannot encode it (surrogateescape takes only
        # \udc80-\udcff)


def _failed(kind: str, error: str) -> RequestRecord:
    return RequestRecord("t", ok=False, error=error, error_kind=kind)


def test_all_failed_names_the_most_common_kind_and_its_first_message() -> None:
    records = [_failed("http", "HTTP 500"), _failed("connect", "refused A"), _failed("connect", "refused B")]
    assert all_failed(records) == "all 3 requests failed; most common: connect (2 of 3): refused A"
    assert all_failed([_failed("timeout", "")]) == "all 1 request failed; most common: timeout (1 of 1)"
    assert all_failed([]) is None  # nothing was sent
    assert all_failed([*records, RequestRecord("t", ok=True)]) is None  # one succeeded


def test_verdict_is_the_exit_code(capsys) -> None:
    assert verdict(PROG, [RequestRecord("t", ok=True)]) == 0 and capsys.readouterr().err == ""
    assert verdict(PROG, [_failed("cut", "incomplete chunked read")]) == 1
    assert capsys.readouterr().err == f"{PROG}: error: all 1 request failed; most common: cut (1 of 1): " + (
        "incomplete chunked read\n"
    )
