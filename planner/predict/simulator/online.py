"""The continuous-batching scheduler stepping in real time, for a server that plays a planned deployment (the demo
server): requests are added as they arrive and each call schedules one step."""

from __future__ import annotations

from planner.predict.shape import StepShape
from planner.predict.simulator.client import Frontend
from planner.predict.simulator.continuous import ContinuousBatching
from planner.predict.simulator.engine import Engine
from planner.predict.simulator.requests import RequestTable
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

__all__ = ["OnlineScheduler"]


class OnlineScheduler:
    """The same scheduler stepping in real time, for a server that plays a planned deployment (the demo server).

    Requests are added as they arrive (:meth:`add`); :meth:`step` schedules one engine step exactly as
    :func:`~planner.predict.simulator.run.simulate` does (:mod:`planner.predict.simulator.continuous`) and says how
    long it takes and which requests got a token. The caller sleeps for the step's duration and then delivers the
    tokens.

    Example::

        engine = OnlineScheduler(shape)
        rid = engine.add(prompt_tokens=512, output_tokens=128)
        seconds, tokens = engine.step()   # -> (0.0157, [(rid, 1, False)]): its prefill and first token
    """

    def __init__(self, shape: StepShape, coefficients: StepCoefficients = DEFAULT_COEFFICIENTS) -> None:
        engine = Engine.build(
            shape,
            coefficients.vector(),
            coefficients.allreduce_latency_s,
            Frontend(),
            RequestTable([], []),
            0,
            client=False,
        )
        self._engine = engine
        self._scheduler = ContinuousBatching(engine)
        self._scheduler.track_emitted = True
        self.shape = shape
        #: Seconds a request spends before the engine sees it (HTTP, parsing, tokenization): the server waits this
        #: long before :meth:`add`, as :func:`simulate` does for a lone request.
        self.request_overhead_s = coefficients.request_overhead_s
        self._coefficients = coefficients

    def request_in_s(self, prompt_tokens: int) -> float:
        """Seconds a request of ``prompt_tokens`` spends before the engine sees it (the server waits this long
        before :meth:`add`, as :func:`simulate` does for a lone request)."""
        return self._coefficients.request_in_s(prompt_tokens)

    @property
    def busy(self) -> bool:
        """Requests are running or waiting."""
        return bool(self._scheduler.running or self._scheduler.waiting)

    @property
    def running(self) -> int:
        """Requests scheduled (running) now."""
        return len(self._scheduler.running)

    @property
    def waiting(self) -> int:
        """Requests waiting for admission."""
        return len(self._scheduler.waiting)

    @property
    def kv_usage(self) -> float:
        """Fraction of the KV blocks in use, in [0, 1]."""
        return 1.0 - self._engine.pool.free / self.shape.num_gpu_blocks

    @property
    def preemptions(self) -> int:
        """Preemptions so far."""
        return self._engine.preemptions

    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        """Queue a request; returns its id.

        Raises:
            InvalidParameterError: it is longer than ``max_model_len`` or than the whole KV cache holds.
        """
        self._engine.check_request(prompt_tokens, output_tokens)
        return self._scheduler.add(prompt_tokens, output_tokens)

    def drop(self, rid: int) -> None:
        """Forget a request whose client went away (its blocks are freed)."""
        self._scheduler.drop(rid)

    def step(self) -> tuple[float, list[tuple[int, int, bool]]]:
        """One engine step: ``(seconds, [(request id, tokens it has now, finished), ...])``; ``(0, [])`` when idle."""
        if not self.busy:
            return 0.0, []
        log = self._engine.log
        before = log.now
        self._scheduler.step()
        log.forget()  # nothing reads a live engine's history: keep its memory flat
        return log.now - before, list(self._scheduler.emitted)
