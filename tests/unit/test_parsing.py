"""planner.parsing: user text that does not parse ends as one MalformedTextError line naming it and what is accepted."""

from __future__ import annotations

import math

import pytest

from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.parsing import MAX_COUNT, finite_number, json_lines, json_value, toml_table


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[1,\n{oops", None, "up.json line 2: not valid JSON (Expecting property name enclosed in double quotes); "),
        ("", 7, "up.json line 7: not valid JSON (Expecting value); expected a JSON object"),
        ("[" * 5000 + "]" * 5000, None, "up.json: nested too deeply to read; expected a JSON object"),
        ("[" * 5000 + "]" * 5000, 3, "up.json line 3: nested too deeply to read; expected a JSON object"),
        (b"{\x80}", None, "up.json: not UTF-8 text; expected a JSON object"),
    ],
)
def test_json_errors_are_one_line(text: str | bytes, line: int | None, message: str) -> None:
    with pytest.raises(MalformedTextError) as info:
        json_value(text, name="up.json", accepted="a JSON object", line=line)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    # pages and the CLI catch these through the package's bases
    assert isinstance(info.value, InvalidParameterError) and isinstance(info.value, PlannerError)


def test_toml_errors_are_one_line() -> None:
    with pytest.raises(
        MalformedTextError, match=r"^e.toml: not valid TOML \(Invalid value \(at end of document\)\); expected tables$"
    ):
        toml_table("a = [", name="e.toml", accepted="tables")
    with pytest.raises(MalformedTextError, match=r"^e.toml: nested too deeply to read; expected tables$"):
        toml_table("a = " + "[" * 5000 + "]" * 5000, name="e.toml", accepted="tables")


def test_good_text_parses() -> None:
    assert json_value('{"a": [1]}', name="x", accepted="y") == {"a": [1]}
    assert toml_table("a = 1", name="x", accepted="y") == {"a": 1}


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (3, 3.0),
        (2.5, 2.5),
        (True, None),
        ("3", None),
        (None, None),
        (math.nan, None),
        (-math.inf, None),
        (10**400, None),
    ],
)
def test_finite_number(value: object, number: float | None) -> None:
    # 10**400 is an int no float holds: math.isfinite raises OverflowError on it, finite_number says None
    assert finite_number(value) == number


def test_max_count_is_the_last_integer_a_float_holds_exactly() -> None:
    assert float(MAX_COUNT) == MAX_COUNT and float(MAX_COUNT + 1) == MAX_COUNT  # 2**53 + 1 rounds to 2**53


def test_json_lines_end_at_newline_only() -> None:
    # U+2028, U+2029, U+0085 and form feed are characters of a JSON string; str.splitlines would end a line there
    text = '{"a": "x\u2028y"}\r\n\n{"b": "p\x85q\x0cr"}'
    assert json_lines(text) == [(1, '{"a": "x\u2028y"}'), (2, ""), (3, '{"b": "p\x85q\x0cr"}')]


def test_toml_bytes_are_utf8() -> None:
    assert toml_table("a = 'é'".encode(), name="x", accepted="y") == {"a": "é"}
    with pytest.raises(MalformedTextError, match=r"^e.toml: not UTF-8 text; expected tables$"):
        toml_table(b"a = '\xff'", name="e.toml", accepted="tables")
