"""The shared URL-codec policy: short echoes, repeated and unknown keys, bounded reading."""

from __future__ import annotations

from planner.links.rules import SHOWN_CHARS, decode_query, show
from planner.values import parse_number


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
