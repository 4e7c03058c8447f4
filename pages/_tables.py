"""Tables wider than the page: the columns that answer first, fitted to the main column, and every column folded below
it. Not a page.

A data grid wider than its column scrolls sideways inside itself, so the columns past the right edge look cut off
(the new-user trial read the Sizing, Performance and Load Test tables that way). Each such table names its headline
columns next to the function that builds it (``planner/*/charts.py``); :func:`wide_table` shows those, and the whole
table (the same rows, every column, as the CSV downloads hold it) in an expander the reader opens on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

__all__ = ["wide_table"]


def wide_table(
    frame: pd.DataFrame,
    headline: Sequence[str],
    *,
    key: str,
    column_config: Mapping[str, Any] | None = None,
    row_height: int | None = None,
) -> None:
    """Draw ``frame``'s ``headline`` columns (those it has, in that order), and all its columns in an expander.

    Args:
        frame: the table as built for reading (rounded text, "n/a").
        headline: the columns that fit the main column and answer first.
        key: the headline grid's key; the whole table's is ``key + ".all"``.
        column_config: passed to both grids (a fixed ``width`` keeps a long text column inside the page).
        row_height: the headline grid's row height, pixels; above 64 the grid wraps text in its cells.
    """
    shown = [c for c in headline if c in frame.columns]
    st.dataframe(frame[shown], hide_index=True, key=key, column_config=column_config, row_height=row_height)
    if len(shown) < len(frame.columns):
        with st.expander(f"All {len(frame.columns)} columns (wider than the page: scroll sideways)"):
            st.dataframe(frame, hide_index=True, key=f"{key}.all", column_config=column_config)
