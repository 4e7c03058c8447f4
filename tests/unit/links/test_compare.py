"""The Live compare URL codec: round trip, hostile values warn by name and fall back, no URL or key encoded."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.compare.settings import DEFAULT, MAX_PROMPT_CHARS, CompareSettings
from planner.links import budget
from planner.links.compare import KEYS, decode, encode
from tests.unit.compare.test_settings import FULL


def test_defaults_encode_to_nothing():
    assert encode(DEFAULT) == {}
    assert decode({}).settings == DEFAULT and decode({}).warnings == ()


@pytest.mark.parametrize(
    "settings",
    [FULL, replace(FULL, temperature=None, top_p=None, seed=None, system=""), replace(DEFAULT, endpoints=("a",))],
)
def test_round_trip(settings):
    params = encode(settings)
    assert set(params) <= set(KEYS.values())
    decoded = decode(params)
    assert decoded.warnings == ()
    assert decoded.settings == settings


def test_encode_is_compact_and_readable():
    assert encode(replace(DEFAULT, endpoints=("a", "b"), repeat=3)) == {"ep": "a,b", "repeat": "3"}
    assert encode(replace(DEFAULT, temperature=None)) == {"temperature": "none"}
    assert encode(replace(DEFAULT, timeout_s=30.0)) == {"timeout": "30"}


def test_long_prompt_is_left_out_of_the_link_not_cut():
    params = encode(replace(DEFAULT, prompt="x" * (MAX_PROMPT_CHARS + 1)))
    assert "prompt" not in params


HOSTILE = [
    ("ep", "http://10.0.0.1:8000", "ep"),
    ("ep", "a,b/../c", "ep"),
    ("ep", ",".join(f"e{i}" for i in range(40)), "ep"),
    ("temperature", "nan", "temperature"),
    ("temperature", "3", "temperature"),
    ("top_p", "0", "top_p"),
    ("top_p", "inf", "top_p"),
    ("max_tokens", "1e309", "max_tokens"),
    ("max_tokens", "0", "max_tokens"),
    ("max_tokens", "12.5", "max_tokens"),
    ("seed", "-1", "seed"),
    ("repeat", "21", "repeat"),
    ("repeat", "🙂", "repeat"),
    ("timeout", "0", "timeout"),
    ("timeout", "-inf", "timeout"),
    ("prompt", "x" * (MAX_PROMPT_CHARS + 1), "prompt"),
    ("prompt", "   ", "prompt"),
    ("stop", "a,b,c,d,e", "stop"),
]


@pytest.mark.parametrize(("key", "value", "named"), HOSTILE)
def test_hostile_value_warns_by_name_and_falls_back(key, value, named):
    decoded = decode({key: value, "repeat": "2"} if key != "repeat" else {key: value})
    assert len(decoded.warnings) == 1
    assert decoded.warnings[0].startswith(f"{named}=")
    assert "expected" in decoded.warnings[0]
    field = next(f for f, k in KEYS.items() if k == key)
    assert getattr(decoded.settings, field) == getattr(DEFAULT, field)
    if key != "repeat":
        assert decoded.settings.repeat == 2  # the good parameter still applies
    assert len(decoded.warnings[0]) < 200  # the value is shown truncated


@pytest.mark.parametrize("value", ["\x00\x01", "Hi\x00there"])  # a link with prompt=%00%01
def test_prompt_with_control_characters_says_why(value):
    (warning,) = decode({"prompt": value}).warnings
    assert warning.startswith("prompt=") and warning.endswith(
        f"is not valid: expected text of at most {MAX_PROMPT_CHARS} characters without control characters; "
        "the default is used"
    )


def test_unknown_params_warn_without_echoing_values():
    # The page's link is two codecs': this one reads its own keys, the scenario codec the rest, and a key neither
    # knows is reported once, by the scenario codec, without its value.
    secret = "sk-live-planted-0123456789"
    query = {"api_key": secret, "base_url": "http://evil:1", "ep": "a", "gpu": "l4"}
    decoded = decode(query)
    assert decoded.settings.endpoints == ("a",)
    assert decoded.warnings == ()
    assert encode(decoded.settings) == {"ep": "a"}
    scenarios = budget.decode(query, foreign=tuple(KEYS.values()))
    assert scenarios.scenarios[0].gpu == "l4"
    (warning,) = scenarios.warnings
    assert "api_key" in warning and "base_url" in warning and "ep" in warning  # named, and "ep" among the accepted
    assert secret not in warning and "evil" not in warning


def test_repeated_key_warns_and_uses_last():
    decoded = decode({"repeat": ["2", "3"]})
    assert decoded.settings.repeat == 3
    assert decoded.warnings == ("repeat is given 2 times; the last value is used",)


def test_too_many_params_warn():
    # Unknown keys are the scenario codec's to report; this codec reads at most 32 of its own.
    assert decode({f"k{i}": "1" for i in range(40)}).warnings == ()
    own = {key: "1" for key in KEYS.values()} | {f"ep{i}": "x" for i in range(40)}
    assert budget.decode(own, foreign=tuple(KEYS.values())).warnings[0].startswith("ignored unknown parameters: 'ep0'")


def test_no_url_or_key_can_be_encoded():
    # The settings have no field for a URL or a key; names that are not endpoint names are dropped.
    assert not {"base_url", "api_key", "api_key_env", "url"} & {f for f in CompareSettings.__dataclass_fields__}
    params = encode(replace(DEFAULT, endpoints=("ok-name", "http://10.0.0.1:8000", "sk=secret")))
    assert params == {"ep": "ok-name"}
