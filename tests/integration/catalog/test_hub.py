"""Model resolution against a local Hub stand-in (tests/hub): the real huggingface_hub client, no network.

Real checkpoints are served under mirror repo ids (``mirror/...``) so that the catalog, which the
resolver consults first, does not answer for them.
"""

from __future__ import annotations

import json

import pytest

from planner.capacity.engines.vllm import plan_vllm
from planner.capacity.scenario import Scenario
from planner.catalog.hub import resolve_model
from planner.cli.main import main
from planner.errors import (
    GatedModelError,
    HubUnavailableError,
    ModelNotFoundError,
    NotTextGenerationError,
    UnsupportedModelError,
)
from planner.units import GIB
from tests.hub import checkpoints

TOKEN = "hf_planted_secret_token_123"


def _serve(hub, repo_id: str, layout, **kwargs) -> None:
    config, tensors = layout
    hub.add_model(repo_id, files={"config.json": config}, tensors=tensors, **kwargs)


# (layout, mirror repo id, scenario changes, logged "Model loading took" GiB per GPU, vLLM log id)
LOGGED_WEIGHTS = [
    (checkpoints.llama_31_8b_instruct, "mirror/Llama-3.1-8B-Instruct", {}, 14.99, 38),
    (checkpoints.phi4_gptq_int4, "mirror/Phi-4-GPTQ-4bit", {}, 8.5107, 55),
    (checkpoints.llama_33_70b_fp8_dynamic, "mirror/Llama-3.3-70B-FP8-dynamic", {}, 67.72, 31),
    (checkpoints.llama_33_70b_fp8_dynamic, "mirror/Llama-3.3-70B-FP8-dynamic", {"tensor_parallel_size": 2}, 33.88, 30),
    (checkpoints.gpt_oss_20b, "mirror/gpt-oss-20b", {}, 13.47, 28),
    (checkpoints.mistral_small_32_24b, "mirror/Mistral-Small-3.2-24B", {}, 44.76, 37),
]


@pytest.mark.parametrize(
    ("layout", "repo_id", "changes", "logged_gib", "log_id"),
    LOGGED_WEIGHTS,
    ids=[f"log{x[4]}" for x in LOGGED_WEIGHTS],
)
def test_weights_from_safetensors_match_vllm_log(hub, layout, repo_id, changes, logged_gib, log_id) -> None:
    # vLLM startup logs, bench/data/vllm_capacity_logs.json (ids cited). 1% is the target.
    _serve(hub, repo_id, layout(), shards=2)
    resolved = resolve_model(repo_id)
    assert resolved.source == "hub"
    assert resolved.params_by_dtype
    plan = plan_vllm(Scenario(model=repo_id, gpu="h100", **changes), resolved.spec)
    assert plan.per_gpu.weights_bytes / GIB == pytest.approx(logged_gib, rel=0.01), f"log id {log_id}"
    assert not hub.weights_downloads


# (layout, repo id, published total parameters, source). The safetensors counts of unquantized checkpoints.
PUBLISHED_PARAMS = [
    (checkpoints.llama_31_8b_instruct, "mirror/llama-8b", 8.03e9, "Hub model page: 8.03B params"),
    (checkpoints.qwen3_30b_a3b, "mirror/qwen3-30b-a3b", 30.5e9, "Qwen3-30B-A3B card: 30.5B in total"),
    (checkpoints.gemma_3_12b_it, "mirror/gemma-3-12b-it", 12.2e9, "Hub model page: 12.2B params"),
]


@pytest.mark.parametrize(("layout", "repo_id", "published", "source"), PUBLISHED_PARAMS)
def test_params_from_safetensors_match_published(hub, layout, repo_id, published, source) -> None:
    _serve(hub, repo_id, layout())
    resolved = resolve_model(repo_id)
    total = sum(n for _, n in resolved.params_by_dtype)
    assert total == pytest.approx(published, rel=0.01), source


def test_multimodal_text_config_and_vision_tower(hub) -> None:
    _serve(hub, "mirror/gemma-3-12b-it", checkpoints.gemma_3_12b_it())
    spec = resolve_model("mirror/gemma-3-12b-it").spec
    assert (spec.num_layers, spec.num_kv_heads, spec.head_dim) == (48, 8, 256)  # text_config of gemma-3-12b
    assert spec.vision_params > 0
    assert spec.is_hybrid


def test_resolved_once_works_offline(hub, monkeypatch) -> None:
    _serve(hub, "mirror/llama-8b", checkpoints.llama_31_8b_instruct())
    online = resolve_model("mirror/llama-8b")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.set_outage("mirror/llama-8b")
    offline = resolve_model("mirror/llama-8b")
    assert offline.source == "cache"
    assert offline.spec == online.spec
    assert offline.params_by_dtype == online.params_by_dtype


def test_gated_repo_without_token_says_how(hub) -> None:
    _serve(hub, "mirror/gated-llama", checkpoints.tiny_llama(), gated=True, token=TOKEN)
    with pytest.raises(GatedModelError, match=r"gated.*HF_TOKEN"):
        resolve_model("mirror/gated-llama")


def test_gated_repo_with_token_never_leaks_it(hub, monkeypatch, tmp_path) -> None:
    _serve(hub, "mirror/gated-llama", checkpoints.tiny_llama(), gated=True, token=TOKEN)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    resolved = resolve_model("mirror/gated-llama")
    assert resolved.source == "hub"
    assert any(h.get("authorization") == f"Bearer {TOKEN}" for _, _, h in hub.requests)
    assert TOKEN not in repr(resolved)
    cache_root = tmp_path.parent  # the autouse fixture's LLM_PLANNER_CACHE lives beside it
    for path in [*cache_root.rglob("*.json")]:
        assert TOKEN not in path.read_text(errors="ignore"), path


def test_wrong_token_is_reported_as_gated(hub) -> None:
    _serve(hub, "mirror/gated-llama", checkpoints.tiny_llama(), gated=True, token=TOKEN)
    with pytest.raises(GatedModelError):
        resolve_model("mirror/gated-llama", token="hf_wrong")


def test_missing_repo(hub) -> None:
    with pytest.raises(ModelNotFoundError, match="acme/nothing-here was not found"):
        resolve_model("acme/nothing-here")


def test_outage_fails_promptly(hub) -> None:
    _serve(hub, "mirror/down", checkpoints.tiny_llama())
    hub.set_outage("mirror/down")
    hub.requests.clear()
    with pytest.raises(HubUnavailableError, match="could not fetch mirror/down"):
        resolve_model("mirror/down")
    # promptly: one metadata request, no retries with back-off
    assert [(method, path.split("?")[0]) for method, path, _ in hub.requests] == [("GET", "/api/models/mirror/down")]


def test_hanging_hub_times_out(hub) -> None:
    _serve(hub, "mirror/slow", checkpoints.tiny_llama())
    hub.set_hang("mirror/slow", 3)
    with pytest.raises(HubUnavailableError):
        resolve_model("mirror/slow", timeout_s=0.3)


def test_encoder_is_not_a_text_generation_model(hub) -> None:
    config, tensors = checkpoints.bert_base()
    hub.add_model("mirror/bert", files={"config.json": config}, tensors=tensors, pipeline_tag="feature-extraction")
    with pytest.raises(NotTextGenerationError, match="BertModel"):
        resolve_model("mirror/bert")


def test_repo_without_config(hub) -> None:
    hub.add_model("mirror/no-config", files={"README.md": "hello"})
    with pytest.raises(NotTextGenerationError, match=r"no config\.json"):
        resolve_model("mirror/no-config")


def test_repo_without_safetensors_falls_back_to_config(hub) -> None:
    config, _ = checkpoints.tiny_llama()
    hub.add_model("mirror/bin-only", files={"config.json": config, "pytorch_model.bin": b"\0"})
    resolved = resolve_model("mirror/bin-only")
    assert resolved.params_by_dtype == ()
    assert any("no safetensors" in note for note in resolved.notes)


def test_config_the_planner_cannot_interpret(hub) -> None:
    hub.add_model("mirror/weird", files={"config.json": {"architectures": ["WeirdForCausalLM"], "hidden_size": 8}})
    with pytest.raises(UnsupportedModelError, match="mirror/weird"):
        resolve_model("mirror/weird")


def test_hub_config_nested_too_deeply_is_one_line(hub) -> None:
    # a repo's config.json is text from outside too: json.loads raised RecursionError on it
    hub.add_model("odd/deep", files={"config.json": "[" * 5000 + "]" * 5000}, tensors={})
    with pytest.raises(UnsupportedModelError) as info:
        resolve_model("odd/deep")
    assert str(info.value) == "odd/deep config.json: nested too deeply to read; expected a JSON object"


def test_catalog_comes_first(hub) -> None:
    resolved = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    assert resolved.source == "catalog"
    assert not hub.requests


def test_cli_plans_any_hub_model(hub, capsys) -> None:
    _serve(hub, "mirror/llama-8b", checkpoints.llama_31_8b_instruct(), shards=4)
    assert main(["plan", "--model", "mirror/llama-8b", "--gpu", "h100", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["weights_memory_gib"] == pytest.approx(14.99, rel=0.01)  # vLLM log id 38
    assert main(["model", "mirror/llama-8b", "--json"]) == 0
    model = json.loads(capsys.readouterr().out)
    assert model["source"] == "cache"  # the plan above cached it
    assert model["params_by_dtype"] == {"BF16": 8_030_261_248}


def test_cli_model_errors_are_one_line(hub, capsys) -> None:
    assert main(["model", "acme/nothing-here"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "acme/nothing-here" in err
