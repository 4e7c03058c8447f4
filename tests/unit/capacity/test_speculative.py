"""Speculative decoding in the planner: vLLM's --speculative-config, the draft's weights and KV (vLLM 0.24.0),
DeepSeek-V3.2's indexer cache and the what-if KV compression. Golden numbers are worked by hand in the comments."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from planner.capacity.launch import launch_command
from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.capacity.speculative import (
    from_legacy_flags,
    from_tgi_speculate,
    parse_speculative_config,
)
from planner.catalog.model_spec import parse_config
from planner.catalog.models import get_model
from planner.errors import InvalidParameterError
from planner.units import GIB

SWEEPS = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps"
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
DRAFT_1B = "meta-llama/Llama-3.2-1B-Instruct"
EAGLE3_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
#: The H200 sweep servers' flags (bench/data/h200_sweeps/README.md).
H200_FLAGS = {
    "gpu": "h200-sxm-141gb",
    "max_model_len": 8192,
    "max_num_seqs": 256,
    "max_num_batched_tokens": 8192,
    "engine_version": "0.24.0",
}


def _draft_note(p) -> str:
    return next(n for n in p.notes if n.startswith("speculative decoding"))


# --- the configuration --------------------------------------------------------------------------------------------


def test_vllm_json_is_read_with_vllm_keys() -> None:
    cfg = parse_speculative_config(
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
    )
    assert (cfg.method, cfg.model, cfg.num_speculative_tokens) == ("eagle3", EAGLE3_HEAD, 3)
    assert parse_speculative_config(cfg.to_text()) == cfg


def test_the_articles_old_flags_translate_to_the_json() -> None:
    # --speculative-model meta-llama/Llama-3.2-1B-Instruct --num-speculative-tokens 5: no method, so draft_model
    cfg = from_legacy_flags(DRAFT_1B, 5)
    assert cfg.to_json() == {"method": "draft_model", "model": DRAFT_1B, "num_speculative_tokens": 5}


@pytest.mark.parametrize(
    ("text", "method"),
    [
        ('{"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 4}', "eagle"),
        ('{"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 4}', "eagle3"),
        ('{"model": "ngram", "num_speculative_tokens": 4}', "ngram"),
        ('{"method": "deepseek_mtp", "num_speculative_tokens": 1}', "mtp"),
    ],
)
def test_a_missing_or_old_method_is_resolved_as_vllm_does(text: str, method: str) -> None:
    assert parse_speculative_config(text).method == method


def test_passed_keys_survive_the_round_trip() -> None:
    text = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'
    cfg = parse_speculative_config(text)
    assert cfg.to_json()["prompt_lookup_max"] == 4
    assert parse_speculative_config(cfg.to_text()) == cfg


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 1000 + "]" * 1000, "nested too deeply to read"),  # 2,000 characters, past Python's recursion limit
        ("[1, 2]", "not a JSON object"),
        ('{"method": "draft_model", "num_speculative_tokens": 5}', "needs a model"),
        ('{"model": "x/y", "num_speculative_tokens": 0}', "from 1 to 16"),
        ('{"model": "x/y", "num_speculative_tokens": 5, "bogus": 1}', "unknown key bogus"),
        ('{"method": "medusa2", "model": "x/y", "num_speculative_tokens": 5}', "is not one the planner sizes"),
    ],
)
def test_bad_configs_raise_one_line(text: str, fragment: str) -> None:
    with pytest.raises(InvalidParameterError) as info:
        parse_speculative_config(text)
    message = str(info.value)
    assert fragment in message and "\n" not in message and "speculative_config" in message


def test_tgi_speculate_is_ngram_of_n_tokens() -> None:
    assert from_tgi_speculate(3).to_json() == {"method": "ngram", "num_speculative_tokens": 3}


# --- the draft's memory (golden, by hand) -------------------------------------------------------------------------


def test_article_draft_on_h100_golden() -> None:
    """Llama-3.1-8B + Llama-3.2-1B draft, 5 tokens, H100 SXM, 0.9, 8,192 (the source article's command).

    Draft weights: Llama-3.2-1B, hidden 2048, 16 layers, 32 q / 8 KV heads of 64, MLP 8192, vocab 128,256 tied:
    embeddings 128,256 × 2,048 = 262,668,288; per layer q 2048² = 4,194,304, k+v 2 × 2048 × 512 = 2,097,152,
    o 4,194,304, MLP 3 × 2048 × 8192 = 50,331,648, norms 4,096 → 60,821,504 × 16 = 973,144,064; final norm 2,048;
    total 1,235,814,400 × 2 B (bf16) = 2,471,628,800 B = 2.302 GiB.
    KV per token (bf16): target 32 layers × 8 heads × 128 × 2 (K, V) × 2 B = 131,072; draft 16 × 8 × 64 × 2 × 2 =
    32,768; vLLM 0.24.0 puts both in the same KV-cache groups, so a token costs 163,840 B.
    """
    base = Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", gpu_memory_utilization=0.9, max_model_len=8192)
    alone = plan(base, advise=False)
    with_draft = plan(base.with_changes(speculative_config=from_legacy_flags(DRAFT_1B, 5)), advise=False)
    draft_weights = with_draft.per_gpu.weights_bytes - alone.per_gpu.weights_bytes
    assert draft_weights == pytest.approx(2_471_628_800, rel=1e-3)
    assert alone.kv_bytes_per_token == 131_072
    assert with_draft.kv_bytes_per_token == 131_072 + 32_768
    assert "2.30 GiB" in _draft_note(with_draft)
    # the draft_model method runs on vLLM's V1 model runner (the V2 runner refuses it in 0.24.0)
    assert with_draft.model_runner == "v1"
    assert with_draft.kv_cache_tokens < alone.kv_cache_tokens


def test_eagle3_head_golden() -> None:
    """EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B on Llama-3.1-8B (hidden 4096, 32 q / 8 KV heads of 128).

    One layer whose qkv reads 2 × 4096: 8192 × (32 + 16) × 128 = 50,331,648; o 4096² = 16,777,216; MLP
    3 × 4096 × 14336 = 176,160,768; fc 3 × 4096 → 4096 = 50,331,648; its own LM head over the 32,000-token draft
    vocabulary 32,000 × 4096 = 131,072,000; norms 3 × 4096 = 12,288 (embeddings are the target's). 424,685,568
    params × 2 B = 849,371,136 B = 0.791 GiB. KV: one layer, 8 × 128 × 2 × 2 = 4,096 B per token.
    """
    base = Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", max_model_len=8192)
    cfg = parse_speculative_config({"method": "eagle3", "model": EAGLE3_HEAD, "num_speculative_tokens": 3})
    alone = plan(base, advise=False)
    with_head = plan(base.with_changes(speculative_config=cfg), advise=False)
    head_weights = with_head.per_gpu.weights_bytes - alone.per_gpu.weights_bytes
    assert head_weights == pytest.approx(849_371_136, rel=2e-3)
    assert with_head.kv_bytes_per_token == 131_072 + 4_096
    assert with_head.model_runner == alone.model_runner  # eagle3 stays on the V2 runner


def test_deepseek_v3_mtp_golden() -> None:
    """DeepSeek-V3 with its one MTP layer (method mtp, 1 token), TP 8 on H200, bf16 KV (auto).

    KV per token on each GPU (MLA is replicated): 61 layers × (512 + 64) × 2 B = 70,272, plus the MTP layer's
    1,152 = 71,424. MTP layer weights per GPU (FP8 block 128 × 128 → 1 + 4/16384 B per weight): split by TP 8:
    q_b 1536 × 128 × 192 = 37,748,736, kv_b 512 × 128 × 256 = 16,777,216, o 16,384 × 7,168 = 117,440,512,
    256 experts × 3 × 7168 × 2048 = 11,274,289,152, shared expert 44,040,192 → 11,490,295,808 / 8 × 1.000244 =
    1,436,637,640 B; replicated q_a 7168 × 1536 + kv_a 7168 × 576 = 15,138,816 × 1.000244 = 15,142,512 B;
    eh_proj 2 × 7168² × 2 B = 205,520,896 B (bf16, unquantized); router, norms ≈ 3.7 MB. ≈ 1.661e9 B = 1.547 GiB.
    """
    base = Scenario(model="deepseek-ai/DeepSeek-V3", gpu="h200-sxm-141gb", tensor_parallel_size=8, max_model_len=32768)
    alone = plan(base, advise=False, with_range=False)
    mtp = plan(
        base.with_changes(
            speculative_config=parse_speculative_config('{"method": "mtp", "num_speculative_tokens": 1}')
        ),
        advise=False,
        with_range=False,
    )
    assert alone.kv_bytes_per_token == 70_272
    assert mtp.kv_bytes_per_token == 71_424
    assert (mtp.per_gpu.weights_bytes - alone.per_gpu.weights_bytes) / GIB == pytest.approx(1.547, abs=0.02)


def test_mtp_needs_mtp_layers() -> None:
    cfg = parse_speculative_config('{"method": "mtp", "num_speculative_tokens": 1}')
    with pytest.raises(InvalidParameterError, match="num_nextn_predict_layers 0"):
        plan(Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", speculative_config=cfg), advise=False)


def test_ngram_adds_nothing() -> None:
    base = Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", max_model_len=8192, engine_version="0.24.0")
    ngram = base.with_changes(speculative_config=from_tgi_speculate(4))
    alone, with_ngram = plan(base, advise=False), plan(ngram, advise=False)
    assert with_ngram.per_gpu.weights_bytes == alone.per_gpu.weights_bytes
    assert with_ngram.kv_bytes_per_token == alone.kv_bytes_per_token


# --- against vLLM 0.24.0 on one H200 (bench/data/h200_sweeps) -----------------------------------------------------


def _logged(folder: str) -> tuple[float, int, float]:
    text = gzip.decompress((SWEEPS / folder / "server.log.gz").read_bytes()).decode(errors="replace")
    weights = float(re.search(r"Model loading took ([\d.]+) GiB", text).group(1))
    tokens = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", text).group(1).replace(",", ""))
    kv = float(re.search(r"Available KV cache memory: ([\d.]+) GiB", text).group(1))
    return weights, tokens, kv


def test_draft_model_against_the_measured_h200_start_up() -> None:
    """Logged: "Model loading took 17.32 GiB", 106.8 GiB KV, 699,952 tokens; 699,952 × 163,840 B = 106.8 GiB, so the
    engine's bytes per token are the target's and the draft's summed. Tolerance: 1% on tokens and KV memory (the
    planner's error on the same server without a draft is +0.23%), 0.1 GiB on weights."""
    weights, tokens, kv = _logged("llama-3.1-8b-spec")
    assert (weights, tokens, kv) == (17.32, 699_952, 106.8)
    cfg = parse_speculative_config({"method": "draft_model", "model": DRAFT_1B, "num_speculative_tokens": 5})
    p = plan(Scenario(model=LLAMA_8B, speculative_config=cfg, **H200_FLAGS), advise=False)
    assert p.kv_bytes_per_token == 163_840
    assert p.per_gpu.weights_bytes / GIB == pytest.approx(weights, abs=0.1)
    assert p.per_gpu.kv_cache_bytes / GIB == pytest.approx(kv, rel=0.01)
    assert p.kv_cache_tokens == pytest.approx(tokens, rel=0.01)


def test_eagle3_against_the_measured_h200_start_up() -> None:
    """Logged: 15.58 GiB weights, 108.32 GiB KV, 860,464 tokens (135,168 B per token: 131,072 + one layer's 4,096).
    The server loaded dummy weights: no ``lm_head`` weight name, so vLLM shared the target's head, and the log's head is
    0.58 GiB where the real checkpoint's own 32,000-token head adds 32,000 × 4,096 × 2 B = 0.244 GiB. Tolerance 1.5%
    on KV: the run holds about 0.8 GiB more outside weights and KV than planned (the V2 runner's speculator buffers
    are not modelled). Weights within 0.1 GiB: the target's and the head's rotary cos/sin caches (131,072 positions ×
    128 × 2 B = 0.031 GiB each) are not weights the planner counts."""
    weights, tokens, kv = _logged("llama-3.1-8b-eagle3")
    assert (weights, tokens, kv) == (15.58, 860_464, 108.32)
    cfg = parse_speculative_config({"method": "eagle3", "model": EAGLE3_HEAD, "num_speculative_tokens": 3})
    p = plan(Scenario(model=LLAMA_8B, speculative_config=cfg, **H200_FLAGS), advise=False)
    assert p.kv_bytes_per_token == 135_168
    own_head_gib = 32_000 * 4_096 * 2 / GIB
    assert p.per_gpu.weights_bytes / GIB - own_head_gib == pytest.approx(weights, abs=0.1)
    assert p.per_gpu.kv_cache_bytes / GIB == pytest.approx(kv, rel=0.015)
    assert p.kv_cache_tokens == pytest.approx(tokens, rel=0.015)


# --- DeepSeek-V3.2 ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kv_cache_dtype", "per_token"), [("fp8", 48_068), ("auto", 78_324)])
def test_deepseek_v32_kv_bytes_with_the_indexer(kv_cache_dtype: str, per_token: int) -> None:
    """Per token per layer (vLLM 0.24.0): the MLA latent, ``fp8_ds_mla`` under fp8 = 512 fp8 + 512/128 × 4 B scales +
    64 rope × 2 B = 656 B (MLAAttentionSpec.real_page_size_bytes), bf16 (576 × 2 = 1,152 B) otherwise; plus the
    indexer key cache, 128 fp8 + 128/128 × 4 B = 132 B in uint8 whatever the KV dtype
    (DeepseekV32IndexerCache). 61 layers: fp8 61 × 788 = 48,068; bf16 61 × 1,284 = 78,324."""
    p = plan(
        Scenario(
            model="deepseek-ai/DeepSeek-V3.2-Exp",
            gpu="h200-sxm-141gb",
            tensor_parallel_size=8,
            kv_cache_dtype=kv_cache_dtype,
            max_model_len=32768,
        ),
        advise=False,
        with_range=False,
    )
    assert p.kv_bytes_per_token == per_token
    assert p.block_size == 64  # FlashMLA-sparse pages by 64 tokens only (get_supported_kernel_block_sizes)
    assert any("lightning indexer" in n for n in p.notes)


def test_a_pasted_v32_config_gets_the_indexer_too() -> None:
    raw = {k: v for k, v in _config("deepseek-ai/DeepSeek-V3.2-Exp").items() if k != "quantization_config"}
    spec = parse_config(raw, "uploaded-config/v32")
    assert (spec.index_head_dim, spec.index_topk) == (128, 2048)
    p = plan(
        Scenario(model="uploaded-config/v32", gpu="h200-sxm-141gb", tensor_parallel_size=8, kv_cache_dtype="fp8"),
        spec=spec,
        advise=False,
        with_range=False,
    )
    assert p.kv_bytes_per_token == 48_068


def _config(model_id: str) -> dict:
    import json
    from importlib import resources

    data = json.loads(resources.files("planner.catalog.data").joinpath("models_serving.json").read_text())
    return next(e["config"] for e in data if e["id"] == model_id)


def test_catalog_v32_entries() -> None:
    for model_id in ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-ai/DeepSeek-V3.2"):
        spec = get_model(model_id).spec
        assert (spec.index_head_dim, spec.num_nextn_predict_layers, spec.kv_lora_rank) == (128, 1, 512)


# --- what-if KV compression and the launch command ----------------------------------------------------------------


def test_kv_compression_is_a_marked_what_if() -> None:
    base = Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", max_model_len=8192)
    p = plan(base.with_changes(kv_compression_ratio=4.0), advise=False)
    assert p.kv_bytes_per_token == 131_072 / 4
    assert any(n.startswith("what-if — not an engine setting") for n in p.notes)
    command = launch_command(p)
    assert command.startswith("# what-if KV compression ÷4 is not an engine setting")
    assert "compression" not in command.splitlines()[-1]


def test_launch_commands_carry_speculative_decoding() -> None:
    cfg = from_legacy_flags(DRAFT_1B, 5)
    base = Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", max_model_len=8192, speculative_config=cfg)
    vllm = launch_command(plan(base, advise=False))
    assert vllm.endswith(
        '--speculative-config \'{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", '
        '"num_speculative_tokens": 5}\''
    )
    tgi = launch_command(plan(base.with_changes(engine="tgi", speculative_config=from_tgi_speculate(3)), advise=False))
    assert "--speculate 3" in tgi


def test_tgi_and_the_article_rule_say_what_they_do_with_it() -> None:
    tgi = plan(
        Scenario(engine="tgi", model=LLAMA_8B, gpu="h100-sxm-80gb", speculative_config=from_tgi_speculate(3)),
        advise=False,
    )
    assert any(n.startswith("--speculate 3: TGI speculates by n-gram") for n in tgi.notes)
    article = plan(
        Scenario(engine="article", model=LLAMA_8B, gpu="h100-sxm-80gb", kv_compression_ratio=2.0), advise=False
    )
    assert any("not part of the article's rule" in n for n in article.notes)
    assert article.kv_bytes_per_token == 131_072  # the rule is the article's own, unchanged


def test_draft_tensor_parallel_size_must_be_1_or_the_targets() -> None:
    cfg = parse_speculative_config({"model": DRAFT_1B, "num_speculative_tokens": 5, "draft_tensor_parallel_size": 2})
    with pytest.raises(InvalidParameterError, match="draft_tensor_parallel_size"):
        plan(
            Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", tensor_parallel_size=4, speculative_config=cfg), advise=False
        )


def test_the_explanation_marks_the_what_if() -> None:
    from planner.capacity.explain import explain

    p = plan(Scenario(model=LLAMA_8B, gpu="h100-sxm-80gb", max_model_len=8192, kv_compression_ratio=4.0), advise=False)
    last = explain(p).lines[-1]
    # 131,072 / 4 = 32,768 planned; vLLM itself would cache 131,072
    assert last.startswith("What-if — not an engine setting") and "131,072 B per token" in last
