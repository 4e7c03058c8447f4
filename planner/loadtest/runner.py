"""Load tests against one endpoint with ``vllm bench serve`` semantics (``shared/reference/benchmark_clients.md`` §1).

* :class:`LoadSpec` describes the load: how many requests, closed loop (``max_concurrency``) and/or open loop
  (``request_rate`` with gamma-distributed gaps; both together = rate-limited sends that also wait for a slot),
  warmups, a wall-time cap, and the prompts (a given list, cycled, or synthetic text of ``input_len`` tokens,
  exact where the server has a tokenizer route when ``exact_input_len`` is set).
* A run is ALWAYS bounded in requests: ``num_prompts`` is a cap even when ``duration_s`` is given (a duration
  alone does not make the run open-ended; it ends at whichever comes first).
* :func:`arrival_times` is the precomputed send schedule, exactly as vLLM builds it.
* :func:`run_load` sends the requests through ONE reused client (retries off) and returns a :class:`LoadResult`
  with every record, the :class:`~planner.metrics.benchmark.BenchmarkMetrics` and the in-flight count over time.
* :class:`LoadRun` runs it on a background thread with :meth:`LoadRun.snapshot` / :meth:`LoadRun.cancel`, like
  :class:`planner.compare.run.CompareRun`; a snapshot carries the records finished so far and the in-flight samples,
  for live charts (:mod:`planner.metrics.timeseries`).
* TTFT: ``metrics.ttft`` is the project's (first token-bearing chunk); :attr:`LoadResult.ttft_first_chunk` is
  ``vllm bench serve``'s (first chunk with ``choices``, vLLM's role chunk included).

Exception: a ``tgi`` endpoint gets a fresh ``huggingface_hub`` client per request, because that client's send-time
hook can only follow one request at a time (see :func:`planner.serving.clients.stream_tgi`); its session is opened
before
the clock starts, so TTFT is not inflated.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.compare.background import BackgroundRun
from planner.errors import InvalidParameterError
from planner.loadtest.workload import InputCalibration, calibrate_prompts, synthetic_text
from planner.metrics.benchmark import BenchmarkMetrics, Distribution, compute_benchmark_metrics
from planner.serving.backends import LOAD_BACKEND, make_client, stream_request
from planner.serving.discovery import discover
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from planner.serving.streaming import RequestRecord

__all__ = [
    "LoadProgress",
    "LoadResult",
    "LoadRun",
    "LoadSnapshot",
    "LoadSpec",
    "arrival_times",
    "build_requests",
    "estimate_tokens",
    "run_load",
    "token_range",
]


def estimate_tokens(text: str) -> int:
    """Documented estimate of a prompt's tokens: one per whitespace-separated word (words ≈ tokens).

    Exact up to the chat template's overhead for the synthetic prompts (common single-token words); general English
    prose runs ~1.3 tokens per word with Llama/Qwen tokenizers, so there it undercounts. The server's
    ``usage.prompt_tokens`` replaces it whenever the server reports one;
    :func:`planner.loadtest.workload.calibrate_prompts`
    makes it exact where the server has a tokenizer route.
    """
    return len(text.split())


@dataclass(frozen=True)
class LoadSpec:
    """What load to send. Lengths in tokens, times in seconds.

    Attributes:
        num_prompts: Measured requests (≥ 1).
        max_concurrency: Most requests in flight at once (closed loop); None = no cap.
        request_rate: Requests per second of the send schedule; ``math.inf`` = all at t = 0 (burst).
        burstiness: Gamma shape of the inter-arrival gaps (> 0): 1 = Poisson, < 1 burstier, > 1 more even,
            ``math.inf`` = constant spacing.
        seed: Seed of the arrival schedule and the sampled lengths.
        num_warmups: Requests sent (all at once, under the concurrency cap) before the run; excluded from stats.
        duration_s: Wall-time cap of the measured run; requests still running are cancelled and not sent ones
            dropped; None = no time cap. ``num_prompts`` still caps the run either way.
        input_len: Synthetic prompt length, tokens (≈ words, see :func:`estimate_tokens`; exact with
            ``exact_input_len``).
        output_len: ``max_tokens`` of each request.
        range_ratio: Lengths are drawn uniformly from the integers in [⌊L(1 − r)⌋, ⌈L(1 + r)⌉] (vLLM random
            dataset), in [0, 1).
        ignore_eos: Ask the server to generate exactly ``max_tokens`` (vLLM/SGLang ``ignore_eos``; TGI has none).
        prompts: Prompts to cycle through instead of synthetic text (e.g. the article-style presets).
        timeout_s: Connect/read timeout of each request, seconds.
        slo_ms: Goodput SLOs in ms by name (``ttft``, ``tpot``, ``e2el``), e.g. ``(("ttft", 500.0),)``.
        exact_input_len: Size the synthetic prompts with the server's tokenizer route before the run
            (:func:`planner.loadtest.workload.calibrate_prompts`: one calibration, then at most 64 tokenizer calls, so a
            big run starts within a second or so); ignored with ``prompts``. The result's ``input_calibration``
            says what was exact.

    Raises:
        InvalidParameterError: a value is outside what is accepted.
    """

    num_prompts: int = 100
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0
    seed: int = 0
    num_warmups: int = 0
    duration_s: float | None = None
    input_len: int = 128
    output_len: int = 128
    range_ratio: float = 0.0
    ignore_eos: bool = False
    prompts: tuple[str, ...] = ()
    timeout_s: float = 60.0
    slo_ms: tuple[tuple[str, float], ...] = field(default=())
    exact_input_len: bool = False

    def __post_init__(self) -> None:
        def positive_int(name: str, value: Any, low: int = 1) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidParameterError(name, value, f"an integer ≥ {low}")

        positive_int("num_prompts", self.num_prompts)
        positive_int("num_warmups", self.num_warmups, 0)
        positive_int("input_len", self.input_len)
        positive_int("output_len", self.output_len)
        if self.max_concurrency is not None:
            positive_int("max_concurrency", self.max_concurrency)
        if not (isinstance(self.request_rate, int | float) and self.request_rate > 0):
            raise InvalidParameterError("request_rate", self.request_rate, "requests/s > 0 (inf = burst)")
        if not (isinstance(self.burstiness, int | float) and self.burstiness > 0):
            raise InvalidParameterError("burstiness", self.burstiness, "a gamma shape > 0 (1 = Poisson)")
        if self.duration_s is not None and not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise InvalidParameterError("duration_s", self.duration_s, "seconds > 0, or None for no cap")
        if not (isinstance(self.range_ratio, int | float) and 0 <= self.range_ratio < 1):
            raise InvalidParameterError("range_ratio", self.range_ratio, "a number in [0, 1)")
        if not self.timeout_s > 0:
            raise InvalidParameterError("timeout_s", self.timeout_s, "seconds > 0")
        object.__setattr__(self, "prompts", tuple(self.prompts))
        if any(not isinstance(p, str) or not p.strip() for p in self.prompts):
            raise InvalidParameterError("prompts", self.prompts, "non-empty strings")
        object.__setattr__(self, "slo_ms", tuple(tuple(x) for x in self.slo_ms))
        for name, value in self.slo_ms:
            if name not in ("ttft", "tpot", "e2el") or not value > 0:
                raise InvalidParameterError("slo_ms", (name, value), "ttft, tpot or e2el with a limit in ms > 0")


def arrival_times(spec: LoadSpec) -> tuple[float, ...]:
    """Send offsets (seconds after the run starts) of the ``num_prompts`` measured requests, as vLLM builds them.

    Formula (vLLM ``serve.py`` ``get_request``): for a finite rate each request gets a gap drawn from
    gamma(shape = burstiness, scale = 1 / (rate · burstiness)) (mean 1/rate); the offsets are the cumulative sums,
    then rescaled so the last one is exactly ``num_prompts / rate``. ``rate = inf`` gives all zeros (burst);
    ``burstiness = inf`` gives constant gaps of 1/rate.
    """
    n, rate = spec.num_prompts, spec.request_rate
    if math.isinf(rate):
        return (0.0,) * n
    rng = random.Random(spec.seed)
    if math.isinf(spec.burstiness):
        gaps = [1.0 / rate] * n
    else:
        theta = 1.0 / (rate * spec.burstiness)
        gaps = [rng.gammavariate(spec.burstiness, theta) for _ in range(n)]
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


def _draw(spec: LoadSpec, count: int, seed_offset: int) -> list[tuple[int, int, int]]:
    """``(input tokens, output tokens, word offset)`` of ``count`` requests (seeded, see :func:`build_requests`)."""
    rng = random.Random(spec.seed + 1 + seed_offset)
    in_lo, in_hi = token_range(spec.input_len, spec.range_ratio)
    out_lo, out_hi = token_range(spec.output_len, spec.range_ratio)
    out = []
    for i in range(count):
        n_in = rng.randint(in_lo, in_hi)
        out.append((n_in, rng.randint(out_lo, out_hi), i + seed_offset))
    return out


def build_requests(
    spec: LoadSpec,
    count: int,
    *,
    seed_offset: int = 0,
    sized: tuple[tuple[str, ...], tuple[int, ...]] | None = None,
) -> list[tuple[ChatRequest, int]]:
    """``count`` requests with their input tokens: prompts cycled, or synthetic text.

    Input and output lengths are drawn (seeded) from :func:`token_range` of ``input_len`` / ``output_len``.
    The input tokens are :func:`estimate_tokens` of the prompt, or the counts in ``sized``.

    Args:
        spec: The load.
        count: Number of requests.
        seed_offset: Shifts the seed and the synthetic word rotation (warmups use ``num_prompts``).
        sized: ``(texts, tokens)`` from :func:`planner.loadtest.workload.calibrate_prompts`, one per request, replacing
            the synthetic text (ignored when ``spec.prompts`` is set).
    """
    out: list[tuple[ChatRequest, int]] = []
    for i, (n_in, n_out, offset) in enumerate(_draw(spec, count, seed_offset)):
        if spec.prompts:
            prompt, tokens = spec.prompts[i % len(spec.prompts)], None
        elif sized is not None:
            prompt, tokens = sized[0][i], sized[1][i]
        else:
            prompt, tokens = synthetic_text(n_in, offset), None
        request = ChatRequest(prompt, max_tokens=n_out, ignore_eos=spec.ignore_eos)
        out.append((request, estimate_tokens(prompt) if tokens is None else tokens))
    return out


@dataclass(frozen=True)
class LoadProgress:
    """Live counters of a run, passed to ``on_progress`` after every finished request.

    Attributes:
        elapsed_s: Seconds since the measured run started.
        total: Measured requests asked for (``num_prompts``), for a progress bar.
        sent: Measured requests handed to the client so far.
        completed: Successful requests so far.
        failed: Failed requests so far.
        in_flight: Requests in flight now.
        start_s: Absolute ``time.perf_counter()`` of the measured start (records' ``t_sent`` use the same clock).
    """

    elapsed_s: float
    total: int
    sent: int
    completed: int
    failed: int
    in_flight: int
    start_s: float = 0.0

    @property
    def fraction(self) -> float:
        """Finished share of ``total``, in [0, 1]."""
        return min(1.0, (self.completed + self.failed) / self.total) if self.total else 0.0


@dataclass(frozen=True)
class LoadResult:
    """Everything a load run produced.

    Attributes:
        endpoint: Endpoint name.
        spec: The load that was asked for.
        records: Records of the measured requests that finished (warmups and cancelled ones excluded).
        input_tokens: Input tokens per record (server ``prompt_tokens`` when reported, else the estimate).
        metrics: Aggregates over ``records`` and ``duration_s``.
        duration_s: Wall time from the first measured send until the last request ended or was cancelled.
        in_flight: ``(seconds since start, requests in flight)`` after every change.
        warmup_records: Records of the warmup requests.
        cancelled: Requests cancelled in flight (duration cap or :meth:`LoadRun.cancel`).
        not_sent: Requests never sent (not released, or still waiting for a concurrency slot) when the run stopped.
        stopped: ``"duration"`` when the cap ended the run, ``"cancelled"`` when cancelled; None otherwise.
        start_s: Absolute ``time.perf_counter()`` of the measured start (for
            :func:`planner.metrics.timeseries.timeseries`); None when unknown.
        input_calibration: How synthetic prompts were sized (``exact_input_len``); None otherwise.
    """

    endpoint: str
    spec: LoadSpec
    records: tuple[RequestRecord, ...]
    input_tokens: tuple[int, ...]
    metrics: BenchmarkMetrics
    duration_s: float
    in_flight: tuple[tuple[float, int], ...] = ()
    warmup_records: tuple[RequestRecord, ...] = ()
    cancelled: int = 0
    not_sent: int = 0
    stopped: str | None = None
    start_s: float | None = None
    input_calibration: InputCalibration | None = None

    @property
    def max_in_flight(self) -> int:
        """Largest number of requests in flight at once."""
        return max((n for _, n in self.in_flight), default=0)

    @property
    def ttft_first_chunk(self) -> Distribution | None:
        """TTFT as ``vllm bench serve`` measures it: first chunk with ``choices`` (vLLM's role chunk included) − sent.

        One sample per completed request (the requests that give ``metrics.ttft`` its samples); seconds; None
        without a sample. ``metrics.ttft`` is the project's TTFT (first token-bearing chunk).
        """
        ok = {id(r) for r in _completed(self.records)}
        return Distribution.of([r.first_chunk_s for r in self.records if id(r) in ok and r.first_chunk_s is not None])


def _completed(records: tuple[RequestRecord, ...] | list[RequestRecord]) -> list[RequestRecord]:
    # The same test as compute_benchmark_metrics: ok with a first and a last token.
    return [r for r in records if r.ok and r.first_token_s is not None and r.last_token_s is not None]


async def run_load(
    endpoint: Endpoint,
    spec: LoadSpec,
    *,
    on_progress: Callable[[LoadProgress], None] | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    on_in_flight: Callable[[float, int], None] | None = None,
    secrets: Mapping[str, Any] | None = None,
    stop: asyncio.Event | None = None,
) -> LoadResult:
    """Send ``spec``'s load to ``endpoint`` and measure it like ``vllm bench serve``.

    The endpoint is discovered once (model, context limit). Warmups go first (concurrently, capped by
    ``max_concurrency``); then the measured requests are released at :func:`arrival_times` and each waits for the
    concurrency semaphore. Duration = wall time from the first measured release until every request has ended.

    Args:
        endpoint: The endpoint.
        spec: The load.
        on_progress: Called in the event loop after every finished measured request.
        on_record: Called in the event loop with every finished measured record (before ``on_progress``).
        on_in_flight: Called in the event loop with ``(seconds since start, requests in flight)`` on every change.
        secrets: Optional mapping holding the API key.
        stop: When set, the run stops as at the duration cap (used by :class:`LoadRun`).

    Returns:
        The :class:`LoadResult`. Request failures are records with ``ok=False``; they never raise.

    Raises:
        InvalidParameterError: ``ignore_eos`` on a ``tgi`` endpoint.
        MissingAPIKeyError: the endpoint's API-key variable is not set.

    Example:
        >>> result = asyncio.run(run_load(ep, LoadSpec(num_prompts=10, max_concurrency=2)))  # doctest: +SKIP
    """
    info = await discover(endpoint, spec.timeout_s, secrets=secrets)
    client = make_client(endpoint, backend=LOAD_BACKEND, timeout_s=spec.timeout_s, secrets=secrets)
    sem = asyncio.Semaphore(spec.max_concurrency) if spec.max_concurrency else None
    state = {"in_flight": 0, "sent": 0, "completed": 0, "failed": 0, "cancelled": 0}
    samples: list[tuple[float, int]] = []
    start = time.perf_counter()

    def sample() -> None:
        point = (time.perf_counter() - start, state["in_flight"])
        samples.append(point)
        if on_in_flight is not None:
            on_in_flight(*point)

    async def send(request: ChatRequest, measured: bool, *, held: bool = False) -> RequestRecord | None:
        # held: the dispatcher already took this request's concurrency slot; it is given back when the request ends
        try:
            async with sem if sem is not None and not held else contextlib.nullcontext():
                return await _send(request, measured)
        finally:
            if held and sem is not None:
                sem.release()

    async def _send(request: ChatRequest, measured: bool) -> RequestRecord | None:
        state["in_flight"] += 1
        if measured:
            state["sent"] += 1
            sample()
        try:
            record = await stream_request(
                endpoint,
                request,
                backend=LOAD_BACKEND,
                timeout_s=spec.timeout_s,
                info=info,
                secrets=secrets,
                client=client,
            )
        except asyncio.CancelledError:
            state["cancelled"] += measured
            return None
        finally:
            state["in_flight"] -= 1
            if measured:
                sample()
        if measured:
            state["completed" if record.ok else "failed"] += 1
            if on_record is not None:
                on_record(record)
            if on_progress is not None:
                on_progress(
                    LoadProgress(
                        elapsed_s=time.perf_counter() - start,
                        total=spec.num_prompts,
                        sent=state["sent"],
                        completed=state["completed"],
                        failed=state["failed"],
                        in_flight=state["in_flight"],
                        start_s=start,
                    )
                )
        return record

    calibration: InputCalibration | None = None
    sized_warm = sized = None
    try:
        if spec.exact_input_len and not spec.prompts:
            # Measured prompts first: they get the counting budget; the warmups ride on the same calibration.
            draws = _draw(spec, spec.num_prompts, 0) + _draw(spec, spec.num_warmups, spec.num_prompts)
            texts, tokens, calibration = await calibrate_prompts(
                endpoint,
                info,
                [(n_in, off) for n_in, _, off in draws],
                timeout_s=min(spec.timeout_s, 10.0),
                secrets=secrets,
            )
            n = spec.num_prompts
            sized, sized_warm = (texts[:n], tokens[:n]), (texts[n:], tokens[n:])
        warmups = build_requests(spec, spec.num_warmups, seed_offset=spec.num_prompts, sized=sized_warm)
        # The stop event also ends the warm-up phase (a warm-up can be as slow as any request).
        stopper = asyncio.create_task((stop or asyncio.Event()).wait())

        async def warm_up() -> list[RequestRecord | None]:
            return await asyncio.gather(*(send(r, False) for r, _ in warmups))

        warm_all = asyncio.create_task(warm_up())
        await asyncio.wait({warm_all, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not warm_all.done():
            warm_all.cancel()
        warm = (await asyncio.gather(warm_all, return_exceptions=True))[0]
        warm = warm if isinstance(warm, list) else []
        requests = build_requests(spec, spec.num_prompts, sized=sized)
        schedule = arrival_times(spec)
        tasks: list[asyncio.Task[RequestRecord | None]] = []
        start = time.perf_counter()
        samples.clear()
        sample()

        async def dispatch() -> None:
            for (request, _), t in zip(requests, schedule, strict=True):
                delay = start + t - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                # Take the slot before creating the task: requests wait for a slot in arrival order, as in vLLM,
                # but 100,000 queued requests are not 100,000 parked tasks (which slowed the loop and the stop).
                if sem is not None:
                    await sem.acquire()
                tasks.append(asyncio.create_task(send(request, True, held=sem is not None)))
            await asyncio.gather(*tasks)

        stopped = None
        if stopper.done():
            stopped = "cancelled"
        else:
            main = asyncio.create_task(dispatch())
            done, _ = await asyncio.wait({main, stopper}, timeout=spec.duration_s, return_when=asyncio.FIRST_COMPLETED)
            if main not in done:
                stopped = "cancelled" if stopper in done else "duration"
                main.cancel()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(main, *tasks, return_exceptions=True)
        stopper.cancel()
        await asyncio.gather(stopper, return_exceptions=True)
        duration = time.perf_counter() - start
    finally:
        await client.close()
    records: list[RequestRecord] = []
    inputs: list[int] = []
    for task, (_, estimate) in zip(tasks, requests, strict=False):
        record = task.result() if task.done() and not task.cancelled() else None
        if record is not None:
            records.append(record)
            inputs.append(record.prompt_tokens if record.prompt_tokens is not None else estimate)
    metrics = compute_benchmark_metrics(records, inputs, max(duration, 1e-9), slo_ms=dict(spec.slo_ms))
    return LoadResult(
        endpoint=endpoint.name,
        spec=spec,
        records=tuple(records),
        input_tokens=tuple(inputs),
        metrics=metrics,
        duration_s=duration,
        in_flight=tuple(samples),
        warmup_records=tuple(r for r in warm if r is not None),
        cancelled=state["cancelled"],
        not_sent=spec.num_prompts - state["sent"],
        stopped=stopped,
        start_s=start,
        input_calibration=calibration,
    )


# --- background run for UIs ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadSnapshot:
    """A consistent copy of a :class:`LoadRun`'s state.

    Attributes:
        progress: Latest counters; None before the first request finished.
        done: The run has finished (normally, stopped, or with an error).
        cancelled: :meth:`LoadRun.cancel` was called.
        error: One-line reason the run itself failed (e.g. a missing API key); None otherwise.
        result: The final result once done; None before.
        records: Measured records finished so far, in completion order (for live charts; warmups excluded).
        in_flight: ``(seconds since start, requests in flight)`` samples so far.
        total: Measured requests asked for (``num_prompts``).
    """

    progress: LoadProgress | None = None
    done: bool = False
    cancelled: bool = False
    error: str | None = None
    result: LoadResult | None = field(default=None, repr=False)
    records: tuple[RequestRecord, ...] = field(default=(), repr=False)
    in_flight: tuple[tuple[float, int], ...] = field(default=(), repr=False)
    total: int = 0

    @property
    def start_s(self) -> float | None:
        """Absolute ``perf_counter`` of the measured start, once known (for the live time series)."""
        if self.result is not None and self.result.start_s is not None:
            return self.result.start_s
        return self.progress.start_s if self.progress is not None else None


class LoadRun(BackgroundRun):
    """Run :func:`run_load` on a background thread; poll :meth:`snapshot`, stop with :meth:`cancel`.

    A cancelled run still yields a :class:`LoadResult` over the requests that finished (``stopped="cancelled"``).

    Example:
        >>> run = LoadRun(endpoint, LoadSpec(num_prompts=50, max_concurrency=8)).start()  # doctest: +SKIP
        >>> run.snapshot().progress  # doctest: +SKIP
    """

    def __init__(self, endpoint: Endpoint, spec: LoadSpec, *, secrets: Mapping[str, Any] | None = None) -> None:
        super().__init__("load-run")
        self._endpoint = endpoint
        self._spec = spec
        self._secrets = dict(secrets) if secrets is not None else None
        self._progress: LoadProgress | None = None
        self._stop: asyncio.Event | None = None
        self._records: list[RequestRecord] = []
        self._in_flight: list[tuple[float, int]] = []

    def _on_progress(self, progress: LoadProgress) -> None:
        with self._lock:
            self._progress = progress

    def _on_record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def _on_in_flight(self, t_s: float, n: int) -> None:
        with self._lock:
            if t_s == 0.0 or (self._in_flight and t_s < self._in_flight[-1][0]):
                self._in_flight.clear()
            self._in_flight.append((t_s, n))

    async def _run(self) -> LoadResult:
        self._stop = asyncio.Event()
        if self._cancelled:
            self._stop.set()
        return await run_load(
            self._endpoint,
            self._spec,
            on_progress=self._on_progress,
            on_record=self._on_record,
            on_in_flight=self._on_in_flight,
            secrets=self._secrets,
            stop=self._stop,
        )

    def _stop_in_loop(self) -> None:
        # Requests in flight are cancelled and the rest not sent; run_load still returns a result.
        if self._stop is not None:
            self._stop.set()

    def snapshot(self) -> LoadSnapshot:
        """A frozen copy of the current state (thread-safe; copies two lists of references, O(requests))."""
        done = self._done.is_set()
        with self._lock:
            progress = self._progress
            records = tuple(self._records)
            in_flight = tuple(self._in_flight)
        return LoadSnapshot(
            progress=progress,
            done=done,
            cancelled=self._cancelled,
            error=self._error,
            result=self._result,
            records=records,
            in_flight=in_flight,
            total=self._spec.num_prompts,
        )
