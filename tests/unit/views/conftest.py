"""Plans for the view tests: each scenario's catalog model and its plan, as the pages' cache gives them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import ResolvedModel, resolve_model


def _planned(scenarios: Sequence[Scenario]) -> list[tuple[ResolvedModel, Plan]]:
    out = []
    for scenario in scenarios:
        model = resolve_model(scenario.model)
        out.append((model, plan(scenario, spec=model.spec)))
    return out


@pytest.fixture
def planned() -> Callable[[Sequence[Scenario]], list[tuple[ResolvedModel, Plan]]]:
    """``planned(scenarios)``: one ``(model, plan)`` per scenario (catalog models only)."""
    return _planned
