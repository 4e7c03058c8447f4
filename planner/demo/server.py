"""The demo server's flags, their two sets of defaults (the tests' and ``python -m planner demo-server``'s) and the
loop that serves until Ctrl-C; ``python -m planner.demo`` runs it with the tests' defaults."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from planner.demo.planned import engine_loop
from planner.demo.routes import handle
from planner.demo.state import MAX_MODEL_LEN, MODEL_ID, STATE, PlannedEngine

__all__ = ["DEMO_DEFAULTS", "TEST_DEFAULTS", "add_arguments", "configure", "main", "serve"]


def configure(args: argparse.Namespace) -> None:
    """Set the server's state from its flags (:func:`add_arguments`)."""
    STATE.legacy_metrics = args.legacy_metrics
    STATE.tokenizer = args.tokenizer
    STATE.slots = asyncio.Semaphore(args.max_num_seqs) if args.max_num_seqs else None
    STATE.ttft_ms, STATE.itl_ms, STATE.itl_per_running_ms = args.ttft_ms, args.itl_ms, args.itl_per_running_ms
    STATE.prefix_caching, STATE.prefill_ms_per_token = args.enable_prefix_caching, args.prefill_ms_per_token
    STATE.num_speculative_tokens = args.num_speculative_tokens
    STATE.spec_accepted_per_draft = min(args.spec_accepted_per_draft, args.num_speculative_tokens)
    STATE.eos_tokens = args.eos_tokens


async def _serve(args: argparse.Namespace, announce: Callable[[int], str]) -> None:
    tasks = []
    if STATE.engine is not None:
        STATE.wake = asyncio.Event()
        tasks.append(asyncio.create_task(engine_loop()))
    configure(args)
    server = await asyncio.start_server(handle, args.host, args.port)
    print(announce(server.sockets[0].getsockname()[1]), flush=True)
    async with server:
        await server.serve_forever()


#: The flags' defaults for the tests' timed server (``python -m planner.demo``): no load effects, and
#: an end of sequence at 12 tokens, so a test sees whether the client sent ``ignore_eos``.
TEST_DEFAULTS = {
    "port": 0,
    "tokenizer": "fixed",
    "itl_per_running_ms": 0.0,
    "max_num_seqs": None,
    "enable_prefix_caching": False,
    "prefill_ms_per_token": 0.0,
    "eos_tokens": 12,
}
#: The defaults of ``python -m planner demo-server``: vLLM's port, a byte-level tokenizer with ``/tokenize``, and a
#: decode step that grows with the batch (0.1 ms per other running request; ``planner/cli/demo.py`` caps it at 64 at
#: once unless ``--max-num-seqs`` says otherwise, and in planned mode leaves it to the engine's default).
DEMO_DEFAULTS = {
    "port": 8000,
    "tokenizer": "bytes",
    "itl_per_running_ms": 0.1,
    "max_num_seqs": None,
    "max_num_seqs_text": "64; with --model, the engine's",
    "enable_prefix_caching": True,
    "prefill_ms_per_token": 0.05,
    "eos_tokens": None,
}


def add_arguments(parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """The server's flags, with ``defaults`` (:data:`TEST_DEFAULTS` or :data:`DEMO_DEFAULTS`)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=defaults["port"], help=f"port (default: {defaults['port']})")
    parser.add_argument("--ttft-ms", type=float, default=150.0, help="first token after the request, ms (default: 150)")
    parser.add_argument("--itl-ms", type=float, default=20.0, help="gap between tokens, ms (default: 20)")
    parser.add_argument(
        "--itl-per-running-ms",
        type=float,
        default=defaults["itl_per_running_ms"],
        help=f"more gap per other running request, ms (default: {defaults['itl_per_running_ms']:g})",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int,
        default=defaults["max_num_seqs"],
        help="requests generating at once; the rest wait (default: "
        + defaults.get("max_num_seqs_text", str(defaults["max_num_seqs"] or "no limit"))
        + ")",
    )
    parser.add_argument(
        "--tokenizer",
        choices=("fixed", "bytes"),
        default=defaults["tokenizer"],
        help="fixed: every prompt 12 tokens; bytes: one token per byte, with /tokenize "
        f"(default: {defaults['tokenizer']})",
    )
    parser.add_argument(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=defaults["enable_prefix_caching"],
        help="keep a prefix cache and export vllm:prefix_cache_queries/hits (default: "
        f"{'on' if defaults['enable_prefix_caching'] else 'off'})",
    )
    parser.add_argument(
        "--prefill-ms-per-token",
        type=float,
        default=defaults["prefill_ms_per_token"],
        help="more time to the first token per prompt token not cached, ms "
        f"(default: {defaults['prefill_ms_per_token']:g})",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int,
        default=0,
        help="export vLLM's spec-decode counters as if drafting this many tokens per step (default: 0, off)",
    )
    parser.add_argument(
        "--spec-accepted-per-draft",
        type=int,
        default=0,
        help="draft tokens accepted per draft, the first ones (with --num-speculative-tokens; default: 0)",
    )
    parser.add_argument(
        "--eos-tokens",
        type=int,
        default=defaults["eos_tokens"],
        help="the placeholder model ends an answer by itself after this many tokens (finish_reason stop) unless "
        "the request sets ignore_eos; otherwise answers run to max_tokens (default: "
        f"{defaults['eos_tokens'] or 'none'})",
    )
    parser.add_argument(
        "--legacy-metrics", action="store_true", help="serve /metrics with vLLM's pre-0.9 names (gpu_cache_usage_perc)"
    )


def serve(
    args: argparse.Namespace,
    announce: Callable[[int], str],
    *,
    engine: PlannedEngine | None = None,
    model_id: str | None = None,
    max_model_len: int | None = None,
    cache_labels: dict[str, str] | None = None,
) -> None:
    """Run the server until Ctrl-C; ``announce(port)`` is printed once it listens.

    Args:
        args: the flags of :func:`add_arguments`.
        announce: the line printed once the server listens, from its port.
        engine: planned mode: chat and completions requests are timed by this engine's steps (the deployment
            :mod:`planner.predict` simulates), not by ``--ttft-ms``/``--itl-ms``; TGI routes keep the fixed timing.
        model_id / max_model_len: what ``/v1/models`` and the responses name (planned mode: the planned model).
        cache_labels: ``vllm:cache_config_info`` labels to report instead of the fixed pool's (planned mode:
            ``num_gpu_blocks``, ``block_size``, ``kv_cache_size_tokens``, ... of the plan).
    """
    STATE.engine = engine
    STATE.model_id = model_id or MODEL_ID
    STATE.max_model_len = max_model_len or MAX_MODEL_LEN
    STATE.cache_labels = dict(cache_labels or {})
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, announce))


def main() -> None:
    """``python -m planner.demo``: the tests' defaults; prints ``PORT <n>`` once listening."""
    parser = argparse.ArgumentParser(
        prog="python -m planner.demo",
        description="The demo server with the tests' defaults (prints PORT <n> once listening).",
    )
    add_arguments(parser, TEST_DEFAULTS)
    serve(parser.parse_args(), lambda port: f"PORT {port}")
