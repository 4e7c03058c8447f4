"""One explicit codec between the Live compare page's settings and a URL query string.

Scheme (every key optional; only values that differ from :data:`DEFAULT` are written):

* ``ep``: the endpoint NAMES to run, comma separated (``ep=vllm-a,tgi-b``). Names follow
  :class:`planner.endpoints.Endpoint` (letters, digits, ``_ . -``), so a URL, a port or a key cannot be one.
  Base URLs, API-key variable names and keys have no key here at all: a link never carries them.
* ``system``, ``prompt``: text (``prompt`` at most :data:`MAX_PROMPT_CHARS` characters; a longer prompt is left
  out of the link rather than cut).
* ``temperature`` (0–2), ``top_p`` (0–1, > 0), ``max_tokens`` (1–32768), ``stop`` (comma separated, at most
  :data:`MAX_STOP` strings), ``seed`` (0 – 2^32 − 1), ``repeat`` (1–20), ``timeout`` (seconds, 1–600).

:func:`decode` never raises: each bad parameter gives one warning line naming the parameter and what is accepted
and the setting keeps its default. Values of unknown parameters are never echoed (one could be a pasted key).

Example:
    >>> encode(CompareSettings(endpoints=("a", "b"), prompt="Hi", max_tokens=64))
    {'ep': 'a,b', 'prompt': 'Hi', 'max_tokens': '64'}
    >>> decode({"ep": "a,b", "repeat": "3"}).settings.repeat
    3
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

from planner.clients import ChatRequest

__all__ = [
    "DEFAULT",
    "KEYS",
    "LIMITS",
    "MAX_ENDPOINTS",
    "MAX_PROMPT_CHARS",
    "MAX_STOP",
    "CompareSettings",
    "DecodedCompare",
    "decode",
    "encode",
    "parse_stop",
    "to_request",
]

#: Longest prompt (and system prompt) a link carries, characters.
MAX_PROMPT_CHARS = 2000
#: Most stop strings (the OpenAI API limit).
MAX_STOP = 4
#: Most endpoint names a link selects.
MAX_ENDPOINTS = 16
#: Most query parameters read; the rest are ignored with one warning.
_MAX_PARAMS = 32
_SHOWN_CHARS = 40
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")

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
#: A decimal number as links write it. ``float()`` alone also reads ``1_0``, ``١٢٨`` (other scripts' digits) and
#: ``infinity``, which no link written here holds.
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class CompareSettings:
    """The shared settings of a compare run (what a link restores).

    Attributes:
        endpoints: Names of the endpoints to run, in order.
        system: System prompt; "" = none.
        prompt: User prompt.
        temperature: Sampling temperature; None = server default.
        top_p: Nucleus mass in (0, 1]; None = server default.
        max_tokens: Output token limit.
        stop: Stop strings.
        seed: Sampling seed; None = none.
        repeat: Requests per endpoint, one after the other.
        timeout_s: Connect/read timeout of each request, seconds.
    """

    endpoints: tuple[str, ...] = ()
    system: str = ""
    prompt: str = "Explain in two sentences what the KV cache of an LLM server holds."
    temperature: float | None = 0.0
    top_p: float | None = None
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    seed: int | None = None
    repeat: int = 1
    timeout_s: float = 60.0


#: The settings of a page opened without a link.
DEFAULT = CompareSettings()
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
_FIELD_OF = {key: name for name, key in KEYS.items()}


@dataclass(frozen=True)
class DecodedCompare:
    """What a query string holds.

    Attributes:
        settings: The settings (defaults where the URL says nothing or something bad).
        warnings: One line per bad or ignored parameter, naming it and what is accepted.
    """

    settings: CompareSettings
    warnings: tuple[str, ...] = ()


class _Bad(Exception):
    def __init__(self, accepted: str) -> None:
        super().__init__(accepted)
        self.accepted = accepted


def parse_stop(text: str) -> tuple[str, ...]:
    """Stop strings from comma-separated text: each part stripped of surrounding spaces, empty parts dropped.

    Example:
        >>> parse_stop("###, END,,")
        ('###', 'END')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


def to_request(settings: CompareSettings) -> ChatRequest:
    """The :class:`~planner.clients.ChatRequest` the settings describe.

    Raises:
        InvalidParameterError: a value is out of range (e.g. an empty prompt), naming the parameter.
    """
    return ChatRequest(
        prompt=settings.prompt,
        system=settings.system or None,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_tokens=settings.max_tokens,
        stop=settings.stop,
        seed=settings.seed,
    )


def _format(value: object) -> str:
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def encode(settings: CompareSettings) -> dict[str, str]:
    """Query parameters for ``settings``: only values that differ from :data:`DEFAULT`.

    Only endpoint names and prompt settings are written; the link never holds a base URL or a key (the settings
    have no such field). A prompt or system prompt longer than :data:`MAX_PROMPT_CHARS` is left out.
    """
    out: dict[str, str] = {}
    for f in fields(CompareSettings):
        value = getattr(settings, f.name)
        if value == getattr(DEFAULT, f.name):
            continue
        key = KEYS[f.name]
        if f.name == "endpoints":
            names = [n for n in value if _NAME_RE.match(n)]
            if names:
                out[key] = ",".join(names)
        elif f.name == "stop":
            out[key] = ",".join(value)
        elif f.name in ("prompt", "system"):
            if len(value) <= MAX_PROMPT_CHARS:
                out[key] = value
        elif value is None:
            out[key] = "none"
        else:
            out[key] = _format(value)
    return out


def _show(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 1] + "…"


def _number(name: str, text: str) -> int | float | None:
    low, high = LIMITS[name]
    integer = name in _INTS
    optional = getattr(DEFAULT, name) is None or name in ("temperature", "top_p")
    if optional and text.strip().lower() in ("", "none"):
        return None
    if integer:
        accepted = f"an integer from {int(low)} to {int(high)}"
    elif name == "top_p":
        accepted = "a number in (0, 1]"
    else:
        accepted = f"a number from {low:g} to {high:g}"
    if optional:
        accepted += " (or none)"
    if len(text) > 64 or not _DECIMAL.fullmatch(text.strip()):
        raise _Bad(accepted)
    try:
        number = float(text)
    except (ValueError, OverflowError):
        raise _Bad(accepted) from None
    if not math.isfinite(number) or not low <= number <= high or (name == "top_p" and number == 0):
        raise _Bad(accepted)
    if integer:
        if not number.is_integer():
            raise _Bad(accepted)
        return int(text) if re.fullmatch(r"[0-9]+", text.strip()) else int(number)
    return number


def _field(name: str, text: str) -> object:
    if name == "endpoints":
        names = [part.strip() for part in text.split(",") if part.strip()]
        accepted = f"up to {MAX_ENDPOINTS} endpoint names (letters, digits, '_', '.', '-'), comma separated"
        if len(names) > MAX_ENDPOINTS or any(not _NAME_RE.match(n) for n in names):
            raise _Bad(accepted)
        return tuple(dict.fromkeys(names))
    if name in ("prompt", "system"):
        if len(text) > MAX_PROMPT_CHARS or "\x00" in text:
            raise _Bad(f"text of at most {MAX_PROMPT_CHARS} characters")
        if name == "prompt" and not text.strip():
            raise _Bad("a non-empty prompt")
        return text
    if name == "stop":
        stops = parse_stop(text)
        if len(stops) > MAX_STOP or len(text) > 400 or "\x00" in text:
            raise _Bad(f"at most {MAX_STOP} comma-separated stop strings")
        return stops
    return _number(name, text)


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedCompare:
    """Settings from query parameters; never raises.

    Args:
        query: Parameter name to value, or to all its values (a repeated key warns and the last value is used).

    Returns:
        The settings and one warning line per bad or ignored parameter.
    """
    warnings: list[str] = []
    values: dict[str, object] = {}
    unknown: list[str] = []
    items = list(query.items())
    if len(items) > _MAX_PARAMS:
        warnings.append(f"only the first {_MAX_PARAMS} of {len(items)} parameters are read")
        items = items[:_MAX_PARAMS]
    for key, raw in items:
        name = _FIELD_OF.get(key)
        if name is None:
            unknown.append(key if len(key) <= _SHOWN_CHARS else key[: _SHOWN_CHARS - 1] + "…")
            continue
        all_values = [raw] if isinstance(raw, str) else list(raw)
        if not all_values:
            continue
        if len(all_values) > 1:
            warnings.append(f"{key} is given {len(all_values)} times; the last value is used")
        text = str(all_values[-1])
        try:
            values[name] = _field(name, text)
        except _Bad as bad:
            warnings.append(f"{key}={_show(text)} is not valid: expected {bad.accepted}; the default is used")
    if unknown:
        # values are not echoed: an unknown parameter could hold a pasted key
        warnings.append(
            f"unknown parameter(s) {', '.join(unknown)} ignored; a link holds only {', '.join(KEYS.values())}"
        )
    return DecodedCompare(settings=replace(DEFAULT, **values), warnings=tuple(warnings))
