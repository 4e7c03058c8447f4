"""The article's ``design_memory_budget``, reproduced exactly, units and rounding included.

The rule of thumb the planner is measured against: per GPU, VRAM minus weights minus a flat 1.5
overhead, divided by KV bytes per token. It mixes units the way the article does:

* weights: ``params · bytes_per_value`` in bytes, converted to GiB (``/ 2**30``);
* GPU memory: the marketed "GB" figure used as if it were GiB (24 for an RTX 4090, 80 for an H100);
* overhead: 1.5 in those same units;
* KV bytes per token: ``2 · layers · kv_heads · head_dim · kv_bytes`` (no tensor parallelism);
* total tokens: ``floor(free · 2**30 / kv_bytes_per_token)``;
* concurrent requests: ``floor(total_tokens / context)``.

Bytes per value: fp16 2, fp8 1, int8 1, int4 0.5. The article's scenario 1 (RTX 4090 24 GB,
Llama 3.1 8B, int4 weights, fp16 KV, 8,192 context) gives 131,072 bytes per token, 153,802 tokens,
18 requests; scenario 4 (H100 80 GB, Llama 3.1 70B, int4, fp8 KV, 8,192) gives 163,840 bytes per token,
300,834 tokens, 36 requests.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from planner.capacity.engines.common import resolve_gpu
from planner.capacity.result import Formula, MemoryTerms, Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.catalog.models import get_model
from planner.catalog.params import count_params
from planner.errors import InvalidParameterError, UnknownModelError
from planner.units import GIB

__all__ = ["ARTICLE_BYTES_PER_VALUE", "ARTICLE_OVERHEAD", "ArticleBudget", "design_memory_budget", "plan_article"]

#: The article's bytes per value.
ARTICLE_BYTES_PER_VALUE = {"fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
#: The article's flat overhead, in its "GB" (really used as GiB).
ARTICLE_OVERHEAD = 1.5


@dataclass(frozen=True)
class ArticleBudget:
    """The article's result, in its own units.

    Attributes:
        weights_gib: ``params · bytes / 2**30``.
        free_gib: ``gpu_memory_gb − weights_gib − 1.5``.
        kv_bytes_per_token: ``2 · layers · kv_heads · head_dim · kv_bytes``.
        total_tokens: ``floor(free_gib · 2**30 / kv_bytes_per_token)`` (0 when nothing is free).
        concurrent_requests: ``floor(total_tokens / target_context)``.
    """

    weights_gib: float
    free_gib: float
    kv_bytes_per_token: int
    total_tokens: int
    concurrent_requests: int


def design_memory_budget(
    *,
    params_b: float,
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    gpu_memory_gb: float,
    weight_quant: str = "fp16",
    kv_quant: str = "fp16",
    target_context: int = 8192,
) -> ArticleBudget:
    """The article's memory budget (formulas in the module docstring).

    Args:
        params_b: parameters in billions (8 for Llama 3.1 8B).
        num_layers / num_kv_heads / head_dim: model shape.
        gpu_memory_gb: the GPU's marketed memory (24, 80, ...).
        weight_quant / kv_quant: ``fp16``, ``fp8``, ``int8`` or ``int4``.
        target_context: tokens per request.

    Raises:
        InvalidParameterError: an unknown precision or a non-positive size.
    """
    for name, value in (("weight_quant", weight_quant), ("kv_quant", kv_quant)):
        if value not in ARTICLE_BYTES_PER_VALUE:
            raise InvalidParameterError(name, value, "one of " + ", ".join(ARTICLE_BYTES_PER_VALUE))
    for name, value in (
        ("params_b", params_b),
        ("num_layers", num_layers),
        ("num_kv_heads", num_kv_heads),
        ("head_dim", head_dim),
        ("gpu_memory_gb", gpu_memory_gb),
        ("target_context", target_context),
    ):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            raise InvalidParameterError(name, value, "a positive number")
    weights_gib = params_b * 1e9 * ARTICLE_BYTES_PER_VALUE[weight_quant] / GIB
    free_gib = gpu_memory_gb - weights_gib - ARTICLE_OVERHEAD
    per_token = int(2 * num_layers * num_kv_heads * head_dim * ARTICLE_BYTES_PER_VALUE[kv_quant])
    tokens = max(0, math.floor(free_gib * GIB / per_token))
    return ArticleBudget(weights_gib, free_gib, per_token, tokens, tokens // target_context)


def _published_params_b(model_id: str, total_params: int) -> float:
    """The size the article would type: the published figure ("8B", "70B") where the catalog has one,
    else the computed count rounded to two significant digits."""
    try:
        published = get_model(model_id).published_params or ""
    except UnknownModelError:
        published = ""
    match = re.match(r"\s*(\d+(?:\.\d+)?)\s*B", published)
    return float(match.group(1)) if match else float(f"{total_params / 1e9:.2g}")


def plan_article(scenario: Scenario, spec: ModelSpec | None = None) -> Plan:
    """Plan ``scenario`` with the article's rule. Article inputs set in the scenario
    (``params_b``, ``num_layers``, ..., ``gpu_memory_gb``) override the catalog model and GPU."""
    model_needed = None in (scenario.params_b, scenario.num_layers, scenario.num_kv_heads, scenario.head_dim)
    if model_needed and spec is None:
        spec = resolve_model(scenario.model).spec
    gpu = resolve_gpu(scenario) if scenario.gpu_memory_gb is None else None
    params_b = scenario.params_b or _published_params_b(spec.model_id, count_params(spec).total)
    layers = scenario.num_layers or spec.num_layers
    kv_heads = scenario.num_kv_heads or spec.num_kv_heads
    head_dim = scenario.head_dim or spec.head_dim
    gpu_gb = scenario.gpu_memory_gb or (gpu.memory_marketed_gb or round(gpu.memory_total_gib))
    weight_q = scenario.weight_quant or "fp16"
    kv_q = scenario.kv_quant or "fp16"
    context = scenario.target_context or scenario.max_model_len or 8192
    # The article's inputs are spelled as the Scenario's fields: the plan's resolved scenario holds them as used.
    inputs = {
        "params_b": params_b,
        "num_layers": layers,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "gpu_memory_gb": gpu_gb,
        "weight_quant": weight_q,
        "kv_quant": kv_q,
        "target_context": context,
    }
    b = design_memory_budget(**inputs)
    total_bytes = gpu_gb * GIB
    kv_bytes = max(0.0, b.free_gib) * GIB
    terms = MemoryTerms(
        total_bytes, total_bytes, b.weights_gib * GIB, None, ARTICLE_OVERHEAD * GIB, None, kv_bytes, 0.0
    )
    reason = None
    if b.free_gib <= 0:
        reason = (
            f"weights ({b.weights_gib:.2f} GiB) plus the 1.5 GB overhead exceed the GPU's {gpu_gb:g} GB "
            "(the article counts GB and GiB alike)"
        )
    elif b.concurrent_requests < 1:
        reason = f"{b.total_tokens:,} tokens of KV cache hold no full {context:,}-token request"
    formulas = (
        Formula(
            "Weights",
            f"{params_b:g}e9 params × {ARTICLE_BYTES_PER_VALUE[weight_q]:g} B / 2^30",
            f"{b.weights_gib:.2f} GiB",
            "the article's design_memory_budget",
        ),
        Formula("Free for KV", f"{gpu_gb:g} − {b.weights_gib:.2f} − {ARTICLE_OVERHEAD}", f"{b.free_gib:.2f}"),
        Formula(
            "KV bytes per token",
            f"2 × {layers} layers × {kv_heads} KV heads × {head_dim} × {ARTICLE_BYTES_PER_VALUE[kv_q]:g} B",
            f"{b.kv_bytes_per_token:,} B",
        ),
        Formula("Total tokens", f"floor({b.free_gib:.4f} × 2^30 / {b.kv_bytes_per_token:,})", f"{b.total_tokens:,}"),
        Formula("Concurrent requests", f"floor({b.total_tokens:,} / {context:,})", f"{b.concurrent_requests}"),
    )
    resolved = replace(scenario, **inputs, max_model_len=context)
    return Plan(
        scenario=resolved,
        engine_label="Article rule of thumb",
        model_id=spec.model_id if spec else f"{params_b:g}B custom",
        gpu_name=gpu.name if gpu else f"{gpu_gb:g} GB GPU",
        num_gpus=1,
        per_gpu=terms,
        weights_total_bytes=b.weights_gib * GIB,
        kv_cache_total_bytes=kv_bytes,
        kv_bytes_per_token=b.kv_bytes_per_token,
        kv_bytes_per_token_model=b.kv_bytes_per_token,
        block_size=1,
        num_gpu_blocks=None,
        kv_cache_tokens=b.total_tokens,
        max_model_len=context,
        max_concurrency=b.concurrent_requests,
        max_concurrency_at_target=b.concurrent_requests,
        estimated_max_model_len=b.total_tokens,
        model_max_position_embeddings=spec.max_position_embeddings if spec else None,
        kv_needed_for_max_len_bytes=float(context * b.kv_bytes_per_token),
        fits=reason is None,
        reason=reason,
        formulas=formulas,
        notes=(
            "The article's rule of thumb ignores gpu_memory_utilization, activation memory, CUDA graphs, "
            "tensor parallelism, sliding windows and how checkpoints are really quantized; compare it "
            "with the vLLM engine.",
            *(
                (
                    "speculative decoding and the what-if KV compression are not part of the article's rule: plan them "
                    "under vLLM",
                )
                if scenario.speculative_config is not None or scenario.kv_compression_ratio
                else ()
            ),
        ),
    )
