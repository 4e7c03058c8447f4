"""The parts of one simulated engine that every scheduling policy works on: the deployment and its step cost, the
requests, the KV-block pool, the step log, the client in front and the hooks of a prefix cache kept outside it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from planner.errors import InvalidParameterError
from planner.predict.shape import StepShape
from planner.predict.simulator.blocks import BlockPool
from planner.predict.simulator.client import Client, Frontend
from planner.predict.simulator.cost import Drafter, StepCost
from planner.predict.simulator.requests import RequestTable
from planner.predict.simulator.steps import StepLog
from planner.predict.step_time import DEFAULT_COEFFICIENTS, TERMS, StepCoefficients

__all__ = ["Engine", "EngineHooks", "engine_parts"]


class EngineHooks(Protocol):
    """What an engine tells a prefix cache kept outside it (the fleet's per-replica cache, :mod:`planner.fleet`),
    by request index: ``cached_tokens`` is asked when the request is next to be admitted (its tokens the cache holds
    now: they start computed, as vLLM's ``num_computed_tokens``; the engine keeps at least one token to compute);
    ``admitted``, ``preempted`` and ``finished`` say what became of it."""

    def cached_tokens(self, j: int) -> int: ...

    def admitted(self, j: int) -> None: ...

    def preempted(self, j: int) -> None: ...

    def finished(self, j: int) -> None: ...


def engine_parts(
    shape: StepShape, coefficients: StepCoefficients | np.ndarray, request_overhead_s: float | None = None
) -> tuple[StepShape, np.ndarray, Frontend, float]:
    """The shape (with a calibrated MoE routing), the coefficient vector, the API server's figures and the all-reduce
    latency an engine runs with: a raw vector has no frontend time beyond ``request_overhead_s``.

    Raises:
        InvalidParameterError: a raw vector of the wrong length.
    """
    if isinstance(coefficients, StepCoefficients):
        if shape.num_experts and coefficients.moe_routing_exponent != shape.moe_routing_exponent:
            shape = replace(shape, moe_routing_exponent=coefficients.moe_routing_exponent)  # a calibrated routing
        return (
            shape,
            coefficients.vector(),
            Frontend.of(coefficients, request_overhead_s),
            coefficients.allreduce_latency_s,
        )
    coef = np.asarray(coefficients, dtype=float)
    if coef.shape != (len(TERMS),):
        raise InvalidParameterError("coefficients", coef.shape, f"a vector of {len(TERMS)} terms")
    return shape, coef, Frontend(in_s=request_overhead_s or 0.0), DEFAULT_COEFFICIENTS.allreduce_latency_s


@dataclass
class Engine:
    """One run's engine (mutable: the policy advances it).

    Attributes:
        shape: the deployment.
        coef: the step model's coefficient vector (:meth:`~planner.predict.step_time.StepCoefficients.vector`).
        allreduce_latency_s: latency of one all-reduce call, seconds.
        frontend: the API server's figures.
        requests: the requests and their state.
        pool: the KV-block pool.
        log: the steps taken.
        cost: seconds of a step.
        cap: most requests in flight (the client's ``max_concurrency``; the static batch size).
        client: the client sending the requests (None online, where requests are added as they come, and for static
            batches, which are sent together).
        drafter: the speculative drafter, or None.
        hooks: a prefix cache outside the engine (:class:`EngineHooks`), or None.
        preemptions: requests preempted so far, counted each time.
    """

    shape: StepShape
    coef: np.ndarray
    allreduce_latency_s: float
    frontend: Frontend
    requests: RequestTable
    pool: BlockPool
    log: StepLog
    cost: StepCost
    cap: int = 0
    client: Client | None = None
    drafter: Drafter | None = None
    hooks: EngineHooks | None = None
    preemptions: int = 0

    @classmethod
    def build(
        cls,
        shape: StepShape,
        coef: np.ndarray,
        allreduce_latency_s: float,
        frontend: Frontend,
        requests: RequestTable,
        cap: int,
        *,
        client: bool = True,
        drafter: Drafter | None = None,
    ) -> Engine:
        """An engine at time 0, with the client that sends ``requests`` (at most ``cap`` in flight) if ``client``."""
        return cls(
            shape=shape,
            coef=coef,
            allreduce_latency_s=allreduce_latency_s,
            frontend=frontend,
            requests=requests,
            pool=BlockPool(shape),
            log=StepLog(coef),
            cost=StepCost(shape, coef, allreduce_latency_s),
            cap=cap,
            client=Client(requests, frontend, cap) if client else None,
            drafter=drafter,
        )

    def check_request(self, prompt_tokens: int, output_tokens: int) -> None:
        """Refuse a request this engine cannot take (one added online or submitted by a router).

        Raises:
            InvalidParameterError: fewer than 1 prompt or output token, longer than ``max_model_len``, or more than the
                whole KV cache holds.
        """
        total = prompt_tokens + output_tokens
        if prompt_tokens < 1 or output_tokens < 1:
            raise InvalidParameterError(
                "tokens", (prompt_tokens, output_tokens), "at least 1 prompt and 1 output token"
            )
        if total > self.shape.max_model_len:
            raise InvalidParameterError("tokens", total, f"at most max_model_len ({self.shape.max_model_len:,})")
        if self.pool.blocks_at(total) > self.shape.num_gpu_blocks:
            raise InvalidParameterError("tokens", total, "a request the KV cache can hold")
