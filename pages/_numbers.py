"""Number boxes: the one widget every page types a number into. Not a page.

``st.number_input`` reads what is typed in the browser (JavaScript ``parseInt``/``parseFloat``) before Python sees
it: ``1e3`` in an integer box arrives as 1, ``12abc`` as 12, and a value outside ``min_value``/``max_value`` only
turns the box red, with no text and the old value kept. So a number is typed into a text box here and read by the
same parser the page's link codec reads that setting with (the field's declaration, :mod:`planner.fields`, through
``parse_field`` of :mod:`planner.links.budget`, :mod:`planner.links.loadtest`, :mod:`planner.links.compare`,
:mod:`planner.links.sizing`, or :func:`planner.values.parse_number` with the page's bounds for a setting no link
carries):

* accepted text is taken as that exact value, and the box is rewritten to the text a link writes for it (``1e3`` →
  ``1000``), so the box shows what the link carries;
* refused text stays in the box (nothing typed is lost) with one line under it naming the text, what is accepted
  and the value still in use: the box's last accepted value, else the setting's default.

A page may put a number (or None) under a box's key from a link, a preset or its memory: :func:`number_box` turns
it into text before the box is drawn, so seeding code stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import streamlit as st

from planner import fields
from planner.errors import BadValue
from planner.links.rules import show
from planner.values import format_value, is_none

__all__ = ["ACCEPTED_KEY", "accepted_value", "field_boxes", "number_box", "text_of"]

#: Session-state key of each box's last accepted value, ``{widget key: value}`` (kept where Streamlit does not drop
#: widget state, so it survives a visit to another page).
ACCEPTED_KEY = "planner.numbers"
#: Longest text a box takes (a number of any accepted range is far shorter).
_MAX_CHARS = 64

#: A setting's parser: ``parse(text) -> value``, raising :class:`~planner.errors.BadValue`.
Parse = Callable[[str], object]


def text_of(value: object) -> str:
    """The text a box shows for ``value``: a link's spelling (:func:`~planner.values.format_value`), empty for
    None."""
    return "" if value is None else format_value(value)


def _read(text: str, parse: Parse, optional: bool) -> object:
    """The value of a box's text; an empty optional box is None. Raises BadValue."""
    if optional and is_none(text):
        return None
    return parse(text.strip())


def _canonical(key: str, parse: Parse, optional: bool) -> None:
    """``on_change``: accepted text becomes the link's spelling of its value (``1e3`` → ``1000``)."""
    text = st.session_state.get(key)
    if not isinstance(text, str):
        return
    try:
        value = _read(text, parse, optional)
    except BadValue:
        return  # kept as typed; the run that follows says why it is not used
    st.session_state[key] = text_of(value)


def number_box(
    label: str,
    key: str,
    parse: Parse,
    *,
    default: object,
    optional: bool = False,
    where: object = None,
    help: str | None = None,
    placeholder: str | None = None,
    disabled: bool = False,
) -> object:
    """Draw a number box and return the value it holds.

    Args:
        label: the box's label.
        key: its widget key; a number or None found there (a link's, a preset's) is shown as its text.
        parse: the setting's parser (its link codec's), which refuses what a link would refuse.
        default: the value when the key is empty on a first visit, and the value used while the box holds refused
            text and has accepted nothing yet.
        optional: an empty box (or ``none``) means None.
        where: the container to draw in (a column); ``st`` by default.
        help: the box's help text.
        placeholder: text shown while the box is empty.
        disabled: drawn greyed out; refused text then gives no message (the value is not used).

    Returns:
        The typed value when accepted, else the last accepted one (the message under the box names it).
    """
    area = st if where is None else where
    accepted: dict[str, object] = st.session_state.setdefault(ACCEPTED_KEY, {})
    raw = st.session_state.get(key, default)
    if not isinstance(raw, str):  # a value put there by a link, a preset or a page's memory
        accepted[key] = raw
        st.session_state[key] = text_of(raw)
    text = area.text_input(
        label,
        key=key,
        max_chars=_MAX_CHARS,
        help=help,
        placeholder=placeholder,
        disabled=disabled,
        on_change=_canonical,
        args=(key, parse, optional),
    )
    try:
        value = _read(text, parse, optional)
    except BadValue as bad:
        kept = accepted.get(key, default)
        if not disabled:
            expected = bad.accepted + (", or empty" if optional and "none" not in bad.accepted else "")
            area.error(
                f"{label}: {show(text.strip())} is not used: expected {expected}; still using "
                f"{text_of(kept) or 'empty'}.",
                icon=":material/error:",
            )
        return kept
    accepted[key] = value
    return value


def field_boxes(
    parse_field: Callable[[str, str], object], defaults: object, keys: Mapping[str, str]
) -> Callable[..., object]:
    """A drawer of number boxes for one page's settings dataclass.

    Args:
        parse_field: the page's link codec's ``parse_field(name, text)``.
        defaults: the settings the page opens with (each box's ``default`` is its field's value there).
        keys: field name → widget key.

    Returns:
        ``box(where, name, label=None, **options)``: :func:`number_box` of the field ``name`` in the container
        ``where``, ``options`` as :func:`number_box`'s; the label, help and whether an empty box is None are the
        field's declaration's (:func:`planner.fields.widget`) unless given.
    """

    def box(where: object, name: str, label: str | None = None, **options: Any) -> object:
        declared = fields.widget(type(defaults), name)
        default = fields.get(defaults, name)
        options.setdefault("optional", declared.optional)
        options.setdefault("help", declared.help or None)
        shown = declared.label if label is None else label
        return number_box(shown, keys[name], partial(parse_field, name), default=default, where=where, **options)

    return box


def accepted_value(key: str, default: object) -> object:
    """The last value the box ``key`` accepted (a box not drawn on this run keeps it), else ``default``."""
    return st.session_state.get(ACCEPTED_KEY, {}).get(key, default)
