"""Figures and commands drawn light first, the heavy element on demand. Not a page.

A fresh tab waited for two big browser chunks before its first screen was complete (bench/page_load.py; Chromium's
profile of a VRAM Budget load): ``st.plotly_chart`` loads Streamlit's 4.7 MB Plotly chunk (0.6-1 s of CPU to
evaluate on the 2-core development machine, more when it is loaded) and ``st.code`` its 1.5 MB syntax highlighter
(0.3-0.5 s), both before the element is drawn. A popover's content is not drawn until it is opened, so neither
chunk loads for what waits inside one:

* :func:`figure`: the figure as an inline SVG drawing (:func:`planner.figure_svg.figure_svg`: the same figure, no
  browser code), with an "Interactive chart" popover holding ``st.plotly_chart`` (hover, zoom, PNG download);
* :func:`command`: a shell command as monospaced text, with a copy popover holding ``st.code`` (its copy button).
"""

from __future__ import annotations

import re

import plotly.graph_objects as go
import streamlit as st

from planner.figure_svg import figure_svg

__all__ = ["command", "figure"]

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
