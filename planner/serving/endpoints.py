"""Serving endpoints to compare: what they are, where they listen, and where their API key lives.

An endpoint is declared in ``endpoints.toml``::

    [[endpoint]]
    name = "vllm-a"                   # unique, shown in tables
    kind = "vllm"                     # vllm | tgi | openai | sglang | llamacpp
    base_url = "http://127.0.0.1:8000" # server root; a trailing /v1 is accepted and removed
    model = "Qwen/Qwen3-0.6B"         # optional: discovered from /v1/models or /info when absent
    api_key_env = "VLLM_API_KEY"      # optional: NAME of the env var (or secrets key) holding the key

or on the command line as ``--endpoint NAME=KIND:URL``. The key itself is never stored in an
:class:`Endpoint`, never logged and never put in a repr; error messages are scrubbed of it (:func:`redact`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from planner.errors import BadValue, EndpointConfigError, InvalidParameterError, MalformedTextError, MissingAPIKeyError
from planner.parsing import toml_table
from planner.values import parse_list

__all__ = [
    "KINDS",
    "Endpoint",
    "api_key",
    "check_new_name",
    "format_endpoint_names",
    "load_endpoints",
    "parse_endpoint_flag",
    "parse_endpoint_names",
    "redact",
]

#: Server kinds the clients know how to talk to.
KINDS: tuple[str, ...] = ("vllm", "tgi", "openai", "sglang", "llamacpp")

#: An endpoint name, at most 64 characters: what a link carries (:func:`parse_endpoint_names`), so every configured
#: endpoint can be put in a link and a URL, a port or a key cannot be a name. ``\Z``, not ``$``: ``$`` also matches
#: before a final newline.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
#: Most endpoint names a list (a link's ``ep``) selects.
MAX_ENDPOINTS = 16
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def _normalize_url(url: str) -> str:
    """Strip whitespace, trailing slashes and one trailing ``/v1`` (clients add the API prefix)."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


#: Cloud instance-metadata services: a form or file must never make the server call them (they hand out
#: credentials). 169.254.0.0/16 and fe80::/10 are link-local; fd00:ec2::254 is AWS's IPv6 metadata address.
_METADATA_NETWORKS = (
    ipaddress.ip_network("169.254.0.0/16"),
    ipaddress.ip_network("fe80::/10"),
    ipaddress.ip_network("fd00:ec2::254/128"),
)
_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"})


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` names, read as the system resolver reads it, or None for a host name.

    ``ipaddress`` accepts only dotted-quad IPv4, but ``getaddrinfo`` (through ``inet_aton``) also takes one decimal
    number (``2852039166``), hex (``0xa9fea9fe``), octal parts (``0251.0376.0251.0376``) and short forms
    (``169.254.43518``), all of which reach 169.254.169.254.
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not re.fullmatch(r"[0-9a-fA-FxX.]+", host):
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_metadata_host(host: str) -> bool:
    host = host.strip("[]").lower().rstrip(".")
    if host in _METADATA_NAMES:
        return True
    address = _ip(host)
    return address is not None and any(address in network for network in _METADATA_NETWORKS)


def _redact(url: str) -> str:
    """``url`` cut to 120 characters, with any ``user:password@`` removed, for error messages."""
    url = re.sub(r"//[^/@\s]*@", "//<credentials>@", url)
    return url if len(url) <= 120 else url[:117] + "..."


def _check(name: str, kind: str, base_url: str, api_key_env: str | None) -> None:
    if not _NAME_RE.match(name):
        raise InvalidParameterError(
            "name", name, "up to 64 letters, digits, '_', '.', '-' (not starting with a symbol), e.g. my-vllm"
        )
    if kind not in KINDS:
        raise InvalidParameterError("kind", kind, f"one of {', '.join(KINDS)}")
    if not re.match(r"^https?://[^/\s:@]+(:\d+)?(/\S*)?$", base_url):
        raise InvalidParameterError(
            "base_url", _redact(base_url), "an http:// or https:// URL such as http://127.0.0.1:8000"
        )
    host = urlsplit(base_url).hostname or ""
    if not host.isascii():
        # HTTP clients IDNA-map a host before resolving it: "169。254。169。254" (ideographic full stops) becomes
        # 169.254.169.254, so only ASCII hosts are checked and accepted (punycode spells international names).
        raise InvalidParameterError(
            "base_url", _redact(base_url), "an ASCII host name or address (punycode for international names)"
        )
    if _is_metadata_host(host):
        raise InvalidParameterError(
            "base_url", _redact(base_url), "a serving endpoint; link-local and cloud-metadata addresses are refused"
        )
    if api_key_env is not None and not _ENV_RE.match(api_key_env):
        # the value is not echoed: a key pasted here by mistake must not reach a log
        raise InvalidParameterError(
            "api_key_env", "<not shown>", "the NAME of an environment variable, e.g. VLLM_API_KEY"
        )


@dataclass(frozen=True)
class Endpoint:
    """One serving endpoint.

    Attributes:
        name: Unique display name.
        kind: Server kind, one of :data:`KINDS`.
        base_url: Server root (``http(s)://host:port[/prefix]``), without the ``/v1`` API prefix.
        model: Served model id to request; None = discover it (``/v1/models`` or TGI ``/info``).
        api_key_env: Name of the environment variable (or secrets key) that holds the API key; None = no key.

    Raises:
        InvalidParameterError: a field has a value outside what is accepted.
    """

    name: str
    kind: str
    base_url: str
    model: str | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _normalize_url(self.base_url))
        _check(self.name, self.kind, self.base_url, self.api_key_env)

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible API root, ``base_url + "/v1"``."""
        return self.base_url + "/v1"


class _EndpointEntry(BaseModel):
    """Schema of one ``[[endpoint]]`` table (the JSON/TOML boundary)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    kind: str
    base_url: str
    model: str | None = None
    api_key_env: str | None = None


_ACCEPTED = {
    "name": "a string of letters, digits, '_', '.', '-'",
    "kind": f"one of {', '.join(KINDS)}",
    "base_url": "an http:// or https:// URL string",
    "model": "a model id string (or leave it out to discover it)",
    "api_key_env": "the NAME of an environment variable, e.g. VLLM_API_KEY",
}


def _shown(value: object) -> str:
    """``repr(value)`` cut to 60 characters: one short line, whatever a file holds (a newline, 10,000 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_endpoints(path: str | Path) -> tuple[Endpoint, ...]:
    """Read and validate an ``endpoints.toml`` file.

    Args:
        path: The TOML file, holding an array of ``[[endpoint]]`` tables.

    Returns:
        The endpoints in file order.

    Raises:
        EndpointConfigError: the file is missing or not TOML, has no ``[[endpoint]]`` table, or has bad
            entries (one line per bad entry: ``endpoint[i] (name): field: problem; expected ...``), or two
            entries share a name.

    Example:
        >>> load_endpoints("endpoints.toml")  # doctest: +SKIP
        (Endpoint(name='vllm-a', kind='vllm', base_url='http://127.0.0.1:8000', model=None, api_key_env=None),)
    """
    path = Path(path)
    try:
        data = toml_table(path.read_bytes(), name=str(path), accepted="[[endpoint]] tables in TOML")
    except OSError as exc:
        raise EndpointConfigError((f"{path}: cannot read: {exc.strerror or exc}",)) from exc
    except MalformedTextError as exc:
        raise EndpointConfigError((str(exc),)) from exc
    entries = data.get("endpoint")
    if not isinstance(entries, list) or not entries:
        raise EndpointConfigError((f"{path}: no [[endpoint]] tables found",))
    endpoints: list[Endpoint] = []
    problems: list[str] = []
    for i, raw in enumerate(entries):
        label = f"{path}: endpoint[{i}]"
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            name = raw["name"]
            label += f" ({name})" if _NAME_RE.match(name) and len(name) <= 40 else f" ({_shown(name)})"
        try:
            entry = _EndpointEntry.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"]) or "entry"
                if err["type"] == "extra_forbidden":
                    problems.append(f"{label}: unknown field {field!r}; accepted: {', '.join(_ACCEPTED)}")
                elif err["type"] == "missing":
                    problems.append(f"{label}: {field} is missing; expected {_ACCEPTED.get(field, 'a value')}")
                else:
                    accepted = _ACCEPTED.get(field, "a value")
                    shown = "<not shown>" if field == "api_key_env" else _shown(err.get("input"))
                    problems.append(f"{label}: {field}={shown} is not valid; expected {accepted}")
            continue
        try:
            endpoints.append(Endpoint(**entry.model_dump()))
        except InvalidParameterError as exc:
            shown = exc.value if exc.name == "api_key_env" else _shown(exc.value)
            problems.append(f"{label}: {exc.name}={shown} is not valid; expected {exc.accepted}")
    seen: set[str] = set()
    for ep in endpoints:
        if ep.name in seen:
            problems.append(f"{path}: name {ep.name!r} is used twice; expected unique names")
        seen.add(ep.name)
    if problems:
        raise EndpointConfigError(tuple(problems))
    return tuple(endpoints)


def check_new_name(name: str, taken: Mapping[str, str]) -> None:
    """Refuse a name already in use, before the endpoint joins the others (a run needs unique names).

    Args:
        name: the new endpoint's name.
        taken: the names in use, each with where it is from (``"endpoints.toml"``, ``"added in this session"``).

    Raises:
        InvalidParameterError: ``name`` is in ``taken``; the message says where it is used and asks for another.
    """
    if name in taken:
        raise InvalidParameterError("name", name, f"a name not already used (it is {taken[name]}); pick another")


def parse_endpoint_flag(text: str) -> Endpoint:
    """Parse a CLI ``--endpoint NAME=KIND:URL`` value, e.g. ``vllm-a=vllm:http://127.0.0.1:8000``.

    Args:
        text: ``NAME=KIND:URL``; the URL must be http(s).

    Returns:
        The endpoint, with ``model=None`` (discovered) and no API key.

    Raises:
        InvalidParameterError: (parameter ``endpoint``) the text is not ``NAME=KIND:URL``, or a part is invalid.
    """
    name, sep, rest = text.partition("=")
    kind, sep2, url = rest.partition(":")
    if not sep or not sep2 or not name.strip() or not url.strip():
        raise InvalidParameterError("endpoint", _redact(text), "NAME=KIND:URL, e.g. a=vllm:http://127.0.0.1:8000")
    try:
        return Endpoint(name=name.strip(), kind=kind.strip().lower(), base_url=url.strip())
    except InvalidParameterError as exc:
        raise InvalidParameterError("endpoint", _redact(text), f"NAME=KIND:URL with {exc.name} {exc.accepted}") from exc


#: Every API key :func:`api_key` has returned in this process, so :func:`redact` can scrub messages of them (a
#: server may quote the Authorization header in an error body). Shorter strings are not keys worth scrubbing and
#: would mangle ordinary words.
_SEEN_KEYS: set[str] = set()
_MIN_KEY_CHARS = 8
#: A bearer credential as an Authorization header carries it (RFC 6750 token68 characters, 8 or more so that prose
#: such as "bearer token required" is left alone).
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}")


def redact(text: str) -> str:
    """``text`` with every API key read through :func:`api_key` replaced by ``<redacted>``, and any credential
    after ``Bearer`` too (a key from elsewhere, quoted with its header's scheme).

    Example:
        >>> redact("invalid key: Bearer abc.def.ghi")
        'invalid key: Bearer <redacted>'
    """
    for key in sorted(_SEEN_KEYS, key=len, reverse=True):
        if key in text:
            text = text.replace(key, "<redacted>")
    return _BEARER.sub(r"\1\2<redacted>", text)


def _seen(key: str) -> str:
    if len(key) >= _MIN_KEY_CHARS:
        _SEEN_KEYS.add(key)
    return key


def api_key(endpoint: Endpoint, secrets: Mapping[str, Any] | None = None) -> str | None:
    """The API key of ``endpoint``, read from ``secrets`` (e.g. ``st.secrets``) or else the environment.

    Args:
        endpoint: The endpoint; its ``api_key_env`` names the variable.
        secrets: Optional mapping looked up first under the same name.

    Returns:
        The key, or None when the endpoint needs none (``api_key_env`` is None).

    Raises:
        MissingAPIKeyError: the named variable is set nowhere (the message names the variable, never a value).
    """
    if endpoint.api_key_env is None:
        return None
    name = endpoint.api_key_env
    if secrets is not None and name in secrets and secrets[name]:
        return _seen(str(secrets[name]))
    value = os.environ.get(name)
    if value:
        return _seen(value)
    raise MissingAPIKeyError(f"endpoint {endpoint.name!r}: API key variable {name} is not set (env or secrets)")


def _endpoint_name(text: str) -> str:
    if not _NAME_RE.match(text):
        raise BadValue("an endpoint name")
    return text


def parse_endpoint_names(text: str) -> tuple[str, ...]:
    """Comma-separated endpoint names (a link's ``ep``), duplicates dropped in order.

    Raises:
        BadValue: more than :data:`MAX_ENDPOINTS` names, or a part that is not a name.
    """
    accepted = f"up to {MAX_ENDPOINTS} endpoint names (letters, digits, '_', '.', '-'), comma separated"
    names = parse_list(text, _endpoint_name, accepted=accepted, most=MAX_ENDPOINTS, spaces=False)
    return tuple(dict.fromkeys(names))


def format_endpoint_names(names: Sequence[str]) -> str | None:
    """``"a,b"`` for the valid names of ``names``; None when none is valid."""
    valid = [n for n in names if _NAME_RE.match(n)]
    return ",".join(valid) if valid else None
