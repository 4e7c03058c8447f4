"""Live Compare: one prompt streamed to several endpoints at once, its settings, background run, tables and figures.

May import :mod:`planner.serving`, :mod:`planner.metrics` and :mod:`planner.errors`.
"""
