"""One event clock for many replicas: a discrete-event loop over the client's (and router's) events and the
replicas' engine steps.

Each replica steps on its own (:meth:`planner.predict.simulator.ReplicaEngine.run_until`); the loop always moves the
earliest thing next: the next event (a request sent, a KV transfer landing) if it is due before every replica's next
step, else the replica whose next step starts first, up to a **horizon**: the next event's time and, while a
finished request can make a new one (a closed loop's freed slot, a conversation's next turn, a prefill handing over to
a decode instance), the earliest time any other replica could finish a request (its next step plus its fewest
remaining steps at its shortest step time, :meth:`~planner.predict.simulator.ReplicaEngine.earliest_finish_s`) plus
the shortest delay from a finish to the event it causes. A replica also stops after a step in which one of its own
requests finished. So no replica steps past a moment at which it could be sent a request by more than the step under
way then: a router that picks a replica at time ``t`` sees each replica as of the end of its current step.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence

from planner.predict.simulator import ReplicaEngine

__all__ = ["EventLoop"]


class EventLoop:
    """The loop (module docstring).

    Args:
        engines: the replicas' engines, all on this clock.
        reactive: whether a finish can cause an event now (asked before each replica's advance).
        lag_s: the shortest delay from a finish to the event it causes, seconds (≥ 0).
    """

    def __init__(self, engines: Sequence[ReplicaEngine], *, reactive: Callable[[], bool], lag_s: float = 0.0) -> None:
        self.engines = list(engines)
        self._reactive = reactive
        self._lag_s = max(0.0, lag_s)
        self._events: list[tuple[float, int, Callable[[float], None]]] = []
        self._seq = itertools.count()
        self._bound: list[float | None] = [None] * len(self.engines)
        self.advances = 0

    def at(self, time_s: float, action: Callable[[float], None]) -> None:
        """Run ``action(time_s)`` when the clock reaches ``time_s``."""
        heapq.heappush(self._events, (time_s, next(self._seq), action))

    def touched(self, k: int) -> None:
        """Replica ``k`` changed (a request was submitted to it): its finish bound is recomputed when next needed."""
        self._bound[k] = None

    def _earliest_finish(self, k: int) -> float:
        bound = self._bound[k]
        if bound is None:
            bound = self._bound[k] = self.engines[k].earliest_finish_s()
        return bound

    def run(self) -> None:
        """Run until no event is left and every replica is idle."""
        engines, events = self.engines, self._events
        while True:
            t_event = events[0][0] if events else math.inf
            k, t_step = -1, math.inf
            for i, engine in enumerate(engines):
                start = engine.next_start_s
                if start < t_step:
                    k, t_step = i, start
            if t_event == math.inf and t_step == math.inf:
                return
            if t_event <= t_step:
                time_s, _, action = heapq.heappop(events)
                action(time_s)
                continue
            horizon = t_event
            reactive = self._reactive()
            if reactive:
                for i in range(len(engines)):
                    if i != k:
                        horizon = min(horizon, self._earliest_finish(i) + self._lag_s)
            # at least the next step (the bounds exceed t_step; this guards against their rounding)
            engines[k].run_until(max(horizon, math.nextafter(t_step, math.inf)), stop_at_finish=reactive)
            self._bound[k] = None
            self.advances += 1
