"""What a scheduling policy is: the one interface every batching mode implements (as vLLM's
``vllm/v1/core/sched/interface.py`` ``SchedulerInterface`` is for its schedulers)."""

from __future__ import annotations

from typing import Protocol

from planner.predict.simulator.engine import Engine

__all__ = ["SchedulingPolicy"]


class SchedulingPolicy(Protocol):
    """A batching policy bound to one :class:`~planner.predict.simulator.engine.Engine`.

    ``run`` takes every request of the engine's client to its last token, recording each step in the engine's log,
    each request's times in its request table and its blocks in its pool. Implementations:
    :class:`~planner.predict.simulator.continuous.ContinuousBatching` (vLLM V1, first come first served) and
    :class:`~planner.predict.simulator.static.StaticBatching`.
    """

    def __init__(self, engine: Engine) -> None: ...

    def run(self) -> None:
        """Run the workload to its end."""
        ...
