"""The sizing settings' text rules and checks."""

from __future__ import annotations

import pytest

from planner.errors import BadValue, InvalidParameterError
from planner.fields import Choice, find, flag_of
from planner.sizing.settings import (
    SizingSettings,
    default_max_model_len,
    format_gpus,
    format_prices,
    parse_choices,
    parse_gpus,
    parse_prices,
)


def test_gpus_with_node_sizes_round_trip() -> None:
    parsed = parse_gpus("H100-SXM-80GB:8, l4 ,l4:4")
    assert parsed == (("h100-sxm-80gb", 8), ("l4", 4))
    assert format_gpus(["h100-sxm-80gb", "l4"], [("l4", 4)]) == "h100-sxm-80gb,l4:4"


@pytest.mark.parametrize("text", ["h100:0", "h100:65", "h100:x", "a b c!", "/etc/passwd"])
def test_bad_gpu_list(text: str) -> None:
    with pytest.raises(BadValue, match="GPUS_PER_NODE"):
        parse_gpus(text)


def test_an_unknown_gpu_is_refused_with_the_closest_ids_and_an_alias_reads_as_its_id() -> None:
    # a link's gpus=nope was dropped without a word by the page, and price=nope=1 stopped the whole search
    for parse, text in ((parse_gpus, "l4,nope"), (lambda t: parse_prices([t]), "nope=1")):
        with pytest.raises(BadValue, match=r"unknown GPU 'nope'; closest catalog ids: "):
            parse(text)
    assert parse_gpus("h100:4,l4") == (("h100-sxm-80gb", 4), ("l4", None))  # the catalog's alias of the H100 SXM5
    assert parse_prices(["H100=3"]) == (("h100-sxm-80gb", 3.0),)


def test_prices_round_trip_and_bad_prices() -> None:
    assert parse_prices(["h100-sxm-80gb=2.5", "l4:0.8 l4=0.9"]) == (("h100-sxm-80gb", 2.5), ("l4", 0.9))
    assert format_prices((("h100-sxm-80gb", 2.5), ("l4", 0.9))) == "h100-sxm-80gb=2.5,l4=0.9"
    for bad in ("h100=0", "h100=-1", "h100=inf", "h100=1001", "h100", "=2"):
        with pytest.raises(BadValue, match="GPU_ID=USD_PER_HOUR"):
            parse_prices([bad])


def test_choices() -> None:
    assert parse_choices("fp8, none,fp8", ("none", "fp8", "awq")) == ("fp8", "none")
    with pytest.raises(BadValue, match="one or more of none, fp8"):
        parse_choices("int3", ("none", "fp8"))


def test_replicas_rate_and_max_model_len() -> None:
    s = SizingSettings(target_rate=20.0, headroom=0.25, input_len=2048, output_len=300)
    assert s.deployment_rate == pytest.approx(25.0)
    assert s.served_max_model_len == 4096 == default_max_model_len(2348)
    assert default_max_model_len(100) == 2048
    assert SizingSettings(max_model_len=8192).served_max_model_len == 8192


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("target_rate", -1.0),
        ("headroom", 1.5),
        ("max_gpus", 0),
        ("quantizations", ("int3",)),
        ("kv_cache_dtypes", ()),
        ("prices", (("h100-sxm-80gb", 0.0),)),
        ("slos", ()),
    ],
)
def test_bad_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(InvalidParameterError) as err:
        SizingSettings(**{field: value})
    assert err.value.name in (field, field.rstrip("s"), "price", "quantization", "kv_cache_dtype")


def test_slo_estimate_is_declared_once_in_its_field() -> None:
    declared = find(SizingSettings, "slo_estimate")
    choice = declared.setting
    assert isinstance(choice, Choice)
    assert (declared.name, choice.choices, declared.default) == (
        "slo_estimate",
        ("pessimistic", "point"),
        "pessimistic",
    )
    assert flag_of(SizingSettings, "slo_estimate") == "--slo-estimate" and declared.key == "slo_estimate"
    assert SizingSettings().slo_estimate == "pessimistic"
    with pytest.raises(InvalidParameterError) as err:
        SizingSettings(slo_estimate="optimistic")
    assert (err.value.name, err.value.value, err.value.accepted) == (
        "slo_estimate",
        "optimistic",
        "one of pessimistic, point",
    )


def test_disaggregation_is_declared_once_in_its_field() -> None:
    declared = find(SizingSettings, "disaggregation")
    assert isinstance(declared.setting, Choice)
    assert (declared.setting.choices, declared.default) == (("off", "on", "both"), "off")
    assert flag_of(SizingSettings, "disaggregation") == "--disaggregation" and declared.key == "disaggregation"
    with pytest.raises(InvalidParameterError) as err:
        SizingSettings(disaggregation="maybe")
    assert err.value.name == "disaggregation"
    with pytest.raises(InvalidParameterError) as err:
        SizingSettings(kv_transfer_gb_per_s=0.0)
    assert err.value.name == "kv_transfer_gb_per_s"
