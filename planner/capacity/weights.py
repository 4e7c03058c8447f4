"""Weight memory per GPU, by dtype and quantization scheme, under tensor and pipeline parallelism.

What vLLM logs as "Model loading took X GiB" is the torch memory allocated while loading, per rank,
after any online quantization (``vllm/v1/worker/gpu_model_runner.py::load_model``, which logs it). We rebuild it
from the parameter counts of :mod:`planner.catalog.params`:

* unquantized: ``params · dtype_bytes`` (fp32 4, bf16/fp16 2);
* fp8 (checkpoint or ``--quantization fp8``) and int8 w8a8: 1 byte per linear weight plus its scales
  (one fp32 per 128x128 block for block-wise checkpoints, one per output row for channel-wise,
  one per tensor otherwise); embeddings and ``lm_head`` stay 16-bit;
* AWQ / GPTQ int4: 0.5 byte per linear weight, plus per group of ``group_size`` inputs one fp16 scale
  and one packed 4-bit zero point (``2.5 / group_size`` bytes per weight; GPTQ's ``group_size: -1`` is one group
  of ``in_features`` per output channel); embeddings and ``lm_head``
  stay 16-bit (vLLM ``awq.py``/``gptq.py`` quantize ``LinearBase`` layers only);
* bitsandbytes 4-bit: 0.5 byte plus a 16-bit absmax per block of 64 (``4.25`` bits); calibrated on
  vLLM log id 56 (Phi-4: 0.529 byte per linear weight measured);
* mxfp4 (gpt-oss): experts only, 0.5 byte plus one e8m0 scale per 32 (``4.25`` bits), with the expert
  intermediate size padded to a multiple of 256 as vLLM's ``mxfp4.py`` does for its Hopper kernels;
  attention, router, embeddings and ``lm_head`` stay bf16.

Tensor parallelism splits attention, MLP, experts and the vocabulary (padded to a multiple of 64);
norms and biases are replicated, and so are k/v projections once TP exceeds the KV heads. Pipeline
parallelism gives each stage a contiguous run of layers, the embedding to the first stage and
``lm_head`` plus the final norm to the last (vLLM ``get_pp_indices``).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.model_spec import ModelSpec
from planner.catalog.params import count_params, layer_params
from planner.errors import InvalidParameterError
from planner.units import DTYPE_BYTES, ceil_div, safetensors_dtype_bytes

__all__ = [
    "QUANTIZATION_METHODS",
    "WeightsSplit",
    "calibration_factor",
    "linear_bytes_per_param",
    "pp_layer_ranges",
    "weights_bytes_per_rank",
]

#: Quantization methods the planner models, with vLLM's ``--quantization`` spelling where it has one.
QUANTIZATION_METHODS = ("none", "fp8", "int8", "awq", "gptq", "bitsandbytes", "mxfp4", "nvfp4")

#: Bytes of the per-group scale (fp16) and packed 4-bit zero point of AWQ/GPTQ, per group.
_INT4_GROUP_OVERHEAD_BYTES = 2.5
#: bitsandbytes 4-bit stores one 16-bit absmax per block of 64 weights.
_BNB4_BYTES_PER_PARAM = 0.5 + 2 / 64
#: MXFP4: 4-bit values plus one 8-bit shared exponent per 32 (OCP Microscaling spec v1.0).
_MXFP4_BYTES_PER_PARAM = 0.5 + 1 / 32
#: NVFP4 (ModelOpt): 4-bit values plus one fp8 scale per 16 (NVIDIA, "Introducing NVFP4").
_NVFP4_BYTES_PER_PARAM = 0.5 + 1 / 16
#: vLLM pads the mxfp4 expert intermediate size to this multiple (``mxfp4.py``, Hopper/Triton path);
#: gpt-oss-120b then loads 64.5 GiB against 64.38 logged (log id 29), 60.8 without padding.
_MXFP4_INTERMEDIATE_PAD = 256
#: Vocabulary padding of vLLM's ``VocabParallelEmbedding`` (``DEFAULT_VOCAB_PADDING_SIZE``).
_VOCAB_PAD = 64


@dataclass(frozen=True)
class WeightsSplit:
    """Weight bytes on one rank.

    Attributes:
        rank_layers: (first, last+1) decoder layers this pipeline stage holds.
        embedding_bytes / lm_head_bytes / layers_bytes / other_bytes: by component.
        total_bytes: their sum.
        experts_bytes: the routed experts' share of ``layers_bytes`` (0 for dense models); a decode step reads
            only the experts its tokens are routed to (:mod:`planner.predict`).
    """

    rank_layers: tuple[int, int]
    embedding_bytes: float
    lm_head_bytes: float
    layers_bytes: float
    other_bytes: float
    total_bytes: float
    experts_bytes: float = 0.0


def linear_bytes_per_param(
    method: str,
    model_dtype_bytes: float,
    *,
    group_size: int | None = None,
    block_size: tuple[int, int] | None = None,
    in_features: int = 4096,
) -> float:
    """Bytes per weight of a quantized linear layer, scales included.

    Args:
        method: one of :data:`QUANTIZATION_METHODS`.
        model_dtype_bytes: bytes of the unquantized dtype (2 for bf16).
        group_size: int4 group size (AWQ/GPTQ; default 128; -1 is one group per output channel, GPTQ's convention).
        block_size: fp8 block-wise scale tile, e.g. (128, 128).
        in_features: input width, for per-output-channel scales.

    Returns:
        Bytes per parameter (a float: int4 is 0.5 plus overhead).

    Raises:
        InvalidParameterError: unknown method.
    """
    if method == "none":
        return model_dtype_bytes
    if method in ("fp8", "int8"):
        if block_size:
            return 1 + 4 / (block_size[0] * block_size[1])
        return 1 + 4 / in_features
    if method in ("awq", "gptq"):
        group = in_features if group_size == -1 else group_size or 128  # -1: one scale per output channel
        return 0.5 + _INT4_GROUP_OVERHEAD_BYTES / group
    if method == "bitsandbytes":
        return _BNB4_BYTES_PER_PARAM
    if method == "nvfp4":
        return _NVFP4_BYTES_PER_PARAM
    if method == "mxfp4":
        return model_dtype_bytes  # only experts are mxfp4; see weights_bytes_per_rank
    raise InvalidParameterError("quantization", method, "one of " + ", ".join(QUANTIZATION_METHODS))


def pp_layer_ranges(num_layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """Contiguous layer ranges of each pipeline stage, earlier stages taking the remainder.

    vLLM ``distributed/utils.py::get_pp_indices`` splits evenly; we give any remainder to the earliest
    stages, which differs from vLLM only when ``num_layers % pp != 0`` and by one layer.
    """
    base, extra = divmod(num_layers, pp)
    ranges = []
    start = 0
    for stage in range(pp):
        n = base + (1 if stage < extra else 0)
        ranges.append((start, start + n))
        start += n
    return tuple(ranges)


def calibration_factor(spec: ModelSpec, *, method: str) -> float:
    """How much the formulas must be scaled to match the checkpoint's real tensors (1.0 when unknown).

    With safetensors counts from the Hub (``spec.checkpoint_params_by_dtype``): for an unquantized
    checkpoint, real element count over the computed parameter count (a structural correction that holds
    for any runtime dtype or quantization); for a quantized one served as shipped, real bytes over the
    formula's bytes (so packed qweight, scales and zeros count exactly).
    """
    counts = spec.checkpoint_params_by_dtype
    if not counts:
        return 1.0
    if spec.quant.method == "none":
        formula_params = count_params(spec).total
        return sum(n for _, n in counts) / formula_params if formula_params else 1.0
    if method != spec.quant.method:
        return 1.0
    real = sum(n * safetensors_dtype_bytes(d) for d, n in counts)
    dtype = spec.torch_dtype if spec.torch_dtype in DTYPE_BYTES else "bfloat16"
    # Compare like with like: the checkpoint holds no engine padding, so neither may the formula.
    formula = _split(spec, method=method, dtype=dtype, tp=1, pp=1, stage=0, engine_padding=False).total_bytes
    return real / formula if formula else 1.0


def weights_bytes_per_rank(spec: ModelSpec, *, method: str, dtype: str, tp: int, pp: int, stage: int) -> WeightsSplit:
    """Weight bytes held by one GPU of pipeline stage ``stage`` (every TP rank of a stage is alike).

    Args:
        spec: the model.
        method: effective quantization (one of :data:`QUANTIZATION_METHODS`).
        dtype: storage dtype of unquantized tensors (``bfloat16``, ``float16``, ``float32``).
        tp: tensor-parallel size (>= 1).
        pp: pipeline-parallel size (>= 1).
        stage: 0-based pipeline stage.

    Returns:
        The split by component; formulas and sources in the module docstring, scaled by
        :func:`calibration_factor` when the checkpoint's real tensor counts are known.
    """
    split = _split(spec, method=method, dtype=dtype, tp=tp, pp=pp, stage=stage)
    factor = calibration_factor(spec, method=method)
    if factor == 1.0:
        return split
    return WeightsSplit(
        split.rank_layers,
        split.embedding_bytes * factor,
        split.lm_head_bytes * factor,
        split.layers_bytes * factor,
        split.other_bytes * factor,
        split.total_bytes * factor,
        split.experts_bytes * factor,
    )


def _split(
    spec: ModelSpec, *, method: str, dtype: str, tp: int, pp: int, stage: int, engine_padding: bool = True
) -> WeightsSplit:
    dbytes = DTYPE_BYTES[dtype]
    h = spec.hidden_size
    quant = spec.quant
    group = quant.group_size if method == quant.method else None
    block = quant.weight_block_size if method == quant.method else None
    lin = linear_bytes_per_param(method, dbytes, group_size=group, block_size=block, in_features=h)
    expert_bytes = {"mxfp4": _MXFP4_BYTES_PER_PARAM}.get(method, lin)
    dense_bytes = dbytes if method == "mxfp4" else lin
    kv_per_rank = max(1, spec.num_kv_heads // tp)
    first, last = pp_layer_ranges(spec.num_layers, pp)[stage]
    layers_bytes = 0.0
    experts_total = 0.0
    other = 0.0
    for i in range(first, last):
        p = layer_params(spec, i)
        # MLA's q_a / kv_a down-projections are ReplicatedLinear in vLLM's DeepseekV2Attention; GQA k/v
        # projections split by TP until each rank holds one KV head.
        kv = p.attn_kv if spec.is_mla else p.attn_kv * kv_per_rank / spec.num_kv_heads
        experts = p.experts
        if engine_padding and method == "mxfp4" and spec.moe_intermediate_size:
            padded = ceil_div(spec.moe_intermediate_size, _MXFP4_INTERMEDIATE_PAD) * _MXFP4_INTERMEDIATE_PAD
            experts = experts * padded / spec.moe_intermediate_size
        layers_bytes += (p.attn_q_o + p.attn_mla_up) / tp * dense_bytes
        layers_bytes += kv * dense_bytes
        layers_bytes += (p.mlp + p.shared_experts) / tp * dense_bytes
        layers_bytes += experts / tp * expert_bytes
        experts_total += experts / tp * expert_bytes
        other += p.small * dbytes
    vocab_rank = ceil_div(spec.vocab_size, _VOCAB_PAD * tp) * _VOCAB_PAD
    table_bytes = vocab_rank * h * dbytes
    embedding = table_bytes if stage == 0 else 0.0
    lm_head = 0.0
    if stage == pp - 1:
        other += h * dbytes
        if not spec.tie_word_embeddings or pp > 1:
            lm_head = table_bytes
    if stage == 0:
        other += spec.vision_params * dbytes
    total = embedding + lm_head + layers_bytes + other
    return WeightsSplit((first, last), embedding, lm_head, layers_bytes, other, total, experts_total)
