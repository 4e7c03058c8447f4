"""vLLM V1's continuous batching, first come first served: the scheduler of ``vllm/v1/core/sched/scheduler.py``.

Each engine step, as ``Scheduler.schedule`` (v0.24) does it:

1. **Running requests first**, in the order they were admitted: each gets ``num_tokens − num_computed_tokens`` new
   tokens (1 for a decoding request; the rest of its prompt, chunked, for one still in prefill), at most what is left
   of the step's ``max_num_batched_tokens``. Its KV blocks are allocated for the new tokens; when the pool has too
   few free blocks, the **last** running request is preempted (recompute: its blocks are freed, its computed tokens
   reset to 0, it goes back to the front of the waiting queue), until the allocation succeeds or the request itself
   was the one preempted.
2. **Then waiting requests**, oldest first, only if nothing was preempted in this step, while fewer than
   ``max_num_seqs`` run and tokens are left: the first chunk of the prompt, if its blocks fit (else admission stops:
   first come, first served). Prompt tokens the prefix cache holds start computed (vLLM's ``num_computed_tokens``),
   so their prefill is skipped; their blocks are still held.
3. The step's time comes from :mod:`planner.predict.step_time` for what was scheduled. A request whose computed
   tokens reach its token count samples one token at the step's end (its first token ends its prefill).

An idle engine starts a step as soon as a request arrives (vLLM's ``EngineCore`` busy loop,
``vllm/v1/engine/core.py``). A busy engine with asynchronous scheduling
(:attr:`~planner.predict.shape.StepShape.async_scheduling`, vLLM 0.24.0's default) has already scheduled the step
after the one under way (``EngineCore.step_with_batch_queue`` keeps two in flight), so a request that arrives now is
first scheduled in the step after that: it waits for the rest of the current step and all of the next.

Speculative decoding (:class:`~planner.predict.simulator.cost.Drafter`; :mod:`planner.predict.speculative` for the
formulas): the caller counts a request's decode steps (``1 + ⌈(output − 1) / t⌉`` for ``t = 1 + E[accepted]`` tokens
a step); each decode step verifies ``k + 1`` tokens per sequence (the weight and KV reads shared, the FLOPs, LM head
and KV writes ``(k + 1)``-fold) and adds the drafter's ``k`` forwards over the step's decoding sequences. The KV
context and blocks grow one token per step (short of the ``t`` accepted: a slight under-count of the KV reads), and
each step's tokens arrive as one chunk, so ITL is the step time, as ``vllm bench serve`` measures it.

How it is computed: decoding requests live in a :class:`~planner.predict.simulator.cohort.DecodeCohort` (totals that
a step moves on in constant time), and the run jumps from event to event: a stretch of decode-only steps runs in a
tight loop until a request finishes or arrives; a step with prefill chunks touches only those requests; a step whose
budget or blocks run short (chunks that do not all fit, a preemption) is scheduled request by request
(:meth:`ContinuousBatching.step`, which the online form uses for every step).
"""

from __future__ import annotations

import math
from collections import deque

from planner.errors import InvalidParameterError
from planner.predict.simulator.cohort import DecodeCohort
from planner.predict.simulator.engine import Engine

__all__ = ["ContinuousBatching"]


class ContinuousBatching:
    """vLLM V1's scheduler over one :class:`~planner.predict.simulator.engine.Engine` (module docstring).

    Attributes:
        running: requests scheduled, in admission order.
        waiting: requests that reached the engine and wait for admission, oldest first (preempted ones in front).
        track_emitted: keep each step's tokens in :attr:`emitted` (the online form delivers them).
        emitted: ``(request, tokens it has now, finished)`` of each request that got a token in the last
            :meth:`step`.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        shape = engine.shape
        self.running: list[int] = []
        self.waiting: deque[int] = deque()
        self.track_emitted = False
        self.emitted: list[tuple[int, int, bool]] = []
        self._budget = shape.max_num_batched_tokens
        self._max_seqs = shape.max_num_seqs
        self._windows = [g.window_tokens or math.inf for g in shape.groups]
        self._width = 1 if engine.drafter is None else engine.drafter.k + 1
        self._cohort = DecodeCohort(shape, engine.pool)
        #: running requests outside the cohort (prefilling), in running order
        self._prefilling: list[int] = []

    # the run -----------------------------------------------------------------------------------------------------
    def run(self) -> None:
        """Serve every request of the engine's client to its last token (module docstring)."""
        self.run_until(math.inf)

    def run_until(self, limit_s: float, *, stop_at_finish: bool = False) -> None:
        """Step until every request is done, or until the next step would start at or after ``limit_s`` (an event
        clock shared with other engines: a step under way at ``limit_s`` is finished, a stretch of decode steps is cut
        there as at an arrival); with ``stop_at_finish``, also after the first step in which a request finished."""
        e = self.engine
        r, client, log = e.requests, e.client, e.log
        assert client is not None, "a run needs the client that sends its requests"
        running, waiting, cohort, budget = self.running, self.waiting, self._cohort, self._budget
        by_last_start = e.shape.async_scheduling
        done = r.done
        while r.done < r.n and not (stop_at_finish and r.done > done):
            busy = running or waiting
            # A busy engine scheduled this step when the last one started (asynchronous scheduling).
            client.deliver(log.last_start if busy and by_last_start else log.now, waiting)
            if not running and not waiting:
                arrival_s = client.next_arrival_s()
                if arrival_s >= limit_s:
                    break
                log.now = max(log.now, arrival_s)
                client.deliver(log.now, waiting)
                continue
            if log.now >= limit_s:
                break
            n = cohort.size
            if n and not self._prefilling and n < budget and not self._admissible(budget - n):
                # another engine's event may send this one a request by limit_s: the stretch ends there as at an arrival
                taken, finished = cohort.run(e, self._width, min(client.next_arrival_s(), limit_s))
                if taken:
                    self._finish_members(finished)
                    continue
            elif self._step_with_chunks():
                continue
            self._step_request_by_request()

    def tokens(self, j: int) -> tuple[int, int]:
        """``(prompt tokens, tokens generated so far)`` of request ``j``."""
        r = self.engine.requests
        generated = self._cohort.generated(j)
        return r.prompt[j], r.generated[j] if generated is None else generated

    def _step_request_by_request(self) -> None:
        """:meth:`step` with the cohort taken apart before and put together after."""
        r, pool, cohort = self.engine.requests, self.engine.pool, self._cohort
        for j, computed, generated in cohort.members():
            r.computed[j], r.generated[j], r.held[j] = computed, generated, pool.blocks_at(computed)
        cohort.reset()
        self.step()
        prompt, gen, comp, out = r.prompt, r.generated, r.computed, r.out_len
        self._prefilling = []
        for j in self.running:
            if gen[j] > 0 and comp[j] == prompt[j] + gen[j] - 1:
                cohort.join(j, comp[j], gen[j], out[j])
            else:
                self._prefilling.append(j)

    def _step_with_chunks(self) -> bool:
        """A step with the cohort decoding and the prefilling and admitted requests' chunks; False (nothing done)
        when its budget or blocks run short in a way only :meth:`step` schedules."""
        e = self.engine
        r, pool, cohort = e.requests, e.pool, self._cohort
        prompt, gen, comp, held = r.prompt, r.generated, r.computed, r.held
        n = cohort.size
        left = self._budget - n
        prefilling = self._prefilling
        wants = [prompt[j] + gen[j] - comp[j] for j in prefilling]
        if left < 0 or (sum(wants) > left and self.running[len(self.running) - len(prefilling) :] != prefilling):
            return False  # a decode would go without its token: request by request
        need = cohort.block_need()
        blocks_at = pool.blocks_at
        chunks: list[tuple[int, int]] = []
        grants: list[int] = []
        for j, want in zip(prefilling, wants, strict=True):
            if left <= 0:
                break
            tokens = want if want < left else left
            grant = blocks_at(comp[j] + tokens) - held[j]
            need += grant
            chunks.append((j, tokens))
            grants.append(grant)
            left -= tokens
        if need > pool.free:
            return False  # a preemption: request by request
        pool.free -= need
        for (j, _), grant in zip(chunks, grants, strict=True):
            held[j] += grant
        scheduled = len(chunks)
        left = self._admit(left, chunks)
        if not n and not chunks:
            self._nothing_fits()
        pool.note_peak()
        self._record(n, cohort.ctx_by_group(), cohort.ctx, chunks)
        step = len(e.log.ends) - 1
        finished = cohort.advance()
        self._finish_members(finished, remove=False)
        still: list[int] = []
        for j, tokens in chunks:
            comp[j] += tokens
            if comp[j] == prompt[j] + gen[j]:
                if self._sample(j, step):
                    finished.append(j)
                else:
                    cohort.join(j, comp[j], gen[j], r.out_len[j])
            else:
                still.append(j)
        self._prefilling = still[:scheduled] + prefilling[scheduled:] + still[scheduled:]
        if finished:
            gone = set(finished)
            self.running[:] = [j for j in self.running if j not in gone]
        return True

    def _finish_members(self, finished: list[int], *, remove: bool = True) -> None:
        """Members whose last token ended the last step leave the cohort and finish."""
        if not finished:
            return
        r, pool, step = self.engine.requests, self.engine.pool, len(self.engine.log.ends) - 1
        for j in finished:
            computed, generated = self._cohort.leave(j)
            r.computed[j], r.generated[j], r.held[j] = computed, generated, pool.blocks_at(computed)
            self._finished(j, step)
        if remove:
            gone = set(finished)
            self.running[:] = [j for j in self.running if j not in gone]

    # one step, request by request ------------------------------------------------------------------------------
    def step(self) -> None:
        """One engine step scheduled request by request, exactly as the module docstring says (every case: chunks
        cut by the budget, preemptions); the cohort must be empty."""
        r = self.engine.requests
        prompt, gen, comp = r.prompt, r.generated, r.computed
        scheduled, left, preempted = self._schedule_running(self._budget)
        if not preempted:
            left = self._admit(left, scheduled)
        if not scheduled:
            self._nothing_fits()
        self.engine.pool.note_peak()
        self._record(0, [0] * len(self._windows), 0, scheduled)
        step = len(self.engine.log.ends) - 1
        finished: list[int] = []
        emitted: list[tuple[int, int, bool]] = []
        for j, tokens in scheduled:
            comp[j] += tokens
            if comp[j] == prompt[j] + gen[j]:
                done = self._sample(j, step)
                if self.track_emitted:
                    emitted.append((j, gen[j], done))
                if done:
                    finished.append(j)
        if self.track_emitted:
            self.emitted = emitted
        if finished:
            gone = set(finished)
            self.running[:] = [j for j in self.running if j not in gone]

    def _schedule_running(self, budget: int) -> tuple[list[tuple[int, int]], int, bool]:
        """Step 1 of the module docstring: ``([(request, new tokens), ...], budget left, preempted)``.

        Without a preemption (the pool holds every request's new blocks) it is done in one pass; otherwise request
        by request, preempting the last running one until the allocation succeeds.
        """
        e = self.engine
        r, pool, running = e.requests, e.pool, self.running
        prompt, gen, comp, held = r.prompt, r.generated, r.computed, r.held
        blocks_at = pool.blocks_at
        plan: list[tuple[int, int]] = []
        grants: list[int] = []
        left = budget
        for j in running:
            if left <= 0:
                break
            want = prompt[j] + gen[j] - comp[j]
            tokens = want if want < left else left
            grants.append(blocks_at(comp[j] + tokens) - held[j])
            plan.append((j, tokens))
            left -= tokens
        if sum(grants) <= pool.free:
            pool.free -= sum(grants)
            for (j, _), grant in zip(plan, grants, strict=True):
                held[j] += grant
            return plan, left, False
        plan = []
        preempted = False
        i = 0
        while i < len(running) and budget > 0:
            j = running[i]
            tokens = min(prompt[j] + gen[j] - comp[j], budget)
            need = blocks_at(comp[j] + tokens) - held[j]
            while need > pool.free:
                victim = running.pop()
                self._preempt(victim)
                preempted = True
                if victim == j:
                    break
            if i >= len(running):
                break
            pool.free -= need
            held[j] += need
            plan.append((j, tokens))
            budget -= tokens
            i += 1
        return plan, budget, preempted

    def _preempt(self, j: int) -> None:
        e = self.engine
        e.pool.free += e.requests.held[j]
        e.requests.held[j] = 0
        e.requests.computed[j] = 0
        e.preemptions += 1
        self.waiting.appendleft(j)
        if e.hooks is not None:
            e.hooks.preempted(j)

    def _admissible(self, budget: int) -> bool:
        """The head of the waiting queue can start now with ``budget`` tokens left."""
        if not self.waiting or len(self.running) >= self._max_seqs or budget <= 0:
            return False
        r, hooks = self.engine.requests, self.engine.hooks
        j = self.waiting[0]
        if r.computed[j] == 0 and hooks is not None:  # the cache as it is now (vLLM looks it up at admission)
            r.cached[j] = min(hooks.cached_tokens(j), r.prompt[j] + r.generated[j] - 1)
        if r.computed[j] == 0 and r.cached[j] > 0:  # a hit: its cached blocks are held, not computed
            r.computed[j] = r.cached[j]
        computed = r.computed[j]
        tokens = min(r.prompt[j] + r.generated[j] - computed, budget)
        return self.engine.pool.blocks_at(computed + tokens) - r.held[j] <= self.engine.pool.free

    def _admit(self, left: int, scheduled: list[tuple[int, int]]) -> int:
        """Step 2 of the module docstring: admit waiting requests while they fit, appending their chunks to
        ``scheduled``; returns the budget left."""
        e = self.engine
        r, pool = e.requests, e.pool
        while self._admissible(left):
            j = self.waiting.popleft()
            computed = r.computed[j]
            tokens = min(r.prompt[j] + r.generated[j] - computed, left)
            grant = pool.blocks_at(computed + tokens) - r.held[j]
            self.running.append(j)
            pool.free -= grant
            r.held[j] += grant
            if e.hooks is not None:
                e.hooks.admitted(j)
            scheduled.append((j, tokens))
            left -= tokens
        return left

    def _nothing_fits(self) -> None:
        raise InvalidParameterError(
            "num_gpu_blocks",
            self.engine.shape.num_gpu_blocks,
            "a KV cache that holds at least one request's first chunk",
        )

    def _record(
        self, n_cohort: int, cohort_ctx: list[int], cohort_ctx_total: int, chunks: list[tuple[int, int]]
    ) -> None:
        """Time and log a step: the cohort's ``n_cohort`` decodes (reading ``cohort_ctx`` per group,
        ``cohort_ctx_total`` uncapped) and ``chunks`` (request, new tokens), scheduled but not yet computed."""
        e = self.engine
        r, windows, width = e.requests, self._windows, self._width
        prompt, gen, comp = r.prompt, r.generated, r.computed
        n_dec, dec_ctx, ctx_total = n_cohort, list(cohort_ctx), cohort_ctx_total
        prefill = sampled = 0
        attn = [0.0] * len(windows)
        pre_ctx = [0.0] * len(windows)
        for j, tokens in chunks:
            c, g = comp[j], gen[j]
            completes = c + tokens == prompt[j] + g
            if tokens == 1 and g > 0 and completes:  # a decode: one token that completes its tokens so far
                n_dec += 1
                ctx_total += c + 1
                for i, w in enumerate(windows):
                    dec_ctx[i] += min(c + 1, w)
            else:
                prefill += tokens
                for i, w in enumerate(windows):
                    attn[i] += tokens * min(c + (tokens + 1) / 2, w)
                    pre_ctx[i] += min(c, w)
                sampled += completes
        n_seqs = n_cohort + len(chunks)
        cost = e.cost
        if prefill:
            ctx = [d + p for d, p in zip(dec_ctx, pre_ctx, strict=True)]
            seconds = cost.seconds(n_dec * width, n_dec * width + sampled, n_seqs, ctx, prefill, cost.attention_s(attn))
        else:
            seconds = cost.seconds(n_dec * width, n_dec * width + sampled, n_seqs, dec_ctx)
        if e.drafter is not None and n_dec:
            seconds += e.drafter.seconds(n_dec, ctx_total)
        if prefill:
            e.log.record_step(seconds, n_dec * width, n_dec * width + sampled, n_seqs, dec_ctx, prefill, attn, pre_ctx)
        else:
            e.log.record_step(seconds, n_dec * width, n_dec * width + sampled, n_seqs, dec_ctx)

    def _sample(self, j: int, step: int) -> bool:
        """Request ``j``'s computed tokens reached its token count in ``step``: it samples a token; True when that
        was its last (it is finished, still in :attr:`running`)."""
        r = self.engine.requests
        r.generated[j] += 1
        if r.generated[j] == 1:
            r.first[j] = self.engine.log.now
            r.first_step[j] = step
        if r.generated[j] == r.out_len[j]:
            self._finished(j, step)
            return True
        return False

    def _finished(self, j: int, step: int) -> None:
        e = self.engine
        r = e.requests
        r.finish[j] = e.log.now
        r.finish_step[j] = step
        e.pool.free += r.held[j]
        r.held[j] = 0
        r.done += 1
        if e.hooks is not None:
            e.hooks.finished(j)
        if e.client is not None:
            e.client.request_done(e.log.now)

    # the online form ---------------------------------------------------------------------------------------------
    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        """A request that reaches the engine now (online use); returns its index."""
        j = self.engine.requests.add(prompt_tokens, output_tokens, self.engine.log.now)
        self.waiting.append(j)
        return j

    def drop(self, j: int) -> None:
        """Forget request ``j`` (its client went away): its blocks are freed (online use)."""
        if j in self.running:
            self.running.remove(j)
        elif j in self.waiting:
            self.waiting.remove(j)
        else:
            return
        r = self.engine.requests
        self.engine.pool.free += r.held[j]
        r.held[j] = 0
        r.done += 1
