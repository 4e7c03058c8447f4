"""The record of a run's engine steps: when each ended, and what it held (to rebuild its row of step terms).

The schedulers append each step's end to :attr:`StepLog.ends` and say what the step held in one of three forms: the
rows of terms themselves (static batching, which builds them in bulk), one step's make-up (a step with prefill
chunks, or one scheduled request by request), or a run of decode-only steps of the same batch (its first context and
how much the context grows a step). :meth:`StepLog.features` rebuilds every row at the end, with
:func:`~planner.predict.step_time.step_features` and :func:`~planner.predict.step_time.critical_path` over all the
steps at once: the rows the result's per-request terms and the calibration read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner.predict.shape import StepShape
from planner.predict.step_time import TERMS, critical_path, step_features

__all__ = ["StepLog"]


class StepLog:
    """The steps of one run.

    Attributes:
        now: the simulated clock, seconds: the end of the last step (or a later idle instant).
        last_start: when the last step started (with asynchronous scheduling the next one was scheduled then).
        ends: each step's end, seconds.
        running_sum: Σ over steps of the sequences each scheduled (for the mean batch).
    """

    def __init__(self, coef: np.ndarray) -> None:
        self.now = 0.0
        self.last_start = 0.0
        self.ends: list[float] = []
        self.running_sum = 0.0
        self._coef = coef
        self._rows: list[tuple[int, np.ndarray]] = []
        self._steps: list[tuple] = []
        self._runs: list[tuple] = []

    def record_rows(self, rows: np.ndarray, running: float, extra_s: np.ndarray | float = 0.0) -> np.ndarray:
        """Steps given as rows of terms (critical path resolved), one after the other from :attr:`now`, each
        ``extra_s`` longer than its row says; ``running``: the sequences they scheduled, summed. Returns their ends."""
        ends = self.now + np.cumsum(rows @ self._coef + extra_s)
        self.last_start = float(ends[-2]) if ends.size > 1 else self.now
        self._rows.append((len(self.ends), rows))
        self.ends.extend(ends.tolist())
        self.now = float(ends[-1])
        self.running_sum += running
        return ends

    def record_step(
        self,
        seconds: float,
        n_decode: int,
        n_sampled: int,
        n_seqs: int,
        decode_ctx: Sequence[float],
        prefill_tokens: int = 0,
        prefill_attn: Sequence[float] | None = None,
        prefill_ctx: Sequence[float] | None = None,
    ) -> None:
        """One step of ``seconds`` from :attr:`now`, of the given make-up (:func:`step_features`' arguments, one
        step's worth, per attention group where it says so)."""
        self._steps.append(
            (len(self.ends), n_decode, n_sampled, n_seqs, decode_ctx, prefill_tokens, prefill_attn, prefill_ctx)
        )
        self.last_start = self.now
        self.now += seconds
        self.ends.append(self.now)
        self.running_sum += n_seqs

    def record_decode_run(
        self,
        start: int,
        steps: int,
        n_decode: int,
        n_seqs: int,
        ctx: Sequence[float],
        ctx_growth: Sequence[float],
    ) -> None:
        """Steps ``start … start + steps − 1`` (their ends already in :attr:`ends`) decoded ``n_decode`` tokens for
        ``n_seqs`` sequences each (all sampled), attending ``ctx`` tokens per group in the first and
        ``ctx_growth`` more per group in each one after."""
        self._runs.append((start, steps, n_decode, n_seqs, tuple(ctx), tuple(ctx_growth)))
        self.running_sum += n_seqs * steps

    def forget(self) -> None:
        """Drop the steps recorded so far (the clock stays): a live engine's memory stays flat."""
        self.ends.clear()
        self._rows.clear()
        self._steps.clear()
        self._runs.clear()

    def features(self, shape: StepShape, allreduce_latency_s: float) -> np.ndarray:
        """Every step's row of :data:`~planner.predict.step_time.TERMS` (critical path resolved): ``(steps, terms)``."""
        out = np.zeros((len(self.ends), len(TERMS)))
        for start, rows in self._rows:
            out[start : start + len(rows)] = rows
        g = len(shape.groups)
        if self._steps:
            at, n_dec, n_samp, n_seqs, dec, pre, attn, ctx = zip(*self._steps, strict=True)
            zero = (0.0,) * g
            rows = step_features(
                shape,
                n_decode=np.array(n_dec, dtype=float),
                decode_ctx=np.array(dec, dtype=float).reshape(-1, g),
                prefill_tokens=np.array(pre, dtype=float),
                prefill_attn=np.array([a or zero for a in attn], dtype=float).reshape(-1, g),
                prefill_ctx=np.array([c or zero for c in ctx], dtype=float).reshape(-1, g),
                n_sampled=np.array(n_samp, dtype=float),
                n_seqs=np.array(n_seqs, dtype=float),
                allreduce_latency_s=allreduce_latency_s,
            )
            out[np.array(at)] = critical_path(rows, self._coef)
        if self._runs:
            start, steps, n_dec, n_seqs, ctx, growth = (np.array(x) for x in zip(*self._runs, strict=True))
            first = np.cumsum(steps) - steps
            offset = np.arange(int(steps.sum())) - np.repeat(first, steps)
            decode = np.repeat(n_dec, steps).astype(float)
            rows = step_features(
                shape,
                n_decode=decode,
                decode_ctx=np.repeat(ctx.reshape(-1, g), steps, axis=0).astype(float)
                + np.repeat(growth.reshape(-1, g), steps, axis=0) * offset[:, None],
                n_sampled=decode,
                n_seqs=np.repeat(n_seqs, steps).astype(float),
                allreduce_latency_s=allreduce_latency_s,
            )
            out[np.repeat(start, steps) + offset] = critical_path(rows, self._coef)
        return out
