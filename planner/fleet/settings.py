"""The settings of a fleet simulation: how many replicas, which routing policies, how stale the router's view is; and
the workload the Fleet page opens with.

Each field of :class:`FleetSettings` is declared once (:mod:`planner.fields`): its range, link key, ``fleet`` flag,
help and widget label; validation, ``python -m planner fleet``'s flags, the link codec (:mod:`planner.links.fleet`)
and the page's widgets derive from it. The workload is the Load Test's
(:class:`~planner.loadtest.settings.LoadSettings`), its fields under the Load Test's own declarations.

Example:
    >>> FleetSettings(replicas=4, routers=("round_robin", "prefix_aware")).routers
    ('round_robin', 'prefix_aware')
    >>> parse_routers("prefix_aware, round_robin")
    ('prefix_aware', 'round_robin')
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import BadValue
from planner.fields import Number, Text, setting, validate
from planner.fleet.routers import ROUTERS
from planner.fleet.simulation import MAX_REPLICAS
from planner.loadtest.settings import LoadSettings
from planner.values import split_list

__all__ = [
    "DEFAULT",
    "DEFAULT_WORKLOAD",
    "MAX_REFRESH_S",
    "WORKLOAD_FIELDS",
    "FleetSettings",
    "parse_routers",
]

#: Longest refresh period of the router's view, seconds.
MAX_REFRESH_S = 3600.0
_ROUTERS_ACCEPTED = "one or more of " + ", ".join(ROUTERS) + ", comma separated"


def parse_routers(text: str) -> tuple[str, ...]:
    """Routing policies, comma or space separated (at least one, duplicates dropped, in the order given).

    Raises:
        BadValue: an empty list or a word that is not one of :data:`~planner.fleet.routers.ROUTERS`.
    """
    parts = [p.lower() for p in split_list(text)]
    if not parts or any(p not in ROUTERS for p in parts):
        raise BadValue(_ROUTERS_ACCEPTED)
    return tuple(dict.fromkeys(parts))


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

    replicas: int = setting(
        4,
        Number(
            low=1,
            high=MAX_REPLICAS,
            integer=True,
            flags=("--replicas",),
            label="replicas",
            help="replicas of the deployment behind the router",
        ),
    )
    routers: tuple[str, ...] = setting(
        ROUTERS,
        Text(
            key="router",
            read=parse_routers,
            write=",".join,
            valid=lambda chosen: bool(chosen) and all(r in ROUTERS for r in chosen),
            accepted=_ROUTERS_ACCEPTED,
            flags=("--router",),
            nargs="append",
            metavar="POLICY",
            label="routing policies",
            help="routing policy to simulate, repeat the flag for several: round_robin (in turn), least_loaded "
            "(fewest in flight), kv_aware (lowest KV-cache usage), prefix_aware (longest cached prefix, then fewest "
            "in flight); default: all four",
        ),
    )
    router_refresh_s: float = setting(
        0.0,
        Number(
            low=0.0,
            high=MAX_REFRESH_S,
            flags=("--router-refresh-s",),
            label="router view refresh (s)",
            help="seconds between refreshes of the router's view of KV usage and prefix caches (0: always current)",
        ),
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "routers", tuple(dict.fromkeys(self.routers)))
        validate(self)


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
