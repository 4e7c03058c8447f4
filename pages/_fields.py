"""One widget per declared setting: its label, help, kind, bounds and choices are the field's declaration
(:func:`planner.fields.widget`), its number box reads typed text with the field's own parser (the link's). Not a
page.

A page makes one :class:`Drawer` for its settings and calls it once per widget; what the widget holds comes
back as the field's value, and every value drawn is kept in :attr:`Drawer.values`, ready for
:func:`planner.fields.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pages._numbers import accepted_value, number_box
from planner import fields

__all__ = ["Drawer"]


class Drawer:
    """Draws the widgets of one settings dataclass (see the module docstring).

    Args:
        defaults: the settings a page opens with (a number box's value until it has accepted one).
        keys: field name → widget key.
    """

    def __init__(self, defaults: Any, keys: Mapping[str, str]) -> None:
        self.defaults = defaults
        self.keys = keys
        self.values: dict[str, Any] = {}

    def __call__(self, where: Any, name: str, label: str | None = None, **options: Any) -> Any:
        """Draw the widget of the field ``name`` in ``where`` (a column; ``st`` for the page) and return its value.

        Args:
            where: the container.
            name: the field.
            label: the widget's label when not the declared one.
            **options: the widget's own options (``disabled``, ``placeholder``, ``help``, …), overriding the
                declaration's.
        """
        cls = type(self.defaults)
        spec = fields.widget(cls, name)
        key = self.keys[name]
        shown = spec.label if label is None else label
        options.setdefault("help", spec.help or None)
        if spec.kind == "number":
            parse = fields.find(cls, name).setting.parse
            options.setdefault("optional", spec.optional)
            value = number_box(shown, key, parse, default=fields.get(self.defaults, name), where=where, **options)
        elif spec.kind == "toggle":
            value = bool(where.toggle(shown, key=key, **options))
        elif spec.kind == "select" and spec.radio:
            value = where.radio(shown, spec.choices, key=key, format_func=spec.show, horizontal=True, **options)
        elif spec.kind == "select":
            value = where.selectbox(shown, spec.choices, key=key, format_func=spec.show, **options)
        else:
            value = where.text_input(shown, key=key, **options)
        self.values[name] = value
        return value

    def choose(self, where: Any, name: str, choices: Any, **options: Any) -> list[Any]:
        """A multiselect of ``choices`` for the list field ``name``, with its declared label and help."""
        spec = fields.widget(type(self.defaults), name)
        options.setdefault("help", spec.help or None)
        value = where.multiselect(spec.label, choices, key=self.keys[name], **options)
        self.values[name] = value
        return value

    def kept(self, name: str) -> Any:
        """A setting whose widget is not drawn on this run: the value its box last accepted (or the default)."""
        value = accepted_value(self.keys[name], fields.get(self.defaults, name))
        self.values[name] = value
        return value
