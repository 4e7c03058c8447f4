"""What pages show in a box: a line in a coloured box (its level and its text), and a headline metric tile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Message", "Metric"]


@dataclass(frozen=True)
class Message:
    """A line for the page to show as ``st.error``, ``st.warning``, ``st.info`` or ``st.success`` (by ``level``)."""

    level: Literal["error", "warning", "info", "success"]
    text: str


@dataclass(frozen=True)
class Metric:
    """One headline figure, a tile (``st.metric``): ``label``, ``value`` as text and the ``help`` tooltip (None for
    none)."""

    label: str
    value: str
    help: str | None = None
