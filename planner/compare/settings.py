"""The settings of a Live Compare run: what the page's widgets hold and a link restores, and the request they describe.

:class:`CompareSettings` is the one description of a run; :data:`DEFAULT` is what the page opens with. The URL
codec (:mod:`planner.links.compare`) only writes and reads these settings.

Example:
    >>> settings = CompareSettings(prompt="Hi", stop=parse_stop("###, END"))
    >>> to_request(settings).stop
    ('###', 'END')
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.serving.requests import ChatRequest

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


def parse_stop(text: str) -> tuple[str, ...]:
    """Stop strings from comma-separated text: each part stripped of surrounding spaces, empty parts dropped.

    Example:
        >>> parse_stop("###, END,,")
        ('###', 'END')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


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
