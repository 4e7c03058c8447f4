"""The Hub stand-in behaves like huggingface.co for the real huggingface_hub client (2.4.0), offline.

Every test talks to 127.0.0.1 only, through the `hub` fixture (tests/conftest.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.hub import checkpoints
from tests.hub.server import DTYPE_BYTES, HubStandIn

GIB = 2**30
TOKEN = "hf_standin_right_token"
GATED = "meta-llama/Llama-3.1-8B-Instruct"


def _params_by_dtype(tensors: dict[str, tuple[str, list[int]]]) -> dict[str, int]:
    """Element counts per dtype, from the shapes directly."""
    counts: dict[str, int] = {}
    for dtype, shape in tensors.values():
        n = 1
        for dim in shape:
            n *= dim
        counts[dtype] = counts.get(dtype, 0) + n
    return counts


def _bytes(tensors: dict[str, tuple[str, list[int]]]) -> int:
    return sum(count * DTYPE_BYTES[dtype] for dtype, count in _params_by_dtype(tensors).items())


def _tiny(hub: HubStandIn, repo_id: str = "org/tiny", **kwargs) -> tuple[dict, dict]:
    config, tensors = checkpoints.tiny_llama()
    hub.add_model(repo_id, files={"config.json": config}, tensors=tensors, **kwargs)
    return config, tensors


# ------------------------------------------------------------------------------------------------- config download
def test_config_download_then_served_from_cache(hub: HubStandIn, tmp_path: Path) -> None:
    config, _ = _tiny(hub)
    path = hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path)
    assert json.loads(Path(path).read_text()) == config
    assert [(m, p) for m, p, _ in hub.requests] == [
        ("HEAD", "/org/tiny/resolve/main/config.json"),
        ("GET", "/org/tiny/resolve/main/config.json"),
    ]

    hub.set_outage("org/tiny")  # the cache alone must answer
    again = hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path, local_files_only=True)
    assert again == path
    assert len(hub.requests) == 2


def test_file_exists(hub: HubStandIn) -> None:
    _tiny(hub)
    api = HfApi(endpoint=hub.endpoint)
    assert api.file_exists("org/tiny", "config.json")
    assert api.file_exists("org/tiny", "model.safetensors")
    assert not api.file_exists("org/tiny", "tokenizer.json")
    assert not api.file_exists("org/missing", "config.json")


# ------------------------------------------------------------------------------------------ safetensors metadata
LAYOUTS = {
    "tiny_llama": (checkpoints.tiny_llama, 1),
    "tiny_llama_3_shards": (checkpoints.tiny_llama, 3),
    "llama_31_8b_instruct": (checkpoints.llama_31_8b_instruct, 4),
    "phi4_gptq_int4": (checkpoints.phi4_gptq_int4, 2),
    "llama_33_70b_fp8_dynamic": (checkpoints.llama_33_70b_fp8_dynamic, 15),
    "gpt_oss_20b": (checkpoints.gpt_oss_20b, 3),
    "qwen3_30b_a3b": (checkpoints.qwen3_30b_a3b, 16),
    "mistral_small_32_24b": (checkpoints.mistral_small_32_24b, 10),
    "gemma_3_12b_it": (checkpoints.gemma_3_12b_it, 5),
    "bert_base": (checkpoints.bert_base, 1),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_safetensors_metadata_round_trips_without_downloading_weights(hub: HubStandIn, name: str) -> None:
    build, shards = LAYOUTS[name]
    config, tensors = build()
    repo_id = f"test/{name}"
    hub.add_model(repo_id, files={"config.json": config}, tensors=tensors, shards=shards)

    meta = HfApi(endpoint=hub.endpoint).get_safetensors_metadata(repo_id)

    assert meta.sharded is (shards > 1)
    assert meta.parameter_count == _params_by_dtype(tensors)
    served = {n: (t.dtype, t.shape) for f in meta.files_metadata.values() for n, t in f.tensors.items()}
    assert served == {n: (d, list(s)) for n, (d, s) in tensors.items()}
    assert len(meta.files_metadata) == shards
    if shards > 1:
        assert meta.metadata == {"total_size": _bytes(tensors)}
        assert set(meta.weight_map) == set(tensors)
    assert hub.weights_downloads == []
    ranges = [h.get("range") for m, p, h in hub.requests if m == "GET" and ".safetensors" in p and "index" not in p]
    assert ranges and all(r is not None for r in ranges)


def test_large_header_needs_a_second_range_request(hub: HubStandIn) -> None:
    """A header longer than the 100,001-byte probe is fetched with "bytes=8-{size+7}" (hf_api.py)."""
    _, tensors = checkpoints.qwen3_30b_a3b()
    hub.add_model("Qwen/Qwen3-30B-A3B", tensors=tensors, shards=2)
    HfApi(endpoint=hub.endpoint).get_safetensors_metadata("Qwen/Qwen3-30B-A3B")
    ranges = [h["range"] for _m, p, h in hub.requests if p.startswith("/cdn/")]
    assert sorted(ranges)[0] == "bytes=0-100000"
    assert any(r.startswith("bytes=8-") for r in ranges)
    assert hub.weights_downloads == []


def test_full_safetensors_download_is_refused_and_recorded(hub: HubStandIn, tmp_path: Path) -> None:
    _tiny(hub)
    with pytest.raises(HfHubHTTPError) as info:
        hf_hub_download("org/tiny", "model.safetensors", endpoint=hub.endpoint, cache_dir=tmp_path)
    assert info.value.response.status_code == 403
    assert len(hub.weights_downloads) == 1
    method, path, headers = hub.weights_downloads[0]
    assert (method, "range" in headers) == ("GET", False)
    assert path.startswith("/cdn/org/tiny/")


def test_lfs_head_is_a_302_to_another_origin(hub: HubStandIn) -> None:
    """The client stops at the Hub's 302 for LFS files and reads size/etag from it (get_hf_file_metadata)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    _, tensors = _tiny(hub)
    url = hf_hub_url("org/tiny", "model.safetensors", endpoint=hub.endpoint)
    meta = get_hf_file_metadata(url)
    assert meta.location.startswith(hub.cdn_endpoint + "/cdn/org/tiny/")
    assert meta.size > _bytes(tensors)  # header + tensor data, as X-Linked-Size
    assert len(meta.etag) == 64
    assert [p for _m, p, _h in hub.requests] == ["/org/tiny/resolve/main/model.safetensors"]


# -------------------------------------------------------------------------------------------------------- gated
@pytest.fixture
def gated_hub(hub: HubStandIn) -> HubStandIn:
    config, tensors = checkpoints.llama_31_8b_instruct()
    hub.add_model(GATED, files={"config.json": config}, tensors=tensors, shards=4, gated=True, token=TOKEN)
    return hub


def test_gated_without_token(gated_hub: HubStandIn, tmp_path: Path) -> None:
    with pytest.raises(GatedRepoError) as info:
        hf_hub_download(GATED, "config.json", endpoint=gated_hub.endpoint, cache_dir=tmp_path)
    assert info.value.response.status_code == 401
    assert "You must have access to it and be authenticated" in str(info.value)
    with pytest.raises(GatedRepoError):  # file_exists re-raises GatedRepoError
        HfApi(endpoint=gated_hub.endpoint).get_safetensors_metadata(GATED)


def test_gated_with_right_token(gated_hub: HubStandIn, tmp_path: Path) -> None:
    path = hf_hub_download(GATED, "config.json", endpoint=gated_hub.endpoint, cache_dir=tmp_path, token=TOKEN)
    assert json.loads(Path(path).read_text())["num_hidden_layers"] == 32
    meta = HfApi(endpoint=gated_hub.endpoint, token=TOKEN).get_safetensors_metadata(GATED)
    assert sum(meta.parameter_count.values()) == 8_030_261_248

    hub_requests = [h for _m, p, h in gated_hub.requests if not p.startswith("/cdn/")]
    assert hub_requests and all(h.get("authorization") == f"Bearer {TOKEN}" for h in hub_requests)
    # httpx drops Authorization when it follows the 302 to another origin, as with the real CDN.
    cdn_requests = [h for _m, p, h in gated_hub.requests if p.startswith("/cdn/")]
    assert cdn_requests and not any("authorization" in h for h in cdn_requests)
    assert gated_hub.weights_downloads == []


def test_gated_with_wrong_token(gated_hub: HubStandIn, tmp_path: Path) -> None:
    with pytest.raises(GatedRepoError) as info:
        hf_hub_download(GATED, "config.json", endpoint=gated_hub.endpoint, cache_dir=tmp_path, token="hf_wrong")
    assert info.value.response.status_code == 403
    assert "not in the authorized list" in str(info.value)


def test_gated_model_info_is_public(gated_hub: HubStandIn) -> None:
    """As on huggingface.co, a gated repo's model info needs no token; only its files do."""
    info = HfApi(endpoint=gated_hub.endpoint).model_info(GATED)
    assert info.gated == "manual"
    assert info.safetensors.total == 8_030_261_248


# ------------------------------------------------------------------------------------------- missing / revision
def test_missing_repo(hub: HubStandIn, tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFoundError) as info:
        hf_hub_download("org/missing", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path)
    assert not isinstance(info.value, GatedRepoError)
    assert info.value.response.status_code == 404
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub.endpoint).model_info("org/missing")


def test_missing_file(hub: HubStandIn, tmp_path: Path) -> None:
    _tiny(hub)
    with pytest.raises(RemoteEntryNotFoundError) as info:
        hf_hub_download("org/tiny", "generation_config.json", endpoint=hub.endpoint, cache_dir=tmp_path)
    assert info.value.response.status_code == 404
    # The client caches the miss under .no_exist/<X-Repo-Commit>/.
    assert list(tmp_path.glob("models--org--tiny/.no_exist/*/generation_config.json"))


def test_missing_revision(hub: HubStandIn, tmp_path: Path) -> None:
    _tiny(hub)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download("org/tiny", "config.json", revision="v9", endpoint=hub.endpoint, cache_dir=tmp_path)
    with pytest.raises(RevisionNotFoundError):
        HfApi(endpoint=hub.endpoint).model_info("org/tiny", revision="v9")


# ------------------------------------------------------------------------------------------------ outage / hang
def test_outage_is_a_remote_protocol_error_raised_at_once(hub: HubStandIn, tmp_path: Path) -> None:
    """A dropped connection surfaces as httpx2.RemoteProtocolError, not wrapped and not retried: hf_hub_download
    only catches ConnectError/TimeoutException around its HEAD call (file_download.py)."""
    _tiny(hub)
    hub.set_outage("org/tiny")
    start = time.perf_counter()
    with pytest.raises(httpx2.RemoteProtocolError):
        hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path, etag_timeout=2)
    with pytest.raises(httpx2.RemoteProtocolError):
        HfApi(endpoint=hub.endpoint).model_info("org/tiny", timeout=2)
    assert time.perf_counter() - start < 2


def test_outage_does_not_fall_back_to_the_cache(hub: HubStandIn, tmp_path: Path) -> None:
    """Surprise: with the file cached, a dropped connection still raises (no cache fallback for this error)."""
    _tiny(hub)
    hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path)
    hub.set_outage("org/tiny")
    with pytest.raises(httpx2.RemoteProtocolError):
        hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path)


def test_hang_times_out(hub: HubStandIn) -> None:
    _tiny(hub)
    hub.set_hang("org/tiny", 5.0)
    start = time.perf_counter()
    with pytest.raises(httpx2.ReadTimeout):
        HfApi(endpoint=hub.endpoint).model_info("org/tiny", timeout=0.2)
    assert time.perf_counter() - start < 2


def test_server_down_is_a_connect_error(hub: HubStandIn) -> None:
    """A closed port: HfApi raises httpx2.ConnectError at once. (hf_hub_download instead retries 5 times with
    1+2+4+8+8 s backoff, then raises LocalEntryNotFoundError — too slow to run here.)"""
    endpoint = hub.endpoint
    hub.close()
    with pytest.raises(httpx2.ConnectError):
        HfApi(endpoint=endpoint).model_info("org/tiny", timeout=1)
    assert issubclass(LocalEntryNotFoundError, FileNotFoundError)


# --------------------------------------------------------------------------------------------------- model info
def test_model_info(hub: HubStandIn) -> None:
    _, tensors = _tiny(hub)
    api = HfApi(endpoint=hub.endpoint)
    info = api.model_info("org/tiny")
    assert info.id == "org/tiny"
    assert info.pipeline_tag == "text-generation"
    assert info.safetensors.parameters == _params_by_dtype(tensors)
    assert info.safetensors.total == sum(_params_by_dtype(tensors).values())
    assert {s.rfilename for s in info.siblings} == {"config.json", "model.safetensors"}
    assert info.config == {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    pinned = api.model_info("org/tiny", revision=info.sha)
    assert pinned.sha == info.sha
    assert hub.requests[-1][1] == f"/api/models/org/tiny/revision/{info.sha}"


def test_model_info_of_an_encoder(hub: HubStandIn) -> None:
    config, tensors = checkpoints.bert_base()
    hub.add_model("google-bert/bert-base-uncased", files={"config.json": config}, tensors=tensors,
                  pipeline_tag="feature-extraction")  # fmt: skip
    info = HfApi(endpoint=hub.endpoint).model_info("google-bert/bert-base-uncased")
    assert info.pipeline_tag == "feature-extraction"
    assert info.config["architectures"] == ["BertModel"]


def test_sharded_safetensors_metadata_route(hub: HubStandIn) -> None:
    _, tensors = _tiny(hub, shards=2)
    meta = HfApi(endpoint=hub.endpoint).get_sharded_safetensors_metadata("org/tiny")
    assert meta.parameter_count == _params_by_dtype(tensors)
    assert meta.metadata == {"total_size": _bytes(tensors)}


def test_env_points_at_the_stand_in(hub: HubStandIn) -> None:
    import os

    from huggingface_hub import constants

    assert os.environ["HF_ENDPOINT"] == hub.endpoint
    assert hub.endpoint.startswith("http://127.0.0.1:")
    assert "HF_TOKEN" not in os.environ
    assert constants.HF_HUB_CACHE.startswith(os.environ["HF_HOME"])


# ----------------------------------------------------------------------------------- layouts vs published figures
def _logical_params(tensors: dict[str, tuple[str, list[int]]]) -> int:
    """Parameters of the model, counting an MXFP4 ``*_blocks`` byte as two FP4 weights and its ``*_scales`` as
    quantization metadata, not parameters (the convention of the gpt-oss README's "21B")."""
    total = 0
    for name, (_dtype, shape) in tensors.items():
        n = 1
        for dim in shape:
            n *= dim
        if name.endswith("_scales"):
            continue
        total += 2 * n if name.endswith("_blocks") else n
    return total


@pytest.mark.parametrize(
    ("build", "published", "source"),
    [
        (checkpoints.llama_31_8b_instruct, 8.03e9, "Hub page meta-llama/Llama-3.1-8B-Instruct: 8.03B params"),
        (checkpoints.qwen3_30b_a3b, 30.5e9, "Qwen3-30B-A3B model card: 30.5B in total"),
        (checkpoints.mistral_small_32_24b, 24.0e9, "Mistral Small 3.1/3.2 card: 24 billion parameters"),
        (checkpoints.gemma_3_12b_it, 12.2e9, "Hub page google/gemma-3-12b-it: 12.2B params"),
        (checkpoints.gpt_oss_20b, 21e9, "openai/gpt-oss README @7b58334: 21B parameters, 3.6B active"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_layout_matches_published_parameter_count(build, published: float, source: str) -> None:
    _, tensors = build()
    assert _logical_params(tensors) == pytest.approx(published, rel=0.01), source


@pytest.mark.parametrize(
    ("build", "log_id", "logged_gib"),
    [
        (checkpoints.phi4_gptq_int4, 55, 8.5107),  # "Loading model weights took 8.5107 GB" (vLLM ~0.6.5)
        (checkpoints.llama_33_70b_fp8_dynamic, 31, 67.72),  # llm-d-benchmark empirical-vllm-memory-results.md
    ],
    ids=["phi4_gptq_int4", "llama_33_70b_fp8_dynamic"],
)
def test_quantized_layout_bytes_match_vllm_log(build, log_id: int, logged_gib: float, vllm_logs) -> None:
    assert vllm_logs[log_id]["weights_loaded_gb"] == logged_gib
    _, tensors = build()
    assert _bytes(tensors) / GIB == pytest.approx(logged_gib, rel=0.01)


def test_layouts_quantize_what_the_real_checkpoints_quantize() -> None:
    _, phi = checkpoints.phi4_gptq_int4()
    assert phi["model.layers.0.self_attn.qkv_proj.qweight"] == ("I32", [640, 7680])
    assert phi["model.layers.0.mlp.gate_up_proj.qzeros"] == ("I32", [40, 4480])
    assert phi["model.layers.0.mlp.down_proj.scales"] == ("F16", [140, 5120])
    assert phi["model.layers.0.mlp.down_proj.g_idx"] == ("I32", [17920])
    assert phi["lm_head.weight"] == ("F16", [100352, 5120])

    _, fp8 = checkpoints.llama_33_70b_fp8_dynamic()
    assert fp8["model.layers.79.mlp.down_proj.weight"] == ("F8_E4M3", [8192, 28672])
    assert fp8["model.layers.79.mlp.down_proj.weight_scale"] == ("BF16", [8192, 1])
    assert fp8["lm_head.weight"][0] == fp8["model.embed_tokens.weight"][0] == "BF16"

    _, oss = checkpoints.gpt_oss_20b()
    assert oss["model.layers.0.mlp.experts.gate_up_proj_blocks"] == ("U8", [32, 5760, 90, 16])
    assert oss["model.layers.0.mlp.experts.gate_up_proj_scales"] == ("U8", [32, 5760, 90])
    assert oss["model.layers.0.mlp.experts.down_proj_blocks"] == ("U8", [32, 2880, 90, 16])
    assert oss["model.layers.0.mlp.experts.down_proj_scales"] == ("U8", [32, 2880, 90])
    assert oss["model.layers.0.self_attn.sinks"] == ("BF16", [64])

    _, gemma = checkpoints.gemma_3_12b_it()
    assert "lm_head.weight" not in gemma and "language_model.lm_head.weight" not in gemma  # tied
    _, qwen = checkpoints.qwen3_30b_a3b()
    assert sum(".mlp.experts." in n for n in qwen) == 48 * 128 * 3
