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
    "bytes_to_gib",
    "ceil_div",
    "gib_to_bytes",
]

KIB = 2**10
MIB = 2**20
GIB = 2**30
MB = 10**6
GB = 10**9

#: Bytes per element of the storage dtypes a checkpoint or KV cache can use. Floats so that
#: sub-byte types (int4 = 0.5) stay exact; never integer-divide these.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4.0,
    "bfloat16": 2.0,
    "float16": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


def bytes_to_gib(num_bytes: float) -> float:
    """Convert bytes to GiB (2**30 bytes)."""
    return num_bytes / GIB


def gib_to_bytes(gib: float) -> float:
    """Convert GiB (2**30 bytes) to bytes."""
    return gib * GIB


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling of ``numerator / denominator`` for a positive denominator (vLLM ``cdiv``)."""
    return -(-numerator // denominator)
