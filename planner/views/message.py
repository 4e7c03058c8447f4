"""One line a page shows in a coloured box: its level and its text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Message"]


@dataclass(frozen=True)
class Message:
    """A line for the page to show as ``st.error``, ``st.warning``, ``st.info`` or ``st.success`` (by ``level``)."""

    level: Literal["error", "warning", "info", "success"]
    text: str
