"""The settings of a fleet simulation: how many replicas, which routing policies, how stale the router's view is; and
the workload the Fleet page opens with.

Each setting is declared once, in its field's metadata (:class:`FleetSettings`): its bounds or choices, its CLI flag,
its link key and its help; validation, ``python -m planner fleet``'s flags (:func:`add_arguments`) and the link codec
(:mod:`planner.links.fleet`) derive from it. The workload is the Load Test's
(:class:`~planner.loadtest.settings.LoadSettings`), its fields under the Load Test's flags and keys.

Example:
    >>> FleetSettings(replicas=4, routers=("round_robin", "prefix_aware")).routers
    ('round_robin', 'prefix_aware')
"""

from __future__ import annotations

import argparse
import math
from dataclasses import Field, dataclass, field, fields

from planner.errors import InvalidParameterError
from planner.fleet.routers import ROUTERS
from planner.fleet.simulation import MAX_REPLICAS
from planner.loadtest.settings import LoadSettings

__all__ = [
    "DEFAULT",
    "DEFAULT_WORKLOAD",
    "MAX_REFRESH_S",
    "WORKLOAD_FIELDS",
    "FleetSettings",
    "add_arguments",
    "flag_dest",
    "from_arguments",
    "setting_fields",
]

#: Longest refresh period of the router's view, seconds.
MAX_REFRESH_S = 3600.0


@dataclass(frozen=True)
class FleetSettings:
    """A fleet simulation's own settings (the deployment is a scenario, the workload a Load Test's).

    Attributes:
        replicas: replicas of the deployment behind the router (1 to :data:`~planner.fleet.simulation.MAX_REPLICAS`).
        routers: the routing policies to simulate, each on the same workload (:data:`~planner.fleet.routers.ROUTERS`).
        router_refresh_s: seconds between refreshes of the router's view of the replicas' KV usage and prefix caches
            (0 = always current), as a router that scrapes metrics or reads KV events sees them.

    Raises:
        InvalidParameterError: a value outside what is accepted, naming it.
    """

    replicas: int = field(
        default=4,
        metadata={"low": 1, "high": MAX_REPLICAS, "flag": "--replicas", "help": "replicas behind the router"},
    )
    routers: tuple[str, ...] = field(
        default=ROUTERS,
        metadata={
            "choices": ROUTERS,
            "flag": "--router",
            "key": "router",
            "help": "routing policy to simulate (repeat the flag for several; default: all four)",
        },
    )
    router_refresh_s: float = field(
        default=0.0,
        metadata={
            "low": 0.0,
            "high": MAX_REFRESH_S,
            "flag": "--router-refresh-s",
            "help": "seconds between refreshes of the router's view of KV usage and prefix caches (0: always current)",
        },
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "routers", tuple(dict.fromkeys(self.routers)))
        for f in setting_fields():
            value = getattr(self, f.name)
            if "choices" in f.metadata:
                if not value or any(v not in f.metadata["choices"] for v in value):
                    raise InvalidParameterError(f.name, value, "one or more of " + ", ".join(f.metadata["choices"]))
                continue
            low, high = f.metadata["low"], f.metadata["high"]
            integer = isinstance(f.default, int)
            ok = not isinstance(value, bool) and isinstance(value, int if integer else int | float)
            if not (ok and math.isfinite(value) and low <= value <= high):
                kind = "an integer" if integer else "a number"
                raise InvalidParameterError(f.name, value, f"{kind} in [{low:g}, {high:g}]")


def setting_fields() -> tuple[Field, ...]:
    """The fields of :class:`FleetSettings`, each with its metadata."""
    return fields(FleetSettings)


#: The settings of the Fleet page opened without a link.
DEFAULT = FleetSettings()
#: The :class:`~planner.loadtest.settings.LoadSettings` fields a fleet's workload sets (the page's and the link's).
WORKLOAD_FIELDS: tuple[str, ...] = (
    "dataset_name",
    "num_prompts",
    "max_concurrency",
    "request_rate",
    "input_len",
    "output_len",
    "num_turns",
    "think_time_s",
    "prefix_len",
    "suffix_len",
    "num_prefixes",
    "seed",
)
#: The Fleet page's workload without a link: chat conversations of 4 turns (256-token messages, 64-token answers), 32
#: in flight, 400 requests.
DEFAULT_WORKLOAD = LoadSettings(
    dataset_name="multi_turn",
    num_prompts=400,
    max_concurrency=32,
    input_len=256,
    output_len=64,
    num_turns=4,
    duration_s=None,
    ignore_eos=True,
)


def flag_dest(name: str) -> str:
    """The argparse destination of the field ``name``'s flag (``routers`` → ``router``, from ``--router``)."""
    f = next(f for f in setting_fields() if f.name == name)
    return f.metadata["flag"].removeprefix("--").replace("-", "_")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`FleetSettings`, from its fields' metadata."""
    group = parser.add_argument_group("fleet")
    for f in setting_fields():
        meta, dest = f.metadata, flag_dest(f.name)
        if "choices" in meta:
            group.add_argument(meta["flag"], dest=dest, action="append", choices=meta["choices"], help=meta["help"])
        else:
            kind = int if isinstance(f.default, int) else float
            group.add_argument(
                meta["flag"], dest=dest, type=kind, default=f.default, help=f"{meta['help']} (default: {f.default:g})"
            )


def from_arguments(args: argparse.Namespace) -> FleetSettings:
    """The settings :func:`add_arguments`' flags hold (a choice list left out is the default's).

    Raises:
        InvalidParameterError: a value outside what is accepted, named by its flag's destination (``router``).
    """
    values = {}
    for f in setting_fields():
        value = getattr(args, flag_dest(f.name))
        values[f.name] = f.default if value is None else tuple(value) if "choices" in f.metadata else value
    try:
        return FleetSettings(**values)
    except InvalidParameterError as exc:
        raise InvalidParameterError(flag_dest(exc.name), exc.value, exc.accepted) from None
