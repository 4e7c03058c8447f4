"""The colours of the package's figures: one per scenario, run, series or configuration, in order.

Every figure that colours its series by order (the VRAM Budget's scenarios, the load test's runs and sweeps, the
predicted curves, the sizing options) takes them from :data:`SERIES_COLORS`, so a scenario keeps its colour from one
figure to the next. Imports nothing from ``planner``.
"""

from __future__ import annotations

from plotly.colors import qualitative

__all__ = ["SERIES_COLORS", "STREAMLIT_CHART_COLORS", "series_color"]

#: plotly's default qualitative palette (``plotly.colors.qualitative.Plotly``: ``#636EFA``, ``#EF553B``,
#: ``#00CC96``, ... ten colours), what a plotly figure uses when no colour is given.
SERIES_COLORS: tuple[str, ...] = tuple(qualitative.Plotly)
#: The colours ``st.plotly_chart`` gives a trace that has none of its own (Streamlit's theme, its categorical chart
#: colours in order: blue80, blue40, red80, red40, green70, green40, orange70, orange40, purple80, gray40 of its
#: palette, as Streamlit 1.67's frontend bundle holds them): what :mod:`planner.figure_svg` draws such a trace in, so
#: the SVG drawing and the interactive chart agree.
STREAMLIT_CHART_COLORS: tuple[str, ...] = (
    "#0068c9",
    "#83c9ff",
    "#ff2b2b",
    "#ffabab",
    "#29b09d",
    "#7defa1",
    "#ff8700",
    "#ffd16a",
    "#6d3fc0",
    "#d5dae5",
)


def series_color(index: int) -> str:
    """The colour of the ``index``-th series (0-based), cycling through :data:`SERIES_COLORS`."""
    return SERIES_COLORS[index % len(SERIES_COLORS)]
