"""Model architecture read from a Hugging Face ``config.json``.

:func:`parse_config` turns the raw ``config.json`` dict of a checkpoint into a :class:`ModelSpec`: the
text decoder's shape (layers, heads, KV heads, head dim, MLP widths), its MoE layout, MLA ranks, the
attention type of every layer (full, sliding window, chunked), the quantization the checkpoint ships
with, and the size of a vision tower if there is one. Every value it had to assume because the
config did not say is listed in :attr:`ModelSpec.assumptions`, so the pages can show it.

Field names and defaults follow the ``transformers`` configuration classes of each ``model_type``
(``models/<type>/configuration_<type>.py``) and vLLM's readers of them (``vllm/config/model.py``,
``vllm/transformers_utils/config.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from planner.errors import UnsupportedModelError

__all__ = [
    "AttentionKind",
    "ModelSpec",
    "QuantConfig",
    "parse_config",
]

AttentionKind = Literal["full", "sliding", "chunked"]

#: Keys under which multimodal checkpoints nest their language model's config.
_TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "text_model")

#: model_types whose decoder layer has four RMSNorms (input, post-attention, pre- and post-feedforward)
#: instead of two (transformers ``Gemma2DecoderLayer`` / ``Gemma3DecoderLayer``).
_FOUR_NORM_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text"})

#: model_types with q/k RMSNorm of ``head_dim`` weights per layer (Qwen3, Gemma 3, Llama 4 with
#: ``use_qk_norm``; OLMo-2 normalises the full projection, which we do not distinguish).
_QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})

#: model_types whose q/k/v projections carry a bias by default (transformers ``Qwen2Attention``).
_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})


@dataclass(frozen=True)
class QuantConfig:
    """How a checkpoint's weights are quantized, from ``quantization_config``.

    Attributes:
        method: ``"awq"``, ``"gptq"``, ``"fp8"``, ``"int8"`` (w8a8), ``"bitsandbytes"``, ``"mxfp4"`` or
            ``"none"``; compressed-tensors configs are mapped to ``fp8`` or ``int8``/``gptq``-like
            int4 by their weight ``num_bits``/``type``.
        bits: weight bits of quantized linear layers (4 or 8; 16 for none).
        group_size: input elements per scale group; -1 for one group per output channel (GPTQ's
            ``group_size: -1``); ``None`` for per-channel or per-tensor fp8/int8.
        zero_point: whether a zero point is stored per group (AWQ yes, symmetric GPTQ packs one too).
        weight_block_size: (rows, cols) of block-wise fp8 scales, or ``None``.
        modules_not_converted: module name patterns left unquantized.
    """

    method: str = "none"
    bits: int = 16
    group_size: int | None = None
    zero_point: bool = False
    weight_block_size: tuple[int, int] | None = None
    modules_not_converted: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a decoder-only LLM's text stack, plus the size of any vision tower.

    All counts are whole-model (before tensor or pipeline parallel splitting).

    Attributes:
        model_id: the id it was resolved from (a Hub repo id or a label).
        architecture: first entry of ``architectures``.
        model_type: ``model_type`` of the text config.
        hidden_size: residual width h.
        num_layers: decoder layers L.
        num_attention_heads: query heads n_q.
        num_kv_heads: key/value heads n_kv (n_q for MHA, 1 for MQA, in between for GQA).
        head_dim: per-head query/key width d.
        v_head_dim: per-head value width (equals ``head_dim`` except MLA).
        intermediate_size: gated-MLP width of dense layers.
        vocab_size: embedding rows V.
        tie_word_embeddings: whether ``lm_head`` shares the embedding matrix.
        max_position_embeddings: the longest context the config allows, in tokens.
        torch_dtype: the checkpoint's storage dtype (``bfloat16`` if the config says nothing).
        qkv_bias / o_bias: whether attention projections carry biases.
        qk_norm: per-head q/k RMSNorm present.
        norms_per_layer: RMSNorm/LayerNorm weight vectors of width h per decoder layer.
        num_experts: routed experts per MoE layer (0 for dense models).
        num_experts_per_tok: experts each token is routed to.
        moe_intermediate_size: MLP width of one routed expert.
        num_shared_experts: always-active experts per MoE layer.
        shared_expert_intermediate_size: MLP width of all shared experts together.
        moe_layers: per layer, whether its MLP is an MoE block.
        expert_bias: experts carry biases (gpt-oss).
        router_bias: the router carries a bias.
        router_score_bias: the router has DeepSeek-V3's ``e_score_correction_bias`` (``noaux_tc``).
        attention_sinks: one learned sink logit per query head per layer (gpt-oss).
        kv_lora_rank / q_lora_rank / qk_rope_head_dim / qk_nope_head_dim: MLA ranks (``None`` if
            not MLA). The MLA KV cache holds ``kv_lora_rank + qk_rope_head_dim`` values per token
            per layer (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1).
        layer_attention: per layer, ``"full"``, ``"sliding"`` or ``"chunked"``.
        sliding_window: window of sliding layers, in tokens.
        attention_chunk_size: chunk of chunked-local layers (Llama 4), in tokens.
        vision_params: parameters of the vision tower and projector, 0 for text-only models.
        quant: quantization the checkpoint ships with.
        assumptions: human-readable notes of every default the parser filled in.
        checkpoint_params_by_dtype: element counts per safetensors dtype of the real checkpoint (from the
            Hub's safetensors headers), empty when unknown; :mod:`planner.capacity.weights` calibrates to them.
        num_nextn_predict_layers: multi-token-prediction (MTP) layers the checkpoint carries after its decoder
            layers (DeepSeek-V3 ``num_nextn_predict_layers``: 1); vLLM's ``method: mtp`` drafts with them.
        draft_vocab_size: an EAGLE-3 head's own (reduced) vocabulary, ``None`` when it uses the target's.
        index_head_dim / index_topk: DeepSeek-V3.2's sparse-attention ("lightning") indexer: the width of its
            per-token key and the tokens each query attends to; ``None`` for every other model.
    """

    model_id: str
    architecture: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    torch_dtype: str
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    moe_layers: tuple[bool, ...] = ()
    dense_intermediate_sizes: tuple[int, ...] = ()
    expert_bias: bool = False
    router_bias: bool = False
    router_score_bias: bool = False
    attention_sinks: bool = False
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    layer_attention: tuple[AttentionKind, ...] = ()
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    vision_params: int = 0
    quant: QuantConfig = field(default_factory=QuantConfig)
    assumptions: tuple[str, ...] = ()
    checkpoint_params_by_dtype: tuple[tuple[str, int], ...] = ()
    num_nextn_predict_layers: int = 0
    draft_vocab_size: int | None = None
    index_head_dim: int | None = None
    index_topk: int | None = None

    @property
    def is_moe(self) -> bool:
        """True when at least one layer routes tokens to experts."""
        return self.num_experts > 0 and any(self.moe_layers)

    @property
    def is_mla(self) -> bool:
        """True for Multi-head Latent Attention (DeepSeek-V2/V3 family)."""
        return self.kv_lora_rank is not None

    @property
    def is_hybrid(self) -> bool:
        """True when layers mix full attention with sliding-window or chunked attention."""
        return len(set(self.layer_attention)) > 1

    @property
    def attention_kind(self) -> str:
        """MHA, GQA, MQA or MLA, the field's names for the KV-head layout."""
        if self.is_mla:
            return "MLA"
        if self.num_kv_heads == self.num_attention_heads:
            return "MHA"
        if self.num_kv_heads == 1:
            return "MQA"
        return "GQA"


def _text_config(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any] | None]:
    for key in _TEXT_CONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping) and sub.get("num_hidden_layers") is not None:
            return sub, config.get("vision_config")
    return config, config.get("vision_config")


#: Largest values the planner accepts for the config fields it loops over or multiplies: far above any
#: real model (the largest public configs have 128 layers, 256k vocabularies, 10M positions), low
#: enough that a pasted config cannot make the server compute without bound.
_FIELD_MAX = {
    "num_hidden_layers": 1024,
    "hidden_size": 131_072,
    "num_attention_heads": 1024,
    "num_key_value_heads": 1024,
    "vocab_size": 4_194_304,
    "intermediate_size": 1_048_576,
    "head_dim": 4096,
    "max_position_embeddings": 1_073_741_824,
}


#: Experts of an MoE layer the planner accepts (real models have at most a few hundred).
_MAX_EXPERTS = 65_536
_FIELD_MAX |= {"num_local_experts": _MAX_EXPERTS, "num_experts": _MAX_EXPERTS, "n_routed_experts": _MAX_EXPERTS}
_FIELD_MAX |= {"bits": 16, "w_bit": 16, "num_bits": 16}
#: Marks a field the planner cannot do without (no default).
_REQUIRED: Any = object()


def _int(
    cfg: Mapping[str, Any], key: str, model_id: str, *, default: Any = _REQUIRED, low: int = 1, where: str = ""
) -> Any:
    """``cfg[key]`` as an integer from ``low`` up to the field's maximum (an integral float such as ``4096.0`` is that
    integer), or ``default`` when the field is missing or ``null``.

    Every numeric field of a config is read here, so a value the planner would otherwise have to replace (a negative
    head size, ``1.5`` layers, a string) is refused, naming the field, never replaced without a word. ``where`` is
    the field's parent in the message (``"quantization_config."``).

    Raises:
        UnsupportedModelError: the field is given but not such an integer, or missing and ``default`` is not given.
    """
    value = cfg.get(key)
    if value is None and default is not _REQUIRED:
        return default
    maximum = _FIELD_MAX.get(key, 1 << 40)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < low
        or value != int(value)
        or value > maximum
    ):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        expected = "a positive integer" if low == 1 else f"an integer from {low}"
        raise UnsupportedModelError(
            f"{model_id}: config field '{where}{key}' is {shown}; expected {expected} up to {maximum:,}"
        )
    return int(value)


def _flag(cfg: Mapping[str, Any], key: str, model_id: str, *, where: str = "") -> bool | None:
    """``cfg[key]`` as true or false, or None when missing or ``null``.

    Raises:
        UnsupportedModelError: anything but a JSON boolean (``"false"`` or ``1.02`` would read as true).
    """
    value = cfg.get(key)
    if value is None or isinstance(value, bool):
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise UnsupportedModelError(f"{model_id}: config field '{where}{key}' is {shown}; expected true or false")


def _ints(cfg: Mapping[str, Any], key: str, model_id: str, length: int | None = None) -> list[int] | None:
    """``cfg[key]`` as a list of integers ≥ 0 (``length`` of them when given), or None when missing or ``null``.

    Raises:
        UnsupportedModelError: not such a list.
    """
    value = cfg.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or (length is not None and len(value) != length)
        or not all(type(v) is int and 0 <= v <= 1 << 40 for v in value)
    ):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        count = "integers from 0" if length is None else f"{length} integers from 0, one per layer"
        raise UnsupportedModelError(f"{model_id}: config field {key!r} is {shown}; expected a list of {count}")
    return value


def _vision_params(vision: Mapping[str, Any] | None, text_hidden: int) -> int:
    """Parameters of a ViT-style vision tower plus a linear projector into the text width.

    Per encoder layer: q/k/v/o projections with biases (4h² + 4h), an MLP of two linear layers with
    biases (2·h·i + i + h) and two LayerNorms (4h); plus the patch embedding (c·p²·h + h), learned
    position embeddings (one per patch) and a post-LayerNorm; the projector maps h to the text width.
    This matches SigLIP (transformers ``SiglipVisionTransformer``); for towers with a gated MLP
    (Pixtral) the MLP term uses three matrices. It is an estimate for planning; exact counts come from
    safetensors metadata.
    """
    if not isinstance(vision, Mapping):
        return 0
    h = vision.get("hidden_size")
    layers = vision.get("num_hidden_layers") or vision.get("depth")
    inter = vision.get("intermediate_size")
    if not all(isinstance(v, int) and v > 0 for v in (h, layers, inter)):
        return 0
    patch = int(vision.get("patch_size") or 14)
    channels = int(vision.get("num_channels") or 3)
    image = int(vision.get("image_size") or 0)
    gated = vision.get("model_type") == "pixtral" or vision.get("hidden_act") == "silu"
    mlp = (3 * h * inter) if gated else (2 * h * inter + inter + h)
    per_layer = 4 * h * h + 4 * h + mlp + 4 * h
    patch_embed = channels * patch * patch * h + h
    positions = ((image // patch) ** 2) * h if image and not gated else 0
    projector = h * text_hidden + text_hidden
    return layers * per_layer + patch_embed + positions + 2 * h + projector


_Q = "quantization_config."


def _group_size(qc: Mapping[str, Any], keys: tuple[str, ...], model_id: str) -> int:
    """An AWQ/GPTQ group size: inputs per scale, or -1 for one scale per output channel (GPTQ's convention)."""
    for key in keys:
        if qc.get(key) == -1 and not isinstance(qc.get(key), bool):
            return -1
        size = _int(qc, key, model_id, default=None, where=_Q)
        if size is not None:
            return size
    return 128


def _quant(config: Mapping[str, Any], text: Mapping[str, Any], model_id: str) -> QuantConfig:
    qc = config.get("quantization_config") or text.get("quantization_config")
    if not isinstance(qc, Mapping):
        return QuantConfig()
    method = str(qc.get("quant_method", "")).lower()
    skipped = qc.get("modules_to_not_convert") or qc.get("ignore") or []
    if not isinstance(skipped, list):
        raise UnsupportedModelError(
            f"{model_id}: config field '{_Q}modules_to_not_convert' is {str(skipped)[:40]!r}; expected a list of "
            "module names"
        )
    not_converted = tuple(str(m) for m in skipped if m is not None)
    if method == "awq":
        bits = _int(qc, "bits", model_id, default=None, where=_Q) or _int(qc, "w_bit", model_id, default=4, where=_Q)
        group = _group_size(qc, ("group_size", "q_group_size"), model_id)
        zero_point = _flag(qc, "zero_point", model_id, where=_Q)
        return QuantConfig("awq", bits, group, zero_point is not False, None, not_converted)
    if method == "gptq":
        bits = _int(qc, "bits", model_id, default=4, where=_Q)
        return QuantConfig("gptq", bits, _group_size(qc, ("group_size",), model_id), True, None, not_converted)
    if method in ("fp8", "fbgemm_fp8"):
        block = _ints(qc, "weight_block_size", model_id)
        if block is not None and (len(block) != 2 or 0 in block):
            raise UnsupportedModelError(
                f"{model_id}: config field '{_Q}weight_block_size' is {str(block)[:40]}; expected [rows, columns]"
            )
        return QuantConfig("fp8", 8, None, False, tuple(block) if block else None, not_converted)
    if method == "mxfp4":
        return QuantConfig("mxfp4", 4, 32, False, None, not_converted)
    if method == "nvfp4":
        return QuantConfig("nvfp4", 4, 16, False, None, not_converted)
    if method == "bitsandbytes":
        bits = 8 if _flag(qc, "load_in_4bit", model_id, where=_Q) is False else 4
        return QuantConfig("bitsandbytes", bits, 64 if bits == 4 else None, False, None, not_converted)
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        groups = groups.values() if isinstance(groups, Mapping) else ()
        weights = next((g.get("weights") for g in groups if isinstance(g, Mapping)), None) or {}
        weights = weights if isinstance(weights, Mapping) else {}
        where = _Q + "config_groups.weights."
        bits = _int(weights, "num_bits", model_id, default=8, where=where)
        kind = str(weights.get("type", "float"))
        if bits == 8:
            return QuantConfig("fp8" if kind == "float" else "int8", 8, None, False, None, not_converted)
        group = _int(weights, "group_size", model_id, default=128, where=where)
        return QuantConfig("gptq", bits, group, False, None, not_converted)
    return QuantConfig(method or "none", 16)


def _layer_attention(
    text: Mapping[str, Any], model_type: str, num_layers: int, notes: list[str], model_id: str
) -> tuple[tuple[AttentionKind, ...], int | None, int | None]:
    window = _int(text, "sliding_window", model_id, default=0, low=0) or None  # 0: no window
    chunk = _int(text, "attention_chunk_size", model_id, default=None)
    layer_types = text.get("layer_types")
    if layer_types is not None and (not isinstance(layer_types, list) or len(layer_types) != num_layers):
        shown = repr(layer_types) if len(repr(layer_types)) <= 40 else repr(layer_types)[:37] + "..."
        raise UnsupportedModelError(
            f"{model_id}: config field 'layer_types' is {shown}; expected a list of {num_layers} attention types, "
            "one per layer"
        )
    if layer_types is not None:
        kinds: list[AttentionKind] = []
        for t in layer_types:
            t = str(t)
            if "sliding" in t:
                kinds.append("sliding")
            elif "chunk" in t:
                kinds.append("chunked")
            else:
                kinds.append("full")
        return tuple(kinds), window, chunk
    if model_type == "gemma2" and window:
        # transformers Gemma2: even layers (0, 2, ...) use the sliding window, odd layers global.
        return tuple("sliding" if i % 2 == 0 else "full" for i in range(num_layers)), window, None
    if model_type in ("gemma3", "gemma3_text") and window:
        pattern = _int(text, "sliding_window_pattern", model_id, default=6)
        if text.get("sliding_window_pattern") is None:
            notes.append("sliding_window_pattern missing; assumed 6 (5 sliding : 1 full, Gemma 3 default)")
        return (tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers)), window, None)
    if model_type in ("llama4", "llama4_text") and chunk:
        no_rope = _ints(text, "no_rope_layers", model_id, num_layers)
        if no_rope is not None:
            # transformers Llama4: no_rope_layers[i] == 0 marks a global NoPE layer.
            kinds = tuple("chunked" if flag else "full" for flag in no_rope)
        else:
            notes.append("no_rope_layers missing; assumed every 4th layer global (Llama 4 default)")
            kinds = tuple("full" if (i + 1) % 4 == 0 else "chunked" for i in range(num_layers))
        return kinds, None, chunk
    use_sliding = _flag(text, "use_sliding_window", model_id)
    if window and model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and not use_sliding:
        # Qwen configs carry sliding_window but leave use_sliding_window false: full attention.
        return tuple("full" for _ in range(num_layers)), None, None
    if window and window < (_int(text, "max_position_embeddings", model_id, default=0)):
        # Mistral v0.1 / Phi-3 style: one window for every layer.
        return tuple("sliding" for _ in range(num_layers)), window, None
    return tuple("full" for _ in range(num_layers)), None, None


def _moe(
    text: Mapping[str, Any],
    model_type: str,
    num_layers: int,
    hidden: int,
    intermediate: int,
    model_id: str,
    notes: list[str],
) -> dict[str, Any]:
    def read(key: str, default: int, low: int = 1) -> int:
        return _int(text, key, model_id, default=default, low=low)

    experts = read("num_local_experts", 0, 0) or read("num_experts", 0, 0) or read("n_routed_experts", 0, 0)
    if experts <= 1:
        return {
            "moe_layers": tuple(False for _ in range(num_layers)),
            "dense_intermediate_sizes": tuple(intermediate for _ in range(num_layers)),
        }
    moe_inter = read("moe_intermediate_size", intermediate)
    shared = read("n_shared_experts", 0, 0)
    shared_inter = read("shared_expert_intermediate_size", 0, 0)
    shared_gate = False
    dense_inter = intermediate
    if model_type in ("qwen2_moe",) and shared_inter:
        shared, shared_gate = 1, True
    elif shared:
        shared_inter = shared * moe_inter
    moe_layers = [True] * num_layers
    if "first_k_dense_replace" in text:
        k = read("first_k_dense_replace", 0, 0)
        freq = read("moe_layer_freq", 1)
        moe_layers = [i >= k and i % freq == 0 for i in range(num_layers)]
    elif "decoder_sparse_step" in text or "mlp_only_layers" in text:
        step = read("decoder_sparse_step", 1)
        only = set(_ints(text, "mlp_only_layers", model_id) or ())
        moe_layers = [i not in only and (i + 1) % step == 0 for i in range(num_layers)]
    elif model_type in ("llama4", "llama4_text"):
        step = read("interleave_moe_layer_step", 1)
        moe_layers = [(i + 1) % step == 0 for i in range(num_layers)]
        # Llama 4 experts use intermediate_size; dense layers use intermediate_size_mlp.
        if "moe_intermediate_size" in text and moe_inter != intermediate:
            notes.append(
                f"moe_intermediate_size {moe_inter} ignored: a Llama 4 expert is intermediate_size ({intermediate}) "
                "wide, as vLLM's Llama4 model reads it"
            )
        moe_inter = intermediate
        dense_inter = read("intermediate_size_mlp", intermediate)
        shared, shared_inter = 1, intermediate
    return {
        "num_experts": experts,
        "num_experts_per_tok": _int(text, "num_experts_per_tok", model_id, default=None)
        or read("experts_per_token", 1),
        "moe_intermediate_size": moe_inter,
        "num_shared_experts": shared,
        "shared_expert_intermediate_size": shared_inter,
        "shared_expert_gate": shared_gate,
        "moe_layers": tuple(moe_layers),
        "dense_intermediate_sizes": tuple(0 if m else dense_inter for m in moe_layers),
        "expert_bias": model_type == "gpt_oss",
        "router_bias": model_type == "gpt_oss",
        "router_score_bias": text.get("topk_method") == "noaux_tc",
    }


def parse_config(config: Mapping[str, Any], model_id: str = "custom") -> ModelSpec:
    """Read a Hugging Face ``config.json`` dict into a :class:`ModelSpec` (see :func:`_parse_config`).

    Raises:
        UnsupportedModelError: one line naming the model and the field the planner cannot read.
    """
    try:
        return _parse_config(config, model_id)
    except UnsupportedModelError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
        # Optional fields (MoE, MLA, windows, quantization) of the wrong type or out of range.
        raise UnsupportedModelError(
            f"{model_id}: config.json has a value the planner cannot read ({type(exc).__name__}: {str(exc)[:80]})"
        ) from exc


def _parse_config(config: Mapping[str, Any], model_id: str) -> ModelSpec:
    """Read a Hugging Face ``config.json`` dict into a :class:`ModelSpec`.

    Args:
        config: the parsed ``config.json`` (top level; multimodal ``text_config`` and
            ``vision_config`` are found inside it).
        model_id: label carried into the result and into error messages.

    Returns:
        The text decoder's architecture, with every assumed default listed in ``assumptions``.

    Raises:
        UnsupportedModelError: the config is not a mapping, lacks a field the planner cannot do
            without (layers, hidden size, heads, vocab), or holds a non-positive value there.
    """
    if not isinstance(config, Mapping):
        raise UnsupportedModelError(f"{model_id}: config.json must be a JSON object, got {type(config).__name__}")
    text, vision = _text_config(config)
    notes: list[str] = []
    architectures = config.get("architectures") or text.get("architectures") or ["unknown"]
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        shown = repr(architectures) if len(repr(architectures)) <= 40 else repr(architectures)[:37] + "..."
        raise UnsupportedModelError(
            f"{model_id}: config field 'architectures' is {shown}; expected a list of class names such as "
            '["LlamaForCausalLM"]'
        )
    architecture = architectures[0]
    model_type = str(text.get("model_type") or config.get("model_type") or "unknown")
    hidden = _int(text, "hidden_size", model_id)
    layers = _int(text, "num_hidden_layers", model_id)
    heads = _int(text, "num_attention_heads", model_id)
    vocab = _int(text, "vocab_size", model_id) if "vocab_size" in text else _int(config, "vocab_size", model_id)
    if text.get("num_key_value_heads") is None:
        notes.append(f"num_key_value_heads missing; assumed {heads} (multi-head attention)")
        kv_heads = heads
    else:
        kv_heads = _int(text, "num_key_value_heads", model_id)
        if heads % kv_heads:
            raise UnsupportedModelError(
                f"{model_id}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
    head_dim = _int(text, "head_dim", model_id, default=None)
    if head_dim is None:
        if hidden % heads:
            raise UnsupportedModelError(
                f"{model_id}: head_dim missing and hidden_size {hidden} is not a multiple of {heads} heads"
            )
        head_dim = hidden // heads
    intermediate = _int(text, "intermediate_size", model_id, default=None)
    if intermediate is None:
        intermediate = 4 * hidden
        notes.append(f"intermediate_size missing; assumed 4 x hidden_size = {intermediate}")
    tie = _flag(text if "tie_word_embeddings" in text else config, "tie_word_embeddings", model_id)
    if tie is None:
        tie = model_type in ("gemma", "gemma2", "gemma3", "gemma3_text")
        notes.append(f"tie_word_embeddings missing; assumed {tie} (transformers default for {model_type})")
    max_pos = _int(text, "max_position_embeddings", model_id, default=None)
    if max_pos is None:
        max_pos = _int(config, "max_position_embeddings", model_id, default=None)
    if max_pos is None:
        max_pos = 4096
        notes.append("max_position_embeddings missing; assumed 4096")
    # transformers >= 4.56 writes "dtype"; the first of the two given (not null) is the one read
    dtype = next((c[k] for k in ("torch_dtype", "dtype") for c in (text, config) if c.get(k) is not None), None)
    if dtype not in ("bfloat16", "float16", "float32"):
        given = "not given" if dtype is None else f"{str(dtype)[:40]!r} is not bfloat16, float16 or float32"
        notes.append(f"torch_dtype {given}; assumed bfloat16")
        dtype = "bfloat16"

    mla: dict[str, Any] = {}
    v_head_dim = head_dim
    kv_lora_rank = _int(text, "kv_lora_rank", model_id, default=None)  # missing: no MLA
    if kv_lora_rank:
        rope = _int(text, "qk_rope_head_dim", model_id, default=64)
        nope = _int(text, "qk_nope_head_dim", model_id, default=128)
        v_head_dim = _int(text, "v_head_dim", model_id, default=nope)
        mla = {
            "kv_lora_rank": kv_lora_rank,
            "q_lora_rank": _int(text, "q_lora_rank", model_id, default=0, low=0) or None,
            "qk_rope_head_dim": rope,
            "qk_nope_head_dim": nope,
        }
        head_dim = rope + nope

    kinds, window, chunk = _layer_attention(text, model_type, layers, notes, model_id)
    attention_bias = _flag(text, "attention_bias", model_id)
    qkv_bias = model_type in _QKV_BIAS_TYPES or bool(attention_bias)
    o_bias = bool(attention_bias) and model_type not in _QKV_BIAS_TYPES
    # Llama 4's use_qk_norm is a weightless L2 norm, so it adds no parameters.
    qk_norm = model_type in _QK_NORM_TYPES
    moe = _moe(text, model_type, layers, hidden, intermediate, model_id, notes)  # before the notes are taken
    return ModelSpec(
        model_id=model_id,
        architecture=architecture,
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        tie_word_embeddings=bool(tie),
        max_position_embeddings=int(max_pos),
        torch_dtype=str(dtype),
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
        attention_sinks=model_type == "gpt_oss",
        norms_per_layer=4 if model_type in _FOUR_NORM_TYPES else 2,
        layer_attention=kinds,
        sliding_window=window,
        attention_chunk_size=chunk,
        vision_params=_vision_params(vision, hidden),
        quant=_quant(config, text, model_id),
        assumptions=tuple(notes),
        num_nextn_predict_layers=_int(text, "num_nextn_predict_layers", model_id, default=0, low=0),
        draft_vocab_size=_int(text, "draft_vocab_size", model_id, default=None),
        index_head_dim=_int(text, "index_head_dim", model_id, default=None) if mla else None,
        index_topk=_int(text, "index_topk", model_id, default=None) if mla else None,
        **mla,
        **moe,
    )
