"""The scenario editor's widget keys, and the values they keep when Streamlit drops them. Not a page.

Widgets never get a ``value=``: their session-state keys (``w{index}.{field}``, :func:`widget_key`) are seeded from
the current scenarios (:func:`seed`), so a URL, a preset or an advice can overwrite them, and keys Streamlit dropped
(a widget not drawn on the last run) are seeded again.

Streamlit drops the state of every widget not drawn on a run: the vLLM fields while the article engine is selected,
the fields of scenarios 3–4 while only two are shown, all of them on another page. So each drawn column's values are
also kept in a plain session-state dict (:data:`pages._state.EDITOR_MEMORY_KEY`, up to four columns,
:func:`remember`), and a dropped key is re-seeded from it before the scenario's own value: what the user typed
survives an engine switch, a lower scenario count or a visit to another page for the session. A new link or preset
clears that memory (``_state.load``).

A widget key must only ever hold a value on runs that draw its widget. A key written on a run that does not draw the
widget (a hidden field seeded from a preset) is kept by Streamlit under the key itself, apart from the widget's own
state once the widget is drawn, and outlives it: when the widget is dropped on another page, that old seed reappears
as the key's value, so the key looks present, is not re-seeded from memory, and the field silently reverts
(streamlit 1.67, ``SessionState._compact_state`` stores a drawn widget's value under its id, never under the key).
:func:`forget_hidden` therefore deletes the keys of the fields a run did not draw, after :func:`remember` kept them.

A column's pasted config.json is kept the same way (:data:`pages._state.CONFIG_MEMORY_KEY`, :func:`config_text`).
"""

from __future__ import annotations

from dataclasses import fields

import streamlit as st

from pages._state import CONFIG_MEMORY_KEY, EDITOR_MEMORY_KEY
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.views.editor import AUTO, WIDGET_NAMES, speculative_widgets, to_widget
from planner.views.model import upload_label

__all__ = [
    "COUNT_WIDGET",
    "config_text",
    "forget_hidden",
    "remember",
    "seed",
    "set_config_text",
    "widget_key",
]

#: Key of the "how many scenarios" widget.
COUNT_WIDGET = "w.count"
_DEFAULT = Scenario()


def widget_key(index: int, field_name: str) -> str:
    """Session-state key of a scenario field's widget (``index`` 0-based)."""
    return f"w{index}.{field_name}"


def seed(index: int, scenario: Scenario, *, overwrite: bool) -> None:
    """Fill the widget keys of column ``index``.

    With ``overwrite`` every key gets ``scenario``'s value (a link, preset or advice was loaded).
    Otherwise only keys Streamlit dropped are filled: from the column's remembered values (what the
    user last had there, including fields of another engine), else from ``scenario``.
    """
    memory = st.session_state.get(EDITOR_MEMORY_KEY, {}).get(index, {})
    keep_config = False
    if overwrite:
        # A scenario naming this column's pasted config (advice applied to it) keeps the config and the
        # model box; any other model replaces the config (a preset or a link says which model to plan).
        text = config_text(index)
        keep_config = bool(text.strip()) and scenario.model == upload_label(text)
        if not keep_config:
            set_config_text(index, "")
    for f in fields(Scenario):
        key = widget_key(index, f.name)
        if overwrite and not (keep_config and f.name == "model"):
            st.session_state[key] = to_widget(f.name, getattr(scenario, f.name))
        elif key not in st.session_state:
            fallback = _DEFAULT if keep_config and f.name == "model" else scenario
            st.session_state[key] = memory.get(f.name, to_widget(f.name, getattr(fallback, f.name)))
    others = {AUTO: scenario.max_model_len == MAX_MODEL_LEN_AUTO, **speculative_widgets(scenario)}
    for name, value in others.items():
        key = widget_key(index, name)
        if overwrite:
            st.session_state[key] = value
        elif key not in st.session_state:
            st.session_state[key] = memory.get(name, value)


def config_text(index: int) -> str:
    """Column ``index``'s pasted config.json: the text area's value, or the remembered one if it was dropped."""
    text = st.session_state.get(widget_key(index, "config_text"))
    if text is None:
        text = st.session_state.get(CONFIG_MEMORY_KEY, {}).get(index, "")
    return text if isinstance(text, str) else ""


def set_config_text(index: int, text: str, *, widget: bool = True) -> None:
    """Remember column ``index``'s config text; with ``widget``, set its text area too (before it is drawn)."""
    if widget:
        st.session_state[widget_key(index, "config_text")] = text
    st.session_state[CONFIG_MEMORY_KEY] = {**st.session_state.get(CONFIG_MEMORY_KEY, {}), index: text}


def remember(index: int) -> None:
    """Keep column ``index``'s widget values where Streamlit does not drop them."""
    memory = dict(st.session_state.get(EDITOR_MEMORY_KEY, {}))
    memory[index] = {
        name: st.session_state[widget_key(index, name)]
        for name in WIDGET_NAMES
        if widget_key(index, name) in st.session_state
    }
    st.session_state[EDITOR_MEMORY_KEY] = memory


def forget_hidden(index: int, drawn: set[str]) -> None:
    """Delete column ``index``'s keys of fields not drawn this run (remember them first; see the module doc)."""
    for name in WIDGET_NAMES:
        key = widget_key(index, name)
        if name not in drawn and key in st.session_state:
            del st.session_state[key]
