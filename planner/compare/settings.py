"""The settings of a Live Compare run: what the page's widgets hold and a link restores, and the request they describe.

:class:`CompareSettings` is the one description of a run; :data:`DEFAULT` is what the page opens with. Each
field declares its range, link key and widget label once (:mod:`planner.fields`); the URL codec
(:mod:`planner.links.compare`) and the page's boxes are derived from it.

Example:
    >>> settings = CompareSettings(prompt="Hi", stop=parse_stop("###, END"))
    >>> to_request(settings).stop
    ('###', 'END')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.errors import BadValue
from planner.fields import Number, Text, setting, validate
from planner.serving.endpoints import format_endpoint_names, parse_endpoint_names
from planner.serving.requests import ChatRequest
from planner.values import split_list

__all__ = [
    "DEFAULT",
    "MAX_PROMPT_CHARS",
    "MAX_STOP",
    "CompareSettings",
    "parse_stop",
    "to_request",
]

#: Longest prompt (and system prompt) a link carries, characters.
MAX_PROMPT_CHARS = 2000
#: Most stop strings (the OpenAI API limit).
MAX_STOP = 4
#: Longest stop-string list a link carries, characters.
_MAX_STOP_CHARS = 400
#: Control characters a typed prompt never holds (tab, newline and carriage return are allowed).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _link_text(text: str) -> str:
    """A system prompt from a link: at most :data:`MAX_PROMPT_CHARS` characters, no control characters.

    Raises:
        BadValue: anything else.
    """
    if len(text) > MAX_PROMPT_CHARS or _CONTROL.search(text):
        raise BadValue(f"text of at most {MAX_PROMPT_CHARS} characters without control characters")
    return text


def _link_prompt(text: str) -> str:
    """A prompt from a link: :func:`_link_text`, and not blank.

    Raises:
        BadValue: anything else.
    """
    if not _link_text(text).strip():
        raise BadValue("a non-empty prompt")
    return text


def _short_text(text: str) -> str | None:
    """A prompt as a link writes it; None (left out, not cut) when longer than :data:`MAX_PROMPT_CHARS`."""
    return text if len(text) <= MAX_PROMPT_CHARS else None


def _link_stop(text: str) -> tuple[str, ...]:
    """Stop strings from a link: :func:`parse_stop`, at most :data:`MAX_STOP` of them.

    Raises:
        BadValue: more, a longer list or control characters.
    """
    stops = parse_stop(text)
    if len(stops) > MAX_STOP or len(text) > _MAX_STOP_CHARS or _CONTROL.search(text):
        raise BadValue(f"at most {MAX_STOP} comma-separated stop strings")
    return stops


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

    Raises:
        InvalidParameterError: a number outside its range (the prompt itself is checked by :func:`to_request`).
    """

    endpoints: tuple[str, ...] = setting((), Text(key="ep", read=parse_endpoint_names, write=format_endpoint_names))
    system: str = setting("", Text(read=_link_text, write=_short_text))
    prompt: str = setting(
        "Explain in two sentences what the KV cache of an LLM server holds.", Text(read=_link_prompt, write=_short_text)
    )
    temperature: float | None = setting(0.0, Number(low=0.0, high=2.0, optional=True))
    top_p: float | None = setting(None, Number(low=0.0, high=1.0, low_open=True, optional=True))
    max_tokens: int = setting(128, Number(low=1, high=32_768, integer=True))
    stop: tuple[str, ...] = setting((), Text(read=_link_stop, write=",".join))
    seed: int | None = setting(None, Number(low=0, high=2**32 - 1, integer=True, optional=True))
    repeat: int = setting(1, Number(low=1, high=20, integer=True))
    timeout_s: float = setting(60.0, Number(low=1.0, high=600.0, key="timeout"))

    def __post_init__(self) -> None:
        validate(self)


#: The settings of a page opened without a link.
DEFAULT = CompareSettings()


def parse_stop(text: str) -> tuple[str, ...]:
    """Stop strings from comma-separated text: each part stripped of surrounding spaces, empty parts dropped.

    Example:
        >>> parse_stop("###, END,,")
        ('###', 'END')
    """
    return tuple(split_list(text, spaces=False))


def to_request(settings: CompareSettings) -> ChatRequest:
    """The :class:`~planner.serving.requests.ChatRequest` the settings describe.

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
