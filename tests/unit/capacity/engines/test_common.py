"""planner.capacity.engines.common: the dtypes vLLM's ``--dtype auto`` resolves to, and the scenario's GPU."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.engines.common import resolve, resolve_gpu
from planner.capacity.scenario import Scenario
from planner.catalog.models import get_model
from planner.errors import InvalidParameterError, UnknownGPUError
from planner.units import GIB

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"  # config.json: "torch_dtype": "bfloat16"
LLAMA_8B_AWQ = "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"  # float16, quantization_config awq


@pytest.mark.parametrize(
    ("gpu", "gpu_id", "dtype"),
    [
        ("h100", "h100-sxm-80gb", "bfloat16"),  # the checkpoint's own dtype ("H100" is the SXM5 80GB part)
        ("t4", "t4", "float16"),  # compute capability 7.5 < 8.0: no bf16 (vllm/config/model.py _resolve_auto_dtype)
        ("v100-sxm2-32gb", "v100-sxm2-32gb", "float16"),  # 7.0
    ],
)
def test_dtype_auto_is_the_checkpoints_unless_the_gpu_has_no_bf16(gpu: str, gpu_id: str, dtype: str) -> None:
    resolved = resolve(Scenario(model=LLAMA_8B, gpu=gpu))
    assert (resolved.dtype, resolved.quantization, resolved.gpu.id) == (dtype, "none", gpu_id)


def test_a_float32_checkpoint_is_served_in_bfloat16() -> None:
    spec = replace(get_model(LLAMA_8B).spec, torch_dtype="float32")
    assert resolve(Scenario(model=LLAMA_8B, gpu="h100"), spec=spec).dtype == "bfloat16"
    assert resolve(Scenario(model=LLAMA_8B, gpu="t4"), spec=spec).dtype == "float16"


def test_an_explicit_dtype_and_quantization_are_kept() -> None:
    resolved = resolve(Scenario(model=LLAMA_8B, gpu="t4", dtype="bfloat16", quantization="fp8"))
    assert (resolved.dtype, resolved.quantization) == ("bfloat16", "fp8")


def test_quantization_unset_follows_the_checkpoint() -> None:
    resolved = resolve(Scenario(model=LLAMA_8B_AWQ, gpu="h100"))
    assert (resolved.dtype, resolved.quantization) == ("float16", "awq")


def test_custom_gpu_needs_its_memory() -> None:
    gpu = resolve_gpu(Scenario(gpu="custom", custom_gpu_memory_gib=20.0))
    assert gpu.memory_total_bytes == 20 * GIB
    with pytest.raises(InvalidParameterError, match="custom_gpu_memory_gib"):
        resolve_gpu(Scenario(gpu="custom"))
    with pytest.raises(UnknownGPUError):
        resolve_gpu(Scenario(gpu="no-such-gpu"))
