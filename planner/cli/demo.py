"""``python -m planner demo-server``: a local streaming server to try Live Compare, Load Test and the CLI on, no GPU."""

from __future__ import annotations

import argparse

from planner.serving.demo_server import DEMO_DEFAULTS, MODEL_ID, add_arguments, serve

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo-server`` subcommand to ``sub``."""
    p = sub.add_parser(
        "demo-server",
        help="start a local OpenAI/vLLM-compatible streaming server with known latency, to try the endpoint pages",
        description="A streaming server on this machine that answers as vLLM does (chat and completions, /v1/models, "
        "/tokenize, /metrics in vLLM's names; TGI's /info and /generate_stream too) with a known first-token delay "
        "and gap between tokens that grows with the requests running at once. Its answers are placeholder text.",
    )
    add_arguments(p, DEMO_DEFAULTS)


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C; exit code 0."""

    def announce(port: int) -> str:
        url = f"http://{args.host}:{port}"
        return (
            f"demo server on {url} (model {MODEL_ID}; first token after {args.ttft_ms:g} ms, then {args.itl_ms:g} ms a "
            f"token); Ctrl-C stops it\n"
            f'  endpoints.toml: [[endpoint]] name = "demo", kind = "vllm", base_url = "{url}"\n'
            f"  or: python -m planner bench --endpoint vllm:{url} --max-concurrency 8 --num-prompts 64"
        )

    serve(args, announce)
    return 0
