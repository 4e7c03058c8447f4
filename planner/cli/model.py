"""``python -m planner model <repo id>``: what a model id resolves to (catalog, on-disk cache or the Hub)."""

from __future__ import annotations

import argparse
import json

from planner.catalog.hub import describe, resolve_model
from planner.cli.command import Command
from planner.cli.messages import error, not_valid
from planner.errors import InvalidParameterError, PlannerError

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(m: argparse.ArgumentParser) -> None:
    """The ``model`` subcommand's flags, added to ``m``."""
    m.add_argument("model_id", help="a catalog id or any Hugging Face repo id")
    m.add_argument("--refresh", action="store_true", help="ask the Hub again instead of the on-disk cache")
    m.add_argument("--json", action="store_true", help="print one JSON object")


def _model_text(data: dict[str, object]) -> str:
    lines = [f"{data['model']} (from {data['source']})"]
    for key, value in data.items():
        if key in ("model", "source") or value in (None, [], {}):
            continue
        lines.append(
            f"  {key:26} {value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"  {key:26} {value}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``model``; returns the exit code (0, or 2 when the id cannot be resolved)."""
    try:
        data = describe(resolve_model(args.model_id, refresh=args.refresh))
    except InvalidParameterError as exc:
        return not_valid("python -m planner model", "", exc.value, exc.accepted)
    except PlannerError as exc:
        return error("python -m planner model", exc)
    print(json.dumps(data, indent=2) if args.json else _model_text(data))
    return 0


COMMAND = Command(
    "model",
    help="resolve a model id (catalog, cache, Hub) and print its architecture",
    add_arguments=add_arguments,
    run=run,
)
