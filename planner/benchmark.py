"""The Load Test page's engine: a queue of load runs (endpoints × sweep levels), one after another, on a thread.

:func:`plan_jobs` turns the page's :class:`~planner.loadtest_state.LoadSettings` into :class:`Job` s: one run per
endpoint, or one per concurrency level of a sweep (:func:`planner.sweep.sweep_levels`; each level is
:meth:`planner.sweep.SweepSpec.level_spec`). :class:`BenchmarkRun` runs them in order with
:func:`planner.loadtest.run_load`, scraping each server's ``/metrics`` alongside
(:func:`planner.server_metrics.scrape_metrics`) and asking it for its KV capacity
(:func:`planner.server_metrics.fetch_measured_kv`). The page polls :meth:`BenchmarkRun.snapshot`; the Streamlit
script thread never touches a stream.

Endpoints run one after another, not at once, so they do not share this machine's client CPU or the network
path, and each run's throughput is its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from planner.background import BackgroundRun
from planner.endpoints import Endpoint
from planner.errors import PlannerError
from planner.loadtest import LoadProgress, LoadSpec, run_load
from planner.loadtest_runs import SavedRun, saved_run
from planner.loadtest_state import LoadSettings, to_spec
from planner.server_metrics import MeasuredKV, ServerSample, fetch_measured_kv, scrape_metrics
from planner.streaming import RequestRecord
from planner.sweep import SweepSpec, sweep_levels

__all__ = ["SCRAPE_INTERVAL_S", "BenchmarkRun", "BenchmarkSnapshot", "Job", "plan_jobs"]

#: Seconds between two scrapes of a server's ``/metrics`` during a run.
SCRAPE_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Job:
    """One load run of the queue.

    Attributes:
        endpoint: Where the load goes.
        spec: The load.
        label: Display name, e.g. ``"llama · c=8"``; made unique per session by the page's clock suffix.
        sweep: Id shared by the levels of one sweep; None for a single run.
    """

    endpoint: Endpoint
    spec: LoadSpec
    label: str
    sweep: str | None = None


def plan_jobs(
    endpoints: Sequence[Endpoint], settings: LoadSettings, prompts: Sequence[str] = (), *, tag: str = ""
) -> tuple[Job, ...]:
    """The runs ``settings`` asks for, endpoint by endpoint (sweep levels in increasing order).

    ``ignore_eos`` is dropped for TGI endpoints (TGI has no such parameter; vLLM's ``--ignore-eos`` help says the
    same). Synthetic prompts are sized with the server's tokenizer route where it has one (``exact_input_len``).

    Args:
        endpoints: The endpoints, in run order.
        settings: The page settings.
        prompts: Prompts to cycle (``examples`` / ``custom`` datasets); must be non-empty for those.
        tag: Appended to labels and sweep ids (e.g. the start time), so runs stay apart in a session.

    Raises:
        InvalidParameterError: the settings give no valid load (e.g. the ``custom`` dataset without prompts).
    """
    if settings.dataset_name != "random" and not prompts:
        raise PlannerError(f"the {settings.dataset_name} dataset has no prompts: upload a JSONL file of prompts")
    suffix = f" · {tag}" if tag else ""
    jobs: list[Job] = []
    for endpoint in endpoints:
        base = to_spec(settings, prompts if settings.dataset_name != "random" else ())
        base = replace(base, exact_input_len=not base.prompts)
        if endpoint.kind == "tgi" and base.ignore_eos:
            base = replace(base, ignore_eos=False)
        if settings.mode == "sweep":
            sweep = SweepSpec(base, sweep_levels(settings.sweep_max), level_duration_s=settings.duration_s)
            sweep_id = f"{endpoint.name} sweep{suffix}"
            jobs += [
                Job(endpoint, sweep.level_spec(c), f"{endpoint.name} · c={c}{suffix}", sweep_id) for c in sweep.levels
            ]
        else:
            cap = "∞" if base.max_concurrency is None else base.max_concurrency
            jobs.append(Job(endpoint, base, f"{endpoint.name} · c={cap}{suffix}"))
    return tuple(jobs)


@dataclass(frozen=True)
class BenchmarkSnapshot:
    """A consistent copy of a :class:`BenchmarkRun`'s state.

    Attributes:
        jobs_total: Runs in the queue.
        jobs_done: Runs finished (completed, stopped by their cap, or failed).
        current: The run in progress; None before the first and after the last.
        progress: Counters of the run in progress; None before its first request finished.
        requests_total: Measured requests of all runs.
        requests_done: Measured requests finished (ok or failed) over all runs so far.
        records: Records finished so far in the current run (the last run's, once done).
        run_start: ``time.perf_counter()`` at the current run's first measured send; None before it.
        in_flight: ``(seconds since run_start, requests in flight)`` of the current run.
        server: Scraped ``/metrics`` samples of the current run, ``t_s`` in seconds since ``run_start`` (may be
            negative during warmups).
        scrape_note: Why the current server has no usable ``/metrics`` (None when it has, or when not asked).
        saved: Finished runs as :class:`~planner.loadtest_runs.SavedRun`, in order.
        measured_kv: Endpoint name → the KV capacity its server reports (None when it reports none).
        errors: One line per run that could not start (e.g. a missing API key).
        done: Every run has finished or the queue was cancelled.
        cancelled: :meth:`BenchmarkRun.cancel` was called.
    """

    jobs_total: int
    jobs_done: int = 0
    current: Job | None = None
    progress: LoadProgress | None = None
    requests_total: int = 0
    requests_done: int = 0
    records: tuple[RequestRecord, ...] = field(default=(), repr=False)
    run_start: float | None = None
    in_flight: tuple[tuple[float, int], ...] = field(default=(), repr=False)
    server: tuple[ServerSample, ...] = field(default=(), repr=False)
    scrape_note: str | None = None
    saved: tuple[SavedRun, ...] = field(default=(), repr=False)
    measured_kv: tuple[tuple[str, MeasuredKV | None], ...] = ()
    errors: tuple[str, ...] = ()
    done: bool = False
    cancelled: bool = False


class BenchmarkRun(BackgroundRun):
    """Run :class:`Job` s one after another on a background thread; poll :meth:`snapshot`, stop with
    :meth:`cancel` (the run in progress keeps what finished; later runs are not started).

    Example:
        >>> run = BenchmarkRun(plan_jobs([ep], LoadSettings()), started=datetime.now()).start()  # doctest: +SKIP
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        *,
        started: datetime,
        scrape_metrics: bool = True,
        secrets: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__("benchmark-run")
        self._jobs = tuple(jobs)
        self._started = started
        self._scrape = scrape_metrics
        self._secrets = dict(secrets) if secrets is not None else None
        self._stop: asyncio.Event | None = None
        self._jobs_done = 0
        self._current: Job | None = None
        self._progress: LoadProgress | None = None
        self._records: list[RequestRecord] = []
        self._requests_done = 0
        self._in_flight: list[tuple[float, int]] = []
        self._server: list[ServerSample] = []
        self._job_start = 0.0
        self._scrape_note: str | None = None
        self._saved: list[SavedRun] = []
        self._kv: dict[str, MeasuredKV | None] = {}
        self._errors: list[str] = []

    # --- callbacks from the loop (under the lock, so snapshots are consistent) ---------------------------------------
    def _on_progress(self, progress: LoadProgress) -> None:
        with self._lock:
            self._progress = progress

    def _on_record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
            self._requests_done += 1

    def _on_in_flight(self, t_s: float, n: int) -> None:
        with self._lock:
            if t_s == 0.0 and n == 0:  # the measured run starts: earlier points were warmups
                self._in_flight.clear()
            self._in_flight.append((t_s, n))

    def _on_sample(self, sample: ServerSample) -> None:
        with self._lock:
            self._server.append(sample)

    async def _run(self) -> tuple[SavedRun, ...]:
        self._stop = asyncio.Event()
        if self._cancelled:
            self._stop.set()
        for job in self._jobs:
            if self._stop.is_set():
                break
            with self._lock:
                self._current, self._progress = job, None
                self._records, self._in_flight, self._server = [], [], []
                self._scrape_note = None
                self._job_start = time.perf_counter()
            await self._one(job)
            with self._lock:
                self._jobs_done += 1
        with self._lock:
            self._current = None
        return tuple(self._saved)

    async def _one(self, job: Job) -> None:
        name = job.endpoint.name
        if name not in self._kv:
            self._kv[name] = await fetch_measured_kv(job.endpoint, timeout_s=5.0, secrets=self._secrets)
        scraper_stop = asyncio.Event()
        scraper = None
        if self._scrape:
            scraper = asyncio.create_task(
                scrape_metrics(
                    job.endpoint,
                    interval_s=SCRAPE_INTERVAL_S,
                    stop=scraper_stop,
                    on_sample=self._on_sample,
                    start=self._job_start,
                    timeout_s=min(5.0, job.spec.timeout_s),
                    secrets=self._secrets,
                )
            )
        try:
            result = await run_load(
                job.endpoint,
                job.spec,
                on_progress=self._on_progress,
                on_record=self._on_record,
                on_in_flight=self._on_in_flight,
                secrets=self._secrets,
                stop=self._stop,
            )
        except PlannerError as exc:
            with self._lock:
                self._errors.append(f"{job.label}: {exc}")
            return
        finally:
            scraper_stop.set()
            if scraper is not None:
                note = await scraper
                with self._lock:
                    self._scrape_note = note
        saved = saved_run(result, job.label, started=self._started, sweep=job.sweep)
        with self._lock:
            self._saved.append(saved)

    def _stop_in_loop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def snapshot(self) -> BenchmarkSnapshot:
        """A frozen copy of the current state (thread-safe, cheap: tuples of immutable records)."""
        done = self._done.is_set()
        with self._lock:
            progress = self._progress
            run_start = None if progress is None else progress.start_s
            shift = 0.0 if run_start is None else run_start - self._job_start
            server = tuple(replace(s, t_s=s.t_s - shift) for s in self._server)
            errors = list(self._errors)
            if self._error:
                errors.append(self._error)
            return BenchmarkSnapshot(
                jobs_total=len(self._jobs),
                jobs_done=self._jobs_done,
                current=self._current,
                progress=progress,
                requests_total=sum(j.spec.num_prompts for j in self._jobs),
                requests_done=self._requests_done,
                records=tuple(self._records),
                run_start=run_start,
                in_flight=tuple(self._in_flight),
                server=server,
                scrape_note=self._scrape_note,
                saved=tuple(self._saved),
                measured_kv=tuple(self._kv.items()),
                errors=tuple(errors),
                done=done,
                cancelled=self._cancelled,
            )
