"""One simulated run: :func:`simulate` checks the workload, builds the engine and hands it to the batching mode's
scheduling policy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner.errors import InvalidParameterError
from planner.loadtest.schedule import arrival_times, draw_lengths
from planner.loadtest.settings import LoadSettings
from planner.predict.shape import StepShape
from planner.predict.simulator.continuous import ContinuousBatching
from planner.predict.simulator.cost import Drafter
from planner.predict.simulator.engine import Engine, engine_parts
from planner.predict.simulator.interface import SchedulingPolicy
from planner.predict.simulator.requests import RequestTable
from planner.predict.simulator.result import SimulatedRun, assemble
from planner.predict.simulator.static import StaticBatching
from planner.predict.speculative import SpecDecodeConfig, expected_accepted
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

__all__ = ["MODES", "POLICIES", "simulate"]

#: The scheduling policy of each batching mode.
POLICIES: dict[str, type[SchedulingPolicy]] = {"continuous": ContinuousBatching, "static": StaticBatching}
#: Batching modes.
MODES: tuple[str, ...] = tuple(POLICIES)


def simulate(
    shape: StepShape,
    settings: LoadSettings,
    coefficients: StepCoefficients | np.ndarray = DEFAULT_COEFFICIENTS,
    *,
    mode: str = "continuous",
    request_overhead_s: float | None = None,
    lengths: Sequence[tuple[int, int]] | None = None,
    cached_tokens: Sequence[int] | None = None,
    speculative: SpecDecodeConfig | None = None,
) -> SimulatedRun:
    """Simulate ``settings``' workload on the deployment ``shape``.

    Args:
        shape: the deployment (:func:`planner.predict.shape.step_shape`), or one built by hand.
        settings: the workload: ``num_prompts``, ``max_concurrency``, ``request_rate``, ``burstiness``,
            ``input_len``, ``output_len``, ``range_ratio``, ``seed`` (the model always generates ``output_len``
            tokens, as with ``ignore_eos``).
        coefficients: the step model's coefficients, or a raw vector over :data:`~planner.predict.step_time.TERMS`.
        mode: ``continuous`` (vLLM V1, :mod:`~planner.predict.simulator.continuous`) or ``static``
            (:mod:`~planner.predict.simulator.static`).
        request_overhead_s: client-to-engine time of a lone request besides its per-token part; default the
            coefficients' (0 for a raw vector, which also has no other frontend time).
        lengths: ``(input tokens, output tokens)`` of each request, instead of drawing them from ``settings``
            (``num_prompts`` of them).
        cached_tokens: prompt tokens of each request the prefix cache already holds when it is admitted
            (continuous mode; at most its prompt − 1, as vLLM always computes the last token): they start
            computed, so the prefill term counts only the uncached tokens; their blocks are still held.
        speculative: speculative decoding (continuous mode; :mod:`~planner.predict.simulator.continuous`), or None.

    Returns:
        The run.

    Raises:
        InvalidParameterError: an unknown mode, a request longer than ``max_model_len``, or a KV cache that cannot
            hold one request.
    """
    if mode not in MODES:
        raise InvalidParameterError("mode", mode, " or ".join(MODES))
    if speculative is not None and mode != "continuous":
        raise InvalidParameterError("speculative", speculative.method, "continuous mode (static has no drafter)")
    shape, coef, frontend, ar_latency = engine_parts(shape, coefficients, request_overhead_s)
    if lengths is not None:
        if len(lengths) != settings.num_prompts or any(a < 1 or b < 1 for a, b in lengths):
            raise InvalidParameterError("lengths", len(lengths), f"{settings.num_prompts} pairs of token counts ≥ 1")
        pairs = [(int(a), int(b)) for a, b in lengths]
    else:
        pairs = [(a, b) for a, b, _ in draw_lengths(settings, settings.num_prompts, 0)]
    cap = settings.max_concurrency or settings.num_prompts
    if cached_tokens is not None and len(cached_tokens) != len(pairs):
        raise InvalidParameterError("cached_tokens", len(cached_tokens), f"{len(pairs)} counts, one per request")
    longest = max((a + b for a, b in pairs), default=0)
    if longest > shape.max_model_len:
        raise InvalidParameterError(
            "input_len + output_len", longest, f"at most max_model_len ({shape.max_model_len:,} tokens)"
        )
    requests = RequestTable(pairs, arrival_times(settings), cached_tokens)
    drafter = None
    if speculative is not None:
        k = speculative.num_speculative_tokens
        drafter = Drafter(k, speculative.draft_shape, speculative.forward_overhead_s, coef, ar_latency)
        # decode steps per request: the first token from the prefill, then 1 + E[accepted] tokens a step
        per_step = 1.0 + expected_accepted(speculative.rates)
        tokens = requests.out_len
        requests.out_len = [1 + int(np.ceil((b - 1) / per_step)) for b in tokens]
    engine = Engine.build(
        shape, coef, ar_latency, frontend, requests, cap, client=mode == "continuous", drafter=drafter
    )
    POLICIES[mode](engine).run()
    if speculative is not None:
        requests.out_len = tokens
    return assemble(engine, settings, mode)
