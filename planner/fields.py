"""Settings declared once: each field of a settings dataclass carries its :class:`Setting`, and everything else is
derived from it.

A settings dataclass (:class:`~planner.loadtest.settings.LoadSettings`, :class:`~planner.sizing.settings.
SizingSettings`, …) declares a field with :func:`setting`: its default, and one of :class:`Number`, :class:`Flag`,
:class:`Choice` or :class:`Text` holding its range, its link key, its command-line flags and help, and its widget's
label. From that one declaration:

* :func:`validate` checks every declared field of an instance (``__post_init__`` calls it) and raises
  :class:`~planner.errors.InvalidParameterError` naming the field, its value and what it accepts;
* :meth:`Setting.parse` / :meth:`Setting.format` read and write the text of a link or a number box (the link codec
  :class:`planner.links.codec.SettingsCodec` is built from :func:`declared`);
* :func:`add_arguments` adds the argparse options and :func:`from_args` builds the settings from them;
* :func:`widget` gives a page its widget's label, help, kind and bounds.

Two ranges, declared in the same place: what the value may hold (``low``/``high``: the type's range, checked by
:func:`validate`; a simulated or imported workload may need all of it, e.g. a trace's 200,000-token prompt) and
what a user may type (``entry``: a link or a number box, narrower where a link must not start an unbounded run).
The command line takes the type's range: ``bench --num-prompts 20000`` is a real benchmark.

A nested settings dataclass (a field whose default is a dataclass, such as
:class:`~planner.loadtest.settings.SweepSettings` in ``LoadSettings``) is flattened, as vidur's
``config/flat_dataclass.py`` flattens its configs: its fields are read, written and flagged by their own names, which
are unique over the whole tree. The module imports nothing from ``planner`` but :mod:`planner.errors` and
:mod:`planner.values` (the ground floor).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     n: int = setting(4, Number(low=1, integer=True, entry=(1, 64), flags=("--n",), help="how many"))
    ...     def __post_init__(self):
    ...         validate(self)
    >>> declared(Demo)[0].setting.parse(" 8 ")
    8
    >>> Demo(n=0)
    Traceback (most recent call last):
    ...
    planner.errors.InvalidParameterError: n=0 is not valid: expected an integer ≥ 1
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from planner.errors import BadValue, InvalidParameterError
from planner.values import format_value, parse_choice, parse_flag, parse_number

__all__ = [
    "UNSET",
    "Choice",
    "Declared",
    "Flag",
    "Number",
    "Setting",
    "Text",
    "Widget",
    "add_arguments",
    "declared",
    "find",
    "flag_of",
    "from_args",
    "get",
    "replace",
    "setting",
    "validate",
    "widget",
]

#: Metadata key of a field's :class:`Setting`.
_KEY = "setting"


class _Unset:
    """The type of :data:`UNSET`."""

    def __repr__(self) -> str:
        return "UNSET"


#: ``cli_default`` when the flag's default is the field's.
UNSET: Any = _Unset()


@dataclass(frozen=True, kw_only=True)
class Setting:
    """What every kind of setting declares besides its range.

    Attributes:
        key: Its link (URL) key; None = the field's name.
        linked: False: never written to or read from a link (a file's content, where the client runs).
        old_keys: Earlier link keys that still decode to it.
        flags: Its command-line flags, the first named in messages; () = no flag.
        help: What it means, one phrase (the flag's help and the widget's).
        label: The widget's label; None = the field's name.
        cli_default: The flag's default where it is not the field's (``vllm bench serve``'s own default).
        group: Title of the argparse group its flag goes in; None = the command's own options.
        metavar: The flag's metavar.
        required: The command needs the flag.
    """

    key: str | None = None
    linked: bool = True
    old_keys: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    help: str = ""
    label: str | None = None
    cli_default: Any = UNSET
    group: str | None = None
    metavar: str | None = None
    required: bool = False

    #: The widget that shows it: ``number`` (a text box read by :meth:`parse`), ``toggle``, ``select``, ``text``.
    kind: ClassVar[str] = "text"

    def parse(self, text: str) -> Any:
        """Its value from a link's (or a box's) text.

        Raises:
            BadValue: the text is not accepted; ``accepted`` says what is.
        """
        raise NotImplementedError

    def format(self, value: Any) -> str | None:
        """Its link text for ``value``; None leaves it out of the link."""
        return "none" if value is None else format_value(value)

    def check(self, name: str, value: Any) -> None:
        """Raise :class:`~planner.errors.InvalidParameterError` when ``value`` is not one it holds."""

    def argument(self, default: Any) -> dict[str, Any]:
        """``add_argument`` keywords besides the flags, ``dest`` and ``help``."""
        return {"default": default}


@dataclass(frozen=True, kw_only=True)
class Number(Setting):
    """A number: an integer or a float, with its range.

    Attributes:
        low / high: The range of the value; None = unbounded on that side (a float with no ``high`` may be ``inf``
            unless ``finite``).
        low_open / high_open: The bound itself is excluded.
        integer: Whole numbers only (``int``, never ``bool``).
        optional: None is a value (no cap, automatic).
        finite: ``inf`` is not a value.
        entry: ``(low, high)`` a typed value (a link, a box) must lie in, where narrower than the value's range; the
            low end stays open when it equals an open ``low``.
        typed_inf: A link or box may say ``inf`` (a burst request rate).
        typed_none: A link or box may say ``none`` (or be empty); None = as ``optional`` (a run's duration cap may
            be None from the command line, never from a link, so every run a link starts is bounded).
        unit: What the number counts, in the accepted text (``seconds > 0``).
        accepted: The accepted text of the value's range, where the derived one says less.
        step: A widget's step.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    optional: bool = False
    finite: bool = False
    entry: tuple[float, float] | None = None
    typed_inf: bool = False
    typed_none: bool | None = None
    unit: str = ""
    accepted: str = ""
    step: float | None = None

    kind: ClassVar[str] = "number"

    def __post_init__(self) -> None:
        low, high = self.entry_range
        if low is None or high is None or (self.high_open and self.entry is None):
            raise TypeError("a Number needs a closed range a link can bound: give entry=(low, high)")

    @property
    def entry_range(self) -> tuple[float, float]:
        """``(low, high)`` of a typed value."""
        return self.entry if self.entry is not None else (self.low, self.high)  # type: ignore[return-value]

    @property
    def entry_optional(self) -> bool:
        """A typed value may be ``none`` (or empty)."""
        return self.optional if self.typed_none is None else self.typed_none

    def _open(self, low: float) -> bool:
        return self.low_open and low == self.low

    def parse(self, text: str) -> int | float | None:
        low, high = self.entry_range
        return parse_number(
            text,
            low,
            high,
            integer=self.integer,
            optional=self.entry_optional,
            allow_inf=self.typed_inf,
            low_open=self._open(low),
        )

    @property
    def type_accepted(self) -> str:
        """What the value's range accepts, in words: ``an integer ≥ 1``, ``a number in [0, 1)``."""
        if self.accepted:
            return self.accepted
        what = "an integer" if self.integer else (self.unit or "a number")
        low, high = self.low, self.high
        if low is not None and high is not None:
            shown = (f"{low:g}", f"{high:g}")
            return f"{what} in {'(' if self.low_open else '['}{shown[0]}, {shown[1]}{')' if self.high_open else ']'}"
        if low is not None:
            return f"{what} {'>' if self.low_open else '≥'} {low:g}"
        if high is not None:
            return f"{what} {'<' if self.high_open else '≤'} {high:g}"
        return what

    def holds(self, value: Any) -> bool:
        """``value`` lies in the value's range."""
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, int if self.integer else int | float):
            return False
        if math.isnan(value) or (math.isinf(value) and (self.finite or value < 0)):
            return False
        low, high = self.low, self.high
        if low is not None and (value < low or (self.low_open and value == low)):
            return False
        return not (high is not None and (value > high or (self.high_open and value == high)))

    def check(self, name: str, value: Any) -> None:
        if not self.holds(value):
            raise InvalidParameterError(name, value, self.type_accepted)

    def argument(self, default: Any) -> dict[str, Any]:
        return {"default": default, "type": int if self.integer else float}


@dataclass(frozen=True, kw_only=True)
class Flag(Setting):
    """True or false.

    Attributes:
        negated: Its flag turns it off (``--no-scrape-metrics`` for ``scrape_metrics``).
    """

    negated: bool = False

    kind: ClassVar[str] = "toggle"

    def parse(self, text: str) -> bool:
        return parse_flag(text)

    def check(self, name: str, value: Any) -> None:
        if not isinstance(value, bool):
            raise InvalidParameterError(name, value, "true or false")

    def argument(self, default: Any) -> dict[str, Any]:
        return {"action": "store_false" if self.negated else "store_true", "default": default}


@dataclass(frozen=True, kw_only=True)
class Choice(Setting):
    """One of a fixed set of words.

    Attributes:
        choices: The words, in the order a widget lists them.
        names: ``(word, what a widget shows for it)`` where the word alone says too little.
        cli_choices: The words its flag takes, where fewer (a choice that needs the page, such as ``examples``).
        radio: A widget shows the words side by side rather than in a drop-down.
        accepted: What it accepts, in words, where ``one of a, b, c`` says less.
    """

    choices: tuple[str, ...]
    names: tuple[tuple[str, str], ...] = ()
    cli_choices: tuple[str, ...] | None = None
    radio: bool = False
    accepted: str = ""

    kind: ClassVar[str] = "select"

    @property
    def type_accepted(self) -> str:
        """What it accepts, in words: ``one of a, b, c``."""
        return self.accepted or "one of " + ", ".join(self.choices)

    def name_of(self, choice: str) -> str:
        """What a widget shows for ``choice``."""
        return dict(self.names).get(choice, choice)

    def parse(self, text: str) -> str:
        return parse_choice(text.strip(), self.choices)  # type: ignore[return-value]

    def check(self, name: str, value: Any) -> None:
        if value not in self.choices:
            raise InvalidParameterError(name, value, self.type_accepted)

    def argument(self, default: Any) -> dict[str, Any]:
        return {"default": default, "choices": self.cli_choices if self.cli_choices is not None else self.choices}


@dataclass(frozen=True, kw_only=True)
class Text(Setting):
    """A value written as text in its own format (a list, SLOs, names).

    Attributes:
        read: Text → value (raising :class:`~planner.errors.BadValue`); None = the text itself.
        write: Value → link text (None leaves it out of the link); None = :func:`~planner.values.format_value`.
        carries: Other fields written under the same key: ``read`` returns ``(value, *their values)`` and ``write``
            takes them the same way (a GPU list with each GPU's node size).
        nargs: The flag's ``nargs`` (``+`` for ``--goodput ttft:500 tpot:50``); ``append``: a repeatable flag.
        valid: Whether a value is one the field holds; None = any.
        accepted: What ``valid`` accepts, in words.
    """

    read: Callable[[str], Any] | None = None
    write: Callable[..., str | None] | None = None
    carries: tuple[str, ...] = ()
    nargs: str | None = None
    valid: Callable[[Any], bool] | None = None
    accepted: str = ""

    def check(self, name: str, value: Any) -> None:
        if self.valid is not None and not self.valid(value):
            raise InvalidParameterError(name, value, self.accepted)

    def parse(self, text: str) -> Any:
        return text if self.read is None else self.read(text)

    def format(self, value: Any) -> str | None:
        if self.write is not None:
            return self.write(*value) if self.carries else self.write(value)
        return super().format(value)

    def argument(self, default: Any) -> dict[str, Any]:
        if self.nargs == "append":
            return {"action": "append", "default": []}
        if self.nargs is not None:
            return {"nargs": self.nargs, "default": []}
        return {"default": None if self.read is not None else default}  # text to read; None keeps the field's


def setting(default: Any, spec: Setting, **field_options: Any) -> Any:
    """A dataclass field holding ``default`` and declared by ``spec`` (``dataclasses.field`` with its metadata).

    Args:
        default: The field's default (an immutable value).
        spec: Its declaration.
        **field_options: Other ``dataclasses.field`` options (``repr=False``).
    """
    return dataclasses.field(default=default, metadata={_KEY: spec}, **field_options)


@dataclass(frozen=True)
class Declared:
    """One declared field of a settings dataclass, nested ones included.

    Attributes:
        name: The field's name, unique over the nesting (the name in messages, flags' ``dest`` and :func:`get`).
        path: Attribute names from the outer settings to the field (``("sweep", "sweep_max")``).
        setting: Its declaration.
        default: Its default.
    """

    name: str
    path: tuple[str, ...]
    setting: Setting
    default: Any

    @property
    def key(self) -> str:
        """Its link key."""
        return self.setting.key or self.name

    @property
    def label(self) -> str:
        """Its widget's label."""
        return self.setting.label or self.name


@functools.cache
def declared(cls: type) -> tuple[Declared, ...]:
    """Every declared field of the settings dataclass ``cls``, in field order, nested dataclasses' fields in place.

    Raises:
        TypeError: two fields of the tree have the same name, or two linked fields the same key.
    """
    out: list[Declared] = []
    for f in dataclasses.fields(cls):
        if _KEY in f.metadata:
            out.append(Declared(f.name, (f.name,), f.metadata[_KEY], f.default))
        elif dataclasses.is_dataclass(f.default) and not isinstance(f.default, type):
            out += [
                dataclasses.replace(d, path=(f.name, *d.path), default=d.default) for d in declared(type(f.default))
            ]
    names = [d.name for d in out]
    keys = [k for d in out if d.setting.linked for k in (d.key, *d.setting.old_keys)]
    if len(set(names)) != len(names) or len(set(keys)) != len(keys):
        raise TypeError(f"{cls.__name__}: a name or link key is declared twice")
    return tuple(out)


def find(cls: type, name: str) -> Declared:
    """The declared field ``name`` of ``cls``.

    Raises:
        KeyError: ``cls`` declares no such field.
    """
    found = next((d for d in declared(cls) if d.name == name), None)
    if found is None:
        raise KeyError(name)
    return found


def validate(settings: Any) -> None:
    """Check every declared field of ``settings`` (not its nested dataclasses: they check themselves).

    Raises:
        InvalidParameterError: the first field whose value is outside its range, naming it.
    """
    for f in dataclasses.fields(settings):
        spec = f.metadata.get(_KEY)
        if spec is not None:
            spec.check(f.name, getattr(settings, f.name))


def get(settings: Any, name: str) -> Any:
    """The value of the declared field ``name`` of ``settings``, nested or not."""
    value = settings
    for part in find(type(settings), name).path:
        value = getattr(value, part)
    return value


def replace(settings: Any, **values: Any) -> Any:
    """``settings`` with declared fields (nested or not, by name) replaced; each changed dataclass validates.

    Raises:
        InvalidParameterError: a value the field (or the settings as a whole) does not accept.
    """
    own: dict[str, Any] = {}
    inner: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        path = find(type(settings), name).path
        if len(path) == 1:
            own[name] = value
        else:
            inner.setdefault(path[0], {})[name] = value
    for outer, changes in inner.items():
        own[outer] = replace(getattr(settings, outer), **changes)
    return dataclasses.replace(settings, **own)


def flag_of(cls: type, name: str) -> str:
    """The flags that set the field ``name`` of ``cls``, as a message names them (``--max-concurrency/--concurrency``:
    either may have been typed); ``--name`` when it has none."""
    try:
        flags = find(cls, name).setting.flags
    except KeyError:
        flags = ()
    return "/".join(flags) if flags else "--" + name.replace("_", "-")


def _help(d: Declared, default: Any) -> str:
    """A flag's help: its declared help and its default."""
    text = d.setting.help
    if isinstance(d.setting, Flag) and d.setting.negated:  # the flag turns off what the help describes
        return f"don't {text}".replace("%", "%%")
    if d.setting.required:
        return text.replace("%", "%%")
    if isinstance(d.setting, Text) and not default and d.default:  # a list flag: the field's default, as typed
        text += f" (default: {d.setting.format(d.default)})"
    elif not (default is None or default is False or default == [] or default == ()):
        text += f" (default: {format_value(default)})"
    return text.replace("%", "%%")  # argparse formats help with %


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type, names: Iterable[str] | None = None
) -> None:
    """Add a flag for each declared field of ``cls`` that has flags (only ``names``, when given), with the field's
    name as ``dest``; a field with a ``group`` goes into that argument group (made once per title)."""
    wanted = None if names is None else set(names)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for d in declared(cls):
        spec = d.setting
        if not spec.flags or (wanted is not None and d.name not in wanted):
            continue
        default = d.default if spec.cli_default is UNSET else spec.cli_default
        where: Any = parser
        if spec.group is not None and isinstance(parser, argparse.ArgumentParser):
            where = groups.get(spec.group) or groups.setdefault(spec.group, parser.add_argument_group(spec.group))
        options = spec.argument(default)
        if spec.metavar is not None:
            options["metavar"] = spec.metavar
        elif isinstance(spec, Number | Text) and "action" not in options:  # argparse's own, from the flag
            options["metavar"] = spec.flags[0].lstrip("-").replace("-", "_").upper()
        if spec.required:
            options["required"] = True
        where.add_argument(*spec.flags, dest=d.name, help=_help(d, options.get("default")), **options)


def from_args(cls: type, args: argparse.Namespace, **given: Any) -> Any:
    """The settings ``cls`` that the flags of :func:`add_arguments` hold.

    Args:
        cls: The settings dataclass.
        args: The parsed command line.
        **given: Values by field name (nested or not) that the command works out itself; they win over ``args``.

    Raises:
        InvalidParameterError: a value the settings do not accept, naming the field (:func:`flag_of` names its flag).
    """
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in given:
            kwargs[f.name] = given[f.name]
        elif _KEY not in f.metadata and dataclasses.is_dataclass(f.default) and not isinstance(f.default, type):
            kwargs[f.name] = from_args(type(f.default), args, **given)
        elif _KEY in f.metadata and f.metadata[_KEY].flags and hasattr(args, f.name):
            kwargs |= _from_flag(f.name, f.metadata[_KEY], getattr(args, f.name))
    return cls(**kwargs)


def _from_flag(name: str, spec: Setting, value: Any) -> dict[str, Any]:
    """The field values one flag gives: a :class:`Text` with ``read`` reads its text (a repeated flag's texts joined
    by spaces), and sets the fields it carries too; an empty one keeps the defaults.

    Raises:
        InvalidParameterError: text ``read`` refuses, naming the field.
    """
    if not isinstance(spec, Text) or spec.read is None:
        return {name: value}
    if value is None or value == []:
        return {}
    text = " ".join(value) if isinstance(value, list) else value
    try:
        read = spec.read(text)
    except BadValue as bad:
        raise InvalidParameterError(name, text, bad.accepted) from None
    return dict(zip((name, *spec.carries), read, strict=True)) if spec.carries else {name: read}


@dataclass(frozen=True)
class Widget:
    """What a page needs to draw a setting's widget.

    Attributes:
        label: The widget's label.
        help: Its help.
        kind: ``number``, ``toggle``, ``select`` or ``text``.
        default: The field's default.
        optional: An empty box means None.
        low / high: A number's bounds (what a box accepts); None for other kinds.
        step: A number's step; None = the widget's own.
        choices: A choice's words; () for other kinds.
        names: What the widget shows for each word.
        radio: A choice shown side by side.
    """

    label: str
    help: str
    kind: str
    default: Any
    optional: bool = False
    low: float | None = None
    high: float | None = None
    step: float | None = None
    choices: tuple[str, ...] = ()
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    radio: bool = False

    def show(self, choice: str) -> str:
        """What the widget shows for ``choice``."""
        return self.names.get(choice, choice)


def widget(cls: type, name: str) -> Widget:
    """The widget of the declared field ``name`` of ``cls``.

    Raises:
        KeyError: no such field.
    """
    d = find(cls, name)
    spec = d.setting
    help_text = spec.help[:1].upper() + spec.help[1:] + "." if spec.help else ""
    if isinstance(spec, Number):
        low, high = spec.entry_range
        return Widget(d.label, help_text, spec.kind, d.default, spec.entry_optional, low, high, spec.step)
    if isinstance(spec, Choice):
        return Widget(
            d.label, help_text, spec.kind, d.default, choices=spec.choices, names=dict(spec.names), radio=spec.radio
        )
    return Widget(d.label, help_text, spec.kind, d.default)
