"""The prefix-cache hit rate of a run from the server's counters, on REAL vLLM 0.24.0 ``/metrics`` bytes, SGLang's
names, the reset route, and the demo server's cache.

Golden inputs: bench/data/h200_sweeps/llama-3.1-8b-spec/*.metrics.txt.gz, the ``/metrics`` of a vLLM 0.24.0 server on an
H200 (prefix caching on, ``VLLM_SERVER_DEV_MODE=1``) after each point of ``bench/h200/sweep_campaign.py``; the
differenced counters are the folder README's: 73,728 queries / 61,440 hits, then 73,728 / 72,704, then after
``POST /reset_prefix_cache`` 73,728 / 61,440.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from planner.serving.server_metrics import (
    ServerSample,
    parse_metrics,
    prefix_cache_stats,
)

H200 = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps" / "llama-3.1-8b-spec"


def _sample(name: str) -> ServerSample:
    return parse_metrics(gzip.decompress((H200 / f"{name}.metrics.txt.gz").read_bytes()).decode(), "vllm", 0.0)


@pytest.mark.parametrize(
    ("before", "after", "queries", "hits"),
    [
        ("in512_c256", "prefix_rep_1", 73_728, 61_440),  # first pass: each prefix's first prompt misses
        ("prefix_rep_1", "prefix_rep_2", 73_728, 72_704),  # the same prompts again: all but each last block
        ("reset_prefix_cache", "prefix_rep_3", 73_728, 61_440),  # after POST /reset_prefix_cache: as the first pass
    ],
)
def test_hit_rate_from_real_vllm_counters(before, after, queries, hits):
    stats = prefix_cache_stats(_sample(before), _sample(after), "vllm")
    assert (stats.queries_tokens, stats.hits_tokens) == (queries, hits)
    assert stats.hit_rate == pytest.approx(hits / queries)
    assert stats.source == "vllm:prefix_cache_queries/hits"


def test_real_counters_at_start_and_the_reset_does_not_move_them():
    assert (_sample("initial").prefix_cache_queries_total, _sample("initial").prefix_cache_hits_total) == (0.0, 0.0)
    # the reset empties the cache, not the counters (the metrics after it equal those before it)
    assert _sample("reset_prefix_cache") == _sample("prefix_rep_2")


def test_missing_or_restarted_counters_give_no_rate():
    a = ServerSample(0, prefix_cache_queries_total=100.0, prefix_cache_hits_total=50.0)
    assert prefix_cache_stats(a, ServerSample(1), "vllm") is None  # counters absent after
    assert prefix_cache_stats(None, a, "vllm") is None
    restarted = ServerSample(1, prefix_cache_queries_total=10.0, prefix_cache_hits_total=0.0)
    assert prefix_cache_stats(a, restarted, "vllm") is None
    nothing = prefix_cache_stats(a, a, "vllm")
    assert nothing.queries_tokens == 0 and nothing.hit_rate is None


# SGLang: sglang:prompt_tokens_total and sglang:cached_tokens_total (one series per cache_source, summed), as
# python/sglang/srt/metrics/collector.py exposes them; the figures are made up for the test.
SGLANG = """\
sglang:prompt_tokens_total{model_name="m"} 1000.0
sglang:cached_tokens_total{cache_source="device",model_name="m"} 300.0
sglang:cached_tokens_total{cache_source="host",model_name="m"} 100.0
sglang:cache_hit_rate{model_name="m"} 0.9
"""


def test_sglang_counters():
    before = parse_metrics(SGLANG, "sglang", 0)
    after = parse_metrics(SGLANG.replace("1000.0", "3000.0").replace("300.0", "1300.0"), "sglang", 1)
    assert (before.prefix_cache_queries_total, before.prefix_cache_hits_total) == (1000.0, 400.0)
    stats = prefix_cache_stats(before, after, "sglang")
    assert (stats.queries_tokens, stats.hits_tokens, stats.hit_rate) == (2000.0, 1000.0, 0.5)  # not the 0.9 gauge
