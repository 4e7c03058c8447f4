"""A fleet's workload: each request's whole prompt as named segments, its answer's name and length, and when it goes.

:func:`fleet_requests` turns a Load Test workload (:class:`~planner.loadtest.settings.LoadSettings`) into
:class:`FleetRequest` s with the load test's own generators (:func:`planner.loadtest.generators.plan_requests`: shared
prefixes, conversations, timed traces) and schedule (:mod:`planner.loadtest.schedule`: arrival times, drawn lengths),
so a fleet simulation sees the requests a load test of the same settings sends:

* ``random``: request ``i`` is a segment of its own (``r{i}``), released at the schedule's arrival time;
* ``prefix_repetition``: a shared prefix ``p{k}`` then a suffix of its own (vLLM's dataset);
* ``multi_turn``: turn ``t`` of conversation ``c`` sends the whole conversation so far — each earlier user message
  ``c{c}t{k}`` and its answer ``c{c}a{k}`` — then the new message (the load test's runner sends the answers the server
  gave; here each answer is the tokens the replica generated, ``output_len`` of them, named as its output, so a replica
  that generated it holds its blocks);
* ``timed_trace`` and ``burstgpt``: the trace's blocks (``h{id}:{tokens}``, equal ids equal text) at its timestamps.

An answer sent back as generated is the engine's best case; a real server's answer comes back as text, which its
tokenizer may split into other tokens (``bench/fleet_prefix_check.py`` shows what that costs on vLLM). Other
datasets (``examples``, ``custom``, ``sharegpt``) carry prompt text, not token counts: they are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

from planner.errors import InvalidParameterError
from planner.loadtest.generators import GENERATED, Segment, plan_requests
from planner.loadtest.schedule import Schedule, arrival_times, draw_lengths
from planner.loadtest.settings import LoadSettings

__all__ = ["DATASETS", "FleetRequest", "fleet_requests", "threads"]

#: Datasets a fleet simulation builds requests from.
DATASETS: tuple[str, ...] = ("random", *GENERATED)


@dataclass(frozen=True)
class FleetRequest:
    """One request of a fleet's workload.

    Attributes:
        segments: the whole prompt the replica receives (for a later turn: the conversation so far, then the new
            message), as ``(name, tokens)`` segments: equal names are equal tokens.
        output_len: tokens it generates (``ignore_eos``).
        output_key: the name of the tokens it generates: a later prompt holding a segment of this name holds them.
        arrival_s: release time, seconds after the start; None for a later turn of a conversation (sent
            ``think_time_s`` after the previous turn's last token).
        conversation: conversation id; None for a request on its own.
        turn: turn within its conversation, from 0.
    """

    segments: tuple[tuple[str, int], ...]
    output_len: int
    output_key: str
    arrival_s: float | None = 0.0
    conversation: int | None = None
    turn: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the whole prompt."""
        return sum(n for _, n in self.segments)


def _segments(parts: Sequence[Segment]) -> tuple[tuple[str, int], ...]:
    return tuple((s.key, s.tokens) for s in parts)


def fleet_requests(settings: LoadSettings) -> tuple[FleetRequest, ...]:
    """The measured requests of ``settings``' workload, in send order (module docstring).

    Args:
        settings: the workload: ``dataset_name`` one of :data:`DATASETS` (traces with their ``trace_rows``),
            ``num_prompts``, lengths, ``request_rate``/``burstiness``, ``seed``, the dataset's own fields.

    Returns:
        One :class:`FleetRequest` per measured request (warm-ups are not simulated).

    Raises:
        InvalidParameterError: a dataset of prompt text, or a trace without rows.
    """
    name = settings.dataset_name
    if name not in DATASETS:
        raise InvalidParameterError("dataset_name", name, ", ".join(DATASETS))
    if name == "random":
        times = arrival_times(settings)
        return tuple(
            FleetRequest(((f"r{i}", n_in),), n_out, f"o{i}", times[i])
            for i, (n_in, n_out, _) in enumerate(draw_lengths(settings, settings.num_prompts, 0))
        )
    planned = plan_requests(settings)
    out: list[FleetRequest] = []
    history: dict[int, tuple[tuple[str, int], ...]] = {}
    for i, r in enumerate(planned):
        own = _segments(r.segments)
        if r.conversation is None:
            out.append(FleetRequest(own, r.output_len, f"o{i}", r.arrival_s))
            continue
        answer = f"c{r.conversation}a{r.turn}"
        prompt = history.get(r.conversation, ()) + own
        history[r.conversation] = (*prompt, (answer, r.output_len))
        out.append(FleetRequest(prompt, r.output_len, answer, r.arrival_s, r.conversation, r.turn))
    return tuple(out)


def threads(requests: Sequence[FleetRequest]) -> list[list[int]]:
    """Request indices grouped as a client sends them: a conversation's turns together, in turn order, groups in
    order of their first request's release time (:meth:`planner.loadtest.schedule.Schedule.threads`, on these
    requests' columns)."""
    columns = SimpleNamespace(
        conversation=tuple(r.conversation for r in requests),
        arrival_s=tuple(r.arrival_s for r in requests),
        turn=tuple(r.turn for r in requests),
    )
    return Schedule.threads(columns)  # type: ignore[arg-type]
