"""Tests of planner.catalog.model_spec.parse_config on hand-written config.json dicts.

Expected values come from the transformers configuration classes (``models/<type>/configuration_<type>.py``):

* ``LlamaConfig``: ``num_key_value_heads=None`` becomes ``num_attention_heads`` ("for backward
  compatibility"); ``tie_word_embeddings=False``; ``head_dim`` defaults to
  ``hidden_size // num_attention_heads``.
* ``Gemma2Config``: ``tie_word_embeddings=True``; layer i slides iff i is even
  (``"sliding_attention" if bool((i + 1) % 2) else "full_attention"``).
* ``Gemma3TextConfig``: ``sliding_window_pattern=6``; layer i is global iff ``(i + 1) % 6 == 0``.
* ``GptOssConfig``: explicit ``layer_types`` of ``sliding_attention`` / ``full_attention``.
* ``Qwen2Config``: ``sliding_window`` only applies when ``use_sliding_window`` is true.
* ``DeepseekV2Config``: MLA with ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
  ``v_head_dim``; DeepSeek-V2-Lite: kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
  q_lora_rank null (its config.json; DeepSeek-V2 paper arXiv:2405.04434 section 2.1).
* ``PretrainedConfig``: ``torch_dtype=None`` when not given (the planner assumes bfloat16 and says so).
* Quantization configs: AutoAWQ (``bits``, ``group_size``, ``zero_point``), GPTQ, fp8 with
  ``weight_block_size`` (DeepSeek-V3), compressed-tensors ``float-quantized`` 8-bit weights (RedHatAI
  FP8-dynamic exports), mxfp4 (gpt-oss; OCP MX blocks of 32 values).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from planner.catalog.model_spec import ModelSpec, QuantConfig, parse_config
from planner.errors import PlannerError, UnsupportedModelError

MODEL_ID = "acme/test-model"

#: Llama-3.1-8B's config.json (the fields the parser reads).
LLAMA_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}


def llama(**changes: Any) -> dict[str, Any]:
    """A copy of LLAMA_8B with ``changes``; a value of ``...`` removes the key."""
    config = copy.deepcopy(LLAMA_8B)
    for key, value in changes.items():
        if value is ...:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def parse(config: Any) -> ModelSpec:
    return parse_config(config, MODEL_ID)


# --- attention layout -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heads", "kv_heads", "kind"),
    [
        pytest.param(32, 32, "MHA", id="mha-llama2-7b"),
        pytest.param(32, 8, "GQA", id="gqa-llama3-8b"),
        pytest.param(64, 8, "GQA", id="gqa-llama3-70b"),
        pytest.param(32, 1, "MQA", id="mqa"),
    ],
)
def test_attention_kind(heads: int, kv_heads: int, kind: str) -> None:
    spec = parse(llama(num_attention_heads=heads, num_key_value_heads=kv_heads))
    assert spec.attention_kind == kind
    assert spec.num_attention_heads == heads
    assert spec.num_kv_heads == kv_heads
    assert spec.head_dim == 4096 // heads
    assert not spec.is_mla
    assert spec.layer_attention == ("full",) * 32
    assert not spec.is_hybrid


def test_llama_8b_fields() -> None:
    spec = parse(LLAMA_8B)
    assert spec.model_id == MODEL_ID
    assert spec.architecture == "LlamaForCausalLM"
    assert spec.model_type == "llama"
    assert (spec.hidden_size, spec.num_layers, spec.intermediate_size, spec.vocab_size) == (4096, 32, 14336, 128256)
    assert spec.max_position_embeddings == 131072
    assert spec.torch_dtype == "bfloat16"
    assert spec.tie_word_embeddings is False
    assert spec.quant == QuantConfig()
    assert spec.assumptions == ()
    assert spec.vision_params == 0
    assert not spec.is_moe


def test_explicit_head_dim_wins() -> None:
    # Qwen3 and Gemma set head_dim explicitly; it need not be hidden / heads (Qwen3-0.6B: 1024 / 16 != 128).
    spec = parse(llama(hidden_size=1024, num_attention_heads=16, num_key_value_heads=8, head_dim=128))
    assert spec.head_dim == 128
    assert spec.v_head_dim == 128


def test_mla_deepseek_v2_lite() -> None:
    config = {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "hidden_size": 2048,
        "intermediate_size": 10944,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "vocab_size": 102400,
        "max_position_embeddings": 163840,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "num_experts_per_tok": 6,
        "moe_intermediate_size": 1408,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
    }
    spec = parse(config)
    assert spec.is_mla
    assert spec.attention_kind == "MLA"
    assert spec.kv_lora_rank == 512
    assert spec.qk_rope_head_dim == 64
    assert spec.qk_nope_head_dim == 128
    assert spec.q_lora_rank is None
    assert spec.head_dim == 64 + 128  # q/k head width = rope + nope
    assert spec.v_head_dim == 128
    # MoE: 64 routed + 2 shared experts of width 1408, the first layer dense.
    assert spec.is_moe
    assert spec.num_experts == 64
    assert spec.num_experts_per_tok == 6
    assert spec.num_shared_experts == 2
    assert spec.shared_expert_intermediate_size == 2 * 1408
    assert spec.moe_layers == (False,) + (True,) * 26


def _gemma2(num_layers: int = 42) -> dict[str, Any]:
    # google/gemma-2-9b config.json.
    return {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "hidden_size": 3584,
        "intermediate_size": 14336,
        "num_hidden_layers": num_layers,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "torch_dtype": "float32",
    }


def test_gemma2_even_layers_slide() -> None:
    spec = parse(_gemma2())
    assert spec.sliding_window == 4096
    assert len(spec.layer_attention) == 42
    for i, kind in enumerate(spec.layer_attention):
        assert kind == ("sliding" if i % 2 == 0 else "full"), i
    assert spec.layer_attention.count("sliding") == 21
    assert spec.is_hybrid
    assert spec.norms_per_layer == 4
    assert spec.torch_dtype == "float32"


def test_gemma2_tie_default_is_true() -> None:
    # Gemma2Config(tie_word_embeddings=True); the config above does not say.
    spec = parse(_gemma2())
    assert spec.tie_word_embeddings is True
    assert any("tie_word_embeddings" in a for a in spec.assumptions)


def _gemma3_multimodal(text: dict[str, Any]) -> dict[str, Any]:
    # google/gemma-3-4b-it config.json: the decoder under text_config, a SigLIP tower under vision_config.
    return {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": text,
        "vision_config": {
            "model_type": "siglip_vision_model",
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_hidden_layers": 27,
            "num_attention_heads": 16,
            "patch_size": 14,
            "image_size": 896,
            "num_channels": 3,
        },
        "torch_dtype": "bfloat16",
    }


GEMMA3_TEXT = {
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "num_hidden_layers": 34,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 262208,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
    "sliding_window": 1024,
    "sliding_window_pattern": 6,
}


def test_gemma3_five_to_one_pattern_in_text_config() -> None:
    spec = parse(_gemma3_multimodal(GEMMA3_TEXT))
    # text_config nesting: the decoder's shape, not the top level's (which has none).
    assert spec.model_type == "gemma3_text"
    assert spec.architecture == "Gemma3ForConditionalGeneration"
    assert (spec.hidden_size, spec.num_layers, spec.num_kv_heads, spec.head_dim) == (2560, 34, 4, 256)
    assert spec.vocab_size == 262208
    assert spec.torch_dtype == "bfloat16"  # from the top level
    for i, kind in enumerate(spec.layer_attention):
        assert kind == ("full" if (i + 1) % 6 == 0 else "sliding"), i
    assert spec.layer_attention.count("full") == 5  # layers 5, 11, 17, 23, 29
    assert spec.sliding_window == 1024
    assert spec.qk_norm
    assert spec.vision_params > 0
    assert spec.assumptions == ()


def test_gemma3_missing_pattern_assumes_six() -> None:
    text = {k: v for k, v in GEMMA3_TEXT.items() if k != "sliding_window_pattern"}
    spec = parse(_gemma3_multimodal(text))
    assert spec.layer_attention.count("full") == 5
    assert any("sliding_window_pattern" in a for a in spec.assumptions)


def test_gpt_oss_layer_types() -> None:
    layer_types = ["sliding_attention", "full_attention"] * 12
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
        "tie_word_embeddings": False,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "sliding_window": 128,
        "layer_types": layer_types,
        "quantization_config": {
            "quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"],
        },
    }
    spec = parse(config)
    assert spec.layer_attention == tuple("sliding" if t.startswith("sliding") else "full" for t in layer_types)
    assert spec.sliding_window == 128
    assert spec.attention_sinks
    assert spec.num_experts == 32 and spec.num_experts_per_tok == 4
    assert spec.quant.method == "mxfp4"
    assert spec.quant.bits == 4
    assert spec.quant.group_size == 32
    assert spec.quant.modules_not_converted == ("model.layers.*.self_attn", "lm_head")


@pytest.mark.parametrize(("use_sliding", "expected"), [(False, "full"), (None, "full")])
def test_qwen2_sliding_window_off_means_full(use_sliding: bool | None, expected: str) -> None:
    config = llama(
        architectures=["Qwen2ForCausalLM"],
        model_type="qwen2",
        hidden_size=3584,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        max_position_embeddings=32768,
        sliding_window=4096,
        use_sliding_window=use_sliding if use_sliding is not None else ...,
        max_window_layers=28,
    )
    spec = parse(config)
    assert spec.layer_attention == (expected,) * 28
    assert spec.sliding_window is None
    assert spec.qkv_bias  # Qwen2Attention: q/k/v projections carry biases


def test_mistral_v01_window_applies_to_every_layer() -> None:
    # mistralai/Mistral-7B-v0.1 config.json: sliding_window 4096, max_position_embeddings 32768.
    spec = parse(llama(model_type="mistral", sliding_window=4096, max_position_embeddings=32768))
    assert spec.layer_attention == ("sliding",) * 32
    assert spec.sliding_window == 4096


# --- quantization_config ------------------------------------------------------------------------


QUANT_CASES = [
    pytest.param(
        # hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 config.json.
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
        QuantConfig("awq", 4, 128, True, None, ()),
        id="awq",
    ),
    pytest.param(
        {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": False, "modules_to_not_convert": ["gate"]},
        QuantConfig("awq", 4, 64, False, None, ("gate",)),
        id="awq-no-zero-point",
    ),
    pytest.param(
        # Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 config.json.
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
        QuantConfig("gptq", 4, 128, True, None, ()),
        id="gptq",
    ),
    pytest.param(
        {"quant_method": "gptq", "bits": 8, "group_size": 32},
        QuantConfig("gptq", 8, 32, True, None, ()),
        id="gptq-8bit",
    ),
    pytest.param(
        # deepseek-ai/DeepSeek-V3 config.json.
        {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
        QuantConfig("fp8", 8, None, False, (128, 128), ()),
        id="fp8-block",
    ),
    pytest.param(
        {"quant_method": "fp8", "activation_scheme": "dynamic"},
        QuantConfig("fp8", 8, None, False, None, ()),
        id="fp8-per-tensor",
    ),
    pytest.param(
        # RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic config.json.
        {
            "quant_method": "compressed-tensors",
            "format": "float-quantized",
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                    "input_activations": {"num_bits": 8, "type": "float", "dynamic": True, "strategy": "token"},
                }
            },
            "ignore": ["lm_head"],
        },
        QuantConfig("fp8", 8, None, False, None, ("lm_head",)),
        id="compressed-tensors-fp8",
    ),
    pytest.param(
        {
            "quant_method": "compressed-tensors",
            "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}},
        },
        QuantConfig("int8", 8, None, False, None, ()),
        id="compressed-tensors-w8a8-int8",
    ),
    pytest.param(
        {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]},
        QuantConfig("mxfp4", 4, 32, False, None, ("lm_head",)),
        id="mxfp4",
    ),
    pytest.param(
        {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
        QuantConfig("bitsandbytes", 4, 64, False, None, ()),
        id="bitsandbytes-nf4",
    ),
]


@pytest.mark.parametrize(("quantization_config", "expected"), QUANT_CASES)
def test_quantization_config(quantization_config: dict[str, Any], expected: QuantConfig) -> None:
    spec = parse(llama(quantization_config=quantization_config))
    assert spec.quant == expected


def test_quantization_config_inside_text_config() -> None:
    text = dict(GEMMA3_TEXT, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
    assert parse(_gemma3_multimodal(text)).quant.method == "awq"


def test_no_quantization_config() -> None:
    assert parse(LLAMA_8B).quant == QuantConfig("none", 16, None, False, None, ())


# --- assumptions -----------------------------------------------------------------------------------


def test_missing_kv_heads_assumes_mha() -> None:
    # LlamaConfig: num_key_value_heads None -> num_attention_heads.
    spec = parse(llama(num_key_value_heads=...))
    assert spec.num_kv_heads == 32
    assert spec.attention_kind == "MHA"
    assert any("num_key_value_heads" in a for a in spec.assumptions)


def test_missing_torch_dtype_assumes_bfloat16() -> None:
    spec = parse(llama(torch_dtype=...))
    assert spec.torch_dtype == "bfloat16"
    assert any("torch_dtype" in a for a in spec.assumptions)


def test_dtype_key_of_newer_transformers_is_read() -> None:
    # transformers >= 4.56 writes "dtype" instead of "torch_dtype".
    spec = parse(llama(torch_dtype=..., dtype="float16"))
    assert spec.torch_dtype == "float16"
    assert spec.assumptions == ()


@pytest.mark.parametrize(
    ("model_type", "tied"),
    [("llama", False), ("qwen2", False), ("mistral", False), ("gemma2", True), ("gemma3_text", True)],
)
def test_missing_tie_word_embeddings_follows_transformers_default(model_type: str, tied: bool) -> None:
    # LlamaConfig / Qwen2Config / MistralConfig: tie_word_embeddings=False; Gemma2Config /
    # Gemma3TextConfig: True.
    spec = parse(llama(model_type=model_type, tie_word_embeddings=...))
    assert spec.tie_word_embeddings is tied
    assert any("tie_word_embeddings" in a for a in spec.assumptions)


def test_missing_intermediate_and_max_position_are_noted() -> None:
    spec = parse(llama(intermediate_size=..., max_position_embeddings=...))
    assert spec.intermediate_size == 4 * 4096
    assert spec.max_position_embeddings == 4096
    assert len(spec.assumptions) == 2


# --- unsupported configs: one line naming the model id and the field -----------------------------


UNSUPPORTED = [
    pytest.param(["not", "a", "dict"], "config.json", id="list"),
    pytest.param("config", "config.json", id="string"),
    pytest.param(None, "config.json", id="none"),
    pytest.param(llama(num_hidden_layers=...), "num_hidden_layers", id="missing-layers"),
    pytest.param(llama(hidden_size=0), "hidden_size", id="hidden-0"),
    pytest.param(llama(hidden_size=...), "hidden_size", id="missing-hidden"),
    pytest.param(llama(num_attention_heads=-32), "num_attention_heads", id="negative-heads"),
    pytest.param(llama(num_attention_heads=...), "num_attention_heads", id="missing-heads"),
    pytest.param(llama(hidden_size="4096"), "hidden_size", id="string-hidden"),
    pytest.param(llama(num_hidden_layers="32"), "num_hidden_layers", id="string-layers"),
    pytest.param(llama(num_hidden_layers=True), "num_hidden_layers", id="bool-layers"),
    pytest.param(llama(num_hidden_layers=31.5), "num_hidden_layers", id="fractional-layers"),
    pytest.param(llama(vocab_size=...), "vocab_size", id="missing-vocab"),
    pytest.param(llama(hidden_size=4000, num_attention_heads=48), "head_dim", id="head-dim-not-derivable"),
]

UNSUPPORTED_KV_HEADS = [
    pytest.param(llama(num_key_value_heads=-8), "num_key_value_heads", id="negative-kv-heads"),
    pytest.param(llama(num_key_value_heads=0), "num_key_value_heads", id="zero-kv-heads"),
    pytest.param(llama(num_key_value_heads="eight"), "num_key_value_heads", id="string-kv-heads"),
]


#: Optional fields given with a value no engine reads as given (issue 24, found by tests/unit/catalog/
#: test_hostile_configs.py): each used to be replaced without a word (``head_dim`` -64 became 128, a
#: ``tie_word_embeddings`` of 1.02 became true, ``num_nextn_predict_layers`` -423 became 0) or to crash (a
#: ``decoder_sparse_step`` of 5e-324 divided by zero, a 10^90 expert count overflowed a float).
UNSUPPORTED_OPTIONAL = [
    pytest.param(llama(head_dim=-64), "head_dim", id="negative-head-dim"),
    pytest.param(llama(head_dim=1.5), "head_dim", id="fractional-head-dim"),
    pytest.param(llama(intermediate_size="14336"), "intermediate_size", id="string-intermediate"),
    pytest.param(llama(max_position_embeddings=-1), "max_position_embeddings", id="negative-max-position"),
    pytest.param(llama(tie_word_embeddings=1.02), "tie_word_embeddings", id="number-tie"),
    pytest.param(llama(tie_word_embeddings="false"), "tie_word_embeddings", id="string-tie"),
    pytest.param(llama(num_nextn_predict_layers=-423), "num_nextn_predict_layers", id="negative-mtp"),
    pytest.param(llama(draft_vocab_size=" 8192 "), "draft_vocab_size", id="string-draft-vocab"),
    pytest.param(llama(kv_lora_rank=5e-324), "kv_lora_rank", id="tiny-kv-lora-rank"),
    pytest.param(llama(kv_lora_rank=512, qk_nope_head_dim=0.0), "qk_nope_head_dim", id="zero-nope"),
    pytest.param(llama(kv_lora_rank=512, index_head_dim=-5929), "index_head_dim", id="negative-index-head-dim"),
    pytest.param(llama(sliding_window="4096"), "sliding_window", id="string-window"),
    pytest.param(llama(layer_types=["full_attention"] * 31), "layer_types", id="layer-types-short"),
    pytest.param(
        llama(model_type="qwen2_moe", num_experts=8, decoder_sparse_step=5e-324), "decoder_sparse_step", id="step-0"
    ),
    pytest.param(llama(model_type="qwen3_moe", num_experts=int("9" * 90)), "num_experts", id="huge-experts"),
    pytest.param(llama(num_local_experts=8, num_experts_per_tok=2.5), "num_experts_per_tok", id="fractional-top-k"),
    pytest.param(  # a string was read letter by letter as module names
        llama(quantization_config={"quant_method": "awq", "modules_to_not_convert": "lm_head"}),
        "modules_to_not_convert",
        id="string-skipped-modules",
    ),
    pytest.param(
        llama(quantization_config={"quant_method": "gptq", "bits": 4.5}), "quantization_config.bits", id="gptq-bits"
    ),
]


@pytest.mark.parametrize(("config", "field"), UNSUPPORTED + UNSUPPORTED_KV_HEADS + UNSUPPORTED_OPTIONAL)
def test_unsupported_config(config: Any, field: str) -> None:
    with pytest.raises(UnsupportedModelError) as info:
        parse(config)
    message = str(info.value)
    assert isinstance(info.value, PlannerError)
    assert "\n" not in message
    assert message.startswith(f"{MODEL_ID}: ")
    assert field in message
