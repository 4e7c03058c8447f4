"""Tests of planner.capacity.scenario: validation of every field, and Scenario as a frozen, hashable key.

The accepted ranges are the contract in ``planner.capacity.scenario.LIMITS`` (house style rule 7: a bad value
raises the package's ``ValueError`` subclass naming the parameter, its value and what is accepted).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from planner.capacity.scenario import LIMITS, Scenario, validate
from planner.errors import InvalidParameterError, PlannerError

#: Fields whose values must be whole numbers (vLLM/TGI take them as ints); the rest are floats.
INT_FIELDS = frozenset(
    {
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "block_size",
        "max_input_tokens",
        "max_total_tokens",
        "max_batch_prefill_tokens",
        "num_layers",
        "num_kv_heads",
        "head_dim",
        "target_context",
    }
)
FLOAT_FIELDS = frozenset(
    {
        "gpu_memory_utilization",
        "cuda_memory_fraction",
        "params_b",
        "gpu_memory_gb",
        "custom_gpu_memory_gib",
        "kv_compression_ratio",
    }
)


def test_limits_cover_exactly_the_numeric_fields() -> None:
    assert set(LIMITS) == INT_FIELDS | FLOAT_FIELDS


def test_defaults_are_valid() -> None:
    s = Scenario()
    assert validate(s) is s


def _below(name: str) -> float:
    low, _ = LIMITS[name]
    return low - 1 if name in INT_FIELDS else low / 2


def _above(name: str) -> float:
    _, high = LIMITS[name]
    return high + 1 if name in INT_FIELDS else high * 2


def _bad_values() -> list[object]:
    params = []
    for name in sorted(LIMITS):
        params.append(pytest.param(name, _below(name), id=f"{name}-below-min"))
        params.append(pytest.param(name, _above(name), id=f"{name}-above-max"))
        for label, value in (("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf)):
            marks = ()
            params.append(pytest.param(name, value, marks=marks, id=f"{name}-{label}"))
        params.append(pytest.param(name, True, id=f"{name}-bool"))
        params.append(pytest.param(name, "8", id=f"{name}-string"))
        if name in INT_FIELDS:
            params.append(pytest.param(name, 2.5, id=f"{name}-fraction"))
    return params


@pytest.mark.parametrize(("name", "value"), _bad_values())
def test_rejects_bad_numeric_field(name: str, value: object) -> None:
    with pytest.raises(InvalidParameterError) as info:
        validate(Scenario(**{name: value}))
    err = info.value
    assert isinstance(err, PlannerError) and isinstance(err, ValueError)
    assert err.name == name
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"{name}=")
    assert repr(value) in message
    assert "expected" in message
    assert ("an integer" if name in INT_FIELDS else "a number") in message


def _plain(number: float) -> tuple[str, ...]:
    """Ways a correct message may spell a bound: 10485760, 10,485,760, 0.01, 1, 1.0."""
    if float(number).is_integer():
        return (str(int(number)), f"{int(number):,}")
    return (repr(float(number)),)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_message_states_the_accepted_range_exactly(name: str) -> None:
    low, high = LIMITS[name]
    with pytest.raises(InvalidParameterError) as info:
        validate(Scenario(**{name: _above(name)}))
    message = str(info.value)
    assert any(f"from {text} " in message for text in _plain(low)), message
    assert any(message.endswith(f"to {text}") for text in _plain(high)), message


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_accepts_both_bounds(name: str) -> None:
    low, high = LIMITS[name]
    for value in (low, high):
        value = int(value) if name in INT_FIELDS else float(value)
        assert getattr(validate(Scenario(**{name: value})), name) == value


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("engine", "sglang", "vllm, tgi, article"),
        ("engine", "", "vllm, tgi, article"),
        ("dtype", "half8", "auto, bfloat16, float16, float32"),
        ("quantization", "int3", "fp8, int8, awq, gptq, bitsandbytes, mxfp4"),
        ("quantization", "", "fp8, int8, awq, gptq, bitsandbytes, mxfp4"),
        ("kv_cache_dtype", "int3", "auto"),
        ("weight_quant", "int3", "fp16, fp8, int8, int4"),
        ("kv_quant", "int2", "fp16, fp8, int8, int4"),
        ("model", "", "non-empty"),
        ("model", "   ", "non-empty"),
        ("model", "x" * 201, "at most 200 characters"),
        ("model", None, "non-empty"),
        ("gpu", "", "non-empty"),
        ("gpu", 80, "non-empty"),
        ("engine_version", "1" * 41, "0.19.0"),
        ("engine_version", 19, "0.19.0"),
    ],
)
def test_rejects_bad_choice_field(name: str, value: object, accepted: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        validate(Scenario(**{name: value}))
    message = str(info.value)
    assert info.value.name == name
    if isinstance(value, str) and not value.strip():  # nothing was given: said so, not shown as a value
        assert message.startswith(f"{name} is empty: expected ")
    else:
        assert message.startswith(f"{name}=")
        # Long values are cut to 80 characters so the message stays one readable line.
        assert repr(value)[:77] in message
    assert len(message) < 300
    assert accepted in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("engine", "tgi"),
        ("engine", "article"),
        ("dtype", "float16"),
        ("quantization", "awq"),
        ("quantization", None),
        ("kv_cache_dtype", "fp8_e5m2"),
        ("weight_quant", "int4"),
        ("kv_quant", "fp8"),
        ("engine_version", "0.19.0"),
        ("enforce_eager", True),
    ],
)
def test_accepts_good_choice_field(name: str, value: object) -> None:
    assert getattr(validate(Scenario(**{name: value})), name) == value


def test_scenario_is_frozen() -> None:
    s = Scenario()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tensor_parallel_size = 2  # type: ignore[misc]


def test_scenario_is_hashable_and_equal_by_value() -> None:
    a = Scenario(model="Qwen/Qwen3-14B", gpu="a100-sxm4-80gb", max_model_len=8192)
    b = Scenario(model="Qwen/Qwen3-14B", gpu="a100-sxm4-80gb", max_model_len=8192)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, Scenario()}) == 2
    assert {a: "cached"}[b] == "cached"


def test_with_changes_returns_a_validated_copy() -> None:
    s = Scenario()
    t = s.with_changes(tensor_parallel_size=2)
    assert t.tensor_parallel_size == 2
    assert s.tensor_parallel_size == 1
    assert t.num_gpus == 2
    with pytest.raises(InvalidParameterError, match="tensor_parallel_size"):
        s.with_changes(tensor_parallel_size=0)


@pytest.mark.parametrize(("tp", "pp", "gpus"), [(1, 1, 1), (2, 1, 2), (4, 2, 8), (8, 8, 64)])
def test_num_gpus_is_tp_times_pp(tp: int, pp: int, gpus: int) -> None:
    assert Scenario(tensor_parallel_size=tp, pipeline_parallel_size=pp).num_gpus == gpus


def test_max_model_len_auto_is_vllm_only() -> None:
    # -1 is vLLM's --max-model-len auto (arg_utils.human_readable_int_or_auto); TGI and the article take a length
    from planner.capacity.scenario import MAX_MODEL_LEN_AUTO

    assert validate(Scenario(max_model_len=MAX_MODEL_LEN_AUTO)).max_model_len == -1
    with pytest.raises(InvalidParameterError, match=r"max_model_len=-1 .*auto is for --engine vllm"):
        validate(Scenario(engine="tgi", max_model_len=-1))
    for bad in (-2, 0, 15, True, -1.0):
        with pytest.raises(InvalidParameterError, match="expected auto, -1 or an integer from 16"):
            validate(Scenario(max_model_len=bad))
