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
sent when a slot is free; TTFT and E2E are measured from sending, and include
:attr:`~planner.predict.step_time.StepCoefficients.request_overhead_s` before the engine sees the request. The
server's frontend hands requests over one at a time, at least
:attr:`~planner.predict.step_time.StepCoefficients.frontend_gap_s` apart, and an idle engine starts a step as soon
as one arrives (vLLM's ``EngineCore`` busy loop, ``vllm/v1/engine/core.py``): requests sent at the same instant do
not all land in the same first step, so closed-loop waves drift apart as on a real server.

Static batching (``mode="static"``): batches of ``max_concurrency`` requests (all, without a cap) in arrival
order; a batch starts when its last request has arrived and the previous batch is done, prefills all its prompts
in one step, then decodes every sequence until the longest is done (finished ones keep their slot), as a
server without iteration-level scheduling does (Orca, Yu et al. OSDI 2022, §2).

Decode-only stretches (no prompt in flight, no admission possible before the next finish or arrival) are advanced
many steps at once with numpy, so 10,000 requests take well under a second (``bench/simulator_speed.py``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.errors import InvalidParameterError
from planner.loadtest.schedule import arrival_times, draw_lengths
from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.shape import StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, TERMS, StepCoefficients, step_features

__all__ = ["MODES", "OnlineScheduler", "SimulatedRun", "simulate"]

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
    tpot_features: np.ndarray
    median_itl_features: np.ndarray

    @property
    def kv_saturated(self) -> bool:
        """The KV cache filled up during the run (requests were preempted or the pool was ≥ 99% in use)."""
        return self.preemptions > 0 or self.peak_kv_blocks >= 0.99 * self.num_gpu_blocks


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
        overhead_s: float,
        ar_latency_s: float,
        lengths: Sequence[tuple[int, int]],
        due: Sequence[float],
        cap: int,
        frontend_gap_s: float = 0.0,
        cached: Sequence[int] | None = None,
    ) -> None:
        self.shape = shape
        self.frontend_gap_s = frontend_gap_s
        self.last_arrival = -math.inf
        self.coef = coef
        self.overhead_s = overhead_s
        self.ar_latency_s = ar_latency_s
        self.blocks = _Blocks(shape)
        self.windows = [g.window_tokens or math.inf for g in shape.groups]
        self.windows_np = np.array(self.windows, dtype=float)
        self.windowed = any(math.isfinite(w) for w in self.windows)
        self.groups = len(shape.groups)
        self.budget = shape.max_num_batched_tokens
        self.max_seqs = shape.max_num_seqs
        n = len(lengths)
        self.prompt = [a for a, _ in lengths]
        self.out_len = [b for _, b in lengths]
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
        self.arrive_step = [0] * n
        self.computed = [0] * n
        # prompt tokens the prefix cache holds at admission: they start computed (vLLM's num_computed_tokens =
        # the cached tokens, vllm/v1/core/sched/scheduler.py), so prefill computes only the rest
        self.cached = [min(int(c), a - 1) for c, a in zip(cached, self.prompt, strict=True)] if cached else [0] * n
        self.generated = [0] * n
        self.held = [0] * n
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
        self.next_send = 0
        self.done = 0
        for _ in range(min(self.cap, n)):
            self._send(self.due[self.next_send])

    def add(self, prompt_tokens: int, output_tokens: int) -> int:
        """A request that reaches the engine now (online use); returns its index."""
        for values, value in (
            (self.prompt, prompt_tokens),
            (self.out_len, output_tokens),
            (self.due, self.now),
            (self.sent, self.now),
            (self.first, math.nan),
            (self.finish, math.nan),
            (self.first_step, 0),
            (self.finish_step, 0),
            (self.arrive_step, len(self.step_end)),
            (self.computed, 0),
            (self.cached, 0),
            (self.generated, 0),
            (self.held, 0),
        ):
            values.append(value)
        self.n += 1
        self.next_send = self.n
        self.waiting.append(self.n - 1)
        return self.n - 1

    def drop(self, j: int) -> None:
        """Forget request ``j`` (its client went away): its blocks are freed (online use)."""
        if j in self.running:
            self.running.remove(j)
        elif j in self.waiting:
            self.waiting.remove(j)
        else:
            return
        self.free += self.held[j]
        self.held[j] = 0
        self.done += 1

    # client side ---------------------------------------------------------------------------------------------
    def _send(self, slot_free_s: float) -> None:
        j = self.next_send
        self.sent[j] = max(self.due[j], slot_free_s)
        # The API server hands requests to the engine one at a time: requests sent together arrive a little apart.
        self.arrival[j] = max(self.sent[j] + self.overhead_s, self.last_arrival + self.frontend_gap_s)
        self.last_arrival = self.arrival[j]
        self.pending.append(j)
        self.next_send += 1

    def _admit_arrived(self) -> None:
        pending, arrival, limit = self.pending, self.arrival, self.now + 1e-12
        while pending and arrival[pending[0]] <= limit:
            j = pending.popleft()
            self.arrive_step[j] = len(self.step_end)
            self.waiting.append(j)

    def _finished(self, j: int, step: int) -> None:
        self.finish[j] = self.now
        self.finish_step[j] = step
        self.free += self.held[j]
        self.held[j] = 0
        self.done += 1
        if self.next_send < self.n:
            self._send(self.now)

    # steps -----------------------------------------------------------------------------------------------------
    def _record(self, features: np.ndarray, running: float) -> np.ndarray:
        ends = self.now + np.cumsum(features @ self.coef)
        self.step_end.extend(ends.tolist())
        self.features.append(features)
        self.running_sum += running
        return ends

    def _preempt(self, j: int) -> None:
        self.free += self.held[j]
        self.held[j] = 0
        self.computed[j] = 0
        self.preemptions += 1
        self.waiting.appendleft(j)

    def _admissible(self, budget: int) -> bool:
        """The head of the waiting queue can start now with ``budget`` tokens left."""
        if not self.waiting or len(self.running) >= self.max_seqs or budget <= 0:
            return False
        j = self.waiting[0]
        if self.computed[j] == 0 and self.cached[j] > 0:  # a hit: its cached blocks are held, not computed
            self.computed[j] = self.cached[j]
        n_new = min(self.prompt[j] + self.generated[j] - self.computed[j], budget)
        return self.blocks.of(self.computed[j] + n_new) - self.held[j] <= self.free

    def general_step(self) -> None:
        budget = self.budget
        scheduled: list[tuple[int, int]] = []
        preempted = False
        i = 0
        running, computed, held, blocks = self.running, self.computed, self.held, self.blocks
        prompt, generated = self.prompt, self.generated
        block_size, full_only, full = blocks.block_size, not blocks.caps, blocks.full
        windows = self.windows
        g = self.groups
        n_dec = pre_tok = sampled = 0
        dec_sum = 0.0  # Σ context of the decodes (every group alike when no group has a window)
        dec_ctx = [0.0] * g
        pre_attn = [0.0] * g
        pre_ctx = [0.0] * g

        def compose(j: int, n_new: int) -> None:
            nonlocal n_dec, pre_tok, sampled, dec_sum
            c = computed[j]
            completes = c + n_new == prompt[j] + generated[j]
            if n_new == 1 and generated[j] > 0 and completes:
                n_dec += 1
                if full_only:
                    dec_sum += c + 1
                else:
                    for x, w in enumerate(windows):
                        dec_ctx[x] += min(c + 1, w)
            else:
                pre_tok += n_new
                sampled += completes
                for x, w in enumerate(windows):
                    pre_attn[x] += n_new * min(c + (n_new + 1) / 2, w)
                    pre_ctx[x] += min(c, w)

        while i < len(running) and budget > 0:
            j = running[i]
            n_new = min(prompt[j] + generated[j] - computed[j], budget)
            tokens = computed[j] + n_new
            need = (full * -(-tokens // block_size) if full_only else blocks.of(tokens)) - held[j]
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
            compose(j, n_new)
            scheduled.append((j, n_new))
            budget -= n_new
            i += 1
        if not preempted:
            while self._admissible(budget):
                j = self.waiting.popleft()
                n_new = min(prompt[j] + generated[j] - computed[j], budget)
                need = blocks.of(computed[j] + n_new) - held[j]
                running.append(j)
                self.free -= need
                held[j] += need
                compose(j, n_new)
                scheduled.append((j, n_new))
                budget -= n_new
        if not scheduled:
            raise InvalidParameterError(
                "num_gpu_blocks", self.shape.num_gpu_blocks, "a KV cache that holds at least one request's first chunk"
            )
        self.peak = max(self.peak, self.shape.num_gpu_blocks - self.free)
        if full_only:
            dec_ctx = [dec_sum] * g
        features = step_features(
            self.shape,
            n_decode=np.array([float(n_dec)]),
            decode_ctx=np.array([dec_ctx]),
            prefill_tokens=np.array([float(pre_tok)]) if pre_tok else None,
            prefill_attn=np.array([pre_attn]) if pre_tok else None,
            prefill_ctx=np.array([pre_ctx]) if pre_tok else None,
            n_sampled=np.array([float(n_dec + sampled)]),
            n_seqs=np.array([float(len(scheduled))]),
            allreduce_latency_s=self.ar_latency_s,
        )
        self.now = now = float(self._record(features, len(scheduled))[-1])
        step = len(self.step_end) - 1
        finished = []
        emitted = self.emitted = []
        out_len = self.out_len
        for j, n_new in scheduled:
            computed[j] += n_new
            if computed[j] == prompt[j] + generated[j]:
                generated[j] += 1
                if generated[j] == 1:
                    self.first[j] = now
                    self.first_step[j] = step
                done = generated[j] == out_len[j]
                emitted.append((j, generated[j], done))
                if done:
                    finished.append(j)
        if finished:
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
        prompt, generated, computed = self.prompt, self.generated, self.computed
        for j in running:
            if generated[j] == 0 or computed[j] != prompt[j] + generated[j] - 1:
                return False
        if self._admissible(self.budget - n):
            return False
        comp = np.array([computed[j] for j in running], dtype=np.int64)
        left = min(self.out_len[j] - generated[j] for j in running)
        k = min(left, _MAX_STRETCH)
        held = np.array([self.held[j] for j in running], dtype=np.int64)
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
        features = step_features(
            self.shape, n_decode=np.full(k, float(n)), decode_ctx=dec_ctx, allreduce_latency_s=self.ar_latency_s
        )
        can_admit = n < self.max_seqs
        if self.pending and can_admit:
            ends = self.now + np.cumsum(features @ self.coef)
            cut = int(np.searchsorted(ends, self.arrival[self.pending[0]] - 1e-12))
            if cut + 1 < k:
                k = cut + 1
                features = features[:k]
                grow_last = None
        if grow_last is None:
            grow_last = self.blocks.of_array(comp + k) - held
        self.now = float(self._record(features, float(n) * k)[-1])
        step = len(self.step_end) - 1
        finished = []
        for j, g_new in zip(running, grow_last.tolist(), strict=True):
            computed[j] += k
            generated[j] += k
            self.held[j] += g_new
            self.free -= g_new
            if generated[j] == self.out_len[j]:
                finished.append(j)
        self.peak = max(self.peak, self.shape.num_gpu_blocks - self.free)
        if finished:
            gone = set(finished)
            self.running = [j for j in running if j not in gone]
            for j in finished:
                self._finished(j, step)
        return True

    def run(self) -> None:
        while self.done < self.n:
            self._admit_arrived()
            if not self.running and not self.waiting:
                self.now = max(self.now, self.arrival[self.pending[0]])
                continue
            if not self.decode_stretch():
                self.general_step()


def _static(engine: _Engine) -> None:
    """Static batching (module docstring): one prefill step per batch, then decode until its longest is done."""
    g = engine.groups
    windows = engine.windows_np
    for start in range(0, engine.n, engine.cap):
        batch = list(range(start, min(start + engine.cap, engine.n)))
        for j in batch:
            engine.sent[j] = engine.due[j]
            engine.arrival[j] = engine.due[j] + engine.overhead_s
        engine.now = max(engine.now, max(engine.sent[j] for j in batch) + engine.overhead_s)
        for j in batch:
            engine.arrive_step[j] = len(engine.step_end)
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
        engine.now = float(engine._record(pre, size)[-1])
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
            ends += engine._record(feats, size * (longest - 1)).tolist()
            engine.now = ends[-1]
        for j in batch:
            last = engine.out_len[j] - 1
            engine.first[j] = ends[0]
            engine.first_step[j] = first_step
            engine.finish[j] = ends[last]
            engine.finish_step[j] = first_step + last
            engine.generated[j] = engine.out_len[j]
    engine.done = engine.n


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
        self._engine = _Engine(shape, coefficients.vector(), 0.0, coefficients.allreduce_latency_s, [], [], 0)
        self.shape = shape
        #: Seconds a request spends before the engine sees it (HTTP, parsing, tokenization): the server waits this
        #: long before :meth:`add`, as :func:`simulate` does.
        self.request_overhead_s = coefficients.request_overhead_s

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
        total = prompt_tokens + output_tokens
        if prompt_tokens < 1 or output_tokens < 1:
            raise InvalidParameterError(
                "tokens", (prompt_tokens, output_tokens), "at least 1 prompt and 1 output token"
            )
        if total > self.shape.max_model_len:
            raise InvalidParameterError("tokens", total, f"at most max_model_len ({self.shape.max_model_len:,})")
        if self._engine.blocks.of(total) > self.shape.num_gpu_blocks:
            raise InvalidParameterError("tokens", total, "a request the KV cache can hold")
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


def simulate(
    shape: StepShape,
    settings: LoadSettings,
    coefficients: StepCoefficients | np.ndarray = DEFAULT_COEFFICIENTS,
    *,
    mode: str = "continuous",
    request_overhead_s: float | None = None,
    lengths: Sequence[tuple[int, int]] | None = None,
    cached_tokens: Sequence[int] | None = None,
) -> SimulatedRun:
    """Simulate ``settings``' workload on the deployment ``shape``.

    Args:
        shape: the deployment (:func:`planner.predict.shape.step_shape`), or one built by hand.
        settings: the workload: ``num_prompts``, ``max_concurrency``, ``request_rate``, ``burstiness``,
            ``input_len``, ``output_len``, ``range_ratio``, ``seed`` (the model always generates ``output_len``
            tokens, as with ``ignore_eos``).
        coefficients: the step model's coefficients, or a raw vector over :data:`~planner.predict.step_time.TERMS`.
        mode: ``continuous`` (vLLM V1) or ``static``.
        request_overhead_s: client-to-engine time per request; default the coefficients' (0 for a raw vector).
        lengths: ``(input tokens, output tokens)`` of each request, instead of drawing them from ``settings``
            (``num_prompts`` of them).
        cached_tokens: prompt tokens of each request the prefix cache already holds when it is admitted
            (continuous mode; at most its prompt − 1, as vLLM always computes the last token): they start
            computed, so the prefill term counts only the uncached tokens; their blocks are still held.

    Returns:
        The run.

    Raises:
        InvalidParameterError: an unknown mode, a request longer than ``max_model_len``, or a KV cache that cannot
            hold one request.
    """
    if mode not in MODES:
        raise InvalidParameterError("mode", mode, " or ".join(MODES))
    if isinstance(coefficients, StepCoefficients):
        coef = coefficients.vector()
        overhead = coefficients.request_overhead_s if request_overhead_s is None else request_overhead_s
        ar_latency = coefficients.allreduce_latency_s
        gap = coefficients.frontend_gap_s
    else:
        coef = np.asarray(coefficients, dtype=float)
        if coef.shape != (len(TERMS),):
            raise InvalidParameterError("coefficients", coef.shape, f"a vector of {len(TERMS)} terms")
        overhead = request_overhead_s or 0.0
        ar_latency = DEFAULT_COEFFICIENTS.allreduce_latency_s
        gap = 0.0
    if lengths is not None:
        if len(lengths) != settings.num_prompts or any(a < 1 or b < 1 for a, b in lengths):
            raise InvalidParameterError("lengths", len(lengths), f"{settings.num_prompts} pairs of token counts ≥ 1")
        pairs = [(int(a), int(b)) for a, b in lengths]
    else:
        pairs = [(a, b) for a, b, _ in draw_lengths(settings, settings.num_prompts, 0)]
    cap = settings.max_concurrency or settings.num_prompts
    if cached_tokens is not None and len(cached_tokens) != len(pairs):
        raise InvalidParameterError("cached_tokens", len(cached_tokens), f"{len(pairs)} counts, one per request")
    engine = _Engine(shape, coef, overhead, ar_latency, pairs, arrival_times(settings), cap, gap, cached_tokens)
    longest = max(a + b for a, b in zip(engine.prompt, engine.out_len, strict=True))
    if longest > shape.max_model_len:
        raise InvalidParameterError(
            "input_len + output_len", longest, f"at most max_model_len ({shape.max_model_len:,} tokens)"
        )
    if mode == "static":
        _static(engine)
    else:
        engine.run()
    return _result(engine, settings, mode)


def _result(engine: _Engine, settings: LoadSettings, mode: str) -> SimulatedRun:
    ends = np.array(engine.step_end)
    feats = np.vstack(engine.features) if engine.features else np.zeros((0, len(TERMS)))
    cum = np.vstack([np.zeros((1, feats.shape[1])), np.cumsum(feats, axis=0)])
    sent = np.array(engine.sent)
    ttft = np.array(engine.first) - sent
    e2e = np.array(engine.finish) - sent
    first_step = np.array(engine.first_step)
    finish_step = np.array(engine.finish_step)
    out_len = np.array(engine.out_len)
    # A preempted request's steps between its first and last token include the ones it sat out: its gaps are those
    # steps' durations (same total, more samples), a simplification.
    gaps = np.diff(ends, prepend=ends[0] if ends.size else 0.0)
    ranges = [(a + 1, b + 1) for a, b in zip(first_step.tolist(), finish_step.tolist(), strict=True) if b > a]
    itl = np.concatenate([gaps[a:b] for a, b in ranges]) if ranges else np.zeros(0)
    median_itl_features = np.zeros(len(TERMS))
    if itl.size:
        where = np.concatenate([np.arange(a, b) for a, b in ranges])
        middle = itl.size // 2
        median_itl_features = feats[where[np.argpartition(itl, middle)[middle]]]
    duration = float(np.nanmax(np.array(engine.finish))) if engine.n else 0.0
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=engine.out_len,
        input_tokens=engine.prompt,
        itl_s=itl,
        duration_s=max(duration, 1e-9),
        slo_ms=dict(settings.goodput_ms),
    )
    arrive = np.array(engine.arrive_step)
    ttft_feat = cum[first_step + 1] - cum[arrive]
    # The step that was running when a request arrived: the part of it still to go is part of its TTFT.
    prev = arrive - 1
    arrival = np.array(engine.arrival)
    busy = (prev >= 0) & (arrival < ends[np.maximum(prev, 0)]) if ends.size else np.zeros(engine.n, dtype=bool)
    if busy.any():
        durations = feats @ engine.coef
        k = prev[busy]
        frac = (ends[k] - arrival[busy]) / np.where(durations[k] > 0, durations[k], 1.0)
        ttft_feat[busy] += frac[:, None] * feats[k]
    tpot_feat = (cum[finish_step + 1] - cum[first_step + 1]) / np.maximum(out_len - 1, 1)[:, None]
    steps = len(engine.step_end)
    return SimulatedRun(
        settings=settings,
        mode=mode,
        metrics=metrics,
        sent_s=sent,
        ttft_s=ttft,
        e2e_s=e2e,
        input_tokens=np.array(engine.prompt),
        output_tokens=out_len,
        num_steps=steps,
        preemptions=engine.preemptions,
        peak_kv_blocks=int(engine.peak),
        num_gpu_blocks=engine.shape.num_gpu_blocks,
        mean_running=engine.running_sum / steps if steps else 0.0,
        ttft_features=ttft_feat,
        tpot_features=tpot_feat,
        median_itl_features=median_itl_features,
    )
