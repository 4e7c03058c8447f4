"""The running requests that are decoding, held as totals so that a decode step costs the same whatever the batch.

In a step of vLLM V1's scheduler every decoding request gets one token (when the step's token budget and the KV pool
allow it, which the scheduler checks first). So between two events (a request finishing, one arriving, a prefill
chunk) the decoding batch is the same request set, each one token further on, and everything a step needs is a
total that changes by a known amount:

* the context it reads: ``Σ (computed + 1)`` grows by the batch size a step (per sliding-window group, by the
  requests still short of the window: ``min(computed + 1, window)``);
* the blocks it allocates: a request needs a new block (per full-attention group, and per sliding-window group
  until it holds the window's blocks) when its computed tokens are a multiple of the block size, so the requests are
  counted by ``computed mod block_size`` and a step's new blocks are one such count;
* the steps at which a request finishes, or stops growing in a window, are known when it joins.

A member's computed and generated tokens are its counts when it joined plus the decode steps since. The steps are
the same as one request at a time would give (``tests/unit/predict/test_simulator_regression.py`` locks them to the
request-by-request simulator this replaced); only the work per step changes, from the batch size to a constant.
"""

from __future__ import annotations

import heapq

import numpy as np

from planner.predict.shape import StepShape
from planner.predict.simulator.blocks import BlockPool
from planner.predict.simulator.client import SAME_INSTANT_S
from planner.predict.simulator.engine import Engine

__all__ = ["DecodeCohort"]

#: Decode steps ahead from which a stretch is summed with numpy rather than step by step (numpy's fixed cost per
#: call is worth ~50 loop steps).
_VECTOR_STEPS = 64
# kinds of scheduled changes: a member finishes; one stops growing in a window's context; one stops taking blocks
_FINISH, _GROWING, _BLOCKS = 0, 1, 2


class DecodeCohort:
    """The decoding members of the running batch, as totals (module docstring).

    Attributes:
        count: decode steps the cohort has taken (members' token counts are offsets from it).
        size: members.
        ctx: ``Σ (computed + 1)`` over members: the context a decode step reads in a full-attention group.
    """

    def __init__(self, shape: StepShape, pool: BlockPool) -> None:
        self._bs = pool.block_size
        self._full = pool.full_groups
        self._windows = [g.window_tokens for g in shape.groups if g.window_tokens is not None]
        self._tops = [(cap - 1) * self._bs for cap in pool.window_caps]  # most computed tokens that still grow
        # per group: -1 for a full-attention group, else its index among the windowed ones
        order = iter(range(len(self._windows)))
        self._group_window = [-1 if g.window_tokens is None else next(order) for g in shape.groups]
        self.reset()

    def reset(self) -> None:
        """Empty the cohort."""
        w = len(self._windows)
        self.count = 0
        self.size = 0
        self.ctx = 0
        self._window_ctx = [0] * w
        self._growing = [0] * w
        self._phase = [0] * self._bs
        self._window_phase = [[0] * self._bs for _ in range(w)]
        self._computed_offset: dict[int, int] = {}
        self._generated_offset: dict[int, int] = {}
        self._events: dict[int, list[tuple]] = {}
        self._event_steps: list[int] = []

    def _at(self, step: int, change: tuple) -> None:
        changes = self._events.get(step)
        if changes is None:
            self._events[step] = [change]
            heapq.heappush(self._event_steps, step)
        else:
            changes.append(change)

    def join(self, j: int, computed: int, generated: int, out_len: int) -> None:
        """Request ``j`` decodes from the next step on (``computed = prompt + generated − 1``, ``generated <
        out_len``)."""
        now = self.count
        off = computed - now
        self._computed_offset[j] = off
        self._generated_offset[j] = generated - now
        self.size += 1
        self.ctx += computed + 1
        phase = off % self._bs
        self._phase[phase] += 1
        for i, (window, top) in enumerate(zip(self._windows, self._tops, strict=True)):
            self._window_ctx[i] += min(computed + 1, window)
            if computed + 1 < window:
                self._growing[i] += 1
                self._at(window - 1 - off, (_GROWING, i, -1))
            if computed <= top:
                self._window_phase[i][phase] += 1
                self._at(top + 1 - off, (_BLOCKS, i, phase, -1))
        self._at(out_len - generated + now, (_FINISH, j))

    def leave(self, j: int) -> tuple[int, int]:
        """Take request ``j`` out; returns its computed and generated tokens."""
        now = self.count
        off = self._computed_offset.pop(j)
        computed = now + off
        self.size -= 1
        self.ctx -= computed + 1
        phase = off % self._bs
        self._phase[phase] -= 1
        for i, (window, top) in enumerate(zip(self._windows, self._tops, strict=True)):
            self._window_ctx[i] -= min(computed + 1, window)
            if computed + 1 < window:  # its change is still to come: undo it there
                self._growing[i] -= 1
                self._at(window - 1 - off, (_GROWING, i, 1))
            if computed <= top:
                self._window_phase[i][phase] -= 1
                self._at(top + 1 - off, (_BLOCKS, i, phase, 1))
        return computed, now + self._generated_offset.pop(j)

    def members(self) -> list[tuple[int, int, int]]:
        """``(request, computed, generated)`` of every member."""
        now = self.count
        gen = self._generated_offset
        return [(j, now + off, now + gen[j]) for j, off in self._computed_offset.items()]

    def generated(self, j: int) -> int | None:
        """Request ``j``'s generated tokens if it is a member, else None."""
        off = self._generated_offset.get(j)
        return None if off is None else self.count + off

    def block_need(self) -> int:
        """Blocks the members' tokens of the next step need."""
        phase = -self.count % self._bs
        return self._full * self._phase[phase] + sum(p[phase] for p in self._window_phase)

    def ctx_by_group(self) -> list[int]:
        """Context the next step's decodes read, per attention group."""
        return [self.ctx if i < 0 else self._window_ctx[i] for i in self._group_window]

    def _growth_by_group(self) -> list[int]:
        return [self.size if i < 0 else self._growing[i] for i in self._group_window]

    def advance(self) -> list[int]:
        """The members decoded one token: move on one step; returns the members whose last token that was (still
        members: :meth:`leave` them)."""
        self.ctx += self.size
        for i, grow in enumerate(self._growing):
            self._window_ctx[i] += grow
        self.count += 1
        if self._event_steps and self._event_steps[0] == self.count:
            return self._fire()
        return []

    def _fire(self) -> list[int]:
        changes = self._events.pop(heapq.heappop(self._event_steps))
        done = []
        for change in changes:
            kind = change[0]
            if kind == _FINISH:
                done.append(change[1])
            elif kind == _GROWING:
                self._growing[change[1]] += change[2]
            else:
                self._window_phase[change[1]][change[2]] += change[3]
        return done

    def run(self, engine: Engine, width: int, arrival_s: float) -> tuple[int, list[int]]:
        """Decode-only steps, one after another, until a member finishes, a request reaches the engine by the time
        the next step is scheduled (``arrival_s``), or the pool cannot give the members' next blocks.

        The caller has checked that nothing else can be scheduled: no prefill in flight, no waiting request that can
        start, fewer members than the step's token budget. ``width``: tokens decoded per member a step.

        Returns:
            The steps taken and the members that finished at the last one (still members: :meth:`leave` them).
        """
        pool, log, cost, drafter = engine.pool, engine.log, engine.cost, engine.drafter
        n = self.size
        host, gpu_base, eager = cost.line(n * width, n * width, n)
        group_window, ctx_s = self._group_window, cost.ctx_s
        full_s = sum(s for i, s in zip(group_window, ctx_s, strict=True) if i < 0)
        window_s = [s for i, s in zip(group_window, ctx_s, strict=True) if i >= 0]
        start_ctx, growth = self.ctx_by_group(), self._growth_by_group()
        bs, full, phases, window_phases = self._bs, self._full, self._phase, self._window_phase
        stop = self._event_steps[0]  # a member's finish at the latest
        by_last_start = engine.shape.async_scheduling
        free, now, last, ends = pool.free, log.now, log.last_start, log.ends
        # the clock: the run's start plus the sum of its steps (summed from 0, then added: one rounding at the
        # clock's magnitude a step, not a growing sum of them)
        begin, elapsed = now, 0.0
        start = len(ends)
        step, ctx, taken = self.count, self.ctx, 0
        if drafter is None and stop - step >= _VECTOR_STEPS:
            # a long stretch (few, long requests): the loop's sums in numpy (elementwise the same operations in the
            # same order, and cumsum adds in the loop's order: the same clock to the bit)
            i = np.arange(stop - step)
            gpu = gpu_base + full_s * (ctx + n * i)
            if window_s:
                reads = self._window_ctx[0] + self._growing[0] * i
                reads = reads * window_s[0]
                for x, grow, s in zip(self._window_ctx[1:], self._growing[1:], window_s[1:], strict=True):
                    reads = reads + (x + grow * i) * s
                gpu = gpu + reads
            times = begin + np.cumsum(host + (gpu if eager is None else np.where(eager > gpu, eager, gpu)))
            phase = -(step + i) % bs
            need = full * np.array(phases)[phase]
            for p in window_phases:
                need = need + np.array(p)[phase]
            need = np.cumsum(need)
            limit = np.concatenate(([last, now], times[:-2]) if by_last_start else ([now], times[:-1]))
            halt = (arrival_s <= limit + SAME_INSTANT_S) | (need > free)
            taken = int(np.argmax(halt)) if halt.any() else len(i)
            if taken:
                ends.extend(times[:taken].tolist())
                now, last = float(times[taken - 1]), float(times[taken - 2]) if taken > 1 else now
                free -= int(need[taken - 1])
                ctx += n * taken
                step += taken
                self._window_ctx = [x + grow * taken for x, grow in zip(self._window_ctx, self._growing, strict=True)]
        elif not window_s and drafter is None and eager is None:  # the common case, kept lean
            while arrival_s > (last if by_last_start else now) + SAME_INSTANT_S:
                need = full * phases[-step % bs]
                if need > free:
                    break
                free -= need
                last = now
                elapsed += host + (gpu_base + full_s * ctx)  # the general loop's sum, in its order
                now = begin + elapsed
                ends.append(now)
                ctx += n
                step += 1
                taken += 1
                if step == stop:
                    break
        else:
            window_ctx, growing = list(self._window_ctx), self._growing
            while arrival_s > (last if by_last_start else now) + SAME_INSTANT_S:
                phase = -step % bs
                need = full * phases[phase] + sum(p[phase] for p in window_phases)
                if need > free:
                    break
                free -= need
                gpu = gpu_base + full_s * ctx + sum(x * s for x, s in zip(window_ctx, window_s, strict=True))
                seconds = host + (eager if eager is not None and eager > gpu else gpu)
                if drafter is not None:
                    seconds += drafter.seconds(n, ctx)
                last = now
                elapsed += seconds
                now = begin + elapsed
                ends.append(now)
                ctx += n
                for i, grow in enumerate(growing):
                    window_ctx[i] += grow
                step += 1
                taken += 1
                if step == stop:
                    break
            self._window_ctx = window_ctx
        if not taken:
            return 0, []
        pool.free, log.now, log.last_start = free, now, last
        log.record_decode_run(start, taken, n * width, n, start_ctx, growth)
        pool.note_peak()
        self.count, self.ctx = step, ctx
        return taken, self._fire() if step == stop else []
