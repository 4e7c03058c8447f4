"""Pieces every engine model shares: resolving the model, GPU and dtypes of a scenario."""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.scenario import Scenario
from planner.catalog.gpus import GPU, custom_gpu, get_gpu
from planner.catalog.hub import resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError

__all__ = ["Resolved", "resolve", "resolve_gpu"]

#: GPUs without bf16 tensor cores; vLLM's ``--dtype auto`` falls back to float16 there
#: (``vllm/config/model.py::_resolve_auto_dtype``, compute capability < 8.0).
_NO_BF16 = frozenset({"t4", "v100-sxm2-32gb"})


@dataclass(frozen=True)
class Resolved:
    """A scenario's model, GPU and the dtypes the engine will use."""

    spec: ModelSpec
    gpu: GPU
    dtype: str
    quantization: str


def resolve(scenario: Scenario, spec: ModelSpec | None = None, gpu: GPU | None = None) -> Resolved:
    """Resolve the model (catalog, cache, then Hub; unless ``spec`` is given), the GPU (unless ``gpu`` is given) and
    the dtypes.

    ``--dtype auto`` takes the checkpoint's dtype, with float32 checkpoints served in bfloat16 and
    bfloat16 replaced by float16 on GPUs without bf16 (T4, V100). ``--quantization`` unset follows the
    checkpoint's ``quantization_config``.

    Raises:
        UnknownModelError / UnknownGPUError / InvalidParameterError: from the lookups.
    """
    if spec is None:
        spec = resolve_model(scenario.model).spec
    if gpu is None:
        gpu = resolve_gpu(scenario)
    dtype = scenario.dtype
    if dtype == "auto":
        dtype = spec.torch_dtype if spec.torch_dtype != "float32" else "bfloat16"
        if dtype == "bfloat16" and gpu.id in _NO_BF16:
            dtype = "float16"
    quant = scenario.quantization or (spec.quant.method if spec.quant.method != "none" else "none")
    return Resolved(spec, gpu, dtype, quant)


def resolve_gpu(scenario: Scenario) -> GPU:
    """The scenario's GPU: a catalog entry, or a custom GPU of ``custom_gpu_memory_gib``.

    Raises:
        UnknownGPUError / InvalidParameterError: unknown name, or ``custom`` without its memory.
    """
    if scenario.gpu == "custom":
        if scenario.custom_gpu_memory_gib is None:
            raise InvalidParameterError("custom_gpu_memory_gib", None, "the custom GPU's memory in GiB")
        return custom_gpu(memory_gib=scenario.custom_gpu_memory_gib)
    return get_gpu(scenario.gpu)
