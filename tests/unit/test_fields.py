"""Settings declared once (planner/fields.py): validation, typed text, argparse options, nesting and widgets, all
from one field declaration. Values are worked by hand from the declarations below."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import pytest

from planner import fields
from planner.errors import BadValue, InvalidParameterError
from planner.fields import Choice, Flag, Number, Text, setting, validate


@dataclass(frozen=True)
class Inner:
    depth: int = setting(2, Number(low=1, high=8, integer=True, flags=("--depth",), help="levels"))
    fast: bool = setting(True, Flag(flags=("--slow",), negated=True, help="skip the slow checks"))

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class Demo:
    count: int = setting(
        4,
        Number(low=1, integer=True, entry=(1, 64), flags=("--count", "-n"), cli_default=10, help="how many"),
    )
    rate: float = setting(math.inf, Number(low=0, low_open=True, entry=(0, 100), typed_inf=True, key="r"))
    cap_s: float | None = setting(
        30.0,
        Number(low=0, low_open=True, finite=True, optional=True, typed_none=False, entry=(1, 60), unit="seconds"),
    )
    ratio: float = setting(0.0, Number(low=0, high=1, high_open=True, entry=(0, 0.99), linked=False))
    mode: str = setting("a", Choice(choices=("a", "b"), names=(("a", "first"),), flags=("--mode",)))
    names: tuple[str, ...] = setting(
        (), Text(read=lambda t: tuple(t.split(",")), write=",".join, flags=("--names",), help="names")
    )
    inner: Inner = Inner()

    def __post_init__(self) -> None:
        validate(self)


# --- validation: the type's range, one line naming the field ------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "name", "accepted"),
    [
        ({"count": 0}, "count", "an integer ≥ 1"),
        ({"count": 2.0}, "count", "an integer ≥ 1"),
        ({"count": True}, "count", "an integer ≥ 1"),
        ({"rate": 0}, "rate", "a number > 0"),
        ({"rate": -math.inf}, "rate", "a number > 0"),
        ({"rate": math.nan}, "rate", "a number > 0"),
        ({"cap_s": math.inf}, "cap_s", "seconds > 0"),
        ({"ratio": 1.0}, "ratio", "a number in [0, 1)"),
        ({"mode": "c"}, "mode", "one of a, b"),
    ],
)
def test_a_value_outside_the_type_is_named(kwargs, name, accepted):
    with pytest.raises(InvalidParameterError) as info:
        Demo(**kwargs)
    assert (info.value.name, info.value.accepted) == (name, accepted)


def test_the_type_is_wider_than_what_a_user_types():
    # the value may be 1,000 (a simulated workload); a typed value at most 64 (entry)
    assert Demo(count=1000, rate=math.inf, cap_s=None, ratio=0.995).count == 1000
    spec = fields.find(Demo, "count").setting
    assert spec.parse("64") == 64
    with pytest.raises(BadValue) as info:
        spec.parse("65")
    assert info.value.accepted == "an integer from 1 to 64"


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [("rate", "inf", math.inf), ("rate", "100", 100.0), ("cap_s", "1", 1.0), ("ratio", "0.99", 0.99)],
)
def test_typed_text_within_the_entry_range(name, text, value):
    assert fields.find(Demo, name).setting.parse(text) == value


@pytest.mark.parametrize(
    ("name", "text", "accepted"),
    [
        ("rate", "0", "a number in (0, 100] or inf"),
        ("cap_s", "none", "a number in [1, 60]"),  # None is a value, never typed: a link cannot lift the cap
        ("cap_s", "0.5", "a number in [1, 60]"),
        ("ratio", "0.995", "a number in [0, 0.99]"),
    ],
)
def test_typed_text_outside_is_refused(name, text, accepted):
    with pytest.raises(BadValue) as info:
        fields.find(Demo, name).setting.parse(text)
    assert info.value.accepted == accepted


def test_a_number_without_a_closed_typed_range_is_refused_at_declaration():
    with pytest.raises(TypeError):
        Number(low=0)


# --- nesting: one flat name per field ------------------------------------------------------------------------------
def test_nested_fields_are_flat_by_name():
    assert [d.name for d in fields.declared(Demo)] == [
        "count",
        "rate",
        "cap_s",
        "ratio",
        "mode",
        "names",
        "depth",
        "fast",
    ]
    assert fields.find(Demo, "depth").path == ("inner", "depth")
    changed = fields.replace(Demo(), count=5, depth=3)
    assert (changed.count, changed.inner.depth, fields.get(changed, "depth")) == (5, 3, 3)
    with pytest.raises(InvalidParameterError) as info:
        fields.replace(Demo(), depth=9)
    assert (info.value.name, info.value.accepted) == ("depth", "an integer in [1, 8]")


def test_a_name_declared_twice_is_refused():
    @dataclass(frozen=True)
    class Twice:
        depth: int = setting(1, Number(low=1, high=2, integer=True))
        inner: Inner = Inner()

    with pytest.raises(TypeError):
        fields.declared(Twice)


# --- the command line ----------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    fields.add_arguments(parser, Demo)
    return parser


def test_flags_come_from_the_declarations():
    parser = _parser()
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    assert set(actions) == {"help", "count", "mode", "names", "depth", "fast"}
    assert actions["count"].option_strings == ["--count", "-n"] and actions["count"].type is int
    assert actions["count"].default == 10  # the flag's own default (cli_default), not the field's 4
    assert actions["count"].help == "how many (default: 10)"
    assert actions["mode"].choices == ("a", "b")
    assert actions["fast"].help == "don't skip the slow checks"  # --slow turns off what the help describes


def test_from_args_builds_the_settings_and_reads_text_flags():
    args = _parser().parse_args(["-n", "7", "--names", "x,y", "--slow", "--depth", "4"])
    built = fields.from_args(Demo, args, rate=2.0)
    assert (built.count, built.rate, built.names, built.inner.depth, built.inner.fast) == (7, 2.0, ("x", "y"), 4, False)
    assert built.cap_s == 30.0  # no flag: the field's default


def test_from_args_names_the_field_of_a_bad_flag():
    with pytest.raises(InvalidParameterError) as info:
        fields.from_args(Demo, _parser().parse_args(["--count", "0"]))
    assert info.value.name == "count"
    assert fields.flag_of(Demo, "count") == "--count/-n" and fields.flag_of(Demo, "rate") == "--rate"


# --- widgets -------------------------------------------------------------------------------------------------------
def test_widgets_read_the_declarations():
    count = fields.widget(Demo, "count")
    assert (count.label, count.help, count.kind, count.low, count.high, count.optional) == (
        "count",
        "How many.",
        "number",
        1,
        64,
        False,
    )
    mode = fields.widget(Demo, "mode")
    assert (mode.kind, mode.choices, mode.show("a"), mode.show("b")) == ("select", ("a", "b"), "first", "b")
    assert fields.widget(Inner, "fast").kind == "toggle" and fields.widget(Demo, "names").kind == "text"
