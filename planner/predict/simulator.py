"""A continuous-batching simulator of vLLM V1's scheduler, driven by the step-time model.

The workload is the load test's own (:class:`~planner.loadtest.settings.LoadSettings`: the send schedule and the
lengths of :mod:`planner.loadtest.schedule`, the client's concurrency cap), so a predicted run and a measured one
see the same requests; the result goes through the same aggregation
(:func:`planner.metrics.benchmark.metrics_from_samples`) and so has every ``vllm bench serve`` key.

Each engine step, as ``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule`` (v0.24) does it:

1. **Running requests first**, in the order they were admitted: each gets ``num_tokens − num_computed_tokens``
   new tokens (1 for a decoding request; the rest of its prompt, chunked, for one still in prefill), at most what
   is left of the step's ``max_num_batched_tokens``. Its KV blocks are allocated for the new tokens; when the
   pool has too few free blocks, the **last** running request is preempted (recompute: its blocks are freed, its
   computed tokens reset to 0, it goes back to the front of the waiting queue), until the allocation succeeds or
   the request itself was the one preempted.
2. **Then waiting requests**, oldest first, only if nothing was preempted in this step, while fewer than
   ``max_num_seqs`` run and tokens are left: the first chunk of the prompt, if its blocks fit (else admission
   stops: first come, first served).
3. The step's time comes from :mod:`planner.predict.step_time` for what was scheduled. A request whose computed
   tokens reach its token count samples one token at the step's end (its first token ends its prefill).

Blocks per request: ``ceil(tokens / block_size)`` per full-attention KV-cache group; a sliding-window group keeps
at most ``ceil((window − 1) / block_size) + 1`` (blocks wholly outside the window are freed:
``vllm/v1/core/single_type_kv_cache_manager.py`` ``SlidingWindowManager.remove_skipped_blocks``). The pool has
``num_gpu_blocks`` blocks, from the capacity plan.

Client side, as ``vllm bench serve``: request ``j`` is due at its scheduled offset; with ``max_concurrency`` it is
sent when a slot is free (the client has read the last token of the request before it); TTFT and E2E are measured
from sending. The API server (:class:`~planner.predict.step_time.StepCoefficients`' frontend figures, read off vLLM's
own logs) hands a lone request to the engine ``request_in_s(prompt tokens)`` after it was sent, and requests that
arrive together one after another, ``frontend_work_s(prompt tokens)`` apart (one process, one event loop: a burst of
128 requests of 1,024 tokens reaches the engine over ~300 ms); every token reaches the client
``response_overhead_s`` after the step that made it. An idle engine starts a step as soon as a request arrives
(vLLM's ``EngineCore`` busy loop, ``vllm/v1/engine/core.py``). A busy engine with asynchronous scheduling
(:attr:`~planner.predict.shape.StepShape.async_scheduling`, vLLM 0.24.0's default) has already scheduled the step
after the one under way (``EngineCore.step_with_batch_queue`` keeps two in flight), so a request that arrives now
is first scheduled in the step after that: it waits for the rest of the current step and all of the next.

Static batching (``mode="static"``): batches of ``max_concurrency`` requests (all, without a cap) in arrival
order; a batch starts when its last request has arrived and the previous batch is done, prefills all its prompts
in one step, then decodes every sequence until the longest is done (finished ones keep their slot), as a
server without iteration-level scheduling does (Orca, Yu et al. OSDI 2022, §2).

Speculative decoding (``speculative=``, continuous mode; :mod:`planner.predict.speculative` for the formulas): a
request's decode takes ``1 + ⌈(output − 1) / t⌉`` steps for ``t = 1 + E[accepted]`` tokens per step (its first token
from the prefill, as in vLLM), each decode step verifies ``k + 1`` tokens per sequence (the weight and KV reads shared,
the FLOPs, LM head and KV writes ``(k + 1)``-fold) and adds the drafter's ``k`` forwards over the step's decoding
sequences. The KV context and blocks grow one token per step (short of the ``t`` accepted: a slight under-count of
the KV reads), and each step's tokens arrive as one chunk, so ITL is the step time, as ``vllm bench serve`` measures it.

Decode-only stretches (no prompt in flight, no admission possible before the next finish or arrival) are advanced
many steps at once with numpy, so 10,000 requests take well under a second (``bench/simulator_speed.py``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from planner.errors import InvalidParameterError
from planner.loadtest.schedule import arrival_times, draw_lengths
from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.shape import StepShape
from planner.predict.speculative import SpecDecodeConfig, expected_accepted
from planner.predict.step_time import (
    DEFAULT_COEFFICIENTS,
    TERMS,
    StepCoefficients,
    critical_path,
    step_features,
    step_row,
)

__all__ = ["MODES", "EngineHooks", "OnlineScheduler", "ReplicaEngine", "SimulatedRun", "simulate"]

#: Batching modes.
MODES: tuple[str, ...] = ("continuous", "static")
#: Most steps one decode-only stretch advances at once (bounds the numpy matrices).
_MAX_STRETCH = 512


@dataclass(frozen=True)
class SimulatedRun:
    """A predicted run: per-request arrays (aligned, seconds and tokens) and the run's metrics.

    Attributes:
        settings: the workload.
        mode: ``continuous`` or ``static``.
        metrics: the aggregates, as a measured run's (vLLM key names through ``metrics.to_vllm_json()``).
        sent_s: when each request was sent, seconds after the run's start.
        ttft_s / e2e_s: per request, seconds.
        input_tokens / output_tokens: per request.
        num_steps: engine steps taken.
        preemptions: requests preempted (recompute), counted each time.
        peak_kv_blocks: most KV blocks in use at once; ``num_gpu_blocks`` is the pool.
        num_gpu_blocks: the pool's size.
        mean_running: mean number of sequences scheduled per step.
        ttft_features / tpot_features: per request, the sum of the nominal step terms (:data:`TERMS`) over the
            steps its TTFT and its decode span covered, the TPOT one divided by ``output_tokens − 1`` (the
            calibration's linearization).
        ttft_fixed_s: per request, the part of its TTFT outside those steps and outside the fixed request overhead
            (``request_overhead_s``): its per-token way in, its wait behind other arrivals at the API server, idle
            engine time, the token's way out; seconds.
        median_itl_features: the nominal terms of the step whose duration is the median inter-token gap.
    """

    settings: LoadSettings
    mode: str
    metrics: BenchmarkMetrics
    sent_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    num_steps: int
    preemptions: int
    peak_kv_blocks: int
    num_gpu_blocks: int
    mean_running: float
    ttft_features: np.ndarray
    ttft_fixed_s: np.ndarray
    tpot_features: np.ndarray
    median_itl_features: np.ndarray

    @property
    def kv_saturated(self) -> bool:
        """The KV cache filled up during the run (requests were preempted or the pool was ≥ 99% in use)."""
        return self.preemptions > 0 or self.peak_kv_blocks >= 0.99 * self.num_gpu_blocks


class EngineHooks(Protocol):
    """What an engine tells a prefix cache kept outside it (the fleet's per-replica cache, :mod:`planner.fleet`),
    by request index: ``cached_tokens`` is asked when the request is next to be admitted (its tokens the cache holds
    now: they start computed, as vLLM's ``num_computed_tokens``; the engine keeps at least one token to compute);
    ``admitted``, ``preempted`` and ``finished`` say what became of it."""

    def cached_tokens(self, j: int) -> int: ...

    def admitted(self, j: int) -> None: ...

    def preempted(self, j: int) -> None: ...

    def finished(self, j: int) -> None: ...


@dataclass(frozen=True)
class _Frontend:
    """The API server's figures the simulator uses, seconds (:class:`~planner.predict.step_time.StepCoefficients`):
    a lone request's way in (fixed and per prompt token), the work that holds the next arrival back (fixed and per
    prompt token), and a token's way out."""

    in_s: float = 0.0
    in_per_token_s: float = 0.0
    gap_s: float = 0.0
    gap_per_token_s: float = 0.0
    out_s: float = 0.0

    @classmethod
    def of(cls, c: StepCoefficients, in_s: float | None = None) -> _Frontend:
        return cls(
            c.request_overhead_s if in_s is None else in_s,
            c.request_overhead_per_token_s,
            c.frontend_gap_s,
            c.frontend_gap_per_token_s,
            c.response_overhead_s,
        )


class _Blocks:
    """KV blocks a request holds at a given token count (module docstring)."""

    def __init__(self, shape: StepShape) -> None:
        bs = shape.block_size
        self.block_size = bs
        self.full = sum(1 for g in shape.groups if g.window_tokens is None)
        self.caps = [-(-(g.window_tokens - 1) // bs) + 1 for g in shape.groups if g.window_tokens is not None]

    def of(self, tokens: int) -> int:
        per = -(-tokens // self.block_size)
        return self.full * per + sum(min(per, cap) for cap in self.caps)

    def of_array(self, tokens: np.ndarray) -> np.ndarray:
        per = -(-tokens // self.block_size)
        total = self.full * per
        for cap in self.caps:
            total = total + np.minimum(per, cap)
        return total


class _Engine:
    """The simulation state; one instance per run. Per-request state in Python lists (scalar steps are cheap),
    numpy for the decode stretches."""

    def __init__(
        self,
        shape: StepShape,
        coef: np.ndarray,
        frontend: _Frontend,
        ar_latency_s: float,
        lengths: Sequence[tuple[int, int]],
        due: Sequence[float],
        cap: int,
        cached: Sequence[int] | None = None,
    ) -> None:
        self.shape = shape
        self.frontend = frontend
        self.last_arrival = -math.inf
        self.coef = coef
        #: start of the last step: with asynchronous scheduling the next step was scheduled then
        self.last_start = 0.0
        self.ar_latency_s = ar_latency_s
        self.blocks = _Blocks(shape)
        self.windows = [g.window_tokens or math.inf for g in shape.groups]
        self.windows_np = np.array(self.windows, dtype=float)
        self.windowed = any(math.isfinite(w) for w in self.windows)
        self.groups = len(shape.groups)
        self.budget = shape.max_num_batched_tokens
        self.max_seqs = shape.max_num_seqs
        n = len(lengths)
        # Token counts live in numpy arrays (the steps update them in bulk); ``add`` grows them by doubling.
        self.prompt = np.array([a for a, _ in lengths] or [0], dtype=np.int64)
        self.out_len = np.array([b for _, b in lengths] or [0], dtype=np.int64)
        self.computed = np.zeros(max(n, 1), dtype=np.int64)
        self.generated = np.zeros(max(n, 1), dtype=np.int64)
        self.held = np.zeros(max(n, 1), dtype=np.int64)
        self.due = list(due)
        self.cap = cap
        self.n = n
        nan = math.nan
        self.sent = [nan] * n
        self.arrival = [nan] * n
        self.first = [nan] * n
        self.finish = [nan] * n
        self.first_step = [0] * n
        self.finish_step = [0] * n
        # prompt tokens the prefix cache holds at admission: they start computed (vLLM's num_computed_tokens =
        # the cached tokens, vllm/v1/core/sched/scheduler.py), so prefill computes only the rest
        self.cached = np.zeros(max(n, 1), dtype=np.int64)
        if cached:
            self.cached[:n] = np.minimum(np.asarray(cached, dtype=np.int64), self.prompt[:n] - 1)
        self.free = shape.num_gpu_blocks
        self.peak = 0
        self.preemptions = 0
        self.now = 0.0
        self.step_end: list[float] = []
        self.features: list[np.ndarray] = []
        self.running_sum = 0.0
        self.running: list[int] = []
        self.waiting: deque[int] = deque()
        self.pending: deque[int] = deque()
        self.emitted: list[tuple[int, int, bool]] = []
        #: Keep each step's emitted tokens in ``emitted`` (the online scheduler delivers them).
        self.track_emitted = False
        self.next_send = 0
        self.done = 0
        #: speculative decoding: (k, drafter shape or None, host seconds per draft forward); None without
        self.spec: tuple[int, StepShape | None, float] | None = None
        #: a prefix cache outside the engine (:class:`EngineHooks`, the fleet's per-replica cache); None without
        self.hooks: EngineHooks | None = None
        #: a decode stretch ends by this time as it would at an arrival (:meth:`run_until`'s shared event clock)
        self.horizon_s = math.inf
        for _ in range(min(self.cap, n)):
            self._send(self.due[self.next_send])

    def _append(self, prompt_tokens: int, output_tokens: int, due_s: float) -> int:
        """Grow the per-request state by one request due at ``due_s``; returns its index."""
        for values, value in (
            (self.due, due_s),
            (self.sent, due_s),
            (self.arrival, math.nan),
            (self.first, math.nan),
            (self.finish, math.nan),
            (self.first_step, 0),
            (self.finish_step, 0),
        ):
            values.append(value)
        j = self.n
        if j >= self.prompt.size:
            for name in ("prompt", "out_len", "computed", "cached", "generated", "held"):
                old = getattr(self, name)
                grown = np.zeros(2 * old.size, dtype=np.int64)
                grown[: old.size] = old
                setattr(self, name, grown)
        self.prompt[j], self.out_len[j] = prompt_tokens, output_tokens
        self.computed[j] = self.cached[j] = self.generated[j] = self.held[j] = 0
        self.n += 1
        return j

    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        """A request that reaches the engine now (online use); returns its index."""
        j = self._append(prompt_tokens, output_tokens, self.now)
        self.next_send = self.n
        self.waiting.append(j)
        return j

    def submit(self, prompt_tokens: int, output_tokens: int, sent_s: float) -> int:
        """A request a client outside the engine sent at ``sent_s`` (the fleet's router): it reaches the engine
        through the API server as :func:`simulate`'s requests do; returns its index."""
        j = self._append(prompt_tokens, output_tokens, sent_s)
        self.next_send = j
        self._send(sent_s)
        return j

    def drop(self, j: int) -> None:
        """Forget request ``j`` (its client went away): its blocks are freed (online use)."""
        if j in self.running:
            self.running.remove(j)
        elif j in self.waiting:
            self.waiting.remove(j)
        else:
            return
        self.free += int(self.held[j])
        self.held[j] = 0
        self.done += 1

    # client side ---------------------------------------------------------------------------------------------
    def _send(self, slot_free_s: float) -> None:
        j = self.next_send
        self.sent[j] = max(self.due[j], slot_free_s)
        # The API server hands requests to the engine one at a time: requests sent together arrive a little apart.
        fe, tokens = self.frontend, float(self.prompt[j])
        alone = self.sent[j] + fe.in_s + fe.in_per_token_s * tokens
        self.arrival[j] = max(alone, self.last_arrival + fe.gap_s + fe.gap_per_token_s * tokens)
        self.last_arrival = self.arrival[j]
        self.pending.append(j)
        self.next_send += 1

    def _admit_arrived(self, limit_s: float) -> None:
        """Move the requests that reached the engine by ``limit_s`` to the waiting queue."""
        pending, arrival, limit = self.pending, self.arrival, limit_s + 1e-12
        while pending and arrival[pending[0]] <= limit:
            self.waiting.append(pending.popleft())

    def _finished(self, j: int, step: int) -> None:
        self.finish[j] = self.now
        self.finish_step[j] = step
        self.free += int(self.held[j])
        self.held[j] = 0
        self.done += 1
        if self.hooks is not None:
            self.hooks.finished(j)
        if self.next_send < self.n:
            self._send(self.now + self.frontend.out_s)  # the client has read the last token

    # steps -----------------------------------------------------------------------------------------------------
    def _record(self, features: np.ndarray, running: float, extra_s: np.ndarray | float = 0.0) -> np.ndarray:
        ends = self.now + np.cumsum(features @ self.coef + extra_s)
        self.last_start = float(ends[-2]) if ends.size > 1 else self.now
        self.step_end.extend(ends.tolist())
        self.features.append(features)
        self.running_sum += running
        return ends

    def _preempt(self, j: int) -> None:
        self.free += int(self.held[j])
        self.held[j] = 0
        self.computed[j] = 0
        self.preemptions += 1
        self.waiting.appendleft(j)
        if self.hooks is not None:
            self.hooks.preempted(j)

    def _admissible(self, budget: int) -> bool:
        """The head of the waiting queue can start now with ``budget`` tokens left."""
        if not self.waiting or len(self.running) >= self.max_seqs or budget <= 0:
            return False
        j = self.waiting[0]
        if self.computed[j] == 0 and self.hooks is not None:  # the cache as it is now (vLLM looks it up at admission)
            self.cached[j] = min(self.hooks.cached_tokens(j), int(self.prompt[j] + self.generated[j]) - 1)
        if self.computed[j] == 0 and self.cached[j] > 0:  # a hit: its cached blocks are held, not computed
            self.computed[j] = self.cached[j]
        computed = int(self.computed[j])
        n_new = min(int(self.prompt[j] + self.generated[j]) - computed, budget)
        return self.blocks.of(computed + n_new) - int(self.held[j]) <= self.free

    def _schedule_running(self, budget: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """Step 1 of the module docstring: the running requests' tokens and blocks, in admission order.

        Returns the requests scheduled, their new tokens, the budget left and whether a request was preempted.
        Without a preemption (the pool holds every request's new blocks) it is done in bulk; otherwise request by
        request, preempting the last running one until the allocation succeeds.
        """
        running = self.running
        run = np.fromiter(running, dtype=np.int64, count=len(running))
        if run.size:
            comp = self.computed[run]
            want = self.prompt[run] + self.generated[run] - comp
            before = np.cumsum(want) - want
            n_new = np.minimum(want, np.maximum(budget - before, 0))
            take = n_new > 0
            need = np.where(take, self.blocks.of_array(comp + n_new) - self.held[run], 0)
            total = int(need.sum())
            if total <= self.free:
                self.held[run] += need
                self.free -= total
                return run[take], n_new[take], budget - int(n_new.sum()), False
        idx: list[int] = []
        new: list[int] = []
        preempted = False
        i = 0
        computed, held, prompt, generated, blocks = self.computed, self.held, self.prompt, self.generated, self.blocks
        while i < len(running) and budget > 0:
            j = running[i]
            n = min(int(prompt[j] + generated[j] - computed[j]), budget)
            need = blocks.of(int(computed[j]) + n) - int(held[j])
            while need > self.free:
                victim = running.pop()
                self._preempt(victim)
                preempted = True
                if victim == j:
                    break
            if i >= len(running):
                break
            self.free -= need
            held[j] += need
            idx.append(j)
            new.append(n)
            budget -= n
            i += 1
        return np.array(idx, dtype=np.int64), np.array(new, dtype=np.int64), budget, preempted

    def general_step(self) -> None:
        budget = self.budget
        idx, new, budget, preempted = self._schedule_running(budget)
        prompt, generated, computed, held = self.prompt, self.generated, self.computed, self.held
        if not preempted:
            admitted: list[int] = []
            admitted_new: list[int] = []
            while self._admissible(budget):
                j = self.waiting.popleft()
                n = min(int(prompt[j] + generated[j] - computed[j]), budget)
                need = self.blocks.of(int(computed[j]) + n) - int(held[j])
                self.running.append(j)
                self.free -= need
                held[j] += need
                if self.hooks is not None:
                    self.hooks.admitted(j)
                admitted.append(j)
                admitted_new.append(n)
                budget -= n
            if admitted:
                idx = np.concatenate([idx, np.array(admitted, dtype=np.int64)])
                new = np.concatenate([new, np.array(admitted_new, dtype=np.int64)])
        if not idx.size:
            raise InvalidParameterError(
                "num_gpu_blocks", self.shape.num_gpu_blocks, "a KV cache that holds at least one request's first chunk"
            )
        self.peak = max(self.peak, self.shape.num_gpu_blocks - self.free)
        # What the step holds: decodes (one token that completes a request's tokens so far) and prefill chunks.
        c = computed[idx]
        g = generated[idx]
        completes = c + new == prompt[idx] + g
        decode = (new == 1) & (g > 0) & completes
        chunk = ~decode
        windows = self.windows
        if self.windowed:
            dec_ctx = np.minimum((c[decode] + 1)[:, None].astype(float), self.windows_np).sum(axis=0).tolist()
        else:
            dec_ctx = [float((c[decode] + 1).sum())] * self.groups
        pre_tok = int(new[chunk].sum())
        pre_attn = pre_ctx = None
        if pre_tok:
            cp = c[chunk].tolist()
            nn = new[chunk].tolist()
            pre_attn = [sum(n * min(x + (n + 1) / 2, w) for x, n in zip(cp, nn, strict=True)) for w in windows]
            pre_ctx = [sum(min(x, w) for x in cp) for w in windows]
        n_dec = int(decode.sum())
        width = 1 if self.spec is None else self.spec[0] + 1  # tokens verified per decoding sequence
        features = step_row(
            self.shape,
            n_decode=n_dec * width,
            decode_ctx=dec_ctx,
            prefill_tokens=pre_tok,
            prefill_attn=pre_attn,
            prefill_ctx=pre_ctx,
            n_sampled=n_dec * width + int((completes & chunk).sum()),
            n_seqs=int(idx.size),
            allreduce_latency_s=self.ar_latency_s,
            coef=self.coef,
        )[None, :]
        extra = 0.0
        if self.spec is not None and n_dec:
            extra = float(self._draft_s(np.array([float(n_dec)]), np.array([float((c[decode] + 1).sum())]))[0])
        self.now = now = float(self._record(features, idx.size, extra)[-1])
        step = len(self.step_end) - 1
        computed[idx] += new
        emit = idx[completes]
        generated[emit] += 1
        gen = generated[emit]
        for j in emit[gen == 1].tolist():
            self.first[j] = now
            self.first_step[j] = step
        done = gen == self.out_len[emit]
        if self.track_emitted:
            self.emitted = list(zip(emit.tolist(), gen.tolist(), done.tolist(), strict=True))
        if done.any():
            finished = emit[done].tolist()
            gone = set(finished)
            self.running = [j for j in self.running if j not in gone]
            for j in finished:
                self._finished(j, step)

    def decode_stretch(self) -> bool:
        """Advance several decode-only steps at once; False when the next step needs the general path."""
        running = self.running
        n = len(running)
        if n == 0 or n >= self.budget:
            return False
        if self._admissible(self.budget - n):
            return False
        run = np.fromiter(running, dtype=np.int64, count=n)
        gen = self.generated[run]
        comp = self.computed[run]
        if not (gen > 0).all() or (comp != self.prompt[run] + gen - 1).any():
            return False
        k = min(int((self.out_len[run] - gen).min()), _MAX_STRETCH)
        held = self.held[run]
        # Blocks: a loose upper bound first; the exact count only when the pool could run short.
        bound = (k // self.blocks.block_size + 1) * n * (self.blocks.full + len(self.blocks.caps))
        steps = np.arange(1, k + 1)
        grow_last = None
        if bound > self.free:
            ctx = comp[None, :] + steps[:, None]
            grow = self.blocks.of_array(ctx) - held[None, :]
            fits = grow.sum(axis=1) <= self.free
            if not fits[0]:
                return False
            if not fits.all():
                k = int(np.argmin(fits))
            grow_last = grow[k - 1]
        if self.windowed:
            ctx = comp[None, :] + steps[:k, None]
            dec_ctx = np.minimum(ctx[..., None].astype(float), self.windows_np).sum(axis=1)
        else:
            total = float(comp.sum()) + n * steps[:k].astype(float)
            dec_ctx = np.repeat(total[:, None], self.groups, axis=1)
        width = 1.0 if self.spec is None else float(self.spec[0] + 1)
        features = step_features(
            self.shape,
            n_decode=np.full(k, n * width),
            decode_ctx=dec_ctx,
            n_sampled=np.full(k, n * width),
            n_seqs=np.full(k, float(n)),
            allreduce_latency_s=self.ar_latency_s,
        )
        features = critical_path(features, self.coef)
        extra = 0.0
        if self.spec is not None:
            extra = self._draft_s(np.full(k, float(n)), float(comp.sum()) + n * steps[:k].astype(float))
        can_admit = n < self.max_seqs
        arrival = self.arrival[self.pending[0]] if self.pending and can_admit else math.inf
        arrival = min(arrival, self.horizon_s)  # another engine's event may send this one a request by then
        if arrival < math.inf:
            ends = self.now + np.cumsum(features @ self.coef + extra)
            cut = int(np.searchsorted(ends, arrival - 1e-12))
            # An arrival during a step joins the step after the next one (asynchronous scheduling: the next one was
            # scheduled when this one started) or the next one; one that came before this stretch joins its
            # second step (its first was scheduled when the last step started).
            if self.shape.async_scheduling:
                cut = cut + 2 if arrival > self.now + 1e-12 else 1
            else:
                cut += 1
            if cut < k:
                k = cut
                features = features[:k]
                extra = extra[:k] if isinstance(extra, np.ndarray) else extra
                grow_last = None
        if grow_last is None:
            grow_last = self.blocks.of_array(comp + k) - held
        self.now = float(self._record(features, float(n) * k, extra)[-1])
        step = len(self.step_end) - 1
        self.computed[run] += k
        self.generated[run] += k
        self.held[run] += grow_last
        self.free -= int(grow_last.sum())
        finished = run[self.generated[run] == self.out_len[run]].tolist()
        self.peak = max(self.peak, self.shape.num_gpu_blocks - self.free)
        if finished:
            gone = set(finished)
            self.running = [j for j in running if j not in gone]
            for j in finished:
                self._finished(j, step)
        return True

    def _draft_s(self, n_dec: np.ndarray, ctx_total: np.ndarray) -> np.ndarray:
        """Seconds of the drafter's ``k`` forwards in steps decoding ``n_dec`` sequences that attend ``ctx_total``
        tokens in all (every drafter layer alike): the first over ``n_dec·(k + 1)`` positions, then ``k − 1`` of one
        token per sequence, plus the host time per forward (:mod:`planner.predict.speculative`)."""
        assert self.spec is not None
        k, draft, overhead_s = self.spec
        total = np.full(n_dec.shape, k * overhead_s)
        if draft is not None:
            ctx = np.repeat(np.asarray(ctx_total, dtype=float).reshape(-1, 1), len(draft.groups), axis=1)
            ar = self.ar_latency_s
            first = step_features(
                draft, n_decode=n_dec * (k + 1), decode_ctx=ctx, n_sampled=n_dec, n_seqs=n_dec, allreduce_latency_s=ar
            )
            rest = step_features(draft, n_decode=n_dec, decode_ctx=ctx, allreduce_latency_s=ar)
            total += critical_path(first, self.coef) @ self.coef + (k - 1) * (
                critical_path(rest, self.coef) @ self.coef
            )
        return total

    def run(self) -> None:
        self.run_until(math.inf)

    def run_until(self, limit_s: float, stop_at_finish: bool = False) -> None:
        """Step until every request is done, or until the next step would start at or after ``limit_s`` (an event
        clock shared with other engines: a step under way at ``limit_s`` is finished, a decode stretch is cut there
        as at an arrival); with ``stop_at_finish``, also after the first step in which a request finished."""
        self.horizon_s = limit_s
        done = self.done
        while self.done < self.n and not (stop_at_finish and self.done > done):
            busy = self.running or self.waiting
            # A busy engine scheduled this step when the last one started (asynchronous scheduling).
            self._admit_arrived(self.last_start if busy and self.shape.async_scheduling else self.now)
            if not self.running and not self.waiting:
                if not self.pending or self.arrival[self.pending[0]] >= limit_s:
                    break
                self.now = max(self.now, self.arrival[self.pending[0]])
                self._admit_arrived(self.now)
                continue
            if self.now >= limit_s:
                break
            if not self.decode_stretch():
                self.general_step()
        self.horizon_s = math.inf


def _static(engine: _Engine) -> None:
    """Static batching (module docstring): one prefill step per batch, then decode until its longest is done."""
    g = engine.groups
    windows = engine.windows_np
    for start in range(0, engine.n, engine.cap):
        batch = list(range(start, min(start + engine.cap, engine.n)))
        fe = engine.frontend
        for j in batch:
            engine.sent[j] = engine.due[j]
            engine.arrival[j] = engine.due[j] + fe.in_s + fe.in_per_token_s * float(engine.prompt[j])
        engine.now = max(engine.now, max(engine.arrival[j] for j in batch))
        prompts = np.array([engine.prompt[j] for j in batch], dtype=float)
        attn = (prompts[:, None] * np.minimum((prompts[:, None] + 1) / 2, windows)).sum(axis=0)
        size = float(len(batch))
        pre = step_features(
            engine.shape,
            n_decode=np.zeros(1),
            decode_ctx=np.zeros((1, g)),
            prefill_tokens=np.array([prompts.sum()]),
            prefill_attn=attn[None, :],
            n_sampled=np.array([size]),
            n_seqs=np.array([size]),
            allreduce_latency_s=engine.ar_latency_s,
        )
        engine.now = float(engine._record(critical_path(pre, engine.coef), size)[-1])
        first_step = len(engine.step_end) - 1
        longest = max(engine.out_len[j] for j in batch)
        ends = [engine.now]
        if longest > 1:
            steps = np.arange(1, longest)
            ctx = prompts[None, :] + steps[:, None]
            dec = np.minimum(ctx[..., None], windows).sum(axis=1)
            feats = step_features(
                engine.shape,
                n_decode=np.full(longest - 1, size),
                decode_ctx=dec,
                allreduce_latency_s=engine.ar_latency_s,
            )
            ends += engine._record(critical_path(feats, engine.coef), size * (longest - 1)).tolist()
            engine.now = ends[-1]
        for j in batch:
            last = engine.out_len[j] - 1
            engine.first[j] = ends[0]
            engine.first_step[j] = first_step
            engine.finish[j] = ends[last]
            engine.finish_step[j] = first_step + last
            engine.generated[j] = engine.out_len[j]
    engine.done = engine.n


def _parts(
    shape: StepShape, coefficients: StepCoefficients | np.ndarray, request_overhead_s: float | None = None
) -> tuple[StepShape, np.ndarray, _Frontend, float]:
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
            _Frontend.of(coefficients, request_overhead_s),
            coefficients.allreduce_latency_s,
        )
    coef = np.asarray(coefficients, dtype=float)
    if coef.shape != (len(TERMS),):
        raise InvalidParameterError("coefficients", coef.shape, f"a vector of {len(TERMS)} terms")
    return shape, coef, _Frontend(in_s=request_overhead_s or 0.0), DEFAULT_COEFFICIENTS.allreduce_latency_s


def _check_request(engine: _Engine, prompt_tokens: int, output_tokens: int) -> None:
    """Refuse a request an engine cannot take (:meth:`OnlineScheduler.add`, :meth:`ReplicaEngine.submit`)."""
    total = prompt_tokens + output_tokens
    if prompt_tokens < 1 or output_tokens < 1:
        raise InvalidParameterError("tokens", (prompt_tokens, output_tokens), "at least 1 prompt and 1 output token")
    if total > engine.shape.max_model_len:
        raise InvalidParameterError("tokens", total, f"at most max_model_len ({engine.shape.max_model_len:,})")
    if engine.blocks.of(total) > engine.shape.num_gpu_blocks:
        raise InvalidParameterError("tokens", total, "a request the KV cache can hold")


class OnlineScheduler:
    """The same scheduler stepping in real time, for a server that plays a planned deployment (the demo server).

    Requests are added as they arrive (:meth:`add`); :meth:`step` schedules one engine step exactly as
    :func:`simulate` does (module docstring) and says how long it takes and which requests got a token. The caller
    sleeps for the step's duration and then delivers the tokens.

    Example::

        engine = OnlineScheduler(shape)
        rid = engine.add(prompt_tokens=512, output_tokens=128)
        seconds, tokens = engine.step()   # -> (0.0157, [(rid, 1, False)]): its prefill and first token
    """

    def __init__(self, shape: StepShape, coefficients: StepCoefficients = DEFAULT_COEFFICIENTS) -> None:
        self._engine = _Engine(shape, coefficients.vector(), _Frontend(), coefficients.allreduce_latency_s, [], [], 0)
        self._engine.track_emitted = True
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
        return bool(self._engine.running or self._engine.waiting)

    @property
    def running(self) -> int:
        """Requests scheduled (running) now."""
        return len(self._engine.running)

    @property
    def waiting(self) -> int:
        """Requests waiting for admission."""
        return len(self._engine.waiting)

    @property
    def kv_usage(self) -> float:
        """Fraction of the KV blocks in use, in [0, 1]."""
        return 1.0 - self._engine.free / self.shape.num_gpu_blocks

    @property
    def preemptions(self) -> int:
        """Preemptions so far."""
        return self._engine.preemptions

    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        """Queue a request; returns its id.

        Raises:
            InvalidParameterError: it is longer than ``max_model_len`` or than the whole KV cache holds.
        """
        _check_request(self._engine, prompt_tokens, output_tokens)
        return self._engine.add(prompt_tokens, output_tokens)

    def drop(self, rid: int) -> None:
        """Forget a request whose client went away (its blocks are freed)."""
        self._engine.drop(rid)

    def step(self) -> tuple[float, list[tuple[int, int, bool]]]:
        """One engine step: ``(seconds, [(request id, tokens it has now, finished), ...])``; ``(0, [])`` when idle."""
        if not self.busy:
            return 0.0, []
        before = self._engine.now
        self._engine.general_step()
        self._engine.features.clear()  # nothing reads a live engine's history: keep its memory flat
        self._engine.step_end.clear()
        return self._engine.now - before, list(self._engine.emitted)


class ReplicaEngine:
    """One replica of a fleet on an event clock it shares with others (:mod:`planner.fleet`): requests are submitted
    by a client outside it (a router) at their send times, and :meth:`run_until` steps it up to a given time, with the
    scheduler, API server and step model of :func:`simulate`; a prefix cache outside the engine hears of each request
    through ``hooks`` (:class:`EngineHooks`).

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
        shape, coef, frontend, ar_latency = _parts(shape, coefficients)
        self.shape = shape
        self._engine = _Engine(shape, coef, frontend, ar_latency, [], [], 0)
        self._engine.hooks = hooks
        one = step_features(
            shape, n_decode=np.ones(1), decode_ctx=np.ones((1, len(shape.groups))), allreduce_latency_s=ar_latency
        )
        self._floor_s = float(critical_path(one, coef)[0] @ coef)

    def submit(self, prompt_tokens: int, output_tokens: int, sent_s: float) -> int:
        """A request sent at ``sent_s`` seconds; returns its index.

        Raises:
            InvalidParameterError: it is longer than ``max_model_len`` or than the whole KV cache holds.
        """
        _check_request(self._engine, prompt_tokens, output_tokens)
        return self._engine.submit(prompt_tokens, output_tokens, sent_s)

    def run_until(self, limit_s: float, *, stop_at_finish: bool = False) -> None:
        """Step until the next step would start at or after ``limit_s`` seconds (or nothing is left); with
        ``stop_at_finish``, also after the first step in which a request finished (its client may send another)."""
        self._engine.run_until(limit_s, stop_at_finish)

    @property
    def now_s(self) -> float:
        """When its last step ended, seconds."""
        return self._engine.now

    @property
    def next_start_s(self) -> float:
        """When its next step starts: now when busy, else the next request's arrival; inf with nothing to do."""
        e = self._engine
        if e.running or e.waiting:
            return e.now
        return max(e.now, e.arrival[e.pending[0]]) if e.pending else math.inf

    @property
    def kv_usage(self) -> float:
        """Fraction of the KV blocks in use, in [0, 1]."""
        return 1.0 - self._engine.free / self.shape.num_gpu_blocks

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
        e = self._engine
        live = [*e.running, *e.waiting, *e.pending]
        if not live:
            return math.inf
        idx = np.fromiter(live, dtype=np.int64, count=len(live))
        steps = int((e.out_len[idx] - e.generated[idx]).min())
        return self.next_start_s + max(1, steps) * self._floor_s

    def tokens(self, j: int) -> tuple[int, int]:
        """``(prompt tokens, tokens generated so far)`` of request ``j``."""
        return int(self._engine.prompt[j]), int(self._engine.generated[j])

    def finish_s(self, j: int) -> float:
        """When request ``j``'s last token reached its client, seconds (nan while it runs)."""
        return self._engine.finish[j] + self._engine.frontend.out_s

    def first_token_s(self, j: int) -> float:
        """When request ``j``'s first token reached its client, seconds (nan before)."""
        return self._engine.first[j] + self._engine.frontend.out_s

    def ttft_s(self) -> np.ndarray:
        """Per request: its TTFT, seconds (from its send time)."""
        e = self._engine
        return np.array(e.first[: e.n]) + e.frontend.out_s - np.array(e.sent[: e.n])

    def e2e_s(self) -> np.ndarray:
        """Per request: its end-to-end latency, seconds."""
        e = self._engine
        return np.array(e.finish[: e.n]) + e.frontend.out_s - np.array(e.sent[: e.n])

    def itl_s(self) -> np.ndarray:
        """Every inter-token gap of its requests, pooled, seconds."""
        e = self._engine
        return _itl(np.array(e.step_end), np.array(e.first_step[: e.n]), np.array(e.finish_step[: e.n]))[0]

    @property
    def preemptions(self) -> int:
        """Preemptions so far."""
        return self._engine.preemptions

    @property
    def peak_kv_blocks(self) -> int:
        """Most KV blocks in use at once."""
        return int(self._engine.peak)


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
        mode: ``continuous`` (vLLM V1) or ``static``.
        request_overhead_s: client-to-engine time of a lone request besides its per-token part; default the
            coefficients' (0 for a raw vector, which also has no other frontend time).
        lengths: ``(input tokens, output tokens)`` of each request, instead of drawing them from ``settings``
            (``num_prompts`` of them).
        cached_tokens: prompt tokens of each request the prefix cache already holds when it is admitted
            (continuous mode; at most its prompt − 1, as vLLM always computes the last token): they start
            computed, so the prefill term counts only the uncached tokens; their blocks are still held.
        speculative: speculative decoding (continuous mode; module docstring), or None.

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
    shape, coef, frontend, ar_latency = _parts(shape, coefficients, request_overhead_s)
    if lengths is not None:
        if len(lengths) != settings.num_prompts or any(a < 1 or b < 1 for a, b in lengths):
            raise InvalidParameterError("lengths", len(lengths), f"{settings.num_prompts} pairs of token counts ≥ 1")
        pairs = [(int(a), int(b)) for a, b in lengths]
    else:
        pairs = [(a, b) for a, b, _ in draw_lengths(settings, settings.num_prompts, 0)]
    cap = settings.max_concurrency or settings.num_prompts
    if cached_tokens is not None and len(cached_tokens) != len(pairs):
        raise InvalidParameterError("cached_tokens", len(cached_tokens), f"{len(pairs)} counts, one per request")
    engine = _Engine(shape, coef, frontend, ar_latency, pairs, arrival_times(settings), cap, cached_tokens)
    longest = int((engine.prompt[: engine.n] + engine.out_len[: engine.n]).max())
    if longest > shape.max_model_len:
        raise InvalidParameterError(
            "input_len + output_len", longest, f"at most max_model_len ({shape.max_model_len:,} tokens)"
        )
    if mode == "static":
        _static(engine)
    elif speculative is None:
        engine.run()
    else:
        # decode steps per request: the first token from the prefill, then 1 + E[accepted] tokens a step
        per_step = 1.0 + expected_accepted(speculative.rates)
        tokens = engine.out_len[: engine.n].copy()
        engine.out_len[: engine.n] = 1 + np.ceil((tokens - 1) / per_step).astype(np.int64)
        engine.spec = (speculative.num_speculative_tokens, speculative.draft_shape, speculative.forward_overhead_s)
        engine.run()
        engine.out_len[: engine.n] = tokens
    return _result(engine, settings, mode)


def _itl(ends: np.ndarray, first_step: np.ndarray, finish_step: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Every inter-token gap of the requests (pooled), and each one's range of steps after its first token."""
    # A preempted request's steps between its first and last token include the ones it sat out: its gaps are those
    # steps' durations (same total, more samples), a simplification.
    gaps = np.diff(ends, prepend=ends[0] if ends.size else 0.0)
    ranges = [(a + 1, b + 1) for a, b in zip(first_step.tolist(), finish_step.tolist(), strict=True) if b > a]
    return (np.concatenate([gaps[a:b] for a, b in ranges]) if ranges else np.zeros(0)), ranges


def _result(engine: _Engine, settings: LoadSettings, mode: str) -> SimulatedRun:
    ends = np.array(engine.step_end)
    feats = np.vstack(engine.features) if engine.features else np.zeros((0, len(TERMS)))
    cum = np.vstack([np.zeros((1, feats.shape[1])), np.cumsum(feats, axis=0)])
    sent = np.array(engine.sent)
    out_s = engine.frontend.out_s  # every token reaches the client this long after its step
    ttft = np.array(engine.first) + out_s - sent
    e2e = np.array(engine.finish) + out_s - sent
    first_step = np.array(engine.first_step)
    finish_step = np.array(engine.finish_step)
    out_len = engine.out_len[: engine.n].copy()
    prompt = engine.prompt[: engine.n].copy()
    itl, ranges = _itl(ends, first_step, finish_step)
    median_itl_features = np.zeros(len(TERMS))
    if itl.size:
        where = np.concatenate([np.arange(a, b) for a, b in ranges])
        middle = itl.size // 2
        median_itl_features = feats[where[np.argpartition(itl, middle)[middle]]]
    duration = float(np.nanmax(np.array(engine.finish))) + out_s if engine.n else 0.0
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=out_len.tolist(),
        input_tokens=prompt.tolist(),
        itl_s=itl,
        duration_s=max(duration, 1e-9),
        slo_ms=dict(settings.goodput_ms),
    )
    # The steps from a request's arrival at the engine to its first token: the one under way when it arrived (the
    # part still to go), then each whole step up to the one that made its first token.
    arrival = np.array(engine.arrival)
    durations = feats @ engine.coef
    during = np.minimum(np.searchsorted(ends, arrival, side="right"), first_step) if ends.size else first_step
    ttft_feat = cum[first_step + 1] - cum[during + 1]
    if ends.size:
        frac = np.clip((ends[during] - arrival) / np.where(durations[during] > 0, durations[during], 1.0), 0.0, 1.0)
        ttft_feat += frac[:, None] * feats[during]
    ttft_fixed = ttft - ttft_feat @ engine.coef - engine.frontend.in_s
    tpot_feat = (cum[finish_step + 1] - cum[first_step + 1]) / np.maximum(out_len - 1, 1)[:, None]
    steps = len(engine.step_end)
    return SimulatedRun(
        settings=settings,
        mode=mode,
        metrics=metrics,
        sent_s=sent,
        ttft_s=ttft,
        e2e_s=e2e,
        input_tokens=prompt,
        output_tokens=out_len,
        num_steps=steps,
        preemptions=engine.preemptions,
        peak_kv_blocks=int(engine.peak),
        num_gpu_blocks=engine.shape.num_gpu_blocks,
        mean_running=engine.running_sum / steps if steps else 0.0,
        ttft_features=ttft_feat,
        ttft_fixed_s=ttft_fixed,
        tpot_features=tpot_feat,
        median_itl_features=median_itl_features,
    )
