"""The client and the API server in front of the engine: when each request is sent and when the engine sees it.

As ``vllm bench serve``: request ``j`` is due at its scheduled offset; with ``max_concurrency`` it is sent when a slot
is free (the client has read the last token of the request before it); TTFT and E2E are measured from sending. The
API server (:class:`~planner.predict.step_time.StepCoefficients`' frontend figures, read off vLLM's own logs) hands a
lone request to the engine ``request_in_s(prompt tokens)`` after it was sent, and requests that arrive together one
after another, ``frontend_work_s(prompt tokens)`` apart (one process, one event loop: a burst of 128 requests of
1,024 tokens reaches the engine over ~300 ms); every token reaches the client ``response_overhead_s`` after the step
that made it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from planner.predict.simulator.requests import RequestTable
from planner.predict.step_time import StepCoefficients

__all__ = ["Client", "Frontend"]

#: Seconds within which two times are the same instant (the sums of step times round differently).
SAME_INSTANT_S = 1e-12


@dataclass(frozen=True)
class Frontend:
    """The API server's figures the simulator uses, seconds (:class:`~planner.predict.step_time.StepCoefficients`):
    a lone request's way in (fixed and per prompt token), the work that holds the next arrival back (fixed and per
    prompt token), and a token's way out."""

    in_s: float = 0.0
    in_per_token_s: float = 0.0
    gap_s: float = 0.0
    gap_per_token_s: float = 0.0
    out_s: float = 0.0

    @classmethod
    def of(cls, c: StepCoefficients, in_s: float | None = None) -> Frontend:
        """The figures of ``c``; ``in_s`` instead of its ``request_overhead_s`` when given."""
        return cls(
            c.request_overhead_s if in_s is None else in_s,
            c.request_overhead_per_token_s,
            c.frontend_gap_s,
            c.frontend_gap_per_token_s,
            c.response_overhead_s,
        )


class Client:
    """Sends the requests of a :class:`RequestTable` (at most ``cap`` in flight) and delivers them to the engine.

    Attributes:
        frontend: the API server's figures.
        pending: requests sent that the engine has not seen yet, in arrival order.
    """

    def __init__(self, requests: RequestTable, frontend: Frontend, cap: int) -> None:
        self.requests = requests
        self.frontend = frontend
        self.pending: deque[int] = deque()
        self._next = 0
        self._last_arrival = -math.inf
        for _ in range(min(cap, requests.n)):
            self._send(requests.due[self._next])

    def _send(self, slot_free_s: float) -> None:
        r, j = self.requests, self._next
        r.sent[j] = max(r.due[j], slot_free_s)
        # The API server hands requests to the engine one at a time: requests sent together arrive a little apart.
        fe, tokens = self.frontend, float(r.prompt[j])
        alone = r.sent[j] + fe.in_s + fe.in_per_token_s * tokens
        r.arrival[j] = max(alone, self._last_arrival + fe.gap_s + fe.gap_per_token_s * tokens)
        self._last_arrival = r.arrival[j]
        self.pending.append(j)
        self._next += 1

    def submit(self, j: int, sent_s: float) -> None:
        """Send request ``j`` (the last one added) at ``sent_s``: a client outside the engine chose the time (the
        fleet's router)."""
        self._next = j
        self._send(sent_s)

    def request_done(self, now_s: float) -> None:
        """A request's last token left the engine at ``now_s``: its slot frees when the client has read it."""
        if self._next < self.requests.n:
            self._send(now_s + self.frontend.out_s)

    def next_arrival_s(self) -> float:
        """When the next pending request reaches the engine (inf when none is pending)."""
        return self.requests.arrival[self.pending[0]] if self.pending else math.inf

    def deliver(self, limit_s: float, waiting: deque[int]) -> None:
        """Move the requests that reached the engine by ``limit_s`` to the engine's ``waiting`` queue."""
        pending, arrival, limit = self.pending, self.requests.arrival, limit_s + SAME_INSTANT_S
        while pending and arrival[pending[0]] <= limit:
            waiting.append(pending.popleft())
