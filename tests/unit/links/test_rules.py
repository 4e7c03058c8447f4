"""The shared URL-codec policy: bounded numbers, short echoes, repeated and unknown keys."""

from __future__ import annotations

import math

import pytest

from planner.links.rules import SHOWN_CHARS, BadValue, decode_query, format_value, parse_number, show


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        ("8", {"integer": True}, 8),
        ("8.0", {"integer": True}, 8),
        (" 2.5 ", {}, 2.5),
        ("inf", {"allow_inf": True}, math.inf),
        ("none", {"optional": True}, None),
        ("", {"optional": True}, None),
        ("0", {}, 0.0),
    ],
)
def test_parse_number_accepts(text, kwargs, expected):
    assert parse_number(text, 0, 10, **kwargs) == expected


@pytest.mark.parametrize(
    ("text", "kwargs"),
    [
        ("nan", {}),
        ("inf", {}),
        ("-inf", {"allow_inf": True}),
        ("11", {}),
        ("-1", {}),
        ("1e400", {}),
        ("2.5", {"integer": True}),
        ("0", {"low_open": True}),
        ("none", {}),
        ("ten", {}),
        ("", {}),
        ("1_0", {}),
        ("١", {}),
        ("infinity", {}),
        ("0x1", {}),
        ("1" * 100, {"integer": True}),
    ],
)
def test_parse_number_refuses(text, kwargs):
    with pytest.raises(BadValue):
        parse_number(text, 0, 10, **kwargs)


def test_accepted_text_names_the_range():
    with pytest.raises(BadValue) as info:
        parse_number("x", 1, 1024, integer=True, optional=True)
    assert info.value.accepted == "an integer from 1 to 1024 (or none)"


def test_format_value():
    assert [format_value(v) for v in (2.0, 2.5, math.inf, True, False, 7, "a")] == [
        "2",
        "2.5",
        "inf",
        "true",
        "false",
        "7",
        "a",
    ]


def test_show_cuts_long_values():
    shown = show("x" * 1000)
    assert len(shown) == SHOWN_CHARS and shown.endswith("…")


def _parse(name: str, text: str) -> object:
    return parse_number(text, 0, 10, integer=True)


def test_decode_query_policy():
    values, warnings = decode_query(
        {"a": ["1", "2"], "b": "99", "secret": "sk-123", "c": []},
        {"a": "field_a", "b": "field_b", "c": "field_c"},
        _parse,
    )
    assert values == {"field_a": 2}
    assert warnings[0] == "a is given 2 times; the last value is used"
    assert warnings[1] == "b='99' is not valid: expected an integer from 0 to 10; the default is used"
    assert "secret" in warnings[2] and "sk-123" not in warnings[2]


def test_decode_query_reads_a_bounded_number_of_params():
    query = {f"k{i}": "1" for i in range(1000)}
    values, warnings = decode_query(query, {"k0": "f"}, _parse, max_params=32)
    assert values == {"f": 1}
    assert warnings[0] == "only the first 32 of 1000 parameters are read"


def test_decode_query_refuses_a_value_longer_than_any_link_holds():
    """No parameter of any page takes more than 2,000 characters (the Live Compare prompt): a longer value is refused
    before its parser sees it. The Sizing link took gpus="ab," * 400,000 (1.2 MB, one GPU id once duplicates were
    dropped) without a word (issue 24, found by tests/unit/links/test_hostile_links.py)."""
    values, warnings = decode_query({"a": "1" + " " * 2000}, {"a": "field_a"}, _parse)
    assert values == {}
    (warning,) = warnings
    assert warning == f"a={show('1' + ' ' * 2000)} is not valid: expected at most 2,000 characters; the default is used"


def test_the_sizing_link_refuses_a_megabyte_of_gpus():
    from planner.links.sizing import decode

    (warning,) = decode({"gpus": "ab," * 400_000}).warnings
    assert warning.startswith("gpus=") and "at most 2,000 characters" in warning
