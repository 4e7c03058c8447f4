"""The run's schedule: when each request is sent and how long its prompt and answer are, as vLLM draws them.

Shared by the load runner (:mod:`planner.loadtest.runner`) and the predictor (:mod:`planner.predict`), so a predicted
run and a measured run of the same :class:`~planner.loadtest.settings.LoadSettings` see the same requests.
Source: vllm-project/vllm ``vllm/benchmarks/serve.py`` ``get_request`` and ``vllm/benchmarks/datasets.py``
``RandomDataset`` (v0.24).

:class:`Schedule` is a run's requests made once before it starts (what each sends, when, and which conversation it
belongs to), the one value the runner consumes: a schedule can be split between workers by conversation without
drawing anything again. Imports only the standard library, :mod:`planner.loadtest.settings` and the request type of
:mod:`planner.serving.requests`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.serving.requests import ChatRequest

__all__ = ["Schedule", "arrival_times", "draw_lengths", "token_range"]


@dataclass(frozen=True)
class Schedule:
    """The measured requests of one run and their warmups, made once (:func:`planner.loadtest.runner.build_schedule`).

    Attributes:
        requests: What each measured request sends, in release order; for a later turn of a conversation, the new
            user message only (the runner puts the conversation so far, with the answers received, before it).
        arrival_s: Release time of each request, seconds after the measured start; None for a later turn of a
            conversation (sent ``think_time_s`` after the previous turn's answer).
        conversation: Conversation id of each request; None for a request on its own.
        turn: Turn of each request within its conversation, from 0.
        think_time_s: Seconds between an answer and the next turn of its conversation.
        warmups: Requests sent before the measured ones, not counted.

    Raises:
        InvalidParameterError: the columns differ in length, or a conversation's first turn has no release time.
    """

    requests: tuple[ChatRequest, ...]
    arrival_s: tuple[float | None, ...]
    conversation: tuple[int | None, ...]
    turn: tuple[int, ...]
    think_time_s: float = 0.0
    warmups: tuple[ChatRequest, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.requests)
        if not len(self.arrival_s) == len(self.conversation) == len(self.turn) == n:
            raise InvalidParameterError("schedule", n, "one arrival, conversation and turn per request")
        if any(
            t is None and (c is None or k == 0)
            for t, c, k in zip(self.arrival_s, self.conversation, self.turn, strict=True)
        ):
            raise InvalidParameterError("arrival_s", None, "a release time for every request but later turns")

    @property
    def has_conversations(self) -> bool:
        """Some requests belong to conversations (their turns go one after another)."""
        return any(c is not None for c in self.conversation)

    def threads(self) -> list[list[int]]:
        """Request indices grouped as they are sent: a conversation's turns together, in turn order, each group in
        order of its first request's release time (ties: schedule order); a request on its own is a group of one."""
        groups: dict[object, list[int]] = {}
        for i, c in enumerate(self.conversation):
            groups.setdefault(("c", c) if c is not None else ("r", i), []).append(i)
        ordered = sorted(groups.values(), key=lambda g: (self.arrival_s[g[0]] or 0.0, g[0]))
        return [sorted(g, key=lambda i: self.turn[i]) for g in ordered]


def arrival_times(settings: LoadSettings) -> tuple[float, ...]:
    """Send offsets (seconds after the run starts) of the ``num_prompts`` measured requests, as vLLM builds them.

    Formula (vLLM ``serve.py`` ``get_request``): for a finite rate each request gets a gap drawn from
    gamma(shape = burstiness, scale = 1 / (rate · burstiness)) (mean 1/rate); the offsets are the cumulative sums,
    then rescaled so the last one is exactly ``num_prompts / rate``. ``rate = inf`` gives all zeros (burst);
    ``burstiness = inf`` gives constant gaps of 1/rate.
    """
    n, rate = settings.num_prompts, settings.request_rate
    if math.isinf(rate):
        return (0.0,) * n
    rng = random.Random(settings.seed)
    if math.isinf(settings.burstiness):
        gaps = [1.0 / rate] * n
    else:
        theta = 1.0 / (rate * settings.burstiness)
        gaps = [rng.gammavariate(settings.burstiness, theta) for _ in range(n)]
    times: list[float] = []
    total = 0.0
    for gap in gaps:
        total += gap
        times.append(total)
    if times[-1] > 0:
        factor = (n / rate) / times[-1]
        times = [t * factor for t in times]
    return tuple(times)


def token_range(length: int, range_ratio: float) -> tuple[int, int]:
    """Inclusive bounds ``(⌊L(1 − r)⌋, ⌈L(1 + r)⌉)`` of sampled lengths (vLLM random dataset), at least 1."""
    return max(1, math.floor(length * (1 - range_ratio))), max(1, math.ceil(length * (1 + range_ratio)))


def draw_lengths(settings: LoadSettings, count: int, seed_offset: int = 0) -> list[tuple[int, int, int]]:
    """``(input tokens, output tokens, word offset)`` of ``count`` requests, drawn (seeded by ``settings.seed`` and
    ``seed_offset``; warmups use ``num_prompts``) uniformly from :func:`token_range` of ``input_len`` and
    ``output_len``, as vLLM's random dataset draws them."""
    rng = random.Random(settings.seed + 1 + seed_offset)
    in_lo, in_hi = token_range(settings.input_len, settings.range_ratio)
    out_lo, out_hi = token_range(settings.output_len, settings.range_ratio)
    out = []
    for i in range(count):
        n_in = rng.randint(in_lo, in_hi)
        out.append((n_in, rng.randint(out_lo, out_hi), i + seed_offset))
    return out
