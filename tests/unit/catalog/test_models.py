"""Tests of planner.catalog.models: the built-in catalog and its lookup.

The catalog must hold every model of tests/data/reference_models.json (34 popular open models with their Hugging Face
config.json values, each entry citing its public config_source; read here, independently of the catalog's own data
files) plus the serving checkpoints the planner's pages and CLI name by default.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.catalog.model_spec import ModelSpec
from planner.catalog.models import CatalogModel, get_model, list_models, model_ids
from planner.errors import PlannerError, UnknownModelError

REFERENCE_MODELS = Path(__file__).resolve().parents[2] / "data" / "reference_models.json"

SERVING_IDS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "meta-llama/Llama-3.2-3B-Instruct",
    "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    "Qwen/Qwen2-7B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct-AWQ",
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
    "Qwen/Qwen3-0.6B",
    "Qwen/Qwen3-14B",
    "Qwen/Qwen3-235B-A22B-FP8",
    "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    "deepseek-ai/deepseek-coder-6.7b-instruct",
    "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "google/gemma-2-9b-it",
    "google/gemma-2-27b-it",
    "microsoft/Phi-4-mini-instruct",
)


def _reference_entries() -> list[dict]:
    return json.loads(REFERENCE_MODELS.read_text(encoding="utf-8"))


def _reference_ids() -> list[str]:
    return [entry["hf_repo_id"] for entry in _reference_entries()]


def test_catalog_size() -> None:
    assert len(list_models()) >= 40


def test_ids_are_unique_and_match_model_ids() -> None:
    ids = [m.id for m in list_models()]
    assert len(ids) == len(set(ids))
    assert len({i.lower() for i in ids}) == len(ids)
    assert model_ids() == tuple(ids)


def test_every_reference_model_is_in_the_catalog() -> None:
    reference = _reference_ids()
    assert len(reference) == 34  # tests/data/README.md: "34 popular open models"
    missing = sorted(set(reference) - set(model_ids()))
    assert not missing


@pytest.mark.parametrize("model_id", SERVING_IDS)
def test_serving_checkpoint_is_in_the_catalog(model_id: str) -> None:
    m = get_model(model_id)
    assert m.id == model_id
    assert m.spec.model_id == model_id


@pytest.mark.parametrize("model", list_models(), ids=lambda m: m.id)
def test_every_entry_is_complete(model: CatalogModel) -> None:
    assert isinstance(model, CatalogModel)
    assert isinstance(model.spec, ModelSpec)
    assert model.config_source.strip(), f"{model.id} has no config_source"
    assert model.total_params > 0
    assert model.spec.num_layers > 0
    assert model.spec.num_kv_heads > 0
    assert len(model.spec.layer_attention) == model.spec.num_layers


def test_reference_config_values_are_carried_into_the_catalog() -> None:
    # Compare the reference file's config values with the parsed catalog spec, model by model.
    entries = _reference_entries()
    mismatches = []
    for entry in entries:
        spec = get_model(entry["hf_repo_id"]).spec
        for ref_key, attr in (
            ("num_hidden_layers", "num_layers"),
            ("hidden_size", "hidden_size"),
            ("num_attention_heads", "num_attention_heads"),
            ("vocab_size", "vocab_size"),
        ):
            if entry.get(ref_key) is not None and entry[ref_key] != getattr(spec, attr):
                mismatches.append((entry["hf_repo_id"], ref_key, entry[ref_key], getattr(spec, attr)))
    assert not mismatches


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("META-LLAMA/LLAMA-3.1-8B-INSTRUCT", "meta-llama/Llama-3.1-8B-Instruct"),
        ("meta-llama/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("  qwen/qwen3-14b  ", "Qwen/Qwen3-14B"),
        ("redhatai/llama-3.3-70b-instruct-fp8-dynamic", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"),
        ("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    ],
)
def test_lookup_is_case_insensitive(query: str, expected: str) -> None:
    assert get_model(query).id == expected


def test_unknown_model_suggests_close_ids() -> None:
    with pytest.raises(UnknownModelError) as info:
        get_model("meta-llama/Llama-3.1-8B-Instrct")
    message = str(info.value)
    assert isinstance(info.value, PlannerError) and isinstance(info.value, LookupError)
    assert "meta-llama/Llama-3.1-8B-Instrct" in message
    assert "did you mean" in message
    assert "meta-llama/Llama-3.1-8B-Instruct" in message
    assert "\n" not in message


@pytest.mark.parametrize("query", ["acme/no-such-model", "", "gpt-5"])
def test_unknown_model_names_the_id(query: str) -> None:
    with pytest.raises(UnknownModelError, match="not in the catalog") as info:
        get_model(query)
    assert repr(query) in str(info.value)


@pytest.mark.parametrize(
    ("model_id", "method"),
    [
        ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "awq"),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "awq"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "gptq"),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "fp8"),
        ("Qwen/Qwen3-235B-A22B-FP8", "fp8"),
        ("meta-llama/Llama-3.1-8B-Instruct", "none"),
    ],
)
def test_quantized_checkpoints_carry_their_method(model_id: str, method: str) -> None:
    # The repo ids name their quantization (AWQ, GPTQ-Int4, FP8); the configs must agree.
    assert get_model(model_id).spec.quant.method == method


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "GQA"),
        ("deepseek-ai/DeepSeek-V2-Lite-Chat", "MLA"),
        ("deepseek-ai/deepseek-coder-6.7b-instruct", "MHA"),
    ],
)
def test_attention_kind_of_known_models(model_id: str, kind: str) -> None:
    # Llama-3.1-8B: 32 heads / 8 KV heads; DeepSeek-V2-Lite: kv_lora_rank 512; deepseek-coder-6.7b:
    # 32 heads, no num_key_value_heads (Llama-2 style MHA).
    assert get_model(model_id).spec.attention_kind == kind


def test_list_models_is_cached_and_immutable() -> None:
    assert list_models() is list_models()
    assert isinstance(list_models(), tuple)
