"""planner.demo.server: the flags and their two sets of defaults, what they set, and the start (its loop replaced:
no socket)."""

from __future__ import annotations

import argparse

from planner.demo import server
from planner.demo.server import DEMO_DEFAULTS, TEST_DEFAULTS, add_arguments, configure
from planner.demo.state import STATE


def _parse(defaults: dict, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, defaults)
    return parser.parse_args(list(argv))


def test_the_tests_defaults_and_the_demos() -> None:
    tests = _parse(TEST_DEFAULTS)
    assert (tests.port, tests.tokenizer, tests.itl_per_running_ms, tests.max_num_seqs) == (0, "fixed", 0.0, None)
    assert (tests.enable_prefix_caching, tests.eos_tokens, tests.ttft_ms, tests.itl_ms) == (False, 12, 150.0, 20.0)
    demo = _parse(DEMO_DEFAULTS)
    assert (demo.port, demo.tokenizer, demo.itl_per_running_ms, demo.prefill_ms_per_token) == (8000, "bytes", 0.1, 0.05)
    assert (demo.enable_prefix_caching, demo.eos_tokens, demo.host) == (True, None, "127.0.0.1")


def test_configure_sets_the_state(clock) -> None:
    args = _parse(
        TEST_DEFAULTS,
        *("--max-num-seqs", "8", "--tokenizer", "bytes", "--ttft-ms", "50", "--itl-ms", "5"),
        *("--num-speculative-tokens", "3", "--spec-accepted-per-draft", "5", "--legacy-metrics"),
    )
    configure(args)
    assert STATE.slots is not None and STATE.slots._value == 8
    assert (STATE.tokenizer, STATE.ttft_ms, STATE.itl_ms, STATE.legacy_metrics) == ("bytes", 50.0, 5.0, True)
    # more accepted tokens per draft than drafted is cut to the draft length
    assert (STATE.num_speculative_tokens, STATE.spec_accepted_per_draft) == (3, 3)
    assert STATE.eos_tokens == 12


def test_serve_names_the_model_and_pool_it_plays(clock, monkeypatch) -> None:
    seen = {}

    async def no_socket(args, announce):
        seen.update(args=args, line=announce(8123))

    monkeypatch.setattr(server, "_serve", no_socket)
    args = _parse(TEST_DEFAULTS)
    server.serve(args, lambda port: f"PORT {port}", model_id="meta-llama/Llama-3.1-8B-Instruct", max_model_len=8192,
                 cache_labels={"num_gpu_blocks": "56000"})  # fmt: skip
    assert seen == {"args": args, "line": "PORT 8123"}
    assert (STATE.model_id, STATE.max_model_len, STATE.cache_labels) == (
        "meta-llama/Llama-3.1-8B-Instruct",
        8192,
        {"num_gpu_blocks": "56000"},
    )
    server.serve(args, str)  # the fixed server again: its own model and length
    assert (STATE.model_id, STATE.max_model_len, STATE.cache_labels, STATE.engine) == ("timed-model", 4096, {}, None)
