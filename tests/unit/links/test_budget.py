"""Tests of planner.links.budget: round trips and hostile query strings (decode never raises)."""

from __future__ import annotations

import pytest

from planner.capacity.presets import presets
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.errors import InvalidParameterError
from planner.links.budget import DEFAULT_CUSTOM_GPU_MEMORY_GIB, MAX_PARAMS, MAX_SCENARIOS, DecodedState, decode, encode


@pytest.mark.parametrize("preset", presets(), ids=lambda p: p.key)
def test_round_trip_of_every_preset(preset):
    params = encode(preset.scenarios)
    decoded = decode(params)
    assert decoded.scenarios == preset.scenarios
    assert decoded.warnings == ()


@pytest.mark.parametrize(
    "scenarios",
    [
        [Scenario()],
        [Scenario(gpu="custom", custom_gpu_memory_gib=47.5, gpu_memory_utilization=0.85, enforce_eager=True)],
        [
            Scenario(
                engine="tgi",
                max_input_tokens=4095,
                max_total_tokens=4096,
                cuda_memory_fraction=0.8,
                engine_version="3.3.7",
            )
        ],
        [Scenario(), Scenario(), Scenario(), Scenario(dtype="float16", block_size=32, quantization="fp8")],
        [
            Scenario(
                engine="article",
                params_b=8.5,
                num_layers=32,
                num_kv_heads=8,
                head_dim=128,
                gpu_memory_gb=24,
                weight_quant="int4",
                kv_quant="fp8",
                target_context=4096,
            )
        ],
    ],
)
def test_round_trip(scenarios):
    assert decode(encode(scenarios)).scenarios == tuple(scenarios)


def test_encode_writes_only_non_default_fields():
    assert encode([Scenario()]) == {}
    assert encode([Scenario(gpu="rtx-4090"), Scenario(max_model_len=8192)]) == {
        "scenarios": "2",
        "gpu": "rtx-4090",
        "s2.max_model_len": "8192",
    }
    assert encode([Scenario(params_b=70.0)]) == {"params_b": "70"}


def test_encode_page_keys_round_trip():
    decoded = decode(encode([Scenario()], min_context=1024, max_context=65536))
    assert (decoded.min_context, decoded.max_context) == (1024, 65536)


@pytest.mark.parametrize("count", [0, MAX_SCENARIOS + 1])
def test_encode_rejects_bad_count(count):
    with pytest.raises(InvalidParameterError):
        encode([Scenario()] * count)


def test_decode_empty_is_one_default_scenario():
    assert decode({}) == DecodedState((Scenario(),))


def test_decode_normalises_names():
    s = decode({"gpu": "NVIDIA H100 80GB HBM3", "model": "llama-3.1-8b-instruct"}).scenarios[0]
    assert (s.gpu, s.model) == ("h100-sxm-80gb", "meta-llama/Llama-3.1-8B-Instruct")


@pytest.mark.parametrize(
    "model_id",
    ["mirror/Llama-3.1-8B-Instruct", "acme/never-seen", "Org-1/name_v2.5-GGUF", "uploaded-config/llama-0123abcd"],
)
def test_any_hub_repo_id_round_trips(model_id):
    # Whether the repo exists is the page's business (it resolves and reports); the codec checks the form only.
    decoded = decode(encode([Scenario(model=model_id), Scenario()]))
    assert decoded.scenarios[0].model == model_id
    assert decoded.warnings == ()


@pytest.mark.parametrize(
    "value",
    [
        "../../etc/passwd",
        "no-slash",
        "a/b/c",
        "org/",
        "/name",
        "org/na me",
        "org/..x",
        "org--x/y",
        "org/" + "x" * 150,
        "мета/модель",
        "org/🙂",
        "<script>/x",
        "https://huggingface.co/meta-llama/Llama-3.1-8B",
    ],
)
def test_malformed_model_ids_warn_and_fall_back(value):
    decoded = decode({"s2.model": value})
    assert decoded.scenarios[1].model == Scenario().model
    assert len(decoded.warnings) == 1
    assert decoded.warnings[0].startswith("s2.model=") and "repo id" in decoded.warnings[0]
    assert len(decoded.warnings[0]) < 300


HOSTILE = [
    "nan",
    "inf",
    "-inf",
    "-1",
    "1e309",
    "",
    "x" * 5000,
    "ｈ１００",
    "🙂",
    "0x10",
    "1.5",
    "None",
    "\x00",
    "<script>alert(1)</script>",
]


NUMBER_KEYS = (
    "max_model_len",
    "tensor_parallel_size",
    "gpu_memory_utilization",
    "s2.block_size",
    "s3.cuda_memory_fraction",
    "custom_gpu_memory_gib",
    "s4.params_b",
)
#: Values of HOSTILE that are valid for a key, so not hostile there: 1.5 GiB and 1.5 B parameters, and -1, vLLM's
#: --max-model-len auto (test_max_model_len_auto_round_trips).
VALID_THERE = {("custom_gpu_memory_gib", "1.5"), ("s4.params_b", "1.5"), ("max_model_len", "-1")}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param(key, value, id=f"{i}-{key}")
        for key in NUMBER_KEYS
        for i, value in enumerate(HOSTILE)
        if (key, value) not in VALID_THERE
    ],
)
def test_hostile_numbers_warn_and_fall_back(key, value):
    decoded = decode({key: value})
    name = key.split(".")[-1]
    index = int(key[1]) - 1 if "." in key else 0
    assert getattr(decoded.scenarios[index], name) == getattr(Scenario(), name)
    assert len(decoded.warnings) == 1
    assert decoded.warnings[0].startswith(key + "=")
    assert len(decoded.warnings[0]) < 300


@pytest.mark.parametrize(
    "key",
    [
        "gpu",
        "model",
        "engine",
        "dtype",
        "quantization",
        "kv_cache_dtype",
        "weight_quant",
        "engine_version",
        "enforce_eager",
    ],
)
@pytest.mark.parametrize("value", ["nan", "-1", "x" * 300, "ｈ１００🙂", "<b>", "1e309"])
def test_hostile_strings_warn_and_fall_back(key, value):
    decoded = decode({key: value})
    assert getattr(decoded.scenarios[0], key) == getattr(Scenario(), key)
    assert len(decoded.warnings) == 1
    assert key in decoded.warnings[0]


def test_repeated_keys_take_the_last_value():
    decoded = decode({"max_model_len": ["1024", "8192"]})
    assert decoded.scenarios[0].max_model_len == 8192
    assert decoded.warnings == ("max_model_len was given 2 times; using the last value '8192'",)


def test_repeated_key_with_bad_last_value_gives_one_warning():
    decoded = decode({"max_model_len": ["8192", "nan"]})
    assert decoded.scenarios[0].max_model_len is None
    assert len(decoded.warnings) == 1


def test_unknown_keys_are_ignored_with_one_warning_naming_them():
    decoded = decode({"foo": "1", "s5.gpu": "l4", "s2.nope": "x", "gpu": "l4"})
    assert decoded.scenarios == (Scenario(gpu="l4"),)
    assert len(decoded.warnings) == 1
    assert all(name in decoded.warnings[0] for name in ("foo", "s5.gpu", "s2.nope"))


def test_work_is_bounded():
    params = {f"junk{i}": "1" for i in range(10_000)}
    decoded = decode(params)
    assert len(decoded.scenarios) == 1
    assert len(decoded.warnings) == 2
    assert str(MAX_PARAMS) in decoded.warnings[0]


def test_scenario_count_from_prefixes_and_key():
    assert len(decode({"s3.gpu": "l4"}).scenarios) == 3
    assert len(decode({"scenarios": "2"}).scenarios) == 2
    decoded = decode({"scenarios": "2", "s4.gpu": "l4"})
    assert len(decoded.scenarios) == 2
    assert "scenarios=2" in decoded.warnings[0]
    assert decode({"scenarios": "99"}).warnings[0].startswith("scenarios=")


def test_bad_page_range_is_dropped():
    decoded = decode({"min_context": "4096", "max_context": "512"})
    assert (decoded.min_context, decoded.max_context) == (None, None)
    assert "min_context" in decoded.warnings[0]


@pytest.mark.parametrize(
    "params", [{"gpu": None}, {"gpu": 5}, {"gpu": []}, {"gpu": [None]}, {5: "x"}, {"max_model_len": ["1", 2]}]
)
def test_non_string_values_never_raise(params):
    decoded = decode(params)
    assert decoded.scenarios == (Scenario(),)
    assert len(decoded.warnings) == 1


@pytest.mark.parametrize("prefix", ["", "s2."])
def test_custom_gpu_without_memory_warns_and_uses_80_gib(prefix):
    decoded = decode({"scenarios": "2", f"{prefix}gpu": "custom"})
    scenario = decoded.scenarios[1 if prefix else 0]
    assert scenario.gpu == "custom" and scenario.custom_gpu_memory_gib == DEFAULT_CUSTOM_GPU_MEMORY_GIB == 80.0
    assert decoded.warnings == (f"{prefix}custom_gpu_memory_gib missing; using 80 (GiB) for gpu=custom",)
    assert decode({"gpu": "custom", "custom_gpu_memory_gib": "24"}).warnings == ()


@pytest.mark.parametrize("prefix", ["", "s2."])
def test_a_refused_custom_gpu_memory_is_one_line_not_also_missing(prefix):
    # the new-user trial saw "'-3' is not valid" and "custom_gpu_memory_gib missing" side by side
    decoded = decode({"scenarios": "2", f"{prefix}gpu": "custom", f"{prefix}custom_gpu_memory_gib": "-3"})
    assert decoded.scenarios[1 if prefix else 0].custom_gpu_memory_gib == 80.0
    (line,) = decoded.warnings
    assert line.startswith(f"{prefix}custom_gpu_memory_gib='-3' is not valid")


@pytest.mark.parametrize("text", ["auto", "AUTO", " auto ", "-1"])
def test_max_model_len_auto_decodes(text):
    # vLLM's human_readable_int_or_auto: "-1" or "auto" (any case) mean the longest that fits
    decoded = decode({"max_model_len": text, "s2.max_model_len": "8192", "scenarios": "2"})
    assert not decoded.warnings
    assert [s.max_model_len for s in decoded.scenarios] == [MAX_MODEL_LEN_AUTO, 8192]


def test_max_model_len_auto_round_trips():
    scenarios = [Scenario(max_model_len=MAX_MODEL_LEN_AUTO), Scenario(max_model_len=4096)]
    params = encode(scenarios)
    assert params == {"scenarios": "2", "max_model_len": "auto", "s2.max_model_len": "4096"}
    assert decode(params).scenarios == tuple(scenarios)


@pytest.mark.parametrize("text", ["automatic", "-2", "0", "8k", "auto1"])
def test_bad_max_model_len_names_what_is_accepted(text):
    decoded = decode({"max_model_len": text})
    assert decoded.scenarios[0].max_model_len is None
    accepted = "auto, -1 or an integer from 16 to 10,485,760"
    assert decoded.warnings == (f"max_model_len={text!r} is not valid: expected {accepted}; using the default",)


def test_max_model_len_auto_is_dropped_for_tgi():
    decoded = decode({"engine": "tgi", "max_model_len": "auto"})
    assert decoded.scenarios[0] == Scenario(engine="tgi")
    assert len(decoded.warnings) == 1 and "auto is for --engine vllm" in decoded.warnings[0]


def test_entry_point_round_trips_and_a_bad_one_warns():
    assert encode([Scenario(entry_point="llm")]) == {"entry_point": "llm"}
    assert decode({"entry_point": "llm"}).scenarios[0].entry_point == "llm"
    decoded = decode({"entry_point": "python"})
    assert decoded.scenarios[0].entry_point == "serve"
    assert len(decoded.warnings) == 1 and decoded.warnings[0].startswith("entry_point=")


def test_speculative_config_and_kv_compression_round_trip() -> None:
    from planner.capacity.speculative import parse_speculative_config

    cfg = parse_speculative_config(
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
    )
    scenario = Scenario(speculative_config=cfg, kv_compression_ratio=4.0)
    params = encode([scenario])
    assert params["speculative_config"] == (
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
    )
    assert params["kv_compression_ratio"] == "4"
    state = decode(params)
    assert state.scenarios == (scenario,) and state.warnings == ()


def test_a_bad_speculative_config_warns_once_and_keeps_the_default() -> None:
    state = decode({"speculative_config": '{"model": "x/y"}'})
    assert state.scenarios[0].speculative_config is None
    (warning,) = state.warnings
    assert warning.startswith("speculative_config=") and "num_speculative_tokens" in warning
