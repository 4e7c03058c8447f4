"""The one link codec of a settings dataclass (planner/links/codec.py), on a small declared dataclass: only what
differs from the default is written, old keys still decode, a field that carries another writes both, extra keys,
and a value the settings refuse as a whole is named and left at its default."""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import InvalidParameterError
from planner.fields import Number, Text, setting, validate
from planner.links.codec import SettingsCodec


def _pairs(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    names, sizes = [], []
    for part in text.split(","):
        name, _, size = part.partition(":")
        names.append(name)
        if size:
            sizes.append((name, int(size)))
    return tuple(names), tuple(sizes)


def _write(names: tuple[str, ...], sizes: tuple[tuple[str, int], ...]) -> str | None:
    given = dict(sizes)
    return ",".join(f"{n}:{given[n]}" if n in given else n for n in names) or None


@dataclass(frozen=True)
class Demo:
    low: int = setting(1, Number(low=0, high=10, integer=True, old_keys=("lo",)))
    high: int = setting(5, Number(low=0, high=10, integer=True, key="hi"))
    gpus: tuple[str, ...] = setting((), Text(read=_pairs, write=_write, carries=("sizes",)))
    sizes: tuple[tuple[str, int], ...] = setting((), Text(linked=False))

    def __post_init__(self) -> None:
        validate(self)
        if self.low > self.high:
            raise InvalidParameterError("low", self.low, f"at most high ({self.high})")


CODEC = SettingsCodec(Demo(), extra={"row": (Number(low=1, high=9, integer=True), 1)}, shared=False)


def test_only_what_differs_is_written_under_its_key():
    assert CODEC.keys == {"low": "low", "high": "hi", "gpus": "gpus", "row": "row"}
    assert CODEC.encode(Demo()) == {}
    assert CODEC.encode(Demo(high=7), row=3) == {"hi": "7", "row": "3"}


def test_a_carried_field_goes_with_its_key_both_ways():
    settings = Demo(gpus=("a", "b"), sizes=(("b", 4),))
    assert CODEC.encode(settings) == {"gpus": "a,b:4"}
    decoded = CODEC.decode({"gpus": "a,b:4"})
    assert decoded.settings == settings and decoded.warnings == ()


def test_old_keys_still_decode():
    assert CODEC.decode({"lo": "3"}).settings.low == 3


def test_extras_are_read_beside_the_settings():
    decoded = CODEC.decode({"row": "4", "hi": "6"})
    assert (decoded.extras["row"], decoded.settings.high) == (4, 6)
    assert CODEC.decode({}).extras == {"row": 1}


def test_a_value_the_settings_refuse_as_a_whole_is_named_and_the_rest_applies():
    # low 8 > high 6: the fields are set one at a time, so low is refused by name and high still applies
    decoded = CODEC.decode({"hi": "6", "low": "8"})
    assert decoded.settings == Demo(high=6)
    (warning,) = decoded.warnings
    assert warning == "low='8' is not valid: expected at most high (6); the default is used"


def test_a_codec_alone_on_its_link_names_unknown_keys():
    (warning,) = CODEC.decode({"api_key": "sk-1"}).warnings
    assert "api_key" in warning and "sk-1" not in warning
    shared = SettingsCodec(Demo())
    assert shared.decode({"api_key": "sk-1"}).warnings == ()  # left to the scenario codec of the same link


def test_each_page_codecs_documented_ranges_are_its_declarations():
    """The link modules list each key's range for a reader; the declaration is the one source, so the list must say
    what it says (a drifted copy is how limits came to disagree in four places, issue 25)."""
    import re

    from planner.fields import Number
    from planner.links import compare, loadtest, performance, sizing

    checked = 0
    for module in (compare, loadtest, performance, sizing):
        declared = {d.key: d.setting for d in module.CODEC.fields}
        for key, low, high in re.findall(r"``(\w+)`` \([^()]*?(\d[\d.]*)–(\d[\d.]*)", module.__doc__):
            spec = declared[key]
            assert isinstance(spec, Number) and spec.entry_range == (float(low), float(high)), (module.__name__, key)
            checked += 1
    assert checked >= 30  # every numeric key the four docstrings list (33 as written)
