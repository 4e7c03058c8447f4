"""Tensor layouts of real Hub checkpoints, built module by module from their config.json values.

Each function returns ``(config, tensors)``: the config.json dict and ``name -> (safetensors dtype, shape)`` in the
order the modules are enumerated, ready for ``HubStandIn.add_model(files={"config.json": config}, tensors=...)``.
Nothing here imports the planner: the layouts are an independent construction to test it against.

Config values are those recorded (with their sources) in planner/catalog/data/models_serving.json,
planner/catalog/data/models_reference.json and tests/data/reference_models.json; the module names, shapes, dtypes,
what is quantized and what is tied come from the modeling/loader code cited in each function.
"""

from __future__ import annotations

__all__ = [
    "Layout",
    "bert_base",
    "gemma_3_12b_it",
    "gpt_oss_20b",
    "llama_31_8b_instruct",
    "llama_33_70b_fp8_dynamic",
    "mistral_small_32_24b",
    "phi4_gptq_int4",
    "qwen3_30b_a3b",
    "tiny_llama",
]

Tensors = dict[str, tuple[str, list[int]]]
Layout = tuple[dict, Tensors]


# --------------------------------------------------------------------------------------------------- building blocks
def _linear(t: Tensors, name: str, out_features: int, in_features: int, dtype: str, *, bias: bool = False) -> None:
    """An nn.Linear: ``weight`` [out, in] (+ ``bias`` [out])."""
    t[f"{name}.weight"] = (dtype, [out_features, in_features])
    if bias:
        t[f"{name}.bias"] = (dtype, [out_features])


def _gptq_linear(t: Tensors, name: str, out_features: int, in_features: int, *, bits: int = 4, group: int = 128):
    """A GPTQ-packed Linear as AutoGPTQ's QuantLinear stores it (AutoGPTQ/AutoGPTQ
    auto_gptq/nn_modules/qlinear/qlinear_cuda.py @7c691ed: ``qweight`` int32 [in*bits/32, out], ``qzeros`` int32
    [in/group, out*bits/32], ``scales`` fp16 [in/group, out], ``g_idx`` int32 [in]); no bias in Phi-3 Linears."""
    pack = 32 // bits
    t[f"{name}.qweight"] = ("I32", [in_features // pack, out_features])
    t[f"{name}.qzeros"] = ("I32", [in_features // group, out_features // pack])
    t[f"{name}.scales"] = ("F16", [in_features // group, out_features])
    t[f"{name}.g_idx"] = ("I32", [in_features])


def _fp8_channel_linear(t: Tensors, name: str, out_features: int, in_features: int) -> None:
    """A compressed-tensors FP8 channel-wise Linear: ``weight`` F8_E4M3 [out, in] and ``weight_scale`` [out, 1] in
    the checkpoint dtype (neuralmagic/compressed-tensors src/compressed_tensors/quantization/lifecycle/initialize.py
    @9ead292: channel strategy → scale shape (weight.shape[0], 1)); dynamic activations → no ``input_scale``."""
    t[f"{name}.weight"] = ("F8_E4M3", [out_features, in_features])
    t[f"{name}.weight_scale"] = ("BF16", [out_features, 1])


def _llama_like(
    config: dict,
    *,
    dtype: str,
    prefix: str = "model",
    lm_head: str | None = "lm_head",
    linear=None,
) -> Tensors:
    """Llama/Mistral decoder (transformers models/llama/modeling_llama.py): embed_tokens, per layer
    input_layernorm, q/k/v/o_proj, post_attention_layernorm, gate/up/down_proj; final norm; lm_head unless tied."""
    h = config["hidden_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or h // heads
    inter = config["intermediate_size"]
    t: Tensors = {f"{prefix}.embed_tokens.weight": (dtype, [config["vocab_size"], h])}

    def lin(name: str, out_f: int, in_f: int) -> None:
        if linear is None:
            _linear(t, name, out_f, in_f, dtype)
        else:
            linear(t, name, out_f, in_f)

    for i in range(config["num_hidden_layers"]):
        p = f"{prefix}.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = (dtype, [h])
        lin(f"{p}.self_attn.q_proj", heads * head_dim, h)
        lin(f"{p}.self_attn.k_proj", kv_heads * head_dim, h)
        lin(f"{p}.self_attn.v_proj", kv_heads * head_dim, h)
        lin(f"{p}.self_attn.o_proj", h, heads * head_dim)
        t[f"{p}.post_attention_layernorm.weight"] = (dtype, [h])
        lin(f"{p}.mlp.gate_proj", inter, h)
        lin(f"{p}.mlp.up_proj", inter, h)
        lin(f"{p}.mlp.down_proj", h, inter)
    t[f"{prefix}.norm.weight"] = (dtype, [h])
    if lm_head and not config.get("tie_word_embeddings", False):
        t[f"{lm_head}.weight"] = (dtype, [config["vocab_size"], h])
    return t


# ------------------------------------------------------------------------------------------------------ checkpoints
_LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}


def llama_31_8b_instruct() -> Layout:
    """meta-llama/Llama-3.1-8B-Instruct: BF16, untied lm_head; on the Hub in 4 shards and gated.

    Config: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @01ced33 (MODEL_PRESETS['llama3_1_8b']), as
    recorded in planner/data/models_serving.json. Names/shapes: transformers models/llama/modeling_llama.py.
    Published: 8.03B parameters (the Hub's safetensors count, 8,030,261,248; index total_size 16,060,522,496 B).
    """
    config = dict(_LLAMA31_8B)
    return config, _llama_like(config, dtype="BF16")


def tiny_llama() -> Layout:
    """A 2-layer Llama-architecture model (hidden 64, vocab 1000) for fast generic tests."""
    config = {
        **_LLAMA31_8B,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 1000,
        "max_position_embeddings": 2048,
        "rope_scaling": None,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    return config, _llama_like(config, dtype="BF16")


def phi4_gptq_int4() -> Layout:
    """kaitchup/Phi-4-AutoRound-GPTQ-4bit: GPTQ 4-bit, group 128, symmetric, desc_act off.

    Phi-3 modules (transformers models/phi3/modeling_phi3.py): fused ``self_attn.qkv_proj`` (out = (heads + 2 ×
    kv_heads) × head_dim) and ``mlp.gate_up_proj`` (out = 2 × intermediate), ``o_proj``, ``down_proj`` — all four
    GPTQ-packed (see ``_gptq_linear``); embed_tokens, lm_head (untied) and the RMSNorms stay F16.
    Config: microsoft/phi-4 (hidden 5120, 40 layers, 40 heads, 10 KV heads, head_dim 128, intermediate 17920,
    vocab 100352) with the GPTQ quantization_config, as in planner/data/models_serving.json.
    Check: vLLM log id 55 (bench/data/vllm_capacity_logs.json) "Loading model weights took 8.5107 GB" (GiB).
    """
    config = {
        "architectures": ["Phi3ForCausalLM"],
        "model_type": "phi3",
        "hidden_size": 5120,
        "intermediate_size": 17920,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 10,
        "vocab_size": 100352,
        "max_position_embeddings": 16384,
        "rope_theta": 250000,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "attention_bias": False,
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False},
    }
    h, inter = config["hidden_size"], config["intermediate_size"]
    head_dim = h // config["num_attention_heads"]
    qkv_out = (config["num_attention_heads"] + 2 * config["num_key_value_heads"]) * head_dim
    t: Tensors = {"model.embed_tokens.weight": ("F16", [config["vocab_size"], h])}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = ("F16", [h])
        _gptq_linear(t, f"{p}.self_attn.qkv_proj", qkv_out, h)
        _gptq_linear(t, f"{p}.self_attn.o_proj", h, h)
        t[f"{p}.post_attention_layernorm.weight"] = ("F16", [h])
        _gptq_linear(t, f"{p}.mlp.gate_up_proj", 2 * inter, h)
        _gptq_linear(t, f"{p}.mlp.down_proj", h, inter)
    t["model.norm.weight"] = ("F16", [h])
    t["lm_head.weight"] = ("F16", [config["vocab_size"], h])
    return config, t


def llama_33_70b_fp8_dynamic() -> Layout:
    """RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic: compressed-tensors FP8, weights channel-wise, activations
    dynamic per token; every decoder Linear quantized (``ignore: ["lm_head"]``), embed/lm_head/norms BF16.

    Config: meta-llama/Llama-3.3-70B-Instruct (ai-dynamo/aiconfigurator model_configs @f577ab8) with the
    compressed-tensors quantization_config, as in planner/data/models_serving.json. Linear format:
    ``_fp8_channel_linear``.
    Check: vLLM log id 31 (llm-d/llm-d-benchmark empirical-vllm-memory-results.md) weights 67.72 GiB on one H100.
    """
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "rope_scaling": _LLAMA31_8B["rope_scaling"],
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "attention_bias": False,
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "format": "float-quantized",
            "ignore": ["lm_head"],
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
                }
            },
        },
    }
    return config, _llama_like(config, dtype="BF16", linear=_fp8_channel_linear)


def gpt_oss_20b() -> Layout:
    """openai/gpt-oss-20b: 24-layer MoE, 32 experts (top-4), experts stored MXFP4.

    Names and BF16 shapes: transformers models/gpt_oss/modeling_gpt_oss.py @00d4b3d (GptOssAttention q/k/v/o_proj with
    bias + ``sinks`` [heads]; GptOssTopKRouter ``mlp.router.weight`` [E, hidden] + bias [E]; GptOssExperts
    ``gate_up_proj_bias`` [E, 2 × inter], ``down_proj_bias`` [E, hidden]). The experts' weights are saved as MXFP4:
    ``*_blocks`` U8 [E, out, in/32, 16] (two FP4 values per byte, 32 per block) and ``*_scales`` U8 [E, out, in/32]
    (one E8M0 scale per block) — gate_up_proj_blocks [32, 5760, 90, 16], gate_up_proj_scales [32, 5760, 90],
    down_proj_blocks [32, 2880, 90, 16], down_proj_scales [32, 2880, 90], as loaded by transformers
    integrations/mxfp4.py (convert_moe_packed_tensors) and checked against the real checkpoint in tinygrad's gpt-oss
    test (``Tensor.empty(32, 5760, 90, 16, dtype=dtypes.uchar)``). quantization_config.modules_to_not_convert keeps
    attention, router, embed_tokens and lm_head in BF16.
    Config: ai-dynamo/aiconfigurator model_configs/openai--gpt-oss-20b_config.json @095f58a (models_reference.json).
    Published: 21B total, 3.6B active (openai/gpt-oss README @7b58334).
    """
    config = {
        "architectures": ["GptOssForCausalLM"],
        "model_type": "gpt_oss",
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": 24,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 201088,
        "max_position_embeddings": 131072,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"] * 12,
        "attention_bias": True,
        "tie_word_embeddings": False,
        "quantization_config": {
            "quant_method": "mxfp4",
            "modules_to_not_convert": [
                "model.layers.*.self_attn",
                "model.layers.*.mlp.router",
                "model.embed_tokens",
                "lm_head",
            ],
        },
    }
    h, inter, experts = config["hidden_size"], config["intermediate_size"], config["num_local_experts"]
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    t: Tensors = {"model.embed_tokens.weight": ("BF16", [config["vocab_size"], h])}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.self_attn.q_proj", heads * head_dim, h, "BF16", bias=True)
        _linear(t, f"{p}.self_attn.k_proj", kv_heads * head_dim, h, "BF16", bias=True)
        _linear(t, f"{p}.self_attn.v_proj", kv_heads * head_dim, h, "BF16", bias=True)
        _linear(t, f"{p}.self_attn.o_proj", h, heads * head_dim, "BF16", bias=True)
        t[f"{p}.self_attn.sinks"] = ("BF16", [heads])
        t[f"{p}.post_attention_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.mlp.router", experts, h, "BF16", bias=True)
        t[f"{p}.mlp.experts.gate_up_proj_blocks"] = ("U8", [experts, 2 * inter, h // 32, 16])
        t[f"{p}.mlp.experts.gate_up_proj_scales"] = ("U8", [experts, 2 * inter, h // 32])
        t[f"{p}.mlp.experts.gate_up_proj_bias"] = ("BF16", [experts, 2 * inter])
        t[f"{p}.mlp.experts.down_proj_blocks"] = ("U8", [experts, h, inter // 32, 16])
        t[f"{p}.mlp.experts.down_proj_scales"] = ("U8", [experts, h, inter // 32])
        t[f"{p}.mlp.experts.down_proj_bias"] = ("BF16", [experts, h])
    t["model.norm.weight"] = ("BF16", [h])
    t["lm_head.weight"] = ("BF16", [config["vocab_size"], h])
    return config, t


def qwen3_30b_a3b() -> Layout:
    """Qwen/Qwen3-30B-A3B: BF16 MoE, 48 layers × 128 experts (top-8), per-expert gate/up/down_proj, q_norm/k_norm.

    Names/shapes: transformers models/qwen3_moe/modeling_qwen3_moe.py (Qwen3MoeAttention with ``q_norm``/``k_norm``
    RMSNorm(head_dim); Qwen3MoeSparseMoeBlock ``mlp.gate`` Linear(hidden, E, bias=False) and ``mlp.experts.{e}``
    Qwen3MoeMLP(moe_intermediate_size)); all layers sparse (decoder_sparse_step 1, mlp_only_layers []).
    Config: ai-dynamo/aiconfigurator model_configs/Qwen--Qwen3-30B-A3B_config.json @095f58a (models_reference.json).
    Published: 30.5B total, 3.3B activated (Qwen3-30B-A3B model card, via docs.vllm.ai Ascend tutorial).
    """
    config = {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "attention_bias": False,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
    }
    h, head_dim, moe_inter = config["hidden_size"], config["head_dim"], config["moe_intermediate_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    t: Tensors = {"model.embed_tokens.weight": ("BF16", [config["vocab_size"], h])}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.self_attn.q_proj", heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.k_proj", kv_heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.v_proj", kv_heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.o_proj", h, heads * head_dim, "BF16")
        t[f"{p}.self_attn.q_norm.weight"] = ("BF16", [head_dim])
        t[f"{p}.self_attn.k_norm.weight"] = ("BF16", [head_dim])
        t[f"{p}.post_attention_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.mlp.gate", config["num_experts"], h, "BF16")
        for e in range(config["num_experts"]):
            _linear(t, f"{p}.mlp.experts.{e}.gate_proj", moe_inter, h, "BF16")
            _linear(t, f"{p}.mlp.experts.{e}.up_proj", moe_inter, h, "BF16")
            _linear(t, f"{p}.mlp.experts.{e}.down_proj", h, moe_inter, "BF16")
    t["model.norm.weight"] = ("BF16", [h])
    t["lm_head.weight"] = ("BF16", [config["vocab_size"], h])
    return config, t


def mistral_small_32_24b() -> Layout:
    """mistralai/Mistral-Small-3.2-24B-Instruct-2506: Mistral3ForConditionalGeneration, BF16.

    Checkpoint names: transformers models/mistral3/convert_mistral3_weights_to_hf.py @0ef4811 (STATE_DICT_MAPPING:
    ``language_model.model.*`` / ``language_model.lm_head.weight``; ``vision_tower.patch_conv.weight``,
    ``vision_tower.ln_pre.weight``, ``vision_tower.transformer.layers.{i}.{attention_norm,ffn_norm}``,
    ``.attention.{q,k,v,o}_proj``, ``.feed_forward.{gate,up,down}_proj``; ``multi_modal_projector.norm``,
    ``.patch_merger.merging_layer``, ``.linear_1``, ``.linear_2``) — Mistral3Model keeps
    ``_checkpoint_conversion_mapping = {"language_model.model": "language_model"}``. Shapes:
    models/mistral3/modeling_mistral3.py @00dcc6d (projector norm RMSNorm(vision hidden); merging_layer
    [vision hidden, vision hidden × merge²], no bias; linear_1 [text hidden, vision hidden], linear_2 [text hidden,
    text hidden], bias = multimodal_projector_bias = False) and models/pixtral/modeling_pixtral.py (patch_conv
    Conv2d(3, hidden, patch, patch, bias=False); no biases in the vision Linears).
    Config: planner/data/models_serving.json (text: Mistral-Small-24B values; vision: Pixtral 1024/4096/24/16).
    Published: 24B ("With 24 billion parameters", transformers docs/source/en/model_doc/mistral3.md).
    """
    text = {
        "model_type": "mistral",
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 131072,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
    }
    vision = {
        "model_type": "pixtral",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "head_dim": 64,
        "num_channels": 3,
        "image_size": 1540,
        "patch_size": 14,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
    }
    config = {
        "architectures": ["Mistral3ForConditionalGeneration"],
        "model_type": "mistral3",
        "text_config": text,
        "vision_config": vision,
        "image_token_index": 10,
        "multimodal_projector_bias": False,
        "projector_hidden_act": "gelu",
        "spatial_merge_size": 2,
        "vision_feature_layer": -1,
        "torch_dtype": "bfloat16",
    }
    t = _llama_like(text, dtype="BF16", prefix="language_model.model", lm_head="language_model.lm_head")
    vh, vi, patch = vision["hidden_size"], vision["intermediate_size"], vision["patch_size"]
    t["vision_tower.patch_conv.weight"] = ("BF16", [vh, vision["num_channels"], patch, patch])
    t["vision_tower.ln_pre.weight"] = ("BF16", [vh])
    for i in range(vision["num_hidden_layers"]):
        p = f"vision_tower.transformer.layers.{i}"
        t[f"{p}.attention_norm.weight"] = ("BF16", [vh])
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            _linear(t, f"{p}.attention.{proj}", vh, vh, "BF16")
        t[f"{p}.ffn_norm.weight"] = ("BF16", [vh])
        _linear(t, f"{p}.feed_forward.gate_proj", vi, vh, "BF16")
        _linear(t, f"{p}.feed_forward.up_proj", vi, vh, "BF16")
        _linear(t, f"{p}.feed_forward.down_proj", vh, vi, "BF16")
    merge = config["spatial_merge_size"]
    t["multi_modal_projector.norm.weight"] = ("BF16", [vh])
    _linear(t, "multi_modal_projector.patch_merger.merging_layer", vh, vh * merge**2, "BF16")
    _linear(t, "multi_modal_projector.linear_1", text["hidden_size"], vh, "BF16")
    _linear(t, "multi_modal_projector.linear_2", text["hidden_size"], text["hidden_size"], "BF16")
    return config, t


def gemma_3_12b_it() -> Layout:
    """google/gemma-3-12b-it: Gemma3ForConditionalGeneration, BF16, lm_head tied to embed_tokens.

    Text (transformers models/gemma3/modeling_gemma3.py @f14d0cb, Gemma3DecoderLayer): q/k/v/o_proj without bias,
    ``q_norm``/``k_norm`` [head_dim], four norms per layer (input_layernorm, post_attention_layernorm,
    pre_feedforward_layernorm, post_feedforward_layernorm), gate/up/down_proj; under ``language_model.model.``.
    Vision (models/siglip/modeling_siglip.py, SiglipVisionModel): ``vision_tower.vision_model.embeddings``
    (patch_embedding Conv2d with bias, position_embedding [(image/patch)², hidden]), encoder layers with
    layer_norm1/2 (weight+bias), self_attn q/k/v/out_proj (with bias), mlp fc1/fc2 (with bias); post_layernorm.
    Projector (Gemma3MultiModalProjector): ``mm_input_projection_weight`` [vision hidden, text hidden] and
    ``mm_soft_emb_norm`` RMSNorm(vision hidden).
    Config: planner/data/models_reference.json (harmonicdata/Gemma3-SD-v0.2 config.json; SigLIP 1152/4304/27/16,
    patch 14, image 896). Published: 12.2B params (the Hub model page's safetensors count).
    """
    text = {
        "model_type": "gemma3_text",
        "hidden_size": 3840,
        "intermediate_size": 15360,
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
        "rope_theta": 1000000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
    }
    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "patch_size": 14,
        "image_size": 896,
        "num_channels": 3,
    }
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": text,
        "vision_config": vision,
        "mm_tokens_per_image": 256,
        "torch_dtype": "bfloat16",
    }
    h, inter, head_dim = text["hidden_size"], text["intermediate_size"], text["head_dim"]
    heads, kv_heads = text["num_attention_heads"], text["num_key_value_heads"]
    t: Tensors = {"language_model.model.embed_tokens.weight": ("BF16", [text["vocab_size"], h])}
    for i in range(text["num_hidden_layers"]):
        p = f"language_model.model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.self_attn.q_proj", heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.k_proj", kv_heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.v_proj", kv_heads * head_dim, h, "BF16")
        _linear(t, f"{p}.self_attn.o_proj", h, heads * head_dim, "BF16")
        t[f"{p}.self_attn.q_norm.weight"] = ("BF16", [head_dim])
        t[f"{p}.self_attn.k_norm.weight"] = ("BF16", [head_dim])
        t[f"{p}.post_attention_layernorm.weight"] = ("BF16", [h])
        t[f"{p}.pre_feedforward_layernorm.weight"] = ("BF16", [h])
        _linear(t, f"{p}.mlp.gate_proj", inter, h, "BF16")
        _linear(t, f"{p}.mlp.up_proj", inter, h, "BF16")
        _linear(t, f"{p}.mlp.down_proj", h, inter, "BF16")
        t[f"{p}.post_feedforward_layernorm.weight"] = ("BF16", [h])
    t["language_model.model.norm.weight"] = ("BF16", [h])
    vh, vi, patch = vision["hidden_size"], vision["intermediate_size"], vision["patch_size"]
    v = "vision_tower.vision_model"
    t[f"{v}.embeddings.patch_embedding.weight"] = ("BF16", [vh, vision["num_channels"], patch, patch])
    t[f"{v}.embeddings.patch_embedding.bias"] = ("BF16", [vh])
    t[f"{v}.embeddings.position_embedding.weight"] = ("BF16", [(vision["image_size"] // patch) ** 2, vh])
    for i in range(vision["num_hidden_layers"]):
        p = f"{v}.encoder.layers.{i}"
        t[f"{p}.layer_norm1.weight"] = ("BF16", [vh])
        t[f"{p}.layer_norm1.bias"] = ("BF16", [vh])
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _linear(t, f"{p}.self_attn.{proj}", vh, vh, "BF16", bias=True)
        t[f"{p}.layer_norm2.weight"] = ("BF16", [vh])
        t[f"{p}.layer_norm2.bias"] = ("BF16", [vh])
        _linear(t, f"{p}.mlp.fc1", vi, vh, "BF16", bias=True)
        _linear(t, f"{p}.mlp.fc2", vh, vi, "BF16", bias=True)
    t[f"{v}.post_layernorm.weight"] = ("BF16", [vh])
    t[f"{v}.post_layernorm.bias"] = ("BF16", [vh])
    t["multi_modal_projector.mm_input_projection_weight"] = ("BF16", [vh, h])
    t["multi_modal_projector.mm_soft_emb_norm.weight"] = ("BF16", [vh])
    return config, t


def bert_base() -> Layout:
    """A BERT-base encoder (google-bert/bert-base-uncased shape; transformers models/bert/modeling_bert.py):
    architectures ["BertModel"], served with pipeline_tag "feature-extraction" — the "not a text-generation
    model" case. F32 as the original checkpoint. About 109.5M parameters (BertModel with pooler)."""
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "vocab_size": 30522,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "torch_dtype": "float32",
    }
    h, inter = config["hidden_size"], config["intermediate_size"]
    t: Tensors = {
        "embeddings.word_embeddings.weight": ("F32", [config["vocab_size"], h]),
        "embeddings.position_embeddings.weight": ("F32", [config["max_position_embeddings"], h]),
        "embeddings.token_type_embeddings.weight": ("F32", [config["type_vocab_size"], h]),
        "embeddings.LayerNorm.weight": ("F32", [h]),
        "embeddings.LayerNorm.bias": ("F32", [h]),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        for proj in ("query", "key", "value"):
            _linear(t, f"{p}.attention.self.{proj}", h, h, "F32", bias=True)
        _linear(t, f"{p}.attention.output.dense", h, h, "F32", bias=True)
        t[f"{p}.attention.output.LayerNorm.weight"] = ("F32", [h])
        t[f"{p}.attention.output.LayerNorm.bias"] = ("F32", [h])
        _linear(t, f"{p}.intermediate.dense", inter, h, "F32", bias=True)
        _linear(t, f"{p}.output.dense", h, inter, "F32", bias=True)
        t[f"{p}.output.LayerNorm.weight"] = ("F32", [h])
        t[f"{p}.output.LayerNorm.bias"] = ("F32", [h])
    _linear(t, "pooler.dense", h, h, "F32", bias=True)
    return config, t
