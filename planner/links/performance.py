"""One explicit codec between the Performance page's workload and a URL query string.

The Performance page's link holds two things: the scenarios (:mod:`planner.links.budget`'s keys, shared with every
capacity page) and the workload the curves are predicted for, which is this module's. The workload is a
:class:`~planner.loadtest.settings.LoadSettings` (the one description of a load), so its keys and rules are the
Load Test's (each field's declaration, :mod:`planner.loadtest.settings`, through the one settings codec
:class:`~planner.links.codec.SettingsCodec`):

* ``input_len`` (1–131072), ``output_len`` (1–32768), ``num_prompts`` (requests a level, 1–10000), ``range_ratio``
  ([0, 0.99]), ``sweep_max`` (the highest concurrency of a concurrency sweep, 1–1024), ``burstiness`` (gamma shape
  of a rate sweep's arrivals, 0.01–100);
* ``axis``: ``concurrency`` (closed loop at 1, 2, 4, … ``sweep_max``) or ``rate`` (open loop at each request rate);
* ``request_rate``: the rates of a rate sweep, comma separated (``request_rate=1,2,4,8``): the Load Test's key and
  rule for one rate (req/s > 0), a list here, at most :data:`~planner.predict.curves.MAX_RATES`; ``inf`` (a burst)
  is no level of a rate sweep (:func:`planner.predict.curves.parse_rates`, the page's text box reads the same).

Only values that differ from the page's defaults (:data:`~planner.predict.curves.DEFAULT_WORKLOAD`,
:data:`~planner.predict.curves.DEFAULT_RATES`) are written. A calibration profile is never in a link (it is a file).

**Two codecs, one link.** :func:`decode` reads only the keys of :data:`KEYS`; the page's scenario codec reads the same
query with ``foreign=KEYS`` (:func:`planner.links.budget.decode`), so neither reports the other's keys and a key
that neither knows is reported once, by the scenario codec, with every accepted key listed. :func:`decode_link` and
:func:`encode_link` are the whole link. :func:`decode` never raises (the rules of :mod:`planner.links.rules`).

Example:
    >>> from dataclasses import replace
    >>> from planner.predict.curves import DEFAULT_WORKLOAD
    >>> encode(replace(DEFAULT_WORKLOAD, input_len=2048), axis="rate", rates=(1.0, 2.5))
    {'input_len': '2048', 'axis': 'rate', 'request_rate': '1,2.5'}
    >>> decode({"axis": "rate", "request_rate": "4,1", "model": "x"}).rates
    (1.0, 4.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.capacity.scenario import Scenario
from planner.fields import Choice, Text
from planner.links import budget
from planner.links.codec import SettingsCodec
from planner.loadtest.settings import LoadSettings
from planner.predict.curves import AXES, DEFAULT_RATES, DEFAULT_WORKLOAD, format_rates, parse_rates

__all__ = [
    "CODEC",
    "FIELDS",
    "KEYS",
    "DecodedLink",
    "DecodedPerformance",
    "decode",
    "decode_link",
    "encode",
    "encode_link",
]

#: The :class:`~planner.loadtest.settings.LoadSettings` fields the page's workload sets.
FIELDS: tuple[str, ...] = ("input_len", "output_len", "num_prompts", "range_ratio", "sweep_max", "burstiness")
#: The rate list, under the Load Test's key for one rate.
_RATES_KEY = "request_rate"
#: The page's codec: the workload's fields, then the sweep axis and the rate list (no settings field of their own).
CODEC: SettingsCodec[LoadSettings] = SettingsCodec(
    DEFAULT_WORKLOAD,
    only=FIELDS,
    extra={
        "axis": (Choice(choices=AXES), "concurrency"),
        _RATES_KEY: (Text(read=parse_rates, write=format_rates), DEFAULT_RATES),
    },
    max_params=64,  # the scenario codec reads its own 64 of the same query
)
#: Field → query key: the Load Test's keys, plus ``axis`` and the rate list under the Load Test's ``request_rate``.
KEYS: dict[str, str] = {name: CODEC.keys[name] for name in FIELDS} | {"axis": "axis", "rates": _RATES_KEY}


@dataclass(frozen=True)
class DecodedPerformance:
    """What a query string holds for the workload (defaults where it is silent or wrong).

    Attributes:
        settings: the workload, :data:`~planner.predict.curves.DEFAULT_WORKLOAD` with the link's values.
        axis: ``concurrency`` or ``rate``.
        rates: the rate sweep's levels, req/s, increasing.
        warnings: one line per bad parameter of :data:`KEYS`, naming it, its value and what is accepted.
    """

    settings: LoadSettings = DEFAULT_WORKLOAD
    axis: str = "concurrency"
    rates: tuple[float, ...] = DEFAULT_RATES
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class DecodedLink:
    """A whole Performance link: the scenarios and the workload, and every warning once.

    Attributes:
        state: the scenario codec's answer (:func:`planner.links.budget.decode`).
        workload: this codec's answer.
        warnings: the scenario codec's warnings, then the workload's.
    """

    state: budget.DecodedState
    workload: DecodedPerformance
    warnings: tuple[str, ...]


def _workload(settings: LoadSettings, extras: Mapping[str, object], warnings: tuple[str, ...]) -> DecodedPerformance:
    return DecodedPerformance(settings, str(extras["axis"]), extras[_RATES_KEY], warnings)  # type: ignore[arg-type]


def _rates(rates: Sequence[float]) -> tuple[float, ...]:
    """The rate list as the link writes it: sorted, duplicates dropped."""
    return tuple(sorted({float(r) for r in rates}))


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedPerformance:
    """The workload from query parameters; never raises. Keys not in :data:`KEYS` are left to the scenario codec.

    Args:
        query: parameter name to its value or to all its values (a repeated key warns; its last value is used).

    Returns:
        The workload and one warning per bad parameter of :data:`KEYS`.
    """
    own = CODEC.decode(query)
    return _workload(own.settings, own.extras, own.warnings)


def encode(
    settings: LoadSettings, *, axis: str = "concurrency", rates: Sequence[float] = DEFAULT_RATES
) -> dict[str, str]:
    """Query parameters of the workload: the :data:`FIELDS` of ``settings``, ``axis`` and ``rates`` that differ from
    the page's defaults. Other fields of ``settings`` are not the page's and are never written."""
    return CODEC.encode(settings, axis=axis, **{_RATES_KEY: _rates(rates)})


def decode_link(query: Mapping[str, str | Sequence[str]]) -> DecodedLink:
    """The whole Performance link: scenarios (with ``foreign`` = this codec's keys) and workload; never raises."""
    link = CODEC.decode_link(query)
    own = link.warnings[len(link.state.warnings) :]
    return DecodedLink(link.state, _workload(link.settings, link.extras, own), link.warnings)


def encode_link(
    scenarios: Sequence[Scenario],
    settings: LoadSettings,
    *,
    axis: str = "concurrency",
    rates: Sequence[float] = DEFAULT_RATES,
    min_context: int | None = None,
    max_context: int | None = None,
) -> dict[str, str]:
    """The whole Performance link: :func:`planner.links.budget.encode` of the scenarios, then :func:`encode`.

    Raises:
        InvalidParameterError: no scenario, or more than :data:`planner.links.budget.MAX_SCENARIOS`.
    """
    extras = {"axis": axis, _RATES_KEY: _rates(rates)}
    return CODEC.encode_link(scenarios, settings, min_context=min_context, max_context=max_context, **extras)
