"""One explicit codec between the Live compare page's settings and a URL query string.

The settings themselves (:class:`~planner.compare.settings.CompareSettings`, its defaults and limits) live in
:mod:`planner.compare.settings`; this module only writes and reads them.

Scheme (every key optional; only values that differ from :data:`~planner.compare.settings.DEFAULT` are written):

* ``ep``: the endpoint NAMES to run, comma separated (``ep=vllm-a,tgi-b``). Names follow
  :class:`planner.serving.endpoints.Endpoint` (letters, digits, ``_ . -``), so a URL, a port or a key cannot be one.
  Base URLs, API-key variable names and keys have no key here at all: a link never carries them.
* ``system``, ``prompt``: text (``prompt`` at most :data:`~planner.compare.settings.MAX_PROMPT_CHARS` characters;
  a longer prompt is left out of the link rather than cut).
* ``temperature`` (0–2), ``top_p`` (0–1, > 0), ``max_tokens`` (1–32768), ``stop`` (comma separated, at most
  :data:`~planner.compare.settings.MAX_STOP` strings), ``seed`` (0 – 2^32 − 1), ``repeat`` (1–20), ``timeout``
  (seconds, 1–600).

:func:`decode` never raises: each bad parameter gives one warning line naming the parameter and what is accepted
and the setting keeps its default. Values of unknown parameters are never echoed (one could be a pasted key).

Example:
    >>> from planner.compare.settings import CompareSettings
    >>> encode(CompareSettings(endpoints=("a", "b"), prompt="Hi", max_tokens=64))
    {'ep': 'a,b', 'prompt': 'Hi', 'max_tokens': '64'}
    >>> decode({"ep": "a,b", "repeat": "3"}).settings.repeat
    3
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.capacity.scenario import Scenario
from planner.compare.settings import DEFAULT, MAX_PROMPT_CHARS, MAX_STOP, CompareSettings, parse_stop
from planner.links import budget
from planner.links.rules import (
    BadValue,
    decode_settings,
    encode_settings,
    format_endpoint_names,
    parse_endpoint_names,
    parse_number,
)

__all__ = [
    "KEYS",
    "LIMITS",
    "DecodedCompare",
    "DecodedLink",
    "decode",
    "decode_link",
    "encode",
    "encode_link",
    "parse_field",
]

#: Most query parameters read; the rest are ignored with one warning.
_MAX_PARAMS = 32

#: Accepted ranges ``(low, high)`` of the numeric settings.
LIMITS: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),  # low end excluded
    "max_tokens": (1, 32768),
    "seed": (0, 2**32 - 1),
    "repeat": (1, 20),
    "timeout_s": (1.0, 600.0),
}
_INTS = frozenset({"max_tokens", "seed", "repeat"})
#: Control characters a typed prompt never holds (tab, newline and carriage return are allowed).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


#: Query key of each setting.
KEYS: dict[str, str] = {
    "endpoints": "ep",
    "system": "system",
    "prompt": "prompt",
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "stop": "stop",
    "seed": "seed",
    "repeat": "repeat",
    "timeout_s": "timeout",
}
_OWN = frozenset(KEYS.values())


@dataclass(frozen=True)
class DecodedCompare:
    """What a query string holds.

    Attributes:
        settings: The settings (defaults where the URL says nothing or something bad).
        warnings: One line per bad or ignored parameter, naming it and what is accepted.
    """

    settings: CompareSettings
    warnings: tuple[str, ...] = ()


def encode(settings: CompareSettings) -> dict[str, str]:
    """Query parameters for ``settings``: only values that differ from :data:`~planner.compare.settings.DEFAULT`.

    Only endpoint names and prompt settings are written; the link never holds a base URL or a key (the settings
    have no such field). A prompt or system prompt longer than :data:`~planner.compare.settings.MAX_PROMPT_CHARS`
    is left out.
    """
    special = {
        "endpoints": format_endpoint_names,
        "stop": ",".join,
        "prompt": _short_text,
        "system": _short_text,
    }
    return encode_settings(settings, DEFAULT, KEYS, special)


def _short_text(text: str) -> str | None:
    return text if len(text) <= MAX_PROMPT_CHARS else None


def _number(name: str, text: str) -> int | float | None:
    low, high = LIMITS[name]
    optional = getattr(DEFAULT, name) is None or name in ("temperature", "top_p")
    return parse_number(text, low, high, integer=name in _INTS, optional=optional, low_open=name == "top_p")


def parse_field(name: str, text: str) -> object:
    """One setting from its text, as a link gives it (the page's number boxes read typed text with it too).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    if name == "endpoints":
        return parse_endpoint_names(text)
    if name in ("prompt", "system"):
        if len(text) > MAX_PROMPT_CHARS or _CONTROL.search(text):
            raise BadValue(f"text of at most {MAX_PROMPT_CHARS} characters without control characters")
        if name == "prompt" and not text.strip():
            raise BadValue("a non-empty prompt")
        return text
    if name == "stop":
        stops = parse_stop(text)
        if len(stops) > MAX_STOP or len(text) > 400 or _CONTROL.search(text):
            raise BadValue(f"at most {MAX_STOP} comma-separated stop strings")
        return stops
    return _number(name, text)


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedCompare:
    """Settings from query parameters; never raises.

    Args:
        query: Parameter name to value, or to all its values (a repeated key warns and the last value is used).

    Returns:
        The settings and one warning line per bad parameter of :data:`KEYS`. Other keys are left to the scenario
        codec, which reads the same link with ``foreign=KEYS`` and reports a key neither knows
        (:func:`planner.links.budget.decode`): the page's link carries the scenarios too.
    """
    own = {key: value for key, value in query.items() if key in _OWN}
    settings, warnings = decode_settings(own, DEFAULT, KEYS, parse_field, max_params=_MAX_PARAMS)
    return DecodedCompare(settings=settings, warnings=warnings)


@dataclass(frozen=True)
class DecodedLink:
    """A whole Live Compare link: the scenarios (every page's link carries them) and this page's settings.

    Attributes:
        state: the scenario codec's answer (:func:`planner.links.budget.decode` with ``foreign`` = :data:`KEYS`).
        settings: this codec's answer.
        warnings: the scenario codec's warnings (a key neither codec knows is named there), then this codec's.
    """

    state: budget.DecodedState
    settings: CompareSettings
    warnings: tuple[str, ...]


def decode_link(query: Mapping[str, str | Sequence[str]]) -> DecodedLink:
    """The whole Live Compare link: scenarios and settings; never raises."""
    state = budget.decode(query, foreign=tuple(KEYS.values()))
    own = decode(query)
    return DecodedLink(state, own.settings, state.warnings + own.warnings)


def encode_link(
    scenarios: Sequence[Scenario],
    settings: CompareSettings,
    *,
    min_context: int | None = None,
    max_context: int | None = None,
) -> dict[str, str]:
    """The whole Live Compare link: :func:`planner.links.budget.encode` of the scenarios, then :func:`encode`.

    Raises:
        InvalidParameterError: no scenario, or more than :data:`planner.links.budget.MAX_SCENARIOS`.
    """
    return budget.encode(scenarios, min_context=min_context, max_context=max_context) | encode(settings)
