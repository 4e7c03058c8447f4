"""One explicit codec between the Fleet page's settings and a URL query string.

The Fleet page's link holds three things: the scenarios (:mod:`planner.links.budget`'s keys; the first is the
replicas' deployment), the workload, and the fleet. The workload is a :class:`~planner.loadtest.settings.LoadSettings`,
its fields (:data:`planner.fleet.settings.WORKLOAD_FIELDS`) under the Load Test's keys and rules
(:data:`planner.links.loadtest.KEYS`, :func:`planner.links.loadtest.parse_field`): ``dataset_name`` (here ``random``,
``prefix_repetition`` or ``multi_turn``), ``num_prompts``, ``max_concurrency``, ``request_rate``, ``input_len``,
``output_len``, ``num_turns``, ``think_time_s``, ``prefix_len``, ``suffix_len``, ``num_prefixes``, ``seed``. The fleet
is a :class:`~planner.fleet.settings.FleetSettings`, each field under the key its metadata declares: ``replicas``
(1–1024), ``router`` (policies, comma separated: ``router=round_robin,prefix_aware``), ``router_refresh_s``
(0–3600).

Only values that differ from the page's defaults (:data:`planner.fleet.settings.DEFAULT_WORKLOAD`,
:data:`planner.fleet.settings.DEFAULT`) are written. :func:`decode` never raises (the rules of
:mod:`planner.links.rules`); the scenario codec reads the same query with ``foreign`` = :data:`KEYS`.

Example:
    >>> from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD
    >>> from dataclasses import replace
    >>> encode(replace(DEFAULT_WORKLOAD, num_turns=6), replace(DEFAULT, routers=("round_robin", "prefix_aware")))
    {'num_turns': '6', 'router': 'round_robin,prefix_aware'}
    >>> decode({"replicas": "16", "router": "prefix_aware"}).fleet.replicas
    16
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD, WORKLOAD_FIELDS, FleetSettings, setting_fields
from planner.links import budget
from planner.links.loadtest import KEYS as LOAD_KEYS
from planner.links.loadtest import parse_field as parse_load_field
from planner.links.rules import BadValue, decode_query, encode_settings, parse_choice, parse_number, show
from planner.loadtest.settings import LoadSettings

__all__ = [
    "DATASETS",
    "FLEET_KEYS",
    "KEYS",
    "DecodedFleet",
    "DecodedLink",
    "decode",
    "decode_link",
    "encode",
    "encode_link",
    "parse_field",
]

#: Fleet field → query key (its metadata's ``key``, else its name).
FLEET_KEYS: dict[str, str] = {f.name: f.metadata.get("key", f.name) for f in setting_fields()}
#: Every field of this codec → its query key: the workload's (the Load Test's keys) and the fleet's.
KEYS: dict[str, str] = {name: LOAD_KEYS[name] for name in WORKLOAD_FIELDS} | FLEET_KEYS
#: The workloads the page simulates (of the Load Test's datasets: those of token counts, without a file).
DATASETS: tuple[str, ...] = ("random", "prefix_repetition", "multi_turn")
_MAX_PARAMS = 64


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
    """One setting of :data:`KEYS` from its text (the page's number boxes read typed text with it too).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    if name == "dataset_name":
        return parse_choice(text.strip(), DATASETS)
    if name not in FLEET_KEYS:
        return parse_load_field(name, text)
    f = next(f for f in setting_fields() if f.name == name)
    if "choices" in f.metadata:
        parts = [p.strip().lower() for p in re.split(r"[,\s]+", text.strip()) if p.strip()]
        accepted = "one or more of " + ", ".join(f.metadata["choices"]) + ", comma separated"
        if not parts or any(p not in f.metadata["choices"] for p in parts):
            raise BadValue(accepted)
        return tuple(dict.fromkeys(parts))
    return parse_number(text, f.metadata["low"], f.metadata["high"], integer=isinstance(f.default, int))


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedFleet:
    """The workload and the fleet from query parameters; never raises. Keys not in :data:`KEYS` are left to the
    scenario codec."""
    own = {key: value for key, value in list(query.items())[:_MAX_PARAMS] if key in KEYS.values()}
    field_of = {key: name for name, key in KEYS.items()}
    values, found = decode_query(own, field_of, parse_field, max_params=_MAX_PARAMS)
    warnings = list(found)
    workload, fleet = DEFAULT_WORKLOAD, DEFAULT
    for name, value in values.items():  # one field at a time, so one that does not go with the rest is named
        try:
            if name in FLEET_KEYS:
                fleet = replace(fleet, **{name: value})
            else:
                workload = replace(workload, **{name: value})
        except InvalidParameterError as exc:
            warnings.append(f"{KEYS[name]}={show(value)} is not valid: expected {exc.accepted}; the default is used")
    return DecodedFleet(workload, fleet, tuple(warnings))


def encode(workload: LoadSettings, fleet: FleetSettings) -> dict[str, str]:
    """Query parameters of the workload's :data:`~planner.fleet.settings.WORKLOAD_FIELDS` and the fleet: only what
    differs from the page's defaults."""
    kept = replace(DEFAULT_WORKLOAD, **{name: getattr(workload, name) for name in WORKLOAD_FIELDS})
    out = encode_settings(kept, DEFAULT_WORKLOAD, LOAD_KEYS, {})
    special = {name: ",".join for name, f in ((f.name, f) for f in setting_fields()) if "choices" in f.metadata}
    return out | encode_settings(fleet, DEFAULT, FLEET_KEYS, special)


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
