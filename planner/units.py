"""Units and element sizes shared by the whole package.

Everything inside ``planner`` is stored in SI base units (bytes, seconds); names carry the unit.
GiB is 2**30 bytes and GB is 10**9 bytes, as in IEC 80000-13. vLLM and SGLang print "GB" but divide
by 2**30, so their log figures are GiB.
"""

from __future__ import annotations

__all__ = [
    "DTYPE_BYTES",
    "GB",
    "GIB",
    "KIB",
    "MB",
    "MIB",
    "MS_PER_S",
    "SAFETENSORS_DTYPE_BYTES",
    "bytes_to_gib",
    "ceil_div",
    "gib_to_bytes",
    "safetensors_dtype_bytes",
]

KIB = 2**10
MIB = 2**20
GIB = 2**30
MB = 10**6
GB = 10**9
#: Milliseconds per second: ``x_s * MS_PER_S`` is ``x_ms`` (the unit vLLM's benchmark reports latencies in).
MS_PER_S = 1000.0

#: Bytes per element of every safetensors dtype: its ``Dtype::bitsize`` / 8, from huggingface/safetensors
#: ``safetensors/src/tensor.rs`` v0.7.0 (``F8_E4M3FNUZ`` and ``F8_E5M2FNUZ`` from v0.8.0-rc.0; the format:
#: https://huggingface.co/docs/safetensors). ``F4`` (MXFP4 values) packs two to a byte, ``F6_*`` four to three bytes.
SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1.0,
    "F4": 0.5,
    "F6_E2M3": 0.75,
    "F6_E3M2": 0.75,
    "U8": 1.0,
    "I8": 1.0,
    "F8_E5M2": 1.0,
    "F8_E4M3": 1.0,
    "F8_E8M0": 1.0,
    "F8_E4M3FNUZ": 1.0,
    "F8_E5M2FNUZ": 1.0,
    "I16": 2.0,
    "U16": 2.0,
    "F16": 2.0,
    "BF16": 2.0,
    "I32": 4.0,
    "U32": 4.0,
    "F32": 4.0,
    "C64": 8.0,
    "F64": 8.0,
    "I64": 8.0,
    "U64": 8.0,
}

#: Bytes per element of the storage dtypes a checkpoint or KV cache can use, by vLLM's (torch's) name: each the
#: safetensors dtype it is stored as, except int4, which no safetensors dtype holds (AWQ/GPTQ pack eight into an
#: ``I32``): half a byte. Floats so that sub-byte types stay exact; never integer-divide these.
DTYPE_BYTES: dict[str, float] = {
    name: SAFETENSORS_DTYPE_BYTES[stored]
    for name, stored in {
        "float32": "F32",
        "bfloat16": "BF16",
        "float16": "F16",
        "fp8": "F8_E4M3",
        "fp8_e4m3": "F8_E4M3",
        "fp8_e5m2": "F8_E5M2",
        "int8": "I8",
    }.items()
} | {"int4": 0.5}


def safetensors_dtype_bytes(dtype: str) -> float:
    """Bytes per element of the safetensors dtype ``dtype`` (:data:`SAFETENSORS_DTYPE_BYTES`); 2.0 for a name the
    table does not hold (one from a newer safetensors), counted as the 16-bit dtype most checkpoints use."""
    return SAFETENSORS_DTYPE_BYTES.get(dtype, 2.0)


def bytes_to_gib(num_bytes: float) -> float:
    """Convert bytes to GiB (2**30 bytes)."""
    return num_bytes / GIB


def gib_to_bytes(gib: float) -> float:
    """Convert GiB (2**30 bytes) to bytes."""
    return gib * GIB


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling of ``numerator / denominator`` for a positive denominator (vLLM ``cdiv``)."""
    return -(-numerator // denominator)
