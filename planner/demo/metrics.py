"""The demo server's ``GET /metrics`` body: vLLM V1's Prometheus names and label sets (``vllm/v1/metrics/loggers.py``),
rendered with prometheus_client as vLLM does, every series labelled ``engine="0"`` and ``model_name``.

Series: ``vllm:num_requests_running`` / ``_waiting``, ``vllm:kv_cache_usage_perc`` (``vllm:gpu_cache_usage_perc``
with ``--legacy-metrics``) = min(1, 64 · running / 2048), the counters ``vllm:num_preemptions``,
``vllm:prompt_tokens``, ``vllm:generation_tokens``, the prefix-cache counters when caching is on, vLLM 0.24.0's
speculative-decoding counters when ``--num-speculative-tokens`` is set, and ``vllm:cache_config_info``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from planner.demo.state import KV_BLOCK_SIZE, KV_BLOCKS_PER_REQUEST, KV_NUM_GPU_BLOCKS, MAX_MODEL_LEN, STATE

__all__ = ["CACHE_CONFIG_LABELS", "LEGACY_CACHE_CONFIG_LABELS", "metrics_text"]

# CacheConfig.metrics_info() labels (vllm/config/cache.py: every field as str), as a recent vLLM V1 exposes them
CACHE_CONFIG_LABELS = {
    "_block_size_resolved": "True",
    "block_size": str(KV_BLOCK_SIZE),
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "enable_prefix_caching": "True",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_cache_max_concurrency": str(KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE / MAX_MODEL_LEN),
    "kv_cache_memory_bytes": "None",
    "kv_cache_size_tokens": str(KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE),
    "kv_offloading_backend": "native",
    "kv_offloading_size": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": str(KV_NUM_GPU_BLOCKS),
    "num_gpu_blocks_override": "None",
    "prefix_caching_hash_algo": "sha256",
    "prefix_match_unit": "None",
    "skip_page_size_padded": "None",
    "sliding_window": "None",
    "user_specified_block_size": "False",
    "user_specified_mamba_block_size": "False",
}
# the label set of releases before 0.9 (vLLM docs/design/metrics.md "Cache Config Info" and a V0 capture)
LEGACY_CACHE_CONFIG_LABELS = {
    "block_size": str(KV_BLOCK_SIZE),
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "cpu_offload_gb": "0",
    "enable_prefix_caching": "False",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "num_cpu_blocks": "2048",
    "num_gpu_blocks": str(KV_NUM_GPU_BLOCKS),
    "num_gpu_blocks_override": "None",
    "sliding_window": "None",
    "swap_space_bytes": "4294967296",
}


def metrics_text() -> bytes:
    """The vLLM V1 ``/metrics`` body for the current state (a fresh registry each time: values are set, not kept)."""
    registry = CollectorRegistry()
    labels = {"model_name": STATE.model_id, "engine": "0"}
    names = ["model_name", "engine"]

    def gauge(name: str, doc: str, value: float) -> None:
        Gauge(name, doc, labelnames=names, registry=registry).labels(**labels).set(value)

    def counter(name: str, doc: str, value: float) -> None:
        Counter(name, doc, labelnames=names, registry=registry).labels(**labels).inc(value)

    engine = STATE.engine
    running = engine.running if engine else STATE.running
    waiting = engine.waiting if engine else STATE.waiting
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running)
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting)
    usage = engine.kv_usage if engine else min(1.0, KV_BLOCKS_PER_REQUEST * STATE.running / KV_NUM_GPU_BLOCKS)
    if STATE.legacy_metrics:
        gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", usage)
    else:
        gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage)
    counter(
        "vllm:num_preemptions", "Cumulative number of preemption from the engine.", engine.preemptions if engine else 0
    )
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", STATE.prompt_tokens)
    counter("vllm:generation_tokens", "Number of generation tokens processed.", STATE.generation_tokens)
    if STATE.prefix_caching:
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            STATE.prefix_queries,
        )
        counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", STATE.prefix_hits)
    if STATE.num_speculative_tokens:
        _spec_counters(registry, labels)
    info = dict(LEGACY_CACHE_CONFIG_LABELS if STATE.legacy_metrics else CACHE_CONFIG_LABELS, engine="0")
    info.update(STATE.cache_labels)
    config = Gauge(
        "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", labelnames=list(info), registry=registry
    )
    config.labels(**info).set(1)
    return generate_latest(registry)


def _spec_counters(registry: CollectorRegistry, labels: dict[str, str]) -> None:
    """vLLM 0.24.0's speculative-decoding counters (``vllm/v1/metrics/loggers.py``): drafts, draft tokens, accepted
    tokens and accepted tokens per position (label ``position``), as :func:`planner.demo.script.count_drafts` counted
    them."""
    k, a, drafts = STATE.num_speculative_tokens, STATE.spec_accepted_per_draft, STATE.spec_drafts
    names = list(labels)
    for name, doc, value in (
        ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", drafts),
        ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", drafts * k),
        ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", STATE.spec_accepted),
    ):
        Counter(name, doc, labelnames=names, registry=registry).labels(**labels).inc(value)
    per_pos = Counter(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "Accepted tokens per draft position.",
        labelnames=[*names, "position"],
        registry=registry,
    )
    for pos in range(k):
        per_pos.labels(**labels, position=str(pos)).inc(drafts if pos < a else 0)
