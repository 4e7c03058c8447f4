"""The accelerator catalog: specs of the GPUs the planner can size a deployment for.

The catalog lives in ``planner/catalog/data/gpus.json`` (one entry per SKU, with a source for every figure) and is
loaded once into frozen :class:`GPU` dataclasses. All figures are in SI units: bytes, bytes per second,
TFLOPS = 10**12 FLOP/s (dense, no 2:4 sparsity).

Device memory
-------------
``GPU.memory_total_bytes`` is the device total *as the CUDA (or ROCm) driver reports it to the serving
engine*: ``torch.cuda.mem_get_info()[1]``, the figure vLLM prints as ``total_gpu_memory`` and multiplies
by ``gpu_memory_utilization``. It is smaller than both the marketed size and the nvidia-smi total,
because the driver keeps a few hundred MiB for itself. Each catalog entry records how its figure was
obtained in ``memory_total_source``, in this order of preference:

1. ``"vllm_log"``: a vLLM startup log of that SKU (RTX 3090 23.58 GiB, A100 80GB SXM4 79.15 GiB,
   H100 80GB SXM5 79.19 GiB). vLLM prints GiB to two decimals, so these are exact to +/-0.005 GiB.
2. ``"measured"``: a CUDA device total measured on the SKU (A100 40GB deviceQuery 42405855232 B,
   H200 ``total_memory`` 150109880320 B, B200 device query 178.35 GiB).
3. ``"derived_nvidia_smi"``: the nvidia-smi total in MiB minus :data:`CUDA_DRIVER_RESERVE_BYTES`.
4. ``"derived_marketed"``: no nvidia-smi total is known, so the marketed size is read as GiB (true of
   the A100 40/80GB and RTX 3090, whose nvidia-smi totals are exactly 1024 MiB per marketed GB) and
   :data:`CUDA_DRIVER_RESERVE_BYTES` is subtracted. For AMD Instinct and Intel Gaudi no driver total
   is sourced at all; the same NVIDIA-derived rule is applied as an assumption and said so in the
   entry's ``memory_total_note``. This rule is likely an upper estimate (see the constant).

Ambiguous names
---------------
Short names resolve to the most common data-centre SKU: ``"H100"`` and ``"H100 80GB"`` to the SXM5 part
(``h100-sxm-80gb``; the PCIe and NVL parts need ``"H100 PCIe"`` / ``"H100 NVL"``), ``"A100"`` and
``"A100 80GB"`` to ``a100-sxm4-80gb`` (``"A100 40GB"`` and ``"A100 PCIe"`` select the others), ``"H200"``
to the SXM part, ``"GH200"`` to the 96 GB HBM3 module and ``"V100"`` to the SXM2 32GB part.

Example:
    >>> from planner.catalog.gpus import get_gpu
    >>> gpu = get_gpu("NVIDIA H100 80GB HBM3")
    >>> gpu.id, round(gpu.memory_total_gib, 2)
    ('h100-sxm-80gb', 79.19)
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import numbers
import re
from dataclasses import dataclass, fields
from importlib import resources

from planner.errors import InvalidParameterError, PlannerError, UnknownGPUError
from planner.units import GB, GIB, MIB

__all__ = [
    "CUDA_DRIVER_RESERVE_BYTES",
    "CUSTOM_GPU_ID",
    "GPU",
    "LINKS",
    "MAX_CUSTOM_MEMORY_GIB",
    "MEMORY_TOTAL_SOURCES",
    "custom_gpu",
    "get_gpu",
    "gpu_ids",
    "list_gpus",
]

#: Memory the NVIDIA driver keeps out of the CUDA-visible total: nvidia-smi total minus
#: ``torch.cuda.mem_get_info()[1]``. The median, rounded to a whole MiB, of the six SKUs where both
#: figures are known (nvidia-smi MiB - CUDA total in MiB = reserve):
#:
#: - RTX 3090:       24576 - 23.58 GiB * 1024 (vLLM log)        = 430.1 MiB
#: - H100 80GB SXM5: 81559 - 79.19 GiB * 1024 (vLLM log)        = 468.4 MiB
#: - A100 40GB SXM4: 40960 - 42405855232 B / 2**20 (deviceQuery) = 518.6 MiB
#: - H200 141GB SXM: 143771 - 150109880320 B / 2**20 (measured) = 615.1 MiB
#: - B200:           183359 - 178.35 GiB * 1024 (device query)  = 728.6 MiB
#: - A100 80GB SXM4: 81920 - 79.15 GiB * 1024 (vLLM log)        = 870.4 MiB
#:
#: median = (518.6 + 615.1) / 2 = 566.8 -> 567 MiB. The spread (430-870 MiB) makes every derived total
#: uncertain by about +/-0.3 GiB. Sources of each pair are in ``planner/catalog/data/gpus.json``.
CUDA_DRIVER_RESERVE_BYTES: int = 567 * MIB

#: The accepted values of ``GPU.memory_total_source`` for catalog entries (custom GPUs use
#: ``"custom"``), in order of preference.
MEMORY_TOTAL_SOURCES: tuple[str, ...] = (
    "vllm_log",
    "measured",
    "derived_nvidia_smi",
    "derived_marketed",
)

#: How the GPUs of one node reach each other (``GPU.link``): every pair through an NVSwitch (HGX/DGX boards, the
#: NVL72 rack), NVLink without a switch (bridged pairs, the V100 cube mesh), AMD Infinity Fabric, PCIe only, or a
#: RoCE scale-up fabric (Gaudi). vLLM's custom all-reduce and NCCL's channel count depend on it
#: (:mod:`planner.capacity.engines.vllm_memory`).
LINKS: tuple[str, ...] = ("nvswitch", "nvlink", "xgmi", "pcie", "roce")

#: Catalog id of every GPU returned by :func:`custom_gpu`.
CUSTOM_GPU_ID = "custom"

#: Largest device memory :func:`custom_gpu` accepts, in GiB.
MAX_CUSTOM_MEMORY_GIB = 4096.0

_DATA_FILE = "gpus.json"
_VENDOR_PREFIXES = ("nvidia", "amd", "intel")
_DROPPED_TOKENS = frozenset({"geforce"})


@dataclass(frozen=True)
class GPU:
    """One accelerator SKU (or a user-defined one, see :func:`custom_gpu`).

    Attributes:
        id: Stable lowercase catalog id, e.g. ``"h100-sxm-80gb"``.
        name: Marketing name, e.g. ``"NVIDIA H100 80GB SXM5"``.
        vendor: ``"NVIDIA"``, ``"AMD"``, ``"Intel"`` or ``"custom"``.
        memory_marketed_gb: Memory size as the vendor prints it (the vendor's "GB"), or ``None``.
        memory_total_bytes: Device total in bytes as the CUDA/ROCm driver reports it to the serving
            engine (``torch.cuda.mem_get_info()[1]``; what vLLM multiplies by
            ``gpu_memory_utilization``). See the module docstring for how it is obtained.
        memory_total_source: How ``memory_total_bytes`` was obtained: one of
            :data:`MEMORY_TOTAL_SOURCES`, or ``"custom"``.
        memory_bandwidth_bytes_per_s: Peak device-memory bandwidth in bytes/s (10**9 per GB/s), or
            ``None``.
        bf16_tflops: Dense BF16 tensor throughput in TFLOPS (10**12 FLOP/s), or ``None``.
        fp16_tflops: Dense FP16 tensor throughput in TFLOPS, or ``None``.
        fp8_tflops: Dense FP8 tensor throughput in TFLOPS, or ``None``.
        int8_tops: Dense INT8 tensor throughput in TOPS (10**12 op/s), or ``None``.
        fp8_support: Whether the hardware has an FP8 tensor-core path.
        price_usd_per_hour: On-demand cloud price in USD per GPU-hour, or ``None``.
        price_source: Where and when the price was seen, or ``None`` when there is no price.
        interconnect: Scale-up and host links as free text, or ``None``.
        link: How the GPUs of one node reach each other, one of :data:`LINKS`; ``None`` when unknown (a custom
            GPU).
        nvls: NVLink SHARP (NVSwitch multicast) capable: Hopper and later behind an NVSwitch.
        p2p: CUDA peer-to-peer between GPUs of a node (``torch.cuda.can_device_access_peer``); GeForce drivers
            disable it. ``None`` when unknown.
        gpus_per_node: The most GPUs one node of the usual server holds (8 on an HGX board or an 8-slot PCIe
            server, 4 per GB200 compute tray); a TP or PP group larger than this spans nodes. ``None`` when
            unknown.
        aliases: Other names the GPU is known by (nvidia-smi/rocminfo names, short names).
        is_custom: ``True`` for a GPU built by :func:`custom_gpu`.
        memory_total_note: One or two sentences on how ``memory_total_bytes`` was obtained.
    """

    id: str
    name: str
    vendor: str
    memory_marketed_gb: float | None
    memory_total_bytes: int
    memory_total_source: str
    memory_bandwidth_bytes_per_s: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    fp8_support: bool
    price_usd_per_hour: float | None
    price_source: str | None
    interconnect: str | None
    aliases: tuple[str, ...]
    is_custom: bool = False
    memory_total_note: str | None = None
    link: str | None = None
    nvls: bool = False
    p2p: bool | None = None
    gpus_per_node: int | None = None

    @property
    def memory_total_gib(self) -> float:
        """Device total as the driver reports it, in GiB (``memory_total_bytes / 2**30``)."""
        return self.memory_total_bytes / GIB


def _normalize(name: str) -> str:
    """Reduce a GPU name to its lookup key.

    Lowercases, splits on anything that is not a letter or digit (spaces, dashes, underscores, slashes,
    brackets), drops a leading vendor word ("NVIDIA", "AMD", "Intel") and the word "GeForce", and joins
    what is left: ``"NVIDIA GeForce RTX 4090"``, ``"rtx-4090"`` and ``"RTX4090"`` all give ``"rtx4090"``.
    """
    tokens = [token for token in re.split(r"[^0-9a-z]+", name.casefold()) if token]
    if tokens and tokens[0] in _VENDOR_PREFIXES:
        tokens = tokens[1:]
    return "".join(token for token in tokens if token not in _DROPPED_TOKENS)


@functools.cache
def list_gpus() -> tuple[GPU, ...]:
    """Return every catalog GPU, in catalog order.

    The catalog is read from ``planner/catalog/data/gpus.json`` once and cached.

    Returns:
        The catalog's GPUs (never a custom GPU).

    Raises:
        PlannerError: If the data file is missing a field or repeats an id.
    """
    text = resources.files("planner.catalog").joinpath("data", _DATA_FILE).read_text(encoding="utf-8")
    wanted = {field.name for field in fields(GPU)} - {"is_custom"}
    gpus = []
    for entry in json.loads(text)["gpus"]:
        missing = wanted - entry.keys()
        if missing:
            raise PlannerError(f"GPU catalog entry {entry.get('id')!r} lacks {', '.join(sorted(missing))}")
        values = {key: entry[key] for key in wanted}
        values["aliases"] = tuple(values["aliases"])
        if values["link"] not in LINKS:
            raise PlannerError(f"GPU catalog entry {entry['id']!r}: link {values['link']!r} is not one of {LINKS}")
        gpus.append(GPU(**values))
    ids = [gpu.id for gpu in gpus]
    if len(set(ids)) != len(ids):
        raise PlannerError("GPU catalog repeats an id")
    return tuple(gpus)


@functools.cache
def gpu_ids() -> tuple[str, ...]:
    """Return the catalog ids, in catalog order."""
    return tuple(gpu.id for gpu in list_gpus())


@functools.cache
def _lookup_table() -> dict[str, GPU]:
    """Map the normalised id, name and every alias of each catalog GPU to the GPU.

    Raises:
        PlannerError: If two GPUs share a normalised name (the lookup would be ambiguous).
    """
    table: dict[str, GPU] = {}
    for gpu in list_gpus():
        for name in (gpu.id, gpu.name, *gpu.aliases):
            key = _normalize(name)
            other = table.setdefault(key, gpu)
            if other is not gpu:
                raise PlannerError(f"GPU name {name!r} matches both {other.id!r} and {gpu.id!r}")
    return table


def get_gpu(name: str) -> GPU:
    """Look a GPU up by catalog id, marketing name, nvidia-smi name or short name.

    Matching ignores case, spaces, dashes and underscores, a leading "NVIDIA "/"AMD "/"Intel " and the
    word "GeForce". Ambiguous short names resolve to the most common SKU (module docstring): ``"H100"``
    is the SXM5 80GB part, ``"A100"`` the SXM4 80GB part.

    Args:
        name: For example ``"h100-sxm-80gb"``, ``"NVIDIA H100 80GB HBM3"``, ``"RTX 4090"``,
            ``"AMD Instinct MI300X"``.

    Returns:
        The catalog GPU.

    Raises:
        InvalidParameterError: If ``name`` is not a non-empty string.
        UnknownGPUError: If nothing matches; the message names the value and the closest catalog ids.

    Example:
        >>> get_gpu("NVIDIA A100-SXM4-40GB").id
        'a100-sxm4-40gb'
    """
    if not isinstance(name, str) or not _normalize(name):
        raise InvalidParameterError("name", name, "a non-empty GPU name or catalog id")
    table = _lookup_table()
    key = _normalize(name)
    gpu = table.get(key)
    if gpu is not None:
        return gpu
    close_keys = difflib.get_close_matches(key, list(table), n=10, cutoff=0.0)
    suggestions = list(dict.fromkeys(table[close_key].id for close_key in close_keys))[:3]
    raise UnknownGPUError(
        f"unknown GPU {name!r}; closest catalog ids: {', '.join(suggestions)} (python -m planner gpus lists them all)"
    )


def _check_positive(name: str, value: object, *, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite real number > 0 (and <= ``maximum``).

    Raises:
        InvalidParameterError: Naming ``name``, the value and the accepted range.
    """
    accepted = "a finite number > 0" + (f" and <= {maximum:g}" if maximum is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(name, value, accepted)
    number = float(value)
    if not math.isfinite(number) or number <= 0 or (maximum is not None and number > maximum):
        raise InvalidParameterError(name, value, accepted)
    return number


def custom_gpu(
    *,
    memory_gib: float,
    bandwidth_gb_per_s: float | None = None,
    bf16_tflops: float | None = None,
    fp8_tflops: float | None = None,
    name: str = "Custom GPU",
) -> GPU:
    """Build a GPU the catalog does not have, from the figures the user knows.

    Args:
        memory_gib: Device total as the driver reports it (what vLLM prints as ``total_gpu_memory``),
            in GiB; finite, > 0 and <= :data:`MAX_CUSTOM_MEMORY_GIB`.
        bandwidth_gb_per_s: Peak memory bandwidth in GB/s (10**9 bytes/s), or ``None`` if unknown.
        bf16_tflops: Dense BF16 tensor throughput in TFLOPS, or ``None`` if unknown.
        fp8_tflops: Dense FP8 tensor throughput in TFLOPS, or ``None`` if the GPU has no FP8 path.
        name: Display name.

    Returns:
        A GPU with ``id == "custom"``, ``is_custom=True``, ``memory_total_source="custom"``,
        ``fp8_support = fp8_tflops is not None`` and ``None`` for every figure not given.

    Raises:
        InvalidParameterError: Naming the first parameter that is not a finite number > 0 (or memory
            above 4096 GiB), or an empty ``name``.

    Example:
        >>> custom_gpu(memory_gib=40, bandwidth_gb_per_s=1000).memory_bandwidth_bytes_per_s
        1000000000000.0
    """
    memory = _check_positive("memory_gib", memory_gib, maximum=MAX_CUSTOM_MEMORY_GIB)
    bandwidth = None if bandwidth_gb_per_s is None else _check_positive("bandwidth_gb_per_s", bandwidth_gb_per_s) * GB
    bf16 = None if bf16_tflops is None else _check_positive("bf16_tflops", bf16_tflops)
    fp8 = None if fp8_tflops is None else _check_positive("fp8_tflops", fp8_tflops)
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameterError("name", name, "a non-empty string")
    return GPU(
        id=CUSTOM_GPU_ID,
        name=name.strip(),
        vendor="custom",
        memory_marketed_gb=None,
        memory_total_bytes=round(memory * GIB),
        memory_total_source="custom",
        memory_bandwidth_bytes_per_s=bandwidth,
        bf16_tflops=bf16,
        fp16_tflops=None,
        fp8_tflops=fp8,
        int8_tops=None,
        fp8_support=fp8 is not None,
        price_usd_per_hour=None,
        price_source=None,
        interconnect=None,
        aliases=(),
        is_custom=True,
        memory_total_note="Entered by the user.",
    )
