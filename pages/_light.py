"""Figures and commands drawn light first, the heavy element on demand. Not a page.

A fresh tab waited for two big browser chunks before its first screen was complete (bench/page_load.py; Chromium's
profile of a VRAM Budget load): ``st.plotly_chart`` loads Streamlit's 4.7 MB Plotly chunk (0.6-1 s of CPU to
evaluate on the 2-core development machine, more when it is loaded) and ``st.code`` its 1.5 MB syntax highlighter
(0.3-0.5 s), both before the element is drawn. A popover's content is not drawn until it is opened, so neither
chunk loads for what waits inside one:

* :func:`figure`: the figure as an inline SVG drawing (:func:`planner.figure_svg.figure_svg`: the same figure, no
  browser code), with an "Interactive chart" popover holding ``st.plotly_chart`` (hover, zoom, PNG download);
* :func:`command`: a shell command as monospaced text, with a copy popover holding ``st.code`` (its copy button);
* :func:`table`: a table as plain HTML (:func:`planner.table_html.table_html`), with an "Interactive table" popover
  holding ``st.dataframe`` with every column (sort, search, full screen). The data grid's 1.2 MB of browser code held
  the Sizing page's answer tiles off the first screen until it was evaluated, even with the grid below the fold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from planner.figure_svg import figure_svg
from planner.table_html import table_html

__all__ = ["command", "figure", "table"]

#: Width of the main column at 1400 px with the sidebar open, px: the drawing's text is 12 px at that width.
MAIN_WIDTH_PX = 940


def figure(fig: go.Figure, key: str, *, width_px: int = MAIN_WIDTH_PX) -> None:
    """Draw ``fig`` as SVG now (in a container keyed ``<key>-static``) and, on demand, as the interactive Plotly chart
    keyed ``key`` (in a popover under the drawing).

    Args:
        fig: the figure.
        key: the Plotly chart's widget key (the key it had before it moved into the popover).
        width_px: the drawing's width in SVG pixels: about the width it will be shown at, so its text stays 12 px.
    """
    with st.container(key=f"{key}-static"):
        st.markdown(figure_svg(fig, width_px=width_px), unsafe_allow_html=True)
    with st.popover(
        "Interactive chart",
        icon=":material/zoom_in:",
        help="Hover for values, zoom, download as PNG. Loads the charting code the first time (a second or two).",
    ):
        st.plotly_chart(fig, key=key, width=max(width_px, 640))


def command(text: str) -> None:
    """A shell command as monospaced text that wraps, with a copy button beside it (a popover holding ``st.code``)."""
    words, copy = st.columns([14, 1], vertical_alignment="center")
    # a code span is fenced by more backticks than any run of them inside it
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    words.markdown(f"{fence} {text} {fence}")
    with copy.popover("", icon=":material/content_copy:", help="Copy the command"):
        st.code(text, language="bash", wrap_lines=True)


def table(
    frame: pd.DataFrame,
    headline: Sequence[str],
    *,
    key: str,
    column_config: Mapping[str, Any] | None = None,
    widths_px: Mapping[str, int] | None = None,
) -> None:
    """Draw ``frame``'s ``headline`` columns as HTML now (in a container keyed ``<key>-static``) and, on demand, every
    column in the data grid keyed ``key`` (in a popover under the table).

    Args:
        frame: the table as built for reading (rounded text, "n/a").
        headline: the columns that fit the main column and answer first.
        key: the data grid's widget key.
        column_config: the data grid's column configuration.
        widths_px: a minimum width, px, for the named columns of the HTML table (a column of sentences wraps in it).
    """
    with st.container(key=f"{key}-static"):
        st.html(table_html(frame, headline, widths_px=widths_px))
    with st.popover(
        "Interactive table",
        icon=":material/table_view:",
        help=f"Every column ({len(frame.columns)}), sortable and searchable, full screen. Loads the data grid's code "
        "the first time.",
    ):
        ordered = [*[c for c in headline if c in frame.columns], *[c for c in frame.columns if c not in headline]]
        st.dataframe(frame[ordered], hide_index=True, key=key, column_config=column_config, width=1200)
