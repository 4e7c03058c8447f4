"""The one link codec of a settings dataclass, derived from its fields' declarations (:mod:`planner.fields`).

A page's codec is a :class:`SettingsCodec` of its settings' default: the keys are the declared link keys, each value
is read by its field's :meth:`~planner.fields.Setting.parse` and written by its :meth:`~planner.fields.Setting.
format`, and only values that differ from the default are written. Reading follows :mod:`planner.links.rules`
(bounded, a repeated key warns, unknown keys listed by name), then sets the fields one at a time, so a value the
settings refuse with the others (fewer prompts than shared prefixes) is named and left at its default.

A page whose link also carries the scenarios (Live Compare, Load Test, Performance) reads only its own keys and
leaves the others to the scenario codec, which reads the same query with ``foreign`` = these keys
(:func:`planner.links.budget.decode`) and names a key neither knows; :meth:`SettingsCodec.decode_link` and
:meth:`SettingsCodec.encode_link` are that whole link. Keys that belong to the page but to no settings field (the
Sizing page's ``row``, the Performance page's ``axis``) are ``extra`` settings, read and written beside them.

Example:
    >>> from planner.compare.settings import CompareSettings
    >>> codec = SettingsCodec(CompareSettings())
    >>> codec.encode(CompareSettings(max_tokens=64))
    {'max_tokens': '64'}
    >>> codec.decode({"max_tokens": "0"}).warnings[0][:29]
    "max_tokens='0' is not valid: "
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from planner.capacity.scenario import Scenario
from planner.errors import InvalidParameterError
from planner.fields import Declared, Setting, Text, declared, get, replace
from planner.links import budget
from planner.links.rules import decode_query, show

__all__ = ["Decoded", "DecodedLink", "SettingsCodec"]

S = TypeVar("S")


@dataclass(frozen=True)
class Decoded(Generic[S]):
    """What a query string holds for one page's settings.

    Attributes:
        settings: The settings (the default's values where the link is silent or wrong).
        warnings: One line per bad or ignored parameter, naming it and what is accepted.
        extras: The values of the codec's ``extra`` keys, by key (their defaults where the link is silent or wrong).
    """

    settings: S
    warnings: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DecodedLink(Generic[S]):
    """A whole link of a page that carries the scenarios too.

    Attributes:
        state: The scenario codec's answer (:func:`planner.links.budget.decode` with ``foreign`` = the page's keys).
        settings: The page's settings.
        warnings: The scenario codec's warnings (a key neither codec knows is named there), then the page's.
        extras: The page's ``extra`` values.
    """

    state: budget.DecodedState
    settings: S
    warnings: tuple[str, ...]
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Extra:
    """An ``extra`` key: its setting and its default."""

    setting: Setting
    default: Any


class SettingsCodec(Generic[S]):
    """The link codec of one settings dataclass (see the module docstring).

    Args:
        default: The settings a page opens with (a field a link does not give keeps its value here).
        only: The declared fields (by name) the link carries; None = every linked field.
        extra: Key → ``(setting, default)`` of the page's values that are no settings field.
        shared: The link also carries the scenarios: keys not the page's are left to the scenario codec.
        max_params: Most parameters read.

    Attributes:
        keys: Field name → link key, in the order they are written (then the extra keys under their own names).
        fields: The declared fields the link carries.
    """

    def __init__(
        self,
        default: S,
        *,
        only: Iterable[str] | None = None,
        extra: Mapping[str, tuple[Setting, Any]] | None = None,
        shared: bool = True,
        max_params: int = 32,
    ) -> None:
        wanted = None if only is None else tuple(only)
        linked = [d for d in declared(type(default)) if d.setting.linked]
        self.fields: tuple[Declared, ...] = tuple(
            linked
            if wanted is None
            else sorted((d for d in linked if d.name in wanted), key=lambda d: wanted.index(d.name))
        )
        self.default = default
        self.extra = {key: _Extra(spec, value) for key, (spec, value) in (extra or {}).items()}
        self.shared = shared
        self.max_params = max_params
        self.keys: dict[str, str] = {d.name: d.key for d in self.fields} | {key: key for key in self.extra}
        self._by_key: dict[str, Declared] = {k: d for d in self.fields for k in (d.key, *d.setting.old_keys)}
        self._own = frozenset(self._by_key) | frozenset(self.extra)

    def functions(self) -> tuple[dict[str, str], Callable, Callable, Callable, Callable, Callable]:
        """What a page's link module exports, in this order: :attr:`keys`, :meth:`encode`, :meth:`decode`,
        :meth:`decode_link`, :meth:`encode_link`, :meth:`parse_field` (``KEYS, encode, ... = CODEC.functions()``)."""
        return self.keys, self.encode, self.decode, self.decode_link, self.encode_link, self.parse_field

    def parse_field(self, name: str, text: str) -> Any:
        """One setting (a field name of :attr:`keys`, or an extra key) from its text, as a link gives it (a page's
        number boxes read typed text with it too).

        Raises:
            BadValue: the text is not acceptable; ``accepted`` says what is.
        """
        if name in self.extra:
            return self.extra[name].setting.parse(text)
        d = next((d for d in self.fields if d.name == name), None)
        if d is None:
            raise KeyError(name)
        return d.setting.parse(text)

    def encode(self, settings: S, **extras: Any) -> dict[str, str]:
        """Query parameters of ``settings`` (and the ``extra`` values given): only what differs from the defaults."""
        out: dict[str, str] = {}
        for d in self.fields:
            value = get(settings, d.name)
            carried = tuple(get(settings, name) for name in _carries(d.setting))
            if value == get(self.default, d.name) and carried == tuple(
                get(self.default, n) for n in _carries(d.setting)
            ):
                continue
            text = d.setting.format((value, *carried) if carried else value)
            if text is not None:
                out[d.key] = text
        for key, spec in self.extra.items():
            value = extras.get(key, spec.default)
            if value != spec.default:
                text = spec.setting.format(value)
                if text is not None:
                    out[key] = text
        return out

    def decode(self, query: Mapping[str, str | Sequence[str]]) -> Decoded[S]:
        """Settings (and extra values) from query parameters; never raises. A repeated key warns and its last value
        is used; a value the settings refuse warns and keeps the default."""
        if self.shared:
            query = {key: value for key, value in query.items() if key in self._own}
        keys = {key: key for key in (*self._by_key, *self.extra)}
        values, warnings = decode_query(query, keys, self._parse_key, max_params=self.max_params)
        extras = {key: spec.default for key, spec in self.extra.items()}
        settings = self.default
        for key, value in values.items():
            if key in self.extra:
                extras[key] = value
                continue
            d = self._by_key[key]
            names = (d.name, *_carries(d.setting))
            changes = dict(zip(names, value if len(names) > 1 else (value,), strict=True))
            try:  # one field at a time, so one that does not go with the rest is named
                settings = replace(settings, **changes)
            except InvalidParameterError as exc:
                warnings.append(
                    f"{key}={show(_text(query[key]))} is not valid: expected {exc.accepted}; the default is used"
                )
        return Decoded(settings, tuple(warnings), extras)

    def _parse_key(self, key: str, text: str) -> Any:
        """The value of ``key``'s text (raising :class:`~planner.errors.BadValue`)."""
        if key in self.extra:
            return self.extra[key].setting.parse(text)
        return self._by_key[key].setting.parse(text)

    def decode_link(self, query: Mapping[str, str | Sequence[str]]) -> DecodedLink[S]:
        """The whole link: the scenarios (:func:`planner.links.budget.decode`) and the page's settings; never
        raises."""
        state = budget.decode(query, foreign=tuple(self._own))
        own = self.decode(query)
        return DecodedLink(state, own.settings, state.warnings + own.warnings, own.extras)

    def encode_link(
        self,
        scenarios: Sequence[Scenario],
        settings: S,
        *,
        min_context: int | None = None,
        max_context: int | None = None,
        **extras: Any,
    ) -> dict[str, str]:
        """The whole link: :func:`planner.links.budget.encode` of the scenarios, then :meth:`encode`.

        Raises:
            InvalidParameterError: no scenario, or more than :data:`planner.links.budget.MAX_SCENARIOS`.
        """
        out = budget.encode(scenarios, min_context=min_context, max_context=max_context)
        return out | self.encode(settings, **extras)


def _carries(spec: Setting) -> tuple[str, ...]:
    return spec.carries if isinstance(spec, Text) else ()


def _text(raw: object) -> object:
    """The value a warning echoes: the last of a repeated key's values."""
    return raw[-1] if isinstance(raw, list | tuple) and raw else raw
