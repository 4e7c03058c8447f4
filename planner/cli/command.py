"""One subcommand of ``python -m planner`` as data: its name, its help lines, the function that adds its flags and
the one that runs it; :func:`planner.cli.main.build_parser` adds every one the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Command"]


@dataclass(frozen=True)
class Command:
    """A subcommand.

    Attributes:
        name: what follows ``python -m planner`` (``plan``, ``demo-server``, …).
        help: the one line ``python -m planner -h`` lists it with.
        add_arguments: adds its flags to the subparser argparse made for it.
        run: runs it on the parsed flags; returns the exit code (0 ok, 2 bad input, …).
        description: the paragraph ``python -m planner NAME -h`` opens with (None: argparse shows none).
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None

    def add_to(self, sub: argparse._SubParsersAction) -> None:
        """Add this subcommand and its flags to ``sub``."""
        parser = sub.add_parser(self.name, help=self.help, description=self.description)
        self.add_arguments(parser)
