"""Tests of planner.catalog.gpus: the catalog's figures, name lookup and custom GPUs.

Golden values cite their source: the public start-up logs of bench/data/vllm_capacity_logs.json, the H200 measurement
of bench/data/measured/h200_ceilings.json, and the sources each figure of planner/catalog/data/gpus.json names.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import pytest

import planner
from planner.catalog.gpus import (
    CUDA_DRIVER_RESERVE_BYTES,
    GPU,
    MEMORY_TOTAL_SOURCES,
    custom_gpu,
    get_gpu,
    gpu_ids,
    list_gpus,
)
from planner.errors import InvalidParameterError, PlannerError, UnknownGPUError
from planner.units import GB, GIB, MIB

DATA_FILE = Path(planner.__file__).parent / "catalog" / "data" / "gpus.json"

EXPECTED_IDS = (
    "rtx-3090",
    "rtx-4090",
    "rtx-5090",
    "rtx-a6000",
    "l4",
    "l40s",
    "a10g",
    "a10",
    "t4",
    "v100-sxm2-32gb",
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "h100-sxm-80gb",
    "h100-pcie-80gb",
    "h100-nvl-94gb",
    "h200-sxm-141gb",
    "gh200-96gb",
    "b200",
    "b300",
    "gb200",
    "mi250x",
    "mi300x",
    "mi325x",
    "mi355x",
    "gaudi3",
)


@pytest.fixture(scope="module")
def raw_entries() -> dict[str, dict]:
    """The catalog's JSON entries by id, including the fields GPU does not carry."""
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return {entry["id"]: entry for entry in data["gpus"]}


# --- catalog shape -----------------------------------------------------------------------------


def test_catalog_covers_every_reference_gpu() -> None:
    assert len(list_gpus()) >= 25
    assert gpu_ids() == EXPECTED_IDS


def test_ids_are_unique_lowercase_and_in_catalog_order() -> None:
    ids = [gpu.id for gpu in list_gpus()]
    assert len(set(ids)) == len(ids)
    assert all(gpu_id == gpu_id.lower() and " " not in gpu_id for gpu_id in ids)
    assert tuple(ids) == gpu_ids()


def test_list_gpus_is_cached_and_gpus_are_frozen_and_hashable() -> None:
    assert list_gpus() is list_gpus()
    gpu = get_gpu("h100")
    assert hash(gpu) == hash(get_gpu("h100-sxm-80gb"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.memory_total_bytes = 0  # type: ignore[misc]


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda gpu: gpu.id)
def test_every_gpu_is_well_formed(gpu: GPU) -> None:
    assert gpu.name and gpu.vendor in {"NVIDIA", "AMD", "Intel"}
    assert not gpu.is_custom
    assert gpu.memory_total_source in MEMORY_TOTAL_SOURCES
    assert gpu.memory_total_note
    assert isinstance(gpu.memory_total_bytes, int) and gpu.memory_total_bytes > 0
    assert isinstance(gpu.aliases, tuple)
    # The driver total is never above the marketed size read as GiB.
    assert gpu.memory_marketed_gb is not None
    assert gpu.memory_total_bytes < gpu.memory_marketed_gb * GIB
    assert gpu.memory_bandwidth_bytes_per_s is not None and gpu.memory_bandwidth_bytes_per_s > 1e11
    assert gpu.fp8_support == (gpu.fp8_tflops is not None)
    assert (gpu.price_usd_per_hour is None) == (gpu.price_source is None)


@pytest.mark.parametrize("gpu_id", EXPECTED_IDS)
def test_every_figure_has_a_source(raw_entries: dict[str, dict], gpu_id: str) -> None:
    entry = raw_entries[gpu_id]
    figures = (
        "memory_marketed_gb",
        "memory_nvidia_smi_mib",
        "memory_total_bytes",
        "memory_bandwidth_bytes_per_s",
        "bf16_tflops",
        "fp16_tflops",
        "fp8_tflops",
        "int8_tops",
        "fp8_support",
        "interconnect",
    )
    for figure in figures:
        if entry[figure] is not None:
            assert entry["sources"].get(figure), f"{gpu_id}.{figure} has no source"


# --- device memory -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_id", "expected_gib", "tolerance_gib", "expected_source"),
    [
        # vLLM 0.15-0.19 'total_gpu_memory 79.19 GiB', vllm_capacity_logs ids 38-52 (llm-d-planner
        # accuracy_report.md) and id 16 (generative-computing/mellea PR 416).
        ("h100-sxm-80gb", 79.19, 0.01, "vllm_log"),
        # vLLM 'total_gpu_memory=23.58GiB', vllm_capacity_logs ids 1, 2 (vllm issue 10517), 9 (PR 14447).
        ("rtx-3090", 23.58, 0.01, "vllm_log"),
        # vLLM 0.8.2 'total_gpu_memory (79.15GiB)', vllm_capacity_logs id 56 (A100-SXM4-80GB).
        ("a100-sxm4-80gb", 79.15, 0.01, "vllm_log"),
        # Measured torch total_memory 150109880320 B, bench/data/measured/h200_ceilings.json.
        ("h200-sxm-141gb", 139.80, 0.01, "measured"),
        # deviceQuery '40441 MBytes (42405855232 bytes)', upb-pc2 wiki page on A100 40GB with NVLink.
        ("a100-sxm4-40gb", 39.494, 0.001, "measured"),
        # CUDA device query 'Total Global Memory: 178.35 GB' (GiB), pytorch/ao PR 4002.
        ("b200", 178.35, 0.01, "measured"),
    ],
)
def test_memory_total_matches_logged_or_measured_cuda_total(
    gpu_id: str, expected_gib: float, tolerance_gib: float, expected_source: str
) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.memory_total_gib == pytest.approx(expected_gib, abs=tolerance_gib)
    assert gpu.memory_total_source == expected_source


@pytest.mark.parametrize(
    ("gpu_id", "expected_bytes"),
    [
        (
            "h200-sxm-141gb",
            150109880320,
        ),  # bench/data/measured/h200_ceilings.json total_memory_bytes
        ("a100-sxm4-40gb", 42405855232),  # deviceQuery on the upb-pc2 A100 40GB page
    ],
)
def test_measured_totals_are_exact_bytes(gpu_id: str, expected_bytes: int) -> None:
    assert get_gpu(gpu_id).memory_total_bytes == expected_bytes


def test_driver_reserve_is_the_median_of_the_known_pairs(
    raw_entries: dict[str, dict],
) -> None:
    # nvidia-smi total minus CUDA total, on every SKU that has both: 430.1, 468.4, 518.6, 615.1,
    # 728.6 and 870.4 MiB (module docstring of planner.catalog.gpus); the median is 566.8 -> 567 MiB.
    reserves_mib = {
        gpu.id: raw_entries[gpu.id]["memory_nvidia_smi_mib"] - gpu.memory_total_bytes / MIB
        for gpu in list_gpus()
        if gpu.memory_total_source in {"vllm_log", "measured"}
        and raw_entries[gpu.id]["memory_nvidia_smi_mib"] is not None
    }
    assert sorted(reserves_mib) == sorted(
        [
            "rtx-3090",
            "a100-sxm4-40gb",
            "a100-sxm4-80gb",
            "h100-sxm-80gb",
            "h200-sxm-141gb",
            "b200",
        ]
    )
    assert statistics.median(reserves_mib.values()) == pytest.approx(566.8, abs=0.1)
    assert CUDA_DRIVER_RESERVE_BYTES == 567 * MIB
    assert all(400 < reserve < 900 for reserve in reserves_mib.values())


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda gpu: gpu.id)
def test_derived_totals_follow_the_documented_rule(raw_entries: dict[str, dict], gpu: GPU) -> None:
    smi_mib = raw_entries[gpu.id]["memory_nvidia_smi_mib"]
    if gpu.memory_total_source == "derived_nvidia_smi":
        assert gpu.memory_total_bytes == smi_mib * MIB - CUDA_DRIVER_RESERVE_BYTES
    elif gpu.memory_total_source == "derived_marketed":
        assert smi_mib is None  # rule (3) is only used when there is no nvidia-smi figure
        expected = round(gpu.memory_marketed_gb * GIB) - CUDA_DRIVER_RESERVE_BYTES
        assert gpu.memory_total_bytes == expected
    if smi_mib is not None:
        assert gpu.memory_total_bytes < smi_mib * MIB


@pytest.mark.parametrize(
    ("gpu_id", "expected_gib", "expected_source"),
    [
        # nvidia-smi 24564 MiB (vllm issue 7553) - 567 MiB = 23997 MiB.
        ("rtx-4090", 23997 / 1024, "derived_nvidia_smi"),
        # nvidia-smi 46068 MiB (modal-client PR 2797) - 567 MiB.
        ("l40s", 45501 / 1024, "derived_nvidia_smi"),
        # nvidia-smi 23034 MiB (modal-client PR 2797) - 567 MiB.
        ("l4", 22467 / 1024, "derived_nvidia_smi"),
        # nvidia-smi 275040 MiB (aiconfigurator b300_sxm.yaml) - 567 MiB.
        ("b300", 274473 / 1024, "derived_nvidia_smi"),
        # Marketed 192 GB read as GiB - 567 MiB (no ROCm total sourced).
        ("mi300x", 192 - 567 / 1024, "derived_marketed"),
        # Marketed 80 GB read as GiB - 567 MiB (no nvidia-smi total seen for the PCIe SKU).
        ("h100-pcie-80gb", 80 - 567 / 1024, "derived_marketed"),
    ],
)
def test_derived_totals_golden(gpu_id: str, expected_gib: float, expected_source: str) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.memory_total_gib == pytest.approx(expected_gib, abs=1e-9)
    assert gpu.memory_total_source == expected_source


# --- other figures -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_id", "expected_bytes_per_s"),
    [
        ("h100-sxm-80gb", 3.35e12),  # aiconfigurator h100_sxm.yaml: 3350 GB/s
        ("h200-sxm-141gb", 4.8e12),  # aiconfigurator h200_sxm.yaml: 4800 GB/s
        ("a100-sxm4-80gb", 2.039e12),  # aiconfigurator a100_sxm.yaml: 2.039 TB/s
        ("a100-sxm4-40gb", 1.555e12),  # upb-pc2 A100 40GB page: 1555 GB/s
        ("b200", 7.7e12),  # aiconfigurator b200_sxm.yaml: 7.7 TB/s
        ("mi300x", 5.3e12),  # MI300X-vs-H200 METHODOLOGY.md: 5.3 TB/s
        ("rtx-4090", 1.008e12),  # NVIDIA Ada whitepaper appendix A: 1008 GB/s
        ("l4", 3.0e11),  # aiconfigurator l4.yaml: 300 GB/s
    ],
)
def test_memory_bandwidth(gpu_id: str, expected_bytes_per_s: float) -> None:
    actual = get_gpu(gpu_id).memory_bandwidth_bytes_per_s
    assert actual == pytest.approx(expected_bytes_per_s, rel=1e-9)


@pytest.mark.parametrize(
    ("gpu_id", "bf16", "fp8"),
    [
        ("h100-sxm-80gb", 989.4, 1978.9),  # glennklockwood.com H100 page, dense
        (
            "a100-sxm4-80gb",
            312.0,
            None,
        ),  # aiconfigurator a100_sxm.yaml; no FP8 on Ampere
        ("l40s", 362.05, 733.0),  # aiconfigurator l40s.yaml
        ("rtx-3090", 71.2, None),  # GA102 whitepaper, BF16 with FP32 accumulate
        ("mi300x", 1307.4, 2614.9),  # MI300X-vs-H200 METHODOLOGY.md, dense
        ("t4", None, None),  # Turing: no BF16 or FP8 tensor cores
    ],
)
def test_dense_tensor_throughput(gpu_id: str, bf16: float | None, fp8: float | None) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.bf16_tflops == (None if bf16 is None else pytest.approx(bf16, abs=0.01))
    assert gpu.fp8_tflops == (None if fp8 is None else pytest.approx(fp8, abs=0.01))
    assert gpu.fp8_support == (fp8 is not None)


def test_prices_carry_a_source() -> None:
    priced = {gpu.id: gpu.price_usd_per_hour for gpu in list_gpus() if gpu.price_usd_per_hour}
    # skypilot-catalog Lambda vms.csv (commit 11580132): gpu_1x_a6000 0.80, gpu_1x_a10 0.75, gpu_1x_a100_sxm4 1.29,
    # gpu_8x_a100_80gb_sxm4 14.32 / 8, gpu_1x_h100_pcie 2.49, gpu_8x_h100_sxm5 23.92 / 8, gpu_1x_gh200 1.49.
    assert priced == {
        "rtx-a6000": 0.80,
        "a10": 0.75,
        "a100-sxm4-40gb": 1.29,
        "a100-sxm4-80gb": 1.79,
        "h100-pcie-80gb": 2.49,
        "h100-sxm-80gb": 2.99,
        "gh200-96gb": 1.49,
    }
    assert all("skypilot-catalog" in (gpu.price_source or "") for gpu in list_gpus() if gpu.price_usd_per_hour)


# --- lookup ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected_id"),
    [
        ("H100 80GB", "h100-sxm-80gb"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm-80gb"),  # nvidia-smi name of the SXM5 part
        ("h100", "h100-sxm-80gb"),  # ambiguous short name -> most common SKU
        ("H100 PCIe", "h100-pcie-80gb"),
        ("NVIDIA H100 NVL", "h100-nvl-94gb"),
        ("a100-40gb", "a100-sxm4-40gb"),
        ("A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
        ("A100", "a100-sxm4-80gb"),  # ambiguous short name -> most common SKU
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA A10G", "a10g"),
        ("a10", "a10"),
        ("Tesla T4", "t4"),
        ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
        ("MI300X", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"),
        ("AMD Instinct MI250X/MI250", "mi250x"),  # rocminfo name
        ("H200", "h200-sxm-141gb"),
        ("NVIDIA H200", "h200-sxm-141gb"),
        ("GH200", "gh200-96gb"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA B300 SXM6 AC", "b300"),  # name in pytorch/ao roofline_utils (PR 3640)
        ("Intel Gaudi 3", "gaudi3"),
        ("  h100_sxm_80GB ", "h100-sxm-80gb"),
        ("NVIDIA-GEFORCE-RTX-5090", "rtx-5090"),
    ],
)
def test_lookup_accepts_ids_marketing_and_driver_names(name: str, expected_id: str) -> None:
    assert get_gpu(name).id == expected_id


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda gpu: gpu.id)
def test_every_id_name_and_alias_resolves_to_its_own_gpu(gpu: GPU) -> None:
    for name in (gpu.id, gpu.name, *gpu.aliases, gpu.name.upper(), gpu.id.upper()):
        assert get_gpu(name) is gpu


@pytest.mark.parametrize(("name", "suggestion"), [("H1000", "h100-sxm-80gb"), ("rtx 4080", "rtx-4090")])
def test_unknown_name_names_the_value_and_the_closest_ids(name: str, suggestion: str) -> None:
    with pytest.raises(UnknownGPUError) as excinfo:
        get_gpu(name)
    message = str(excinfo.value)
    assert repr(name) in message
    assert suggestion in message
    assert "\n" not in message
    assert isinstance(excinfo.value, PlannerError) and isinstance(excinfo.value, LookupError)


def test_custom_is_not_a_catalog_name() -> None:
    with pytest.raises(UnknownGPUError):
        get_gpu("custom")


@pytest.mark.parametrize("name", ["", "   ", "--", None, 80])
def test_lookup_rejects_non_names(name: object) -> None:
    with pytest.raises(InvalidParameterError) as excinfo:
        get_gpu(name)  # type: ignore[arg-type]
    assert excinfo.value.name == "name"


# --- custom GPUs -------------------------------------------------------------------------------


def test_custom_gpu_fields() -> None:
    gpu = custom_gpu(memory_gib=40, bandwidth_gb_per_s=1000, bf16_tflops=300, name=" My card ")
    assert gpu.is_custom and gpu.id == "custom" and gpu.name == "My card"
    assert gpu.memory_total_bytes == 40 * GIB
    assert gpu.memory_total_gib == 40.0
    assert gpu.memory_total_source == "custom"
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(1000 * GB, rel=1e-12)
    assert gpu.bf16_tflops == 300.0
    assert gpu.fp8_tflops is None and not gpu.fp8_support
    assert gpu.memory_marketed_gb is None and gpu.price_usd_per_hour is None


def test_custom_gpu_minimal_and_fp8() -> None:
    gpu = custom_gpu(memory_gib=0.5, fp8_tflops=1000.0)
    assert gpu.memory_total_bytes == 512 * MIB
    assert gpu.fp8_support and gpu.fp8_tflops == 1000.0
    assert gpu.memory_bandwidth_bytes_per_s is None and gpu.bf16_tflops is None
    assert custom_gpu(memory_gib=4096).memory_total_gib == 4096.0  # the upper bound is accepted


def test_custom_gpu_arguments_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        custom_gpu(80)  # type: ignore[misc]


@pytest.mark.parametrize("parameter", ["memory_gib", "bandwidth_gb_per_s", "bf16_tflops", "fp8_tflops"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, 0, 0.0, "80", True], ids=repr)
def test_custom_gpu_rejects_bad_numbers(parameter: str, bad: object) -> None:
    kwargs: dict[str, object] = {"memory_gib": 80.0, parameter: bad}
    with pytest.raises(InvalidParameterError) as excinfo:
        custom_gpu(**kwargs)  # type: ignore[arg-type]
    assert excinfo.value.name == parameter
    assert parameter in str(excinfo.value)


@pytest.mark.parametrize("huge", [4096.001, 1e6, 1e300])
def test_custom_gpu_rejects_huge_memory(huge: float) -> None:
    with pytest.raises(InvalidParameterError, match="memory_gib") as excinfo:
        custom_gpu(memory_gib=huge)
    assert "4096" in str(excinfo.value)


@pytest.mark.parametrize("name", ["", "   "])
def test_custom_gpu_rejects_empty_name(name: str) -> None:
    with pytest.raises(InvalidParameterError) as excinfo:
        custom_gpu(memory_gib=24, name=name)
    assert excinfo.value.name == "name"
