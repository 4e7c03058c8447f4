"""TGI's token budget (``max_batch_total_tokens``) as its warm-up finds it, and its launcher checks.

TGI (``server/text_generation_server/models/flash_causal_lm.py::warmup``, text-generation-inference
v3.3.7, commit db931fc) sizes its KV cache per
shard like this:

1. allocate a KV cache for the warm-up batch and run one prefill of ``max_batch_prefill_tokens``
   tokens, with prefill log-probs requested, so the logits of every prompt token are materialised
   in fp32 together with their log-softmax (``2 · T · V · 4`` bytes; the layer activations, freed
   before them, are smaller for any real vocabulary); the allocator cache is not emptied afterwards,
   so that peak stays counted as used (TGI log id 62: A10G, Llama-3.1-8B, v2.2.0, 19,056 tokens
   logged, 20.2k planned);
2. ``free = mem_get_info().free − (1 − MEMORY_FRACTION · TGI_WIGGLE_ROOM) · total``
   (``utils/import_utils.py``); ``MEMORY_FRACTION`` is ``--cuda-memory-fraction`` (default 1.0),
   ``TGI_WIGGLE_ROOM`` 0.90 in v3.3, 0.95 in v2.3–v3.2; v2.0–v2.2 took ``0.95 × free`` instead;
3. ``num_blocks = free // block_bytes + warmup_blocks``, and the router logs
   ``Setting max batch total tokens to num_blocks · BLOCK_SIZE``.

``mem_get_info().free`` already excludes the CUDA context, which we take as 0.5 GiB (the gap between
nvidia-smi used memory and torch's reservation in TGI log id 62). The launcher rejects
``max_input_tokens >= max_total_tokens``, ``max_batch_prefill_tokens < max_input_tokens`` and a
``max_total_tokens`` above the model's or the batch's limit.
"""

from __future__ import annotations

import re
from dataclasses import replace

from planner import display
from planner.capacity.engines.common import resolve
from planner.capacity.kv_cache import kv_dtype_bytes, kv_heads_per_rank
from planner.capacity.result import Formula, MemoryTerms, Plan
from planner.capacity.scenario import Scenario
from planner.capacity.topology import place
from planner.capacity.weights import weights_bytes_per_rank
from planner.catalog.gpus import GPU
from planner.catalog.model_spec import ModelSpec
from planner.errors import InvalidParameterError
from planner.units import DTYPE_BYTES, GIB

__all__ = ["NEWEST_TGI_VERSION", "TGI_KV_CACHE_DTYPE", "TGI_QUANTIZE", "plan_tgi", "wiggle_room"]

NEWEST_TGI_VERSION = "3.3.7"
#: TGI's ``--quantize`` spelling of the planner's quantization names (``text-generation-launcher``'s ``Quantization``
#: enum, ``launcher/src/main.rs``; its ``fp8`` "works on H100 and above").
TGI_QUANTIZE = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "bitsandbytes": "bitsandbytes-nf4", "int8": "eetq"}
#: TGI's ``--kv-cache-dtype`` values for the planner's (vLLM's) names: the launcher takes only ``fp8_e4m3fn`` and
#: ``fp8_e5m2`` (``KVCacheDtype`` enum, ``launcher/src/main.rs``).
TGI_KV_CACHE_DTYPE = {"fp8": "fp8_e4m3fn", "fp8_e4m3": "fp8_e4m3fn", "fp8_e5m2": "fp8_e5m2"}
#: CUDA context outside torch's allocator, per GPU.
CUDA_CONTEXT_BYTES = 0.5 * GIB
#: TGI 3.x defaults to flashinfer attention with one-token pages; 2.x used 16-token paged blocks.
BLOCK_SIZE_V3 = 1
BLOCK_SIZE_V2 = 16
#: Cap on the default ``--max-total-tokens`` (launcher PR #1727: "capping the values to 16k").
V3_DEFAULT_TOTAL_CAP = 16384
#: TGI 2.x's fixed launcher defaults (log id 62: "Default `max_total_tokens` to 4096").
V2_DEFAULT_TOTAL = 4096


def _version(version: str | None) -> tuple[int, int]:
    """(major, minor) of a TGI version string; ``None`` is the newest known.

    Raises:
        InvalidParameterError: no ``major.minor`` in the string, or a major version TGI never had.
    """
    match = re.search(r"(\d+)\.(\d+)", version or NEWEST_TGI_VERSION)
    if not match or not 1 <= int(match.group(1)) <= 3:
        raise InvalidParameterError("engine_version", version, "a TGI version from 1.0 to 3.x, such as 2.2.0 or 3.3.7")
    return int(match.group(1)), int(match.group(2))


def wiggle_room(version: str | None) -> tuple[str, float]:
    """How a TGI version keeps headroom: ``("fraction_of_free", 0.95)`` for v2.0–2.2, otherwise
    ``("reserve_of_total", wiggle)`` with wiggle 0.95 (v2.3–v3.2) or 0.90 (v3.3+)."""
    v = _version(version)
    if v < (2, 3):
        return "fraction_of_free", 0.95
    return "reserve_of_total", 0.90 if v >= (3, 3) else 0.95


def _defaults(spec: ModelSpec, scenario: Scenario, version: str | None) -> tuple[int, int, int]:
    model_max = spec.max_position_embeddings
    if _version(version) < (3, 0):
        total = scenario.max_total_tokens or min(V2_DEFAULT_TOTAL, model_max)
    else:
        # TGI 3 derives unset limits from the model and the memory it finds; we take the model's
        # length capped at 16k, the cap of launcher PR #1727, and document the assumption.
        total = scenario.max_total_tokens or scenario.max_model_len or min(model_max, V3_DEFAULT_TOTAL_CAP)
    max_input = scenario.max_input_tokens or total - 1
    prefill = scenario.max_batch_prefill_tokens or max_input + 50
    return max_input, total, prefill


def _check_launcher_limits(scenario: Scenario, spec: ModelSpec, version: str) -> None:
    """The launcher's own argument checks (``launcher/src/main.rs``): it exits before loading anything.

    Raises:
        InvalidParameterError: ``--max-input-tokens`` not below ``--max-total-tokens``, or (TGI 2.x, which
            does not chunk prefills) ``--max-batch-prefill-tokens`` below ``--max-input-tokens``.
    """
    max_input, max_total, prefill = _defaults(spec, scenario, version)
    if max_input >= max_total:
        raise InvalidParameterError("max_input_tokens", max_input, f"fewer than max_total_tokens ({max_total:,})")
    # TGI 3 chunks long prefills (flashinfer), so only 2.x needs a whole prompt in one prefill batch.
    if _version(version) < (3, 0) and prefill < max_input:
        raise InvalidParameterError("max_batch_prefill_tokens", prefill, f"at least max_input_tokens ({max_input:,})")


def plan_tgi(scenario: Scenario, spec: ModelSpec | None = None, gpu: GPU | None = None) -> Plan:
    """Plan ``scenario`` the way TGI sizes its token budget at warm-up (see module docstring).

    ``tensor_parallel_size`` is TGI's ``--num-shard``; TGI has no pipeline parallelism.

    Returns:
        A plan whose ``kv_cache_tokens`` is ``max_batch_total_tokens`` and whose concurrency is
        ``max_batch_total_tokens / max_total_tokens``.
    """
    version = scenario.engine_version or NEWEST_TGI_VERSION
    _version(version)
    r = resolve(scenario, spec, gpu)
    spec, gpu = r.spec, r.gpu
    _check_launcher_limits(scenario, spec, version)
    shards = scenario.tensor_parallel_size
    max_input, max_total, prefill = _defaults(spec, scenario, version)
    block = BLOCK_SIZE_V3 if _version(version) >= (3, 0) else BLOCK_SIZE_V2
    total = float(gpu.memory_total_bytes)
    weights = weights_bytes_per_rank(spec, method=r.quantization, dtype=r.dtype, tp=shards, pp=1, stage=0).total_bytes
    kv_bytes = kv_dtype_bytes(scenario.kv_cache_dtype, r.dtype)
    heads = 1 if spec.is_mla else kv_heads_per_rank(spec.num_kv_heads, shards)
    width = (
        ((spec.kv_lora_rank or 0) + (spec.qk_rope_head_dim or 0))
        if spec.is_mla
        else heads * (spec.head_dim + spec.v_head_dim)
    )
    per_token = spec.num_layers * width * kv_bytes
    if scenario.kv_compression_ratio:
        per_token /= scenario.kv_compression_ratio  # a what-if, not an engine setting
    act = DTYPE_BYTES[r.dtype]
    inter = spec.num_experts_per_tok * spec.moe_intermediate_size if spec.is_moe else spec.intermediate_size
    qkv = (spec.num_attention_heads + 2 * spec.num_kv_heads) * spec.head_dim
    # The allocator keeps the larger of the two peaks cached: layer activations are freed before the
    # fp32 logits and their log-softmax are built.
    activation = prefill * max(2 * spec.vocab_size * 4, (2 * spec.hidden_size + (3 * inter + qkv) / shards) * act)
    warmup_kv = prefill * per_token
    free = total - CUDA_CONTEXT_BYTES - weights - activation - warmup_kv
    kind, wiggle = wiggle_room(version)
    if kind == "fraction_of_free":
        usable = wiggle * free
    else:
        usable = free - (1 - scenario.cuda_memory_fraction * wiggle) * total
    blocks = int(max(0.0, usable) // (per_token * block)) + int(prefill // block)
    tokens = blocks * block
    kv_memory = tokens * per_token
    reason = None
    if weights + CUDA_CONTEXT_BYTES > total * scenario.cuda_memory_fraction:
        reason = f"the weights ({display.gib(weights)} per shard) do not fit in {display.gib(total)}"
    elif max_total > spec.max_position_embeddings:
        reason = f"--max-total-tokens {max_total:,} exceeds the model's {spec.max_position_embeddings:,} positions"
    elif free < 0:
        reason = (
            f"the warm-up prefill of {prefill:,} tokens runs out of memory ({display.gib(-free)} short): lower "
            "--max-batch-prefill-tokens or shard over more GPUs"
        )
    elif tokens < max_total:
        reason = f"max_batch_total_tokens {tokens:,} is below --max-total-tokens {max_total:,}: TGI refuses to start"
    topology = place(shards, 1, gpu, engine="tgi")
    if reason is None and topology.warning:
        reason = topology.warning
    if weights + CUDA_CONTEXT_BYTES > total * scenario.cuda_memory_fraction or free < 0:
        # TGI never reaches the KV allocation: there is no cache and nothing to serve.
        blocks = tokens = 0
        kv_memory = 0.0
    terms = MemoryTerms(
        total_bytes=total,
        budget_bytes=total * scenario.cuda_memory_fraction,
        weights_bytes=weights,
        activation_bytes=activation,
        non_torch_bytes=CUDA_CONTEXT_BYTES,
        cuda_graph_bytes=None,
        kv_cache_bytes=kv_memory,
        unused_bytes=max(0.0, total - weights - activation - CUDA_CONTEXT_BYTES - kv_memory),
    )
    concurrency = tokens / max_total
    headroom = (
        "0.95 × free"
        if kind == "fraction_of_free"
        else f"free − (1 − {scenario.cuda_memory_fraction:g} × {wiggle}) × {display.gib(total)}"
    )
    formulas = (
        Formula(
            "Warm-up activation",
            f"{prefill:,} prefill tokens × 2 × {spec.vocab_size:,} vocab × 4 B (fp32 logits and log-probs)",
            display.gib(activation),
            "flash_causal_lm.py::warmup",
        ),
        Formula(
            "Free after warm-up",
            f"{display.gib(total)} − {display.gib(CUDA_CONTEXT_BYTES)} context − {display.gib(weights)}"
            f" weights − {display.gib(activation)} activation − {display.gib(warmup_kv)} warm-up KV",
            display.gib(free),
            "utils/import_utils.py::get_cuda_free_memory",
        ),
        Formula("Usable for KV", headroom, display.gib(max(0.0, usable)), "flash_causal_lm.py::warmup"),
        Formula(
            "max_batch_total_tokens",
            f"({display.gib(max(0.0, usable))} // {per_token:,.0f} B per token + "
            f"{prefill:,} warm-up tokens), in blocks of {block}",
            f"{tokens:,} tokens",
            "backends/v3/src/lib.rs",
        ),
        Formula("Concurrency at max_total_tokens", f"{tokens:,} / {max_total:,}", f"{concurrency:.2f}x"),
    )
    resolved = replace(
        scenario,
        max_input_tokens=max_input,
        max_total_tokens=max_total,
        max_batch_prefill_tokens=prefill,
        max_model_len=max_total,
        engine_version=version,
    )
    target = scenario.target_context
    return Plan(
        scenario=resolved,
        engine_label=f"TGI {version}",
        model_id=spec.model_id,
        gpu_name=gpu.name,
        num_gpus=shards,
        per_gpu=terms,
        weights_total_bytes=weights * shards,
        kv_cache_total_bytes=kv_memory * shards,
        kv_bytes_per_token=per_token,
        kv_bytes_per_token_model=per_token * (shards if heads * shards <= spec.num_kv_heads else 1),
        block_size=block,
        num_gpu_blocks=blocks,
        kv_cache_tokens=tokens,
        max_model_len=max_total,
        max_concurrency=concurrency,
        max_concurrency_at_target=tokens / target if target else None,
        estimated_max_model_len=tokens,
        model_max_position_embeddings=spec.max_position_embeddings,
        kv_needed_for_max_len_bytes=float(max_total * per_token),
        fits=reason is None,
        reason=reason,
        formulas=formulas,
        notes=(
            *spec.assumptions,
            "TGI admits requests by tokens, not sequences: concurrency is max_batch_total_tokens / max_total_tokens",
            *_tgi_extras(scenario),
        ),
        topology=topology,
    )


def _tgi_extras(scenario: Scenario) -> tuple[str, ...]:
    """Notes on TGI's ``--speculate`` and a what-if KV compression."""
    notes = []
    cfg = scenario.speculative_config
    if cfg is not None:
        notes.append(
            f"--speculate {cfg.num_speculative_tokens}: TGI speculates by n-gram (or the checkpoint's Medusa "
            "heads); no draft model is loaded, so no memory is added"
            + ("" if cfg.method == "ngram" else f" (TGI cannot run the {cfg.method} draft of this configuration)")
        )
    if scenario.kv_compression_ratio:
        notes.append(
            f"what-if — not an engine setting: KV bytes divided by {scenario.kv_compression_ratio:g} for a KV-cache "
            "compression method (DMS, KVTC-style) no engine ships; the launch command cannot carry it"
        )
    return tuple(notes)
