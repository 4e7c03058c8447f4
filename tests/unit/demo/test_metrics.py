"""planner.demo.metrics: ``/metrics`` in vLLM V1's names and label sets, values read back off the text."""

from __future__ import annotations

import re

from planner.demo.metrics import metrics_text
from planner.demo.state import STATE

LABELS = '{engine="0",model_name="timed-model"}'


def _samples(text: bytes) -> dict[str, float]:
    return {
        m[0]: float(m[1]) for m in re.findall(r"^(\S+) (\S+)$", text.decode(), flags=re.M) if "_created" not in m[0]
    }


def test_running_waiting_and_kv_usage(clock) -> None:
    STATE.running, STATE.waiting, STATE.prompt_tokens, STATE.generation_tokens = 2, 3, 24, 10
    samples = _samples(metrics_text())
    assert samples[f"vllm:num_requests_running{LABELS}"] == 2
    assert samples[f"vllm:num_requests_waiting{LABELS}"] == 3
    assert samples[f"vllm:kv_cache_usage_perc{LABELS}"] == 2 * 64 / 2048  # 0.0625: 64 blocks a request of 2,048
    assert samples[f"vllm:prompt_tokens_total{LABELS}"] == 24
    assert samples[f"vllm:generation_tokens_total{LABELS}"] == 10
    assert samples[f"vllm:num_preemptions_total{LABELS}"] == 0
    STATE.running = 100  # 100 × 64 = 6,400 blocks asked of 2,048: full
    assert _samples(metrics_text())[f"vllm:kv_cache_usage_perc{LABELS}"] == 1.0


def test_cache_config_info_of_the_fixed_pool(clock) -> None:
    info = re.search(r"^vllm:cache_config_info\{(.*)\} 1\.0$", metrics_text().decode(), flags=re.M)
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info.group(1)))
    # 2,048 blocks × 16 tokens = 32,768 tokens; / max_model_len 4,096 = 8.0 requests
    assert (labels["num_gpu_blocks"], labels["block_size"], labels["kv_cache_size_tokens"]) == ("2048", "16", "32768")
    assert labels["kv_cache_max_concurrency"] == "8.0" and labels["engine"] == "0"
    STATE.cache_labels = {"num_gpu_blocks": "56000"}  # planned mode: the plan's pool
    assert 'num_gpu_blocks="56000"' in metrics_text().decode()


def test_legacy_names(clock) -> None:
    STATE.legacy_metrics, STATE.running = True, 1
    text = metrics_text().decode()
    assert f"vllm:gpu_cache_usage_perc{LABELS} 0.03125" in text and "kv_cache_usage_perc" not in text
    assert 'swap_space_bytes="4294967296"' in text and "kv_cache_size_tokens" not in text


def test_prefix_cache_and_spec_decode_counters_only_when_on(clock) -> None:
    text = metrics_text().decode()
    assert "prefix_cache" not in text and "spec_decode" not in text
    STATE.prefix_caching, STATE.prefix_queries, STATE.prefix_hits = True, 128, 48
    STATE.num_speculative_tokens, STATE.spec_accepted_per_draft, STATE.spec_drafts, STATE.spec_accepted = 3, 2, 4, 8
    samples = _samples(metrics_text())
    assert samples[f"vllm:prefix_cache_queries_total{LABELS}"] == 128
    assert samples[f"vllm:prefix_cache_hits_total{LABELS}"] == 48
    assert samples[f"vllm:spec_decode_num_drafts_total{LABELS}"] == 4
    assert samples[f"vllm:spec_decode_num_draft_tokens_total{LABELS}"] == 12  # 4 drafts × 3 tokens
    assert samples[f"vllm:spec_decode_num_accepted_tokens_total{LABELS}"] == 8
    per_pos = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="timed-model",position="%d"}'
    assert [samples[per_pos % p] for p in range(3)] == [4, 4, 0]  # the first 2 positions of every draft accepted
