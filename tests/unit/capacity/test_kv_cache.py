"""KV-cache geometry against vLLM's own figures (bench/data/vllm_capacity_logs.json ids)."""

from __future__ import annotations

import pytest

from planner.capacity.kv_cache import build_pool, kv_dtype_bytes, kv_groups, kv_heads_per_rank, page_bytes_per_layer
from planner.catalog.models import get_model
from planner.errors import InvalidParameterError
from planner.units import GIB


def _pool(model: str, available_gib: float, *, tp: int = 1, block: int = 16, mnbt: int = 8192, kv_bytes: float = 2):
    spec = get_model(model).spec
    page = page_bytes_per_layer(spec, tp=tp, block_size=block, dtype_bytes=kv_bytes)
    return build_pool(
        kv_groups(spec, (0, spec.num_layers)),
        available_bytes=available_gib * GIB,
        page_bytes=page,
        block_size=block,
        max_num_batched_tokens=mnbt,
    )


@pytest.mark.parametrize(
    ("model", "bytes_per_token", "source"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072, "32 layers x 8 KV heads x 128 x 2 x 2 B; log id 38"),
        ("Qwen/Qwen2.5-7B-Instruct", 57_344, "56 KiB per token, log id 43"),
        ("Qwen/Qwen3-14B", 163_840, "160 KiB per token, log id 12"),
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", 163_840, "log id 37: 163,840 bytes/token exact"),
        ("microsoft/phi-4", 204_800, "200 KiB per token, log id 55"),
        ("deepseek-ai/DeepSeek-V2-Lite-Chat", 31_104, "MLA 27 x (512 + 64) x 2 B, log id 19"),
    ],
)
def test_bytes_per_token(model: str, bytes_per_token: int, source: str) -> None:
    pool = _pool(model, 10)
    assert pool.bytes_per_token == bytes_per_token, source


def test_hybrid_gemma3_blocks_tokens_and_concurrency() -> None:
    # Log id 53 (vLLM v0.19.0, gemma-3-12b-it, H100): 47.72 GiB available -> 130,304 tokens, 15.88x at 8,192.
    pool = _pool("google/gemma-3-12b-it", 47.72)
    assert pool.group_size == 8 and pool.num_kv_groups == 6
    assert pool.tokens == pytest.approx(130_304, rel=0.001)
    assert pool.concurrency_at(8192) == pytest.approx(15.88, abs=0.01)


def test_hybrid_gemma2_blocks_tokens_and_concurrency() -> None:
    # Log id 54 (vLLM v0.19.0, gemma-2-9b-it, H100): 54.12 GiB -> 168,880 tokens, 20.60x at 8,192.
    pool = _pool("google/gemma-2-9b-it", 54.12)
    assert pool.num_kv_groups == 2
    assert pool.tokens == pytest.approx(168_880, rel=0.001)
    assert pool.concurrency_at(8192) == pytest.approx(20.60, abs=0.01)


def test_uniform_llama_tokens_and_concurrency() -> None:
    # Log id 38: 58.11 GiB -> 476,000 tokens (rounded in the report), 58.11x at 8,192.
    pool = _pool("meta-llama/Llama-3.1-8B-Instruct", 58.11)
    assert pool.tokens == pytest.approx(476_000, rel=0.001)
    assert pool.concurrency_at(8192) == pytest.approx(58.11, abs=0.01)


def test_fp8_kv_doubles_tokens() -> None:
    # Log ids 38 vs 46: the same 58.11 GiB pool holds 476,000 then 952,032 tokens with fp8 KV.
    bf16 = _pool("meta-llama/Llama-3.1-8B-Instruct", 58.11, kv_bytes=2)
    fp8 = _pool("meta-llama/Llama-3.1-8B-Instruct", 58.11, kv_bytes=1)
    assert fp8.tokens == pytest.approx(952_032, rel=0.001)
    assert fp8.tokens == pytest.approx(2 * bf16.tokens, abs=16)


def test_mla_needs_095_gib_for_32k() -> None:
    # Log id 19: "(0.95 GiB KV cache is needed ...)" for DeepSeek-V2-Lite at max_model_len 32768.
    pool = _pool("deepseek-ai/DeepSeek-V2-Lite-Chat", 10)
    need = pool.blocks_per_request(32768) * pool.page_bytes * pool.group_size
    assert need / GIB == pytest.approx(0.95, abs=0.005)


@pytest.mark.parametrize(("kv_heads", "tp", "per_rank"), [(8, 1, 8), (8, 2, 4), (8, 8, 1), (4, 8, 1), (1, 4, 1)])
def test_kv_heads_replicated_beyond_tp(kv_heads: int, tp: int, per_rank: int) -> None:
    # vLLM ModelConfig.get_num_kv_heads: max(1, total_kv_heads // tp).
    assert kv_heads_per_rank(kv_heads, tp) == per_rank


def test_mla_not_split_by_tp() -> None:
    spec = get_model("deepseek-ai/DeepSeek-V2-Lite-Chat").spec
    assert page_bytes_per_layer(spec, tp=1, block_size=16, dtype_bytes=2) == page_bytes_per_layer(
        spec, tp=8, block_size=16, dtype_bytes=2
    )


@pytest.mark.parametrize(
    ("kv", "model_dtype", "expected"),
    [
        ("auto", "bfloat16", 2),
        ("auto", "float32", 4),
        ("fp8", "bfloat16", 1),
        ("fp8_e5m2", "float16", 1),
        ("fp8_e4m3", "bfloat16", 1),
    ],
)
def test_kv_dtype_bytes(kv: str, model_dtype: str, expected: float) -> None:
    assert kv_dtype_bytes(kv, model_dtype) == expected


def test_bad_kv_dtype_names_parameter() -> None:
    with pytest.raises(InvalidParameterError, match="kv_cache_dtype='int3'"):
        kv_dtype_bytes("int3", "bfloat16")


def test_sliding_window_caps_per_request_blocks() -> None:
    # Phi-3-mini-4k: every layer slides over 2047 tokens, so a 4096-token request needs
    # cdiv(min(2047 - 1 + 2048, 4096), 16) + 1 = 257 blocks per layer; at 1024 tokens cdiv(1024, 16) + 1 = 65.
    pool = _pool("microsoft/Phi-3-mini-4k-instruct", 10, mnbt=2048)
    assert pool.blocks_per_request(4096) == 257
    assert pool.blocks_per_request(1024) == 65
