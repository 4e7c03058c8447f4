"""The package's exception tree: every error class of ``planner``, each deriving from :class:`PlannerError`.

Every error the planner raises on purpose derives from :class:`PlannerError`, so pages and the CLI
catch one base class and show its one-line message. The tree::

    PlannerError
    ├── InvalidParameterError (ValueError)   a value outside what is accepted
    │   └── MalformedTextError               user text that does not parse as JSON or TOML
    ├── BadValue (ValueError)                text a text parser refuses (the caller names the parameter)
    ├── UnknownGPUError (LookupError)
    ├── UnknownModelError (LookupError)
    ├── UnsupportedModelError (ValueError)
    ├── HubError                             a model id not resolved from the Hub (planner.catalog.hub)
    │   ├── ModelNotFoundError (UnknownModelError)
    │   ├── GatedModelError
    │   ├── HubUnavailableError
    │   └── NotTextGenerationError
    ├── EndpointConfigError (ValueError)     a bad endpoints.toml (planner.serving.endpoints)
    ├── MissingAPIKeyError (LookupError)     an endpoint's API-key variable is set nowhere
    ├── MetricsParseError (ValueError)       a /metrics body that is not Prometheus text
    ├── IdleTimeoutError                     a stream that went quiet (planner.serving.backends)
    └── RayUnavailableError                  Ray workers asked for and not available

Imports nothing from ``planner``.
"""

from __future__ import annotations

__all__ = [
    "BadValue",
    "EndpointConfigError",
    "GatedModelError",
    "HubError",
    "HubUnavailableError",
    "IdleTimeoutError",
    "InvalidParameterError",
    "MalformedTextError",
    "MetricsParseError",
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "NotTextGenerationError",
    "PlannerError",
    "RayUnavailableError",
    "UnknownGPUError",
    "UnknownModelError",
    "UnsupportedModelError",
    "shown",
]


def shown(value: object) -> str:
    """``repr(value)`` cut to 80 characters (``...`` at the end): how a message echoes a value it refuses, so a pasted
    2,000-character value keeps the message one short line."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class PlannerError(Exception):
    """Base class of every error raised by ``planner``."""


class InvalidParameterError(PlannerError, ValueError):
    """A parameter has a value outside what is accepted.

    The message names the parameter, the bad value and what is accepted, on one line; an empty or blank text is
    called empty (``name is empty: expected ...``), not shown as a value.
    """

    def __init__(self, name: str, value: object, accepted: str) -> None:
        self.name = name
        self.value = value
        self.accepted = accepted
        if isinstance(value, str) and not value.strip():  # name='' reads as a bad value; nothing was given
            super().__init__(f"{name} is empty: expected {accepted}")
            return
        super().__init__(f"{name}={shown(value)} is not valid: expected {accepted}")


class BadValue(PlannerError, ValueError):
    """Text that is not an accepted value, refused by a text parser (:mod:`planner.values`, a link codec, a list
    format) that does not know the name it was given under; ``accepted`` says what is accepted, and the caller names
    the parameter (a link key, a flag, a box's label) in its own message.
    """

    def __init__(self, accepted: str) -> None:
        super().__init__(accepted)
        self.accepted = accepted


class MalformedTextError(InvalidParameterError):
    """User-supplied text (a file, an upload, a pasted config) that does not parse as JSON or TOML.

    The message names the input, where and why it fails, and what is accepted, on one line:
    ``bad_runs.jsonl line 1: not valid JSON (Expecting value); expected JSON or JSON Lines ...``. ``name`` holds the
    input and the line (``"bad_runs.jsonl line 1"``), ``value`` the problem (``"not valid JSON (Expecting value)"``).
    """

    def __init__(self, name: str, problem: str, accepted: str) -> None:
        self.name = name
        self.value = problem
        self.accepted = accepted
        PlannerError.__init__(self, f"{name}: {problem}; expected {accepted}")


class RayUnavailableError(PlannerError):
    """A run asked for Ray workers and Ray is not installed, its cluster cannot be reached, or the workers cannot
    be placed; the message says which and what to do (e.g. ``pip install -r requirements-ray.txt``)."""


class UnknownGPUError(PlannerError, LookupError):
    """A GPU name matches nothing in the catalog."""


class UnknownModelError(PlannerError, LookupError):
    """A model id matches nothing in the catalog (or any other configured source)."""


class UnsupportedModelError(PlannerError, ValueError):
    """A model config cannot be interpreted (missing fields, unknown architecture)."""


class HubError(PlannerError):
    """A model id could not be resolved from the Hub; the message says why and what to do.

    Attributes:
        model_id: the id asked for.
    """

    def __init__(self, model_id: str, message: str) -> None:
        self.model_id = model_id
        super().__init__(message)


class ModelNotFoundError(HubError, UnknownModelError):
    """The repo does not exist, or is private and no token was given."""


class GatedModelError(HubError):
    """The repo is gated: its license must be accepted and a token given."""


class HubUnavailableError(HubError):
    """The Hub could not be reached (offline, outage, timeout) and nothing is cached."""


class NotTextGenerationError(HubError):
    """The repo holds something the planner does not size: an encoder, an image model, no config."""


class EndpointConfigError(PlannerError, ValueError):
    """An ``endpoints.toml`` file cannot be read or has bad entries.

    The message holds one line per bad entry, naming the entry, the field and what is accepted;
    ``problems`` holds the same lines as a tuple.
    """

    def __init__(self, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class MissingAPIKeyError(PlannerError, LookupError):
    """An endpoint names an API-key variable that is set neither in the environment nor in the secrets."""


class MetricsParseError(PlannerError, ValueError):
    """A ``/metrics`` body is not Prometheus text; the message is one line naming the parser's complaint."""


class IdleTimeoutError(PlannerError):
    """No stream item arrived within the idle limit (SSE comments and keep-alives do not count)."""
