"""The one palette: plotly's default qualitative colours, in plotly's order, cycled."""

from __future__ import annotations

from planner.palette import SERIES_COLORS, series_color


def test_series_colours_are_plotlys_default_palette_cycled():
    # plotly.colors.qualitative.Plotly (plotly.com/python/discrete-color): ten colours, #636EFA first, #FECB52 last
    assert len(SERIES_COLORS) == 10
    assert (series_color(0), series_color(1), series_color(9)) == ("#636EFA", "#EF553B", "#FECB52")
    assert series_color(10) == series_color(0)
