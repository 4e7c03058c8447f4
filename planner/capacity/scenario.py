"""A planning scenario: the engine, hardware, model and engine settings to plan for.

Field names are vLLM's flag names with ``_`` for ``-`` (``--gpu-memory-utilization`` →
``gpu_memory_utilization``); TGI-only settings use TGI's launcher names. ``None`` means "the engine's
default", which the engine modules resolve and report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.capacity.speculative import SpeculativeConfig
from planner.errors import InvalidParameterError

__all__ = [
    "BLOCK_SIZES",
    "DTYPES",
    "ENGINES",
    "ENTRY_POINTS",
    "INT_FIELDS",
    "LIMITS",
    "MAX_MODEL_LEN_AUTO",
    "QUANTIZATION_CHOICES",
    "Scenario",
    "parse_max_model_len",
    "validate",
]

ENGINES = ("vllm", "tgi", "article")
#: How vLLM is started: ``vllm serve`` (the OpenAI-compatible server) or the offline ``vllm.LLM`` class. Their
#: default ``max_num_seqs`` / ``max_num_batched_tokens`` differ (``EngineArgs.get_batch_defaults``, usage contexts
#: ``OPENAI_API_SERVER`` and ``LLM_CLASS``), and the profile run is sized by them.
ENTRY_POINTS = ("serve", "llm")
#: ``--dtype`` values (vLLM ``ModelDType``; ``half`` = float16).
DTYPES = ("auto", "bfloat16", "float16", "float32")
#: ``--quantization`` choices: ``None`` follows the checkpoint; the rest force a scheme. ``awq`` and
#: ``gptq`` mean "an int4 export of this model" when the checkpoint itself is not quantized.
QUANTIZATION_CHOICES = (None, "fp8", "int8", "awq", "gptq", "bitsandbytes", "mxfp4")
#: The article engine's own weight and KV precisions.
ARTICLE_PRECISIONS = ("fp16", "fp8", "int8", "int4")

#: ``--block-size`` values vLLM accepts (``vllm/config/cache.py``, ``BlockSize``).
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
#: ``max_model_len`` meaning "the largest that fits the KV cache": vLLM's ``--max-model-len auto`` (or ``-1``), which
#: its ``human_readable_int_or_auto`` parses to -1 (``vllm/engine/arg_utils.py``, vLLM PR #29431, v0.12+).
MAX_MODEL_LEN_AUTO = -1
#: Accepted ranges: wide enough for any real deployment, bounded so a URL cannot make the server
#: compute without bound.
LIMITS: dict[str, tuple[float, float]] = {
    "tensor_parallel_size": (1, 64),
    "pipeline_parallel_size": (1, 64),
    "gpu_memory_utilization": (0.01, 1.0),
    "max_model_len": (16, 10_485_760),
    "max_num_seqs": (1, 65_536),
    "max_num_batched_tokens": (16, 2_097_152),
    "block_size": (1, 256),
    "max_input_tokens": (1, 10_485_760),
    "max_total_tokens": (2, 10_485_760),
    "max_batch_prefill_tokens": (1, 10_485_760),
    "cuda_memory_fraction": (0.01, 1.0),
    "params_b": (0.001, 10_000),
    "num_layers": (1, 1024),
    "num_kv_heads": (1, 1024),
    "head_dim": (1, 4096),
    "gpu_memory_gb": (0.1, 4096),
    "target_context": (1, 10_485_760),
    "custom_gpu_memory_gib": (0.1, 4096),
    "kv_compression_ratio": (1.0, 64.0),
}


@dataclass(frozen=True)
class Scenario:
    """Everything one plan depends on. Frozen and hashable, so it keys caches and URLs.

    Attributes:
        engine: ``vllm``, ``tgi`` or ``article``.
        model: catalog model id (Hugging Face repo id).
        gpu: catalog GPU id or name, or ``custom`` with ``custom_gpu_memory_gib``.
        tensor_parallel_size / pipeline_parallel_size: TP and PP; GPUs used = TP·PP.
        dtype: ``--dtype``.
        quantization: ``--quantization``; ``None`` follows the checkpoint.
        kv_cache_dtype: ``--kv-cache-dtype``.
        gpu_memory_utilization: fraction of the device's total memory vLLM may use.
        max_model_len: context limit per request in tokens; ``None`` = the model's maximum;
            :data:`MAX_MODEL_LEN_AUTO` (-1) = the largest that fits (vLLM's ``--max-model-len auto``, vLLM only).
        max_num_seqs / max_num_batched_tokens / block_size: vLLM scheduler settings; ``None`` = default.
        enforce_eager: disable CUDA graphs.
        engine_version: e.g. ``0.19.0``; ``None`` = the newest the planner knows (and a range over the versions
            still in use).
        entry_point: ``serve`` (``vllm serve``) or ``llm`` (``vllm.LLM``), see :data:`ENTRY_POINTS`.
        max_input_tokens / max_total_tokens / max_batch_prefill_tokens / cuda_memory_fraction: TGI
            launcher settings.
        target_context: a second context length (tokens) to report concurrency at.
        params_b / num_layers / num_kv_heads / head_dim / gpu_memory_gb / weight_quant / kv_quant:
            the article engine's own inputs; when set they override the catalog model and GPU.
        custom_gpu_memory_gib: memory of a custom GPU (``gpu="custom"``), GiB.
        speculative_config: vLLM's ``--speculative-config`` (TGI: ``--speculate N`` is ``ngram`` of N tokens);
            ``None`` = no speculative decoding. The draft's weights and KV cache are planned
            (:mod:`planner.capacity.speculative`).
        kv_compression_ratio: a what-if, not an engine setting: KV bytes divided by this (1 to 64), for KV-cache
            compression methods no engine ships (the article's DMS, KVTC); ``None`` = none.
    """

    engine: str = "vllm"
    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    gpu: str = "h100-sxm-80gb"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enforce_eager: bool = False
    engine_version: str | None = None
    entry_point: str = "serve"
    max_input_tokens: int | None = None
    max_total_tokens: int | None = None
    max_batch_prefill_tokens: int | None = None
    cuda_memory_fraction: float = 1.0
    target_context: int | None = None
    params_b: float | None = None
    num_layers: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    gpu_memory_gb: float | None = None
    weight_quant: str | None = None
    kv_quant: str | None = None
    custom_gpu_memory_gib: float | None = None
    speculative_config: SpeculativeConfig | None = None
    kv_compression_ratio: float | None = None

    @property
    def num_gpus(self) -> int:
        """GPUs the scenario uses: TP · PP."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def with_changes(self, **changes: object) -> Scenario:
        """A copy with some fields changed (validated)."""
        return validate(replace(self, **changes))


#: Scenario fields that hold whole numbers.
INT_FIELDS = frozenset(f.name for f in fields(Scenario) if "int" in str(f.type))


def _bound(value: float) -> str:
    """A limit as people read it: ``10,485,760`` or ``0.01``, never ``1.04858e+07``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _max_model_len_accepted() -> str:
    low, high = LIMITS["max_model_len"]
    return f"auto, -1 or an integer from {_bound(low)} to {_bound(high)}"


def parse_max_model_len(text: str) -> int:
    """``--max-model-len`` as typed: ``auto`` or ``-1`` (any case, spaces around ignored) → :data:`MAX_MODEL_LEN_AUTO`,
    a decimal integer within ``LIMITS["max_model_len"]`` → itself (vLLM's ``human_readable_int_or_auto``, without its
    ``k``/``K`` suffixes).

    Args:
        text: the flag's or link's text.

    Returns:
        The length in tokens, or :data:`MAX_MODEL_LEN_AUTO`.

    Raises:
        InvalidParameterError: anything else, naming ``max_model_len``, the text and what is accepted.
    """
    value = text.strip().lower()
    if value in ("auto", "-1"):
        return MAX_MODEL_LEN_AUTO
    low, high = LIMITS["max_model_len"]
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        raise InvalidParameterError("max_model_len", text, _max_model_len_accepted())
    return int(value)


def _is_auto(value: object) -> bool:
    """``value`` is :data:`MAX_MODEL_LEN_AUTO` as an integer (not ``True``, not ``-1.0``)."""
    return type(value) is int and value == MAX_MODEL_LEN_AUTO


def validate(s: Scenario) -> Scenario:
    """Check every field of ``s`` and return it.

    Raises:
        InvalidParameterError: naming the first bad field, its value and what is accepted.
    """
    if s.engine not in ENGINES:
        raise InvalidParameterError("engine", s.engine, "one of " + ", ".join(ENGINES))
    if s.entry_point not in ENTRY_POINTS:
        raise InvalidParameterError("entry_point", s.entry_point, "one of " + ", ".join(ENTRY_POINTS))
    if s.dtype not in DTYPES:
        raise InvalidParameterError("dtype", s.dtype, "one of " + ", ".join(DTYPES))
    if s.quantization not in QUANTIZATION_CHOICES:
        raise InvalidParameterError(
            "quantization", s.quantization, "none or one of " + ", ".join(q for q in QUANTIZATION_CHOICES if q)
        )
    if s.kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InvalidParameterError("kv_cache_dtype", s.kv_cache_dtype, "one of " + ", ".join(KV_CACHE_DTYPES))
    for name in ("weight_quant", "kv_quant"):
        value = getattr(s, name)
        if value is not None and value not in ARTICLE_PRECISIONS:
            raise InvalidParameterError(name, value, "one of " + ", ".join(ARTICLE_PRECISIONS))
    for name in ("model", "gpu"):
        value = getattr(s, name)
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise InvalidParameterError(name, value, "a non-empty name of at most 200 characters")
    for name, (low, high) in LIMITS.items():
        value = getattr(s, name)
        if value is None or (name == "max_model_len" and _is_auto(value) and s.engine == "vllm"):
            continue
        is_int = name in INT_FIELDS
        accepted = f"{'an integer' if is_int else 'a number'} from {_bound(low)} to {_bound(high)}"
        if name == "max_model_len":
            accepted = _max_model_len_accepted() if s.engine == "vllm" else f"{accepted} (auto is for --engine vllm)"
        # an int is finite whatever its size (math.isfinite would raise OverflowError on a 400-digit one)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise InvalidParameterError(name, value, accepted)
        if (is_int and value != int(value)) or not low <= value <= high:
            raise InvalidParameterError(name, value, accepted)
    if s.block_size is not None and s.block_size not in BLOCK_SIZES:
        raise InvalidParameterError("block_size", s.block_size, "one of " + ", ".join(map(str, BLOCK_SIZES)))
    if s.speculative_config is not None and not isinstance(s.speculative_config, SpeculativeConfig):
        raise InvalidParameterError(
            "speculative_config", s.speculative_config, "a SpeculativeConfig (planner.capacity.speculative)"
        )
    if s.engine_version is not None and (not isinstance(s.engine_version, str) or len(s.engine_version) > 40):
        raise InvalidParameterError("engine_version", s.engine_version, "a version such as 0.19.0")
    return s
