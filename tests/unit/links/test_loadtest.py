"""The Load Test page's URL codec: round trips, vLLM spelling, hostile values fall back with a named warning."""

from __future__ import annotations

import math

import pytest

from planner.links.loadtest import KEYS, decode, encode
from planner.loadtest.settings import DEFAULT, LoadSettings, SweepSettings


def test_default_page_has_an_empty_link():
    assert encode(DEFAULT) == {}


def test_round_trip_of_every_field():
    settings = LoadSettings(
        endpoints=("vllm-a", "tgi.b"),
        mode="sweep",
        num_prompts=200,
        max_concurrency=None,
        request_rate=12.5,
        burstiness=0.5,
        num_warmups=4,
        duration_s=90.0,
        timeout_s=30.0,
        seed=7,
        dataset_name="examples",
        input_len=1024,
        output_len=256,
        range_ratio=0.25,
        ignore_eos=True,
        goodput_ms=(("ttft", 500.0), ("e2el", 2000.0)),
        sweep=SweepSettings(sweep_max=64),
        scrape_metrics=False,
    )
    params = encode(settings)
    assert params["ep"] == "vllm-a,tgi.b"
    assert params["max_concurrency"] == "none"
    assert params["goodput"] == "ttft:500,e2el:2000"
    assert params["ignore_eos"] == "true"
    decoded = decode(params)
    assert decoded.warnings == ()
    assert decoded.settings == settings


def test_keys_use_vllm_flag_spelling():
    # vllm bench serve: --num-prompts --max-concurrency --request-rate --burstiness --num-warmups --input-len
    # --output-len --range-ratio --ignore-eos --goodput --dataset-name --seed
    for key in (
        "num_prompts",
        "max_concurrency",
        "request_rate",
        "burstiness",
        "num_warmups",
        "input_len",
        "output_len",
        "range_ratio",
        "ignore_eos",
        "goodput",
        "dataset_name",
        "seed",
    ):
        assert key in KEYS.values()


def test_burst_rate_is_inf_and_round_trips():
    assert decode({"request_rate": "inf"}).settings.request_rate == math.inf
    assert encode(LoadSettings(request_rate=2.0)) == {"request_rate": "2"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num_prompts", "0"),
        ("num_prompts", "10001"),
        ("num_prompts", "1e9"),
        ("max_concurrency", "-3"),
        ("request_rate", "0"),
        ("request_rate", "nan"),
        ("request_rate", "-inf"),
        ("burstiness", "0"),
        ("duration", "inf"),
        ("duration", "86400"),
        ("timeout", "0"),
        ("input_len", "2.5"),
        ("output_len", "99999999"),
        ("range_ratio", "1"),
        ("mode", "forever"),
        ("dataset_name", "hf"),
        ("ignore_eos", "maybe"),
        ("goodput", "ttft:-1"),
        ("goodput", "latency:500"),
        ("goodput", "ttft:500,ttft:600"),
        ("sweep_max", "100000"),
        ("ep", "http://169.254.169.254/latest"),
        ("ep", ",".join(f"e{i}" for i in range(17))),
    ],
)
def test_bad_value_warns_by_name_and_keeps_the_default(key, value):
    decoded = decode({key: value})
    assert decoded.settings == DEFAULT
    assert len(decoded.warnings) == 1
    assert decoded.warnings[0].startswith(f"{key}=")
    assert "the default is used" in decoded.warnings[0]


def test_a_link_never_carries_the_ray_workers_or_the_clusters_address():
    settings = LoadSettings(num_workers=4, ray_address="ray://10.0.0.5:10001")
    assert encode(settings) == {}
    assert "num_workers" not in KEYS and "ray_address" not in KEYS
    assert decode({"num_workers": "4", "ray_address": "10.0.0.5:6379"}).settings == DEFAULT
