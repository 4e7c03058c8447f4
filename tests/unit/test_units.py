"""planner.units: the one dtype table (every safetensors dtype's element size against the safetensors source, and the
vLLM/torch names mapped onto it), the binary and decimal prefixes (IEC 80000-13) and vLLM's ``cdiv``."""

from __future__ import annotations

import pytest

from planner.units import (
    DTYPE_BYTES,
    GB,
    GIB,
    KIB,
    MB,
    MIB,
    SAFETENSORS_DTYPE_BYTES,
    bytes_to_gib,
    ceil_div,
    gib_to_bytes,
    safetensors_dtype_bytes,
)

# huggingface/safetensors safetensors/src/tensor.rs (v0.7.0, FNUZ from v0.8.0-rc.0), Dtype::bitsize, in bits.
_BITS = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


def test_every_safetensors_dtype_is_its_bitsize_over_eight():
    assert {name: bits / 8 for name, bits in _BITS.items()} == SAFETENSORS_DTYPE_BYTES


@pytest.mark.parametrize(
    ("name", "expected"),
    [("float32", 4.0), ("bfloat16", 2.0), ("float16", 2.0), ("fp8", 1.0), ("fp8_e5m2", 1.0), ("int8", 1.0)],
)
def test_torch_names_take_the_safetensors_size(name, expected):
    assert DTYPE_BYTES[name] == expected


def test_int4_is_half_a_byte_and_an_unknown_safetensors_dtype_counts_as_16_bit():
    assert DTYPE_BYTES["int4"] == 0.5
    assert safetensors_dtype_bytes("F3_NEW") == 2.0 and safetensors_dtype_bytes("U16") == 2.0


def test_prefixes_are_iec_binary_and_si_decimal() -> None:
    assert (KIB, MIB, GIB) == (1024, 1_048_576, 1_073_741_824)
    assert (MB, GB) == (1_000_000, 1_000_000_000)


def test_gib_conversions_round_trip() -> None:
    # nvidia-smi's H100 total, 81,559 MiB (https://github.com/modal-labs/modal-client/pull/2797), is
    # 81,559 × 2^20 = 85,520,809,984 B = 79.65 GiB; 8 GiB back to bytes is 8 × 2^30
    assert bytes_to_gib(81_559 * MIB) == pytest.approx(79.647, abs=0.0005)
    assert bytes_to_gib(85_520_809_984) == 81_559 / 1024
    assert gib_to_bytes(8) == 8_589_934_592
    assert bytes_to_gib(gib_to_bytes(14.99)) == pytest.approx(14.99)


@pytest.mark.parametrize(("n", "d", "q"), [(0, 16, 0), (1, 16, 1), (16, 16, 1), (17, 16, 2), (8192, 16, 512)])
def test_ceil_div_is_vllm_cdiv(n: int, d: int, q: int) -> None:
    # vllm/utils cdiv(a, b) = -(a // -b): the blocks a request of n tokens needs at block size d
    assert ceil_div(n, d) == q
