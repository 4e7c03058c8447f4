"""The Performance page's workload codec: round trips, the Load Test's keys and rules, and one link with the
scenario codec where neither reports the other's keys."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from planner.capacity.scenario import Scenario
from planner.links import budget
from planner.links import loadtest as loadtest_links
from planner.links.performance import FIELDS, KEYS, decode, decode_link, encode, encode_link
from planner.loadtest.settings import SweepSettings
from planner.predict.curves import DEFAULT_RATES, DEFAULT_WORKLOAD, MAX_RATES


def test_default_page_has_an_empty_link():
    assert encode(DEFAULT_WORKLOAD) == {}
    assert encode_link([Scenario()], DEFAULT_WORKLOAD) == {}


def test_round_trip_of_every_field():
    settings = replace(
        DEFAULT_WORKLOAD,
        input_len=2048,
        output_len=256,
        num_prompts=100,
        range_ratio=0.25,
        sweep=SweepSettings(sweep_max=64),
        burstiness=0.5,
    )
    params = encode(settings, axis="rate", rates=(0.5, 2.0, 8.0))
    assert params == {
        "input_len": "2048",
        "output_len": "256",
        "num_prompts": "100",
        "range_ratio": "0.25",
        "sweep_max": "64",
        "burstiness": "0.5",
        "axis": "rate",
        "request_rate": "0.5,2,8",
    }
    decoded = decode(params)
    assert decoded.warnings == ()
    assert (decoded.settings, decoded.axis, decoded.rates) == (settings, "rate", (0.5, 2.0, 8.0))


def test_keys_and_rules_are_the_load_tests():
    assert {KEYS[name] for name in FIELDS} <= set(loadtest_links.KEYS.values())
    assert KEYS["rates"] == loadtest_links.KEYS["request_rate"]
    for key, text in (("input_len", "0"), ("output_len", "32769"), ("num_prompts", "1e9"), ("burstiness", "nan")):
        load = loadtest_links.decode({key: text}).warnings
        perf = decode({key: text}).warnings
        assert load == perf and len(perf) == 1 and perf[0].startswith(f"{key}=")


def test_workload_keys_are_no_scenario_fields():
    assert not set(KEYS.values()) & {f.name for f in fields(Scenario)}
    assert not set(KEYS.values()) & {budget.COUNT_KEY, *budget.PAGE_KEYS}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("inf", "a burst is no level"),
        ("0", "not > 0"),
        ("1,nan", "NaN"),
        ("", "no rate"),
        (",".join(str(i) for i in range(1, MAX_RATES + 2)), "too many"),
        ("1;2", "not comma separated"),
    ],
)
def test_bad_rate_lists_warn_and_keep_the_default(text, why):
    decoded = decode({"request_rate": text})
    assert decoded.rates == DEFAULT_RATES, why
    assert len(decoded.warnings) == 1 and decoded.warnings[0].startswith("request_rate="), why


def test_rates_are_sorted_and_deduplicated():
    assert decode({"request_rate": "8, 1,2,1"}).rates == (1.0, 2.0, 8.0)
    assert encode(DEFAULT_WORKLOAD, rates=(32, 1, 2, 4, 8, 16)) == {}  # the default rates, in any order


def test_bad_axis_warns():
    decoded = decode({"axis": "tokens"})
    assert decoded.axis == "concurrency"
    assert decoded.warnings[0].startswith("axis=") and "concurrency, rate" in decoded.warnings[0]


def test_one_link_for_both_codecs_round_trips_without_warnings():
    scenarios = [Scenario(gpu="h200-sxm-141gb", max_model_len=8192), Scenario(gpu="l40s")]
    settings = replace(DEFAULT_WORKLOAD, input_len=1024, sweep=SweepSettings(sweep_max=128))
    params = encode_link(scenarios, settings, axis="concurrency")
    assert params["gpu"] == "h200-sxm-141gb" and params["s2.gpu"] == "l40s" and params["input_len"] == "1024"
    decoded = decode_link(params)
    assert decoded.warnings == ()
    assert decoded.state.scenarios == tuple(scenarios)
    assert decoded.workload.settings == settings


def test_neither_codec_reports_the_others_keys_and_an_unknown_key_is_named_once():
    query = {"gpu": "l40s", "input_len": "1024", "request_rate": "1,2", "bogus": "1"}
    # the scenario codec alone would call the workload keys unknown; told they are foreign, it does not
    assert "input_len" in budget.decode(query).warnings[0]
    decoded = decode_link(query)
    assert len(decoded.warnings) == 1
    assert "bogus" in decoded.warnings[0] and "input_len" not in decoded.warnings[0].split("(accepted")[0]
    assert "request_rate" in decoded.warnings[0].split("(accepted")[1]  # listed among the accepted keys
    assert decode(query).warnings == ()  # the workload codec leaves scenario and unknown keys alone


def test_repeated_key_warns_and_uses_the_last_value():
    decoded = decode({"input_len": ["64", "128"]})
    assert decoded.settings.input_len == 128
    assert decoded.warnings == ("input_len is given 2 times; the last value is used",)
