"""The Sizing page's link: round trips, defaults left out, hostile values warned about by name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.links.sizing import DecodedSizing, decode, encode
from planner.metrics.slo import parse_slos
from planner.sizing.settings import DEFAULT


def test_default_link_is_empty() -> None:
    assert encode(DEFAULT) == {}
    assert decode({}) == DecodedSizing()


def test_round_trip() -> None:
    s = replace(
        DEFAULT,
        model="Qwen/Qwen2.5-7B-Instruct",
        target_rate=12.5,
        input_len=1024,
        output_len=128,
        slos=parse_slos(["ttft_p90_ms=500,e2el_p99_ms=8000"]),
        gpus=("h100-sxm-80gb", "l4"),
        node_gpus=(("l4", 4),),
        prices=(("l4", 0.8),),
        headroom=0.0,
        quantizations=("none",),
        kv_cache_dtypes=("fp8",),
        max_model_len=8192,
        slo_estimate="point",
    )
    query = encode(s, row=3)
    assert query["gpus"] == "h100-sxm-80gb,l4:4" and query["slo"] == "ttft_p90_ms=500,e2el_p99_ms=8000"
    assert query["slo_estimate"] == "point"
    back = decode(query)
    assert back.settings == s and back.row == 3 and back.warnings == ()


def test_the_default_slo_estimate_is_left_out_and_point_round_trips() -> None:
    assert DEFAULT.slo_estimate == "pessimistic" and "slo_estimate" not in encode(DEFAULT)
    assert encode(replace(DEFAULT, slo_estimate="point")) == {"slo_estimate": "point"}
    assert decode({"slo_estimate": "point"}).settings == replace(DEFAULT, slo_estimate="point")
    assert decode({"slo_estimate": "pessimistic"}).settings == DEFAULT


HOSTILE = {
    "target_rate": "-3",
    "slo": "ttft_p95_ms=1",
    "price": "h100=free",
    "gpus": "<script>",
    "headroom": "nan",
    "quantization": "int3",
    "row": "0",
    "max_gpus": "1e9",
    "slo_estimate": "optimistic",
}


@pytest.mark.parametrize(("key", "value"), list(HOSTILE.items()))
def test_hostile_value_warns_by_name_and_keeps_the_default(key: str, value: str) -> None:
    decoded = decode({key: value})
    (warning,) = decoded.warnings
    assert warning.startswith(f"{key}=") and "is not valid: expected" in warning and "default is used" in warning
    assert decoded.settings == DEFAULT and decoded.row == 1


@pytest.mark.parametrize(
    "value", ["\x00", "a\x00b", "<script>alert(1)</script>", "../../etc/passwd", "h100/🙂", "x" * 201]
)
def test_model_that_is_no_model_id_warns_like_every_page(value: str) -> None:
    """The model follows the scenario links' rule (a catalog id or a Hub repo id), so NUL, markup or a path never
    reach the page as a model to size (issue 24: found by tests/unit/links/test_hostile_links.py)."""
    decoded = decode({"model": value})
    (warning,) = decoded.warnings
    assert warning.startswith("model=") and "is not valid: expected" in warning
    assert decoded.settings == DEFAULT


@pytest.mark.parametrize(
    ("value", "model"),
    [
        ("unknown-org/no-such-model", "unknown-org/no-such-model"),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    ],
)
def test_model_repo_ids_are_taken_as_on_the_scenario_pages(value: str, model: str) -> None:
    decoded = decode({"model": value})
    assert decoded.warnings == () and decoded.settings.model == model


def test_unknown_key_listed_by_name_only() -> None:
    (warning,) = decode({"api_key": "sk-secret"}).warnings
    assert "api_key" in warning and "sk-secret" not in warning
