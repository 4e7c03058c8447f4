"""Live Compare: one prompt streamed to several endpoints at once, its settings, background run, tables and figures.

May import :mod:`planner.serving`, :mod:`planner.metrics` and the floors below them (:mod:`planner.fields`,
:mod:`planner.display`, :mod:`planner.values`, :mod:`planner.errors`); never load-test, planning or link code.
"""
