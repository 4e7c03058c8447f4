"""Command line: ``python -m planner plan --engine vllm --model ... --gpu ... [--json]``,
``python -m planner model <repo id> [--json]``, ``python -m planner gpus [--json]``, ``python -m planner models
[--json]``,
``python -m planner compare --endpoint NAME=KIND:URL [--endpoint ...] --prompt TEXT [--json]`` and
``python -m planner bench --endpoint [NAME=]KIND:URL [--concurrency N | --sweep N] [--request-rate R]
[--dataset-path FILE.jsonl] [--save-result FILE] ... [--json]``,
``python -m planner predict --model ... --gpu ... --input-len N --output-len N (--max-concurrency C |
--request-rate R) [--sweep N] [--calibration FILE] [--json]`` and
``python -m planner calibrate RUN.json [RUN.json ...] --out PROFILE.json --model ... --gpu ...`` and
``python -m planner size --model ... --target-rate R --slo ttft_p99_ms=... [--gpus id,id] [--price id=USD] [--json]``,
``python -m planner fleet --model ... --gpu ... --replicas N --router P [--router P ...] [--json]`` and
``python -m planner deploy --model ... --gpu ... --replicas N --target kubernetes --out DIR``.

Flags are spelled as ``vllm serve`` spells them. A bad flag or value exits with code 2 and one line
naming it and what is accepted.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from planner.cli import bench, calibrate, catalog, compare, demo, deploy, fleet, model, predict, size
from planner.cli import plan as plan_command
from planner.cli.messages import error
from planner.errors import PlannerError

__all__ = ["build_parser", "main"]

#: Every subcommand, in the order ``python -m planner -h`` lists them.
_COMMANDS = (
    plan_command.COMMAND,
    model.COMMAND,
    catalog.GPUS,
    catalog.MODELS,
    compare.COMMAND,
    bench.COMMAND,
    demo.COMMAND,
    predict.COMMAND,
    calibrate.COMMAND,
    size.COMMAND,
    fleet.COMMAND,
    deploy.COMMAND,
)
#: Each subcommand's entry: ``run(args) -> exit code``.
_RUN = {command.name: command.run for command in _COMMANDS}


#: A quoted value in an argparse message (argparse writes the value it refuses with %r, in either quote).
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.){60,}'|\"(?:[^\"\\\n]|\\.){60,}\"")


def _short(quoted: re.Match[str]) -> str:
    text = quoted.group(0)
    return text[:57] + "..." + text[-1]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2; a refused value is quoted short (argparse would
    echo all of it: a pasted 2,000-character value made the one line a screenful)."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(_QUOTED.sub(_short, message).split())
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every subcommand with its flags (errors are one line, exit code 2)."""
    parser = _Parser(prog="python -m planner", description="LLM Serving Planner command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in _COMMANDS:
        command.add_to(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 bench: every request failed, 2 bad input, 141 stdout closed).

    A reader that closes the pipe early (``python -m planner ... | head -1``) ends the command quietly with 141
    (128 + SIGPIPE, what a shell reports for a command killed by SIGPIPE) instead of a ``BrokenPipeError``
    traceback.
    """
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # inside the try, so a broken pipe surfaces here rather than at interpreter exit
    except BrokenPipeError:
        # Python's recipe (docs: signal, "Note on SIGPIPE"): point stdout at devnull so the flush at exit is silent.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured): nothing is flushed at exit anyway
            pass
        return 141


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _RUN[args.command](args)
    except PlannerError as exc:
        # The subcommands report their own bad input; this is the net under them, so a planner error any of them
        # lets through still ends as one line and exit code 2, never a traceback (README: bad input exits 2).
        return error(f"python -m planner {args.command}", exc)
