"""One replica of a fleet on an event clock it shares with others (:mod:`planner.fleet`): the continuous-batching
engine of :func:`~planner.predict.simulator.run.simulate`, with requests submitted by a router outside it and steps
taken up to a time the fleet's clock sets."""

from __future__ import annotations

import math

import numpy as np

from planner.predict.shape import StepShape
from planner.predict.simulator.continuous import ContinuousBatching
from planner.predict.simulator.engine import Engine, EngineHooks, engine_parts
from planner.predict.simulator.requests import RequestTable
from planner.predict.simulator.result import inter_token_gaps
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, critical_path, step_features

__all__ = ["ReplicaEngine"]


class ReplicaEngine:
    """One replica of a fleet on an event clock it shares with others (:mod:`planner.fleet`): requests are submitted
    by a client outside it (a router) at their send times, and :meth:`run_until` steps it up to a given time, with the
    scheduler, API server and step model of :func:`~planner.predict.simulator.run.simulate`; a prefix cache outside
    the engine hears of each request through ``hooks`` (:class:`~planner.predict.simulator.engine.EngineHooks`).

    Example::

        engine = ReplicaEngine(shape)
        rid = engine.submit(512, 128, sent_s=0.0)
        engine.run_until(math.inf)
        engine.ttft_s()[rid]   # its TTFT, seconds
    """

    def __init__(
        self,
        shape: StepShape,
        coefficients: StepCoefficients | np.ndarray = DEFAULT_COEFFICIENTS,
        hooks: EngineHooks | None = None,
    ) -> None:
        shape, coef, frontend, ar_latency = engine_parts(shape, coefficients)
        self.shape = shape
        self._engine = Engine.build(shape, coef, ar_latency, frontend, RequestTable([], []), 0)
        self._engine.hooks = hooks
        self._scheduler = ContinuousBatching(self._engine)
        one = step_features(
            shape, n_decode=np.ones(1), decode_ctx=np.ones((1, len(shape.groups))), allreduce_latency_s=ar_latency
        )
        self._floor_s = float(critical_path(one, coef)[0] @ coef)

    def submit(self, prompt_tokens: int, output_tokens: int, sent_s: float) -> int:
        """A request sent at ``sent_s`` seconds; it reaches the engine through the API server as
        :func:`~planner.predict.simulator.run.simulate`'s requests do. Returns its index.

        Raises:
            InvalidParameterError: it is longer than ``max_model_len`` or than the whole KV cache holds.
        """
        e = self._engine
        e.check_request(prompt_tokens, output_tokens)
        j = e.requests.add(prompt_tokens, output_tokens, sent_s)
        assert e.client is not None
        e.client.submit(j, sent_s)
        return j

    def run_until(self, limit_s: float, *, stop_at_finish: bool = False) -> None:
        """Step until the next step would start at or after ``limit_s`` seconds (or nothing is left); with
        ``stop_at_finish``, also after the first step in which a request finished (its client may send another)."""
        self._scheduler.run_until(limit_s, stop_at_finish=stop_at_finish)

    @property
    def now_s(self) -> float:
        """When its last step ended, seconds."""
        return self._engine.log.now

    @property
    def next_start_s(self) -> float:
        """When its next step starts: now when busy, else the next request's arrival; inf with nothing to do."""
        e, s = self._engine, self._scheduler
        if s.running or s.waiting:
            return e.log.now
        assert e.client is not None
        arrival_s = e.client.next_arrival_s()
        return max(e.log.now, arrival_s) if arrival_s < math.inf else math.inf

    @property
    def kv_usage(self) -> float:
        """Fraction of the KV blocks in use, in [0, 1]."""
        return 1.0 - self._engine.pool.free / self.shape.num_gpu_blocks

    @property
    def response_overhead_s(self) -> float:
        """Seconds from the step that made a token to its client."""
        return self._engine.frontend.out_s

    @property
    def step_floor_s(self) -> float:
        """The shortest step it can take (one sequence decoding at a context of one token), seconds."""
        return self._floor_s

    def earliest_finish_s(self) -> float:
        """A time no request of it finishes before: its next step's start plus the fewest steps any unfinished
        request still needs, each at least :attr:`step_floor_s`; inf with nothing unfinished."""
        e, s = self._engine, self._scheduler
        assert e.client is not None
        live = [*s.running, *s.waiting, *e.client.pending]
        if not live:
            return math.inf
        out = e.requests.out_len
        steps = min(out[j] - s.tokens(j)[1] for j in live)
        return self.next_start_s + max(1, steps) * self._floor_s

    def tokens(self, j: int) -> tuple[int, int]:
        """``(prompt tokens, tokens generated so far)`` of request ``j``."""
        return self._scheduler.tokens(j)

    def finish_s(self, j: int) -> float:
        """When request ``j``'s last token reached its client, seconds (nan while it runs)."""
        return self._engine.requests.finish[j] + self._engine.frontend.out_s

    def first_token_s(self, j: int) -> float:
        """When request ``j``'s first token reached its client, seconds (nan before)."""
        return self._engine.requests.first[j] + self._engine.frontend.out_s

    def ttft_s(self) -> np.ndarray:
        """Per request: its TTFT, seconds (from its send time)."""
        r = self._engine.requests
        return np.array(r.first, dtype=float) + self._engine.frontend.out_s - np.array(r.sent, dtype=float)

    def e2e_s(self) -> np.ndarray:
        """Per request: its end-to-end latency, seconds."""
        r = self._engine.requests
        return np.array(r.finish, dtype=float) + self._engine.frontend.out_s - np.array(r.sent, dtype=float)

    def itl_s(self) -> np.ndarray:
        """Every inter-token gap of its requests, pooled, seconds."""
        r = self._engine.requests
        return inter_token_gaps(
            np.array(self._engine.log.ends),
            np.array(r.first_step, dtype=np.int64),
            np.array(r.finish_step, dtype=np.int64),
        )[0]

    @property
    def preemptions(self) -> int:
        """Preemptions so far."""
        return self._engine.preemptions

    @property
    def peak_kv_blocks(self) -> int:
        """Most KV blocks in use at once."""
        return int(self._engine.pool.peak)
