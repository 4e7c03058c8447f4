"""Values from text (the ground floor): bounded numbers, flags, choices and the one list parser."""

from __future__ import annotations

import math

import pytest

from planner.errors import BadValue, PlannerError
from planner.values import format_value, parse_choice, parse_flag, parse_list, parse_number, split_list


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


def test_bad_value_is_a_planner_error():
    """Pages and the CLI catch one base class: a refused text is one of them."""
    assert issubclass(BadValue, PlannerError) and issubclass(BadValue, ValueError)


def test_flag_and_choice():
    assert [parse_flag(t) for t in ("true", " ON ", "0", "no")] == [True, True, False, False]
    with pytest.raises(BadValue, match="true or false"):
        parse_flag("maybe")
    assert parse_choice("fp8", ("auto", "fp8")) == "fp8" and parse_choice("none", ("a", None)) is None
    with pytest.raises(BadValue, match="one of auto, fp8"):
        parse_choice("FP8", ("auto", "fp8"))


@pytest.mark.parametrize(
    ("text", "spaces", "parts"),
    [
        ("a, b  c,,", True, ["a", "b", "c"]),
        ("", True, []),
        (" Human: , ###,", False, ["Human:", "###"]),
        ("1,2 4", False, ["1", "2 4"]),
    ],
)
def test_split_list(text, spaces, parts):
    assert split_list(text, spaces=spaces) == parts


def test_parse_list_bounds_the_count_and_names_the_list():
    def one(text: str) -> int:
        return int(parse_number(text, 0, 10, integer=True))

    assert parse_list("1, 2 3", one, accepted="x") == (1, 2, 3)
    for text, least, most in (("", 1, None), ("1,2,3", 0, 2), ("1,11", 0, None)):
        with pytest.raises(BadValue) as info:
            parse_list(text, one, accepted="up to 2 integers", least=least, most=most)
        assert info.value.accepted == "up to 2 integers"
