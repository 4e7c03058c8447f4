"""planner/views/editor.py: widget values of scenario fields, the speculative configuration the widgets make and the
scenario an editor column holds."""

from __future__ import annotations

import pytest

from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.capacity.speculative import SpeculativeConfig
from planner.links.rules import BadValue
from planner.views import editor


def test_widget_values_of_fields():
    assert editor.to_widget("quantization", None) == editor.CHECKPOINT
    assert editor.to_widget("quantization", "awq") == "awq"
    assert editor.to_widget("engine_version", None) == ""
    assert editor.to_widget("max_model_len", MAX_MODEL_LEN_AUTO) is None  # the "auto" box says it
    assert editor.to_widget("custom_gpu_memory_gib", None) == 80.0
    assert editor.to_widget("gpu_memory_utilization", 1) == 1.0 and isinstance(
        editor.to_widget("gpu_memory_utilization", 1), float
    )
    assert editor.to_widget("weight_quant", None) == "fp16"


def test_each_engine_uses_its_own_fields():
    assert "cuda_memory_fraction" in editor.fields_for("tgi")
    assert "cuda_memory_fraction" not in editor.fields_for("vllm")
    assert "entry_point" in editor.fields_for("vllm")
    assert editor.fields_for("article") == {
        "params_b",
        "num_layers",
        "num_kv_heads",
        "head_dim",
        "gpu_memory_gb",
        "weight_quant",
        "kv_quant",
    }


def test_scenario_from_widgets_keeps_only_the_engines_fields():
    numbers = {"target_context": 8192, "tensor_parallel_size": 2, "max_model_len": 16384}
    values = {"quantization": editor.CHECKPOINT, "engine_version": " 0.19.0 ", "gpu_memory_utilization": 0.8}
    vllm = editor.scenario_from_widgets(
        engine="vllm", gpu="h100-sxm-80gb", model=" Qwen/Qwen3-8B ", numbers=numbers, values=values, auto=False
    )
    assert vllm.model == "Qwen/Qwen3-8B" and vllm.quantization is None and vllm.engine_version == "0.19.0"
    assert (vllm.tensor_parallel_size, vllm.max_model_len, vllm.gpu_memory_utilization) == (2, 16384, 0.8)
    auto = editor.scenario_from_widgets(
        engine="vllm", gpu="h100-sxm-80gb", model="Qwen/Qwen3-8B", numbers=numbers, values=values, auto=True
    )
    assert auto.max_model_len == MAX_MODEL_LEN_AUTO
    # TGI has no gpu_memory_utilization: it stays at the default, so it does not linger in the URL
    tgi = editor.scenario_from_widgets(
        engine="tgi", gpu="h100-sxm-80gb", model="Qwen/Qwen3-8B", numbers=numbers, values=values, auto=True
    )
    assert tgi.gpu_memory_utilization == Scenario().gpu_memory_utilization and tgi.max_model_len == 16384
    custom = editor.scenario_from_widgets(
        engine="article",
        gpu="custom",
        model="Qwen/Qwen3-8B",
        numbers={"target_context": None, "custom_gpu_memory_gib": 48.0},
        values={},
        auto=False,
    )
    assert custom.custom_gpu_memory_gib == 48.0 and custom.tensor_parallel_size == 1


def test_speculative_config_from_the_widgets():
    assert editor.speculative_config(editor.SPEC_OFF, "x", 3, None) == (None, None)
    config, error = editor.speculative_config("ngram", "ignored/model", 4, None)
    assert error is None and config == SpeculativeConfig("ngram", 4)
    # a link's configuration with other vLLM keys is kept while the widgets still say the same
    kept = SpeculativeConfig("ngram", 4, passed=(("prompt_lookup_max", "5"),))
    assert editor.speculative_config("ngram", "", 4, kept) == (kept, None)
    assert editor.speculative_config("ngram", "", 5, kept)[0] == SpeculativeConfig("ngram", 5)
    config, error = editor.speculative_config("draft_model", "", 3, None)
    assert config is None and error.startswith("Speculative decoding not planned: ")


def test_speculative_methods_by_engine():
    assert editor.speculative_methods("tgi") == (editor.SPEC_OFF, "ngram")
    assert "eagle3" in editor.speculative_methods("vllm")
    assert editor.needs_draft_model("eagle3") and not editor.needs_draft_model("mtp")


def test_max_model_len_auto_is_vllms_only():
    assert editor.max_model_len_parser("vllm")("auto") == MAX_MODEL_LEN_AUTO
    assert editor.max_model_len_parser("tgi")("4096") == 4096
    with pytest.raises(BadValue, match="auto is for vLLM"):
        editor.max_model_len_parser("tgi")("auto")


def test_uploaded_config_text():
    assert editor.config_from_upload(b'{"a": 1}') == ('{"a": 1}', None)
    text, why = editor.config_from_upload(b"\xff\xfe")
    assert text is None and "utf-8" in why
    text, why = editor.config_from_upload(b" " * (editor.MAX_CONFIG_BYTES + 1))
    assert text is None and why == "1,000,001 bytes, more than 1,000,000"


def test_gpu_and_model_choices():
    assert editor.gpu_options()[-1] == "custom" and "h100-sxm-80gb" in editor.gpu_options()
    assert editor.gpu_label("custom") == "Custom GPU…"
    assert editor.gpu_label("h100-sxm-80gb") == "NVIDIA H100 80GB SXM5 (79.2 GiB)"
    assert editor.model_options("org/mine", ["a/b"]) == ["org/mine", "a/b"]
    assert editor.model_options("a/b", ["a/b"]) == ["a/b"]
