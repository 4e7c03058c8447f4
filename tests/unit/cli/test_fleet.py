"""``python -m planner fleet``: the JSON shape the issue asks for, the text table, bad flags in one line."""

from __future__ import annotations

import json

import pytest

from planner.cli.main import main

BASE = ["fleet", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h200", "--max-model-len", "8192"]
WORKLOAD = ["--dataset-name", "multi_turn", "--num-prompts", "40", "--input-len", "128", "--output-len", "16"]


def test_json_has_a_row_per_policy(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE, *WORKLOAD, "--max-concurrency", "8", "--replicas", "2", "--router", "round_robin"]
    assert main([*argv, "--router", "prefix_aware", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["router"] for p in data["policies"]] == ["round_robin", "prefix_aware"]
    for policy in data["policies"]:
        for key in ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "output_throughput", "prefix_cache_hit_rate"):
            assert isinstance(policy[key], float), key
        assert len(policy["replica_requests"]) == 2 and sum(policy["replica_requests"]) == 40
    # 10 conversations of 4 turns: prefix-aware routing keeps each on the replica holding it
    rr, pa = data["policies"]
    assert pa["prefix_cache_hit_rate"] > rr["prefix_cache_hit_rate"]


def test_text_table_lists_every_policy_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *WORKLOAD, "--replicas", "3"]) == 0
    out = capsys.readouterr().out
    for router in ("round_robin", "least_loaded", "kv_aware", "prefix_aware"):
        assert f"\n{router} " in out


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--replicas", "0"], "--replicas"),
        (["--router-refresh-s", "-1"], "--router-refresh-s"),
        (["--num-turns", "0"], "--num-turns"),
        (["--think-time", "-1"], "--think-time"),
        (["--dataset-name", "timed_trace"], "--dataset-path"),
    ],
)
def test_bad_flags_are_one_line(extra: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *WORKLOAD, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0]
