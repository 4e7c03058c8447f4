"""The requests of one run: their token counts, their scheduling state and the times the run gives them.

Plain Python lists indexed by request (the scheduler reads and writes single entries, where numpy's per-element cost
would dominate); :meth:`RequestTable.add` appends one (the online form).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["RequestTable"]


class RequestTable:
    """Per-request state, one entry per request in send order.

    Attributes:
        n: requests.
        done: requests finished (or dropped).
        prompt / out_len: prompt tokens and output tokens to generate.
        cached: prompt tokens the prefix cache holds at admission (they start computed; at most ``prompt − 1``).
        computed: tokens whose KV is computed (vLLM's ``num_computed_tokens``).
        generated: output tokens sampled so far.
        held: KV blocks held.
        due: when the client means to send it, seconds after the run's start.
        sent / arrival: when the client sent it and when it reached the engine, seconds (NaN until then).
        first / finish: end of the step that made its first / last token, seconds (NaN until then).
        first_step / finish_step: index of that step.
    """

    def __init__(
        self, lengths: Sequence[tuple[int, int]], due: Sequence[float], cached: Sequence[int] | None = None
    ) -> None:
        n = len(lengths)
        self.n = n
        self.done = 0
        self.prompt = [int(a) for a, _ in lengths]
        self.out_len = [int(b) for _, b in lengths]
        # at most prompt − 1: vLLM always computes the prompt's last token (vllm/v1/core/sched/scheduler.py)
        self.cached = [min(int(c), p - 1) for c, p in zip(cached, self.prompt, strict=True)] if cached else [0] * n
        self.computed = [0] * n
        self.generated = [0] * n
        self.held = [0] * n
        self.due = list(due)
        nan = math.nan
        self.sent = [nan] * n
        self.arrival = [nan] * n
        self.first = [nan] * n
        self.finish = [nan] * n
        self.first_step = [0] * n
        self.finish_step = [0] * n

    def add(self, prompt_tokens: int, output_tokens: int, due_s: float) -> int:
        """A request due (and sent) at ``due_s`` that has not reached the engine yet; returns its index."""
        for values, value in (
            (self.prompt, prompt_tokens),
            (self.out_len, output_tokens),
            (self.cached, 0),
            (self.computed, 0),
            (self.generated, 0),
            (self.held, 0),
            (self.due, due_s),
            (self.sent, due_s),
            (self.arrival, math.nan),
            (self.first, math.nan),
            (self.finish, math.nan),
            (self.first_step, 0),
            (self.finish_step, 0),
        ):
            values.append(value)
        self.n += 1
        return self.n - 1
