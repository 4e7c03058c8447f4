"""The load test's client over a fleet's requests, on the fleet's clock (``vllm bench serve``'s semantics, as
:mod:`planner.loadtest.runner` sends them): a request (or a conversation's first turn) leaves at its release time once
one of ``max_concurrency`` slots is free; a conversation holds its slot until its last answer and sends each next turn
``think_time_s`` after the previous turn's last token reached the client; a freed slot goes to the next request in
release order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from planner.fleet.clock import EventLoop
from planner.fleet.workload import FleetRequest, threads

__all__ = ["Client"]


class Client:
    """``vllm bench serve``'s client over a fleet's requests (module docstring).

    Args:
        requests: the workload, in send order.
        loop: the clock its sends are scheduled on.
        send: called as ``send(request index, time)`` when a request leaves.
        max_concurrency: most requests (conversations) in flight; None = no cap.
        think_time_s: seconds from a turn's last token at the client to the conversation's next turn.
    """

    def __init__(
        self,
        requests: Sequence[FleetRequest],
        loop: EventLoop,
        send: Callable[[int, float], None],
        *,
        max_concurrency: int | None,
        think_time_s: float,
    ) -> None:
        self.requests = requests
        self.loop = loop
        self.send = send
        self.think_time_s = think_time_s
        self.queue = deque(threads(requests))
        self.thread_of: dict[int, list[int]] = {}
        for group in self.queue:
            for i in group:
                self.thread_of[i] = group
        self.slots = max_concurrency or len(self.queue) or 1
        self.open_turns = 0  # conversations in flight with turns still to send

    def start(self) -> None:
        while self.queue and self.slots:
            self._begin(0.0)

    def _begin(self, free_s: float) -> None:
        group = self.queue.popleft()
        self.slots -= 1
        self.open_turns += len(group) > 1
        first = self.requests[group[0]]
        self.loop.at(max(first.arrival_s or 0.0, free_s), lambda t, i=group[0]: self.send(i, t))

    def reactive(self) -> bool:
        """A finish can make a send now (a freed slot has a request waiting, or a conversation goes on)."""
        return bool(self.queue) or self.open_turns > 0

    def finished(self, i: int, at_client_s: float) -> None:
        """Request ``i``'s last token reached the client at ``at_client_s``."""
        group = self.thread_of[i]
        place = group.index(i)
        if place + 1 < len(group):
            if place + 2 == len(group):
                self.open_turns -= 1
            nxt = group[place + 1]
            self.loop.at(at_client_s + self.think_time_s, lambda t, n=nxt: self.send(n, t))
            return
        self.slots += 1
        if self.queue:
            self._begin(at_client_s)
