"""LLM Serving Planner: capacity math and engine models behind the dashboard.

This package never imports streamlit. Every public function returns plain values or frozen
dataclasses and raises :class:`planner.errors.PlannerError` subclasses on bad input.
"""

__all__: list[str] = []
