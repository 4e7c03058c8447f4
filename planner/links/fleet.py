"""The Fleet page's link: the scenarios, the workload and the fleet, each read by its own codec.

The scenarios are :mod:`planner.links.budget`'s keys (the first is the replicas' deployment). The workload is a
:class:`~planner.loadtest.settings.LoadSettings`, its fields :data:`planner.fleet.settings.WORKLOAD_FIELDS` under the
Load Test's keys (``dataset_name``, ``num_prompts``, ``max_concurrency``, ``request_rate``, ``input_len``,
``output_len``, ``num_turns``, ``think_time_s``, ``prefix_len``, ``suffix_len``, ``num_prefixes``, ``seed``); the fleet
is a :class:`~planner.fleet.settings.FleetSettings`: ``replicas`` (1–1024), ``router`` (policies, comma separated:
``router=round_robin,prefix_aware``), ``router_refresh_s`` (0–3600). Both codecs are
:class:`~planner.links.codec.SettingsCodec` s of the fields' declarations; only values that differ from the page's
defaults are written; :func:`decode` never raises.

Example:
    >>> from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD
    >>> from dataclasses import replace
    >>> encode(replace(DEFAULT_WORKLOAD, num_turns=6), replace(DEFAULT, routers=("round_robin", "prefix_aware")))
    {'num_turns': '6', 'router': 'round_robin,prefix_aware'}
    >>> decode({"replicas": "16", "router": "prefix_aware"}).fleet.replicas
    16
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner import fields
from planner.capacity.scenario import Scenario
from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD, WORKLOAD_FIELDS, FleetSettings
from planner.links import budget
from planner.links.codec import SettingsCodec
from planner.loadtest.settings import LoadSettings

__all__ = [
    "DATASETS",
    "FLEET",
    "KEYS",
    "WORKLOAD",
    "DecodedFleet",
    "DecodedLink",
    "decode",
    "decode_link",
    "encode",
    "encode_link",
    "parse_field",
]

#: The workloads the page simulates: the fleet's datasets that need no file
#: (:data:`planner.fleet.workload.DATASETS`).
DATASETS: tuple[str, ...] = ("random", "prefix_repetition", "multi_turn")
#: The workload's codec (the Load Test's declarations, the page's fields and defaults).
WORKLOAD: SettingsCodec[LoadSettings] = SettingsCodec(DEFAULT_WORKLOAD, only=WORKLOAD_FIELDS, max_params=64)
#: The fleet's codec.
FLEET: SettingsCodec[FleetSettings] = SettingsCodec(DEFAULT, max_params=64)
#: Every field of the link → its query key.
KEYS: dict[str, str] = WORKLOAD.keys | FLEET.keys


@dataclass(frozen=True)
class DecodedFleet:
    """What a query string holds for the workload and the fleet (defaults where it is silent or wrong).

    Attributes:
        workload: :data:`~planner.fleet.settings.DEFAULT_WORKLOAD` with the link's values.
        fleet: :data:`~planner.fleet.settings.DEFAULT` with the link's values.
        warnings: one line per bad parameter, naming it, its value and what is accepted.
    """

    workload: LoadSettings = DEFAULT_WORKLOAD
    fleet: FleetSettings = DEFAULT
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class DecodedLink:
    """A whole Fleet link: the scenarios, the workload and the fleet, and every warning once."""

    state: budget.DecodedState
    fleet: DecodedFleet
    warnings: tuple[str, ...]


def parse_field(name: str, text: str) -> object:
    """One field of :data:`KEYS` from its text (the page's number boxes read typed text with it too).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    return FLEET.parse_field(name, text) if name in FLEET.keys else WORKLOAD.parse_field(name, text)


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedFleet:
    """The workload and the fleet from query parameters; never raises. Keys not in :data:`KEYS` are left to the
    scenario codec. A dataset the page cannot simulate (one of prompt text or a file) warns and keeps the default."""
    workload = WORKLOAD.decode(query)
    fleet = FLEET.decode(query)
    warnings = list(workload.warnings + fleet.warnings)
    settings = workload.settings
    if settings.dataset_name not in DATASETS:
        warnings.append(
            f"dataset_name={settings.dataset_name!r} is not valid: expected one of {', '.join(DATASETS)}; the default "
            "is used"
        )
        settings = fields.replace(settings, dataset_name=DEFAULT_WORKLOAD.dataset_name)
    return DecodedFleet(settings, fleet.settings, tuple(warnings))


def encode(workload: LoadSettings, fleet: FleetSettings) -> dict[str, str]:
    """Query parameters of the workload's :data:`~planner.fleet.settings.WORKLOAD_FIELDS` and the fleet: only what
    differs from the page's defaults."""
    return WORKLOAD.encode(workload) | FLEET.encode(fleet)


def decode_link(query: Mapping[str, str | Sequence[str]]) -> DecodedLink:
    """The whole Fleet link: scenarios (with ``foreign`` = this codec's keys), workload and fleet; never raises."""
    state = budget.decode(query, foreign=tuple(KEYS.values()))
    own = decode(query)
    return DecodedLink(state, own, state.warnings + own.warnings)


def encode_link(scenarios: Sequence[Scenario], workload: LoadSettings, fleet: FleetSettings) -> dict[str, str]:
    """The whole Fleet link: :func:`planner.links.budget.encode` of the scenarios, then :func:`encode`.

    Raises:
        InvalidParameterError: no scenario, or more than :data:`planner.links.budget.MAX_SCENARIOS`.
    """
    return budget.encode(scenarios) | encode(workload, fleet)
