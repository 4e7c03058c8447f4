"""The colours of the package's figures: one per scenario, run, series or configuration, in order.

Every figure that colours its series by order (the VRAM Budget's scenarios, the load test's runs and sweeps, the
predicted curves, the sizing options) takes them from :data:`SERIES_COLORS`, so a scenario keeps its colour from one
figure to the next. Imports nothing from ``planner``.
"""

from __future__ import annotations

from plotly.colors import qualitative

__all__ = ["SERIES_COLORS", "series_color"]

#: plotly's default qualitative palette (``plotly.colors.qualitative.Plotly``: ``#636EFA``, ``#EF553B``,
#: ``#00CC96``, ... ten colours), what a plotly figure uses when no colour is given.
SERIES_COLORS: tuple[str, ...] = tuple(qualitative.Plotly)


def series_color(index: int) -> str:
    """The colour of the ``index``-th series (0-based), cycling through :data:`SERIES_COLORS`."""
    return SERIES_COLORS[index % len(SERIES_COLORS)]
