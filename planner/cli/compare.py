"""``python -m planner compare``: stream one prompt to several endpoints and compare TTFT, TPOT, ITL and E2E."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from planner.cli.command import Command
from planner.cli.messages import error, file_path, not_valid, verdict
from planner.errors import InvalidParameterError, PlannerError

if TYPE_CHECKING:
    from planner.compare.run import CompareResult

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(c: argparse.ArgumentParser) -> None:
    """The ``compare`` subcommand's flags, added to ``c``."""
    c.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME=KIND:URL",
        help="e.g. a=vllm:http://127.0.0.1:8000 (kinds: vllm, tgi, openai, sglang, llamacpp); repeatable",
    )
    c.add_argument(
        "--endpoints-file", type=file_path, help="an endpoints.toml with [[endpoint]] tables (adds to --endpoint)"
    )
    c.add_argument("--prompt", required=True)
    c.add_argument("--system", help="system prompt")
    c.add_argument("--max-tokens", type=int, default=128)
    c.add_argument("--temperature", type=float)
    c.add_argument("--seed", type=int)
    c.add_argument("--repeat", type=int, default=1, help="requests per endpoint, one after the other")
    c.add_argument("--timeout", type=float, default=60.0, help="connect/read timeout per request, seconds")
    c.add_argument("--json", action="store_true", help="print one JSON object")


def _fmt_ms(value: object) -> str:
    return "n/a" if value is None or value != value else f"{value:,.1f}"  # NaN != NaN


def _fmt_tokens(value: object) -> str:
    return "n/a" if value is None or value != value else f"{value:g}"


def run(args: argparse.Namespace) -> int:
    import asyncio

    from planner.compare.run import notes, run_compare, to_json
    from planner.errors import EndpointConfigError
    from planner.serving.endpoints import load_endpoints, parse_endpoint_flag
    from planner.serving.requests import ChatRequest

    prog = "python -m planner compare"
    try:
        endpoints = [parse_endpoint_flag(text) for text in args.endpoint]
        if args.endpoints_file:
            try:
                endpoints += list(load_endpoints(args.endpoints_file))
            except EndpointConfigError as exc:  # each line names the flag, whatever the path looks like (" ")
                raise EndpointConfigError(tuple(f"--endpoints-file {p}" for p in exc.problems)) from exc
        if not endpoints:
            raise PlannerError("give at least one --endpoint NAME=KIND:URL (or --endpoints-file)")
        request = ChatRequest(
            prompt=args.prompt,
            system=args.system,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            seed=args.seed,
        )
        result = asyncio.run(run_compare(endpoints, request, repeat=args.repeat, timeout_s=args.timeout))
    except InvalidParameterError as exc:
        flag = {"max_tokens": "--max-tokens", "timeout_s": "--timeout", "endpoints": "--endpoint"}.get(
            exc.name, "--" + exc.name.replace("_", "-")
        )
        return not_valid(prog, flag, exc.value, exc.accepted)
    except PlannerError as exc:
        return error(prog, exc)
    if args.json:
        print(to_json(result))
    else:
        print(_table(result))
    sys.stdout.flush()
    for line in notes(result):  # on stderr, as bench's: the figures on stdout stay parseable
        print(f"{prog}: note: {line}", file=sys.stderr)
    return verdict(prog, result.records)


def _table(result: CompareResult) -> str:
    """One row per endpoint (medians), then each failed request's error, then the formulas."""
    from planner.compare.run import summary_frame

    table = summary_frame(result)
    header = f"{'endpoint':16} {'ok':>5} {'TTFT ms':>9} {'TPOT ms':>9} {'ITL ms':>9} {'E2E ms':>9} {'tokens':>7}"
    lines = [header]
    for row in table.to_dict("records"):
        ok = f"{row['requests'] - row['failed']}/{row['requests']}"
        lines.append(
            f"{row['endpoint']:16} {ok:>5} {_fmt_ms(row['ttft_ms']):>9} {_fmt_ms(row['tpot_ms']):>9} "
            f"{_fmt_ms(row['itl_ms']):>9} {_fmt_ms(row['e2e_ms']):>9} {_fmt_tokens(row['output_tokens']):>7}"
        )
    for record in result.records:
        if not record.ok:
            lines.append(f"  {record.endpoint}: {record.error_kind}: {record.error}")
    lines.append("TTFT = first token - sent; TPOT = (E2E - TTFT)/(tokens - 1); ITL per token; medians over repeats")
    return "\n".join(lines)


COMMAND = Command(
    "compare",
    help="stream one prompt to several endpoints and compare TTFT/TPOT/ITL/E2E",
    add_arguments=add_arguments,
    run=run,
)
