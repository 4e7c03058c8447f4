"""planner.parsing: user text that does not parse ends as one MalformedTextError line naming it and what is accepted."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.parsing import json_value, toml_table


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
