"""A table as plain HTML: what a page shows first, while the interactive data grid waits to be asked for.

Why: Streamlit draws ``st.dataframe`` with its data-grid browser code (``DataFrame.js`` and the Arrow formatting
chunk, 1.2 MB), and a fresh tab holds the whole batch of elements it came with until that code is evaluated. On the
Sizing page the ranked table, below the fold, kept the answer's metric tiles and launch command off the first screen
for 0.3 s (``bench/page_load.py``: complete first screen 1.40 s with the grid, 1.12 s without it, load average 1.6).
A table of plain HTML needs no browser code; the same rows and columns are in the grid on demand and in the
downloads. Imports :mod:`planner.display` (missing values as "n/a").
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from planner.display import text

__all__ = ["table_html"]

#: A cell that reads as a number (a price, a percentage, a count with separators, "n/a" for a missing one): aligned
#: right, so that the digits of a column line up as they do in a spreadsheet or Streamlit's grid.
_NUMBER = re.compile(r"^(n/a|[-+]?[$€£]?[\d,]*\.?\d+(e[-+]?\d+)?\s*(%|[kMG]|ms|s|GiB)?)$", re.IGNORECASE)
_CELL = "padding:4px 8px;border-bottom:1px solid rgba(49,51,63,0.1);vertical-align:top"
_HEAD = (
    "position:sticky;top:0;background:#fafafa;padding:6px 8px;border-bottom:1px solid rgba(49,51,63,0.2);"
    "font-weight:600;color:rgba(49,51,63,0.8)"
)


def table_html(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    max_height_px: int = 420,
    widths_px: Mapping[str, int] | None = None,
) -> str:
    """The rows of ``frame`` as an HTML table in a box that scrolls past ``max_height_px`` (its header stays on top).

    Args:
        frame: the table as built for reading (text, numbers, ``None``/NaN for missing values).
        columns: the columns to show, in this order (those ``frame`` has); ``None``: all of them.
        max_height_px: the box's height limit, px; the rows scroll inside it.
        widths_px: a minimum width, px, for the named columns (a column of sentences wraps inside it).

    Returns:
        One ``<div>`` holding the ``<table>``: every cell HTML-escaped, missing values as "n/a", columns whose every
        cell reads as a number right-aligned.
    """
    shown = [c for c in (frame.columns if columns is None else columns) if c in frame.columns]
    widths = widths_px or {}
    rows = [[text(v) for v in record] for record in frame[shown].itertuples(index=False, name=None)]
    right = [bool(rows) and all(_NUMBER.match(row[i]) for row in rows) for i in range(len(shown))]

    def style(i: int, base: str) -> str:
        extra = ";text-align:right" if right[i] else ";text-align:left"
        if shown[i] in widths:
            extra += f";min-width:{int(widths[shown[i]])}px"
        return base + extra

    head = "".join(f'<th style="{style(i, _HEAD)}">{html.escape(str(c))}</th>' for i, c in enumerate(shown))
    body = "".join(
        "<tr>" + "".join(f'<td style="{style(i, _CELL)}">{html.escape(c)}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return (
        f'<div style="max-height:{int(max_height_px)}px;overflow:auto;border:1px solid rgba(49,51,63,0.1);'
        f'border-radius:0.5rem;font-size:14px">'
        f'<table style="border-collapse:collapse;width:100%"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
