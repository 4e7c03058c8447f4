"""The queue of load runs (endpoints × sweep levels) that the page and the CLI both run, and the page's worker process.

:func:`plan_jobs` turns :class:`~planner.loadtest.settings.LoadSettings` into :class:`Job` s: one run per endpoint,
or one per concurrency level of a sweep (:func:`planner.loadtest.sweep.sweep_levels`; each level is
:meth:`planner.loadtest.sweep.SweepSpec.level_spec`). :class:`JobQueue` runs them in order with
:func:`planner.loadtest.runner.run_load`, scraping each server's ``/metrics`` alongside
(:func:`planner.serving.server_metrics.scrape_metrics`) and asking it for its KV capacity
(:func:`planner.serving.server_metrics.fetch_measured_kv`). ``python -m planner bench`` runs the queue in its own
process; the page runs it in a worker process (:class:`BenchmarkRun`, ``python -m planner.loadtest.worker``) and
polls :meth:`BenchmarkRun.snapshot`, so the Streamlit process never touches a stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from planner.errors import PlannerError
from planner.loadtest.ray_workers import send_on_ray
from planner.loadtest.results import SavedRun, saved_run
from planner.loadtest.runner import LoadProgress, LoadResult, run_load
from planner.loadtest.settings import FILE_DATASETS, TRACE_DATASETS, LoadSettings
from planner.loadtest.sweep import Saturation, SweepPoint, SweepSpec, refine_levels, saturation
from planner.serving.endpoints import Endpoint
from planner.serving.server_metrics import MeasuredKV, ServerSample, fetch_measured_kv, scrape_metrics
from planner.serving.streaming import RequestRecord
from planner.serving.worker_process import ABANDONED_S, ProcessRun, run_child

__all__ = [
    "ABANDONED_S",
    "SCRAPE_INTERVAL_S",
    "BenchmarkRun",
    "BenchmarkSnapshot",
    "Job",
    "JobOutcome",
    "JobQueue",
    "plan_jobs",
    "worker_main",
]

#: Seconds between two scrapes of a server's ``/metrics`` during a run.
SCRAPE_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Job:
    """One load run of the queue.

    Attributes:
        endpoint: Where the load goes.
        settings: The load of this run (a sweep level's own ``max_concurrency`` and ``num_prompts``).
        label: Display name, e.g. ``"llama · c=8"``; made unique per session by the page's clock suffix.
        sweep: Id shared by the levels of one sweep; None for a single run.
        level: Concurrency of a sweep level; None for a single run.
        repeat: Id shared by the repeats of one run (``num_runs`` > 1); None otherwise.
        sweep_spec: The sweep a level belongs to (to add refining levels); None for a single run.
    """

    endpoint: Endpoint
    settings: LoadSettings
    label: str
    sweep: str | None = None
    level: int | None = None
    repeat: str | None = None
    sweep_spec: SweepSpec | None = field(default=None, repr=False)


def _level_label(job: Job, level: int) -> str:
    """The label of another level of ``job``'s sweep (its ``c=N`` replaced)."""
    head, _, rest = job.label.partition(f"c={job.level}")
    return f"{head}c={level}{rest}"


def plan_jobs(
    endpoints: Sequence[Endpoint],
    settings: LoadSettings,
    prompts: Sequence[str] = (),
    *,
    tag: str = "",
    trace_rows: Sequence[Any] = (),
) -> tuple[Job, ...]:
    """The runs ``settings`` asks for, endpoint by endpoint (sweep levels in increasing order; ``num_runs`` repeats of
    a single run one after another).

    The page and the CLI both plan their runs here, so both send the same requests: fields an engine does not read
    (``ignore_eos`` on TGI) are left out by :func:`planner.serving.requests.build_request` and named in each result;
    synthetic prompts are sized as ``settings.input_sizing`` says (the server's tokenizer route by default).

    Args:
        endpoints: The endpoints, in run order.
        settings: The load.
        prompts: Prompts to cycle (``examples`` / ``custom`` / ``sharegpt`` datasets); must be non-empty for those.
        tag: Appended to labels and sweep ids (e.g. the start time), so runs stay apart in a session.
        trace_rows: The rows of a trace dataset (``timed_trace``, ``burstgpt``); a run sends at most as many
            requests as the trace has rows after its warmups.

    Raises:
        PlannerError: a dataset that needs a file (or the examples) without its prompts or rows.
        InvalidParameterError: a value is not accepted.
    """
    name = settings.dataset_name
    if name in TRACE_DATASETS:
        if len(trace_rows) <= settings.num_warmups:
            raise PlannerError(f"the {name} dataset has no requests to replay: give a {name} file")
    elif (name in FILE_DATASETS or name == "examples") and not prompts:
        raise PlannerError(f"the {name} dataset has no prompts: give a file of prompts")
    suffix = f" · {tag}" if tag else ""
    cycled = name in FILE_DATASETS or name == "examples"
    base = replace(
        settings,
        prompts=tuple(prompts) if cycled and name not in TRACE_DATASETS else (),
        trace_rows=tuple(trace_rows) if name in TRACE_DATASETS else (),
    )
    if name in TRACE_DATASETS:
        base = replace(base, num_prompts=min(base.num_prompts, len(trace_rows) - base.num_warmups))
    jobs: list[Job] = []
    # batching="compare": the same runs twice, static then continuous (BATCHINGS), each named after its batching
    kinds = ("static", "continuous") if base.batching == "compare" else (base.batching,)
    for endpoint in endpoints:
        for kind in kinds:
            spec = replace(base, batching=kind)
            tail = (f" · {kind}" if len(kinds) > 1 else "") + suffix
            if settings.mode == "sweep":
                sweep = SweepSpec.doubling(
                    spec,
                    settings.sweep.sweep_max,
                    prompts_per_level=settings.sweep.prompts_per_level,
                    level_duration_s=settings.duration_s or settings.sweep.level_duration_s,
                )
                sweep_id = f"{endpoint.name} sweep{tail}"
                jobs += [
                    Job(endpoint, sweep.level_spec(c), f"{endpoint.name} · c={c}{tail}", sweep_id, c, sweep_spec=sweep)
                    for c in sweep.levels
                ]
                continue
            cap = "∞" if spec.max_concurrency is None else spec.max_concurrency
            label = f"{endpoint.name} · c={cap}{tail}"
            k = spec.num_runs
            if k == 1:
                jobs.append(Job(endpoint, spec, label))
            else:
                jobs += [Job(endpoint, spec, f"{label} · run {i}/{k}", repeat=label) for i in range(1, k + 1)]
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
        saved: Finished runs as :class:`~planner.loadtest.results.SavedRun`, in order.
        measured_kv: Endpoint name → the KV capacity its server reports (None when it reports none).
        errors: One line per run that could not start (e.g. a missing API key).
        sweep_stops: ``(sweep id, reason)`` of each sweep that stopped at saturation (its later levels skipped).
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
    sweep_stops: tuple[tuple[str, str], ...] = ()
    done: bool = False
    cancelled: bool = False


@dataclass(frozen=True)
class JobOutcome:
    """What one job of a :class:`JobQueue` gave.

    Attributes:
        job: The job.
        result: Its result; None when it could not start (``error`` says why) or the queue stopped before it.
        error: One line when the run could not start (e.g. a missing API key); None otherwise.
        scrape_note: Why the server's ``/metrics`` gave nothing usable; None when it did or was not asked.
    """

    job: Job
    result: LoadResult | None = None
    error: str | None = None
    scrape_note: str | None = None


class JobQueue:
    """Runs jobs one after another with :func:`planner.loadtest.runner.run_load`, scraping each server's ``/metrics``
    alongside and asking it once for its KV capacity. The page runs it in the worker process
    (:class:`BenchmarkRun`), the CLI in its own; every state change goes out through ``emit(kind, *payload)``.

    Endpoints run one after another, not at once, so they do not share this machine's client CPU or the network
    path, and each run's throughput is its own.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        *,
        started: datetime,
        scrape: bool,
        secrets: Mapping[str, Any] | None = None,
        emit: Callable[..., None] = lambda *_: None,
        stop: asyncio.Event | None = None,
    ) -> None:
        self._jobs = tuple(jobs)
        self._started = started
        self._scrape = scrape
        self._secrets = dict(secrets) if secrets is not None else None
        self._emit = emit
        #: Set it to stop: the run in progress keeps what finished, later jobs do not start.
        self.stop = stop or asyncio.Event()
        self._kv_asked: set[str] = set()
        #: Sweep id → why it stopped early (:func:`planner.loadtest.sweep.saturation`'s reason).
        self.sweep_stops: dict[str, str] = {}

    async def run(self) -> tuple[JobOutcome, ...]:
        """Run every job (until :attr:`stop` is set); the outcome of each job that started, in order.

        A sweep whose settings ask for ``sweep.sweep_stop`` stops at the first saturated level
        (:func:`planner.loadtest.sweep.saturation`): its later levels are skipped (``emit("sweep_stopped", sweep id,
        reason, skipped job indices)``); with ``sweep.sweep_refine``, the level between the last growing and the first
        saturated one (:func:`planner.loadtest.sweep.refine_levels`) is added after it (``emit("jobs_added",
        jobs)``), so a sweep of 1 … 1024 against a server saturated at 8 runs 1, 2, 4, 8, 16 (and 11).
        """
        outcomes: list[JobOutcome] = []
        jobs = list(self._jobs)
        skipped: set[int] = set()
        index = 0
        while index < len(jobs) and not self.stop.is_set():
            job = jobs[index]
            if index in skipped:
                index += 1
                continue
            job_start = time.perf_counter()
            self._emit("job", index, job_start)
            outcomes.append(await self._one(job, job_start))
            self._emit("job_done", index)
            if job.sweep is not None and job.settings.sweep.sweep_stop and job.sweep not in self.sweep_stops:
                stop = self._saturated(job, outcomes)
                if stop is not None:
                    self.sweep_stops[job.sweep] = stop.reason
                    later = [i for i in range(index + 1, len(jobs)) if jobs[i].sweep == job.sweep]
                    skipped.update(later)
                    self._emit("sweep_stopped", job.sweep, stop.reason, tuple(later))
                    if job.settings.sweep.sweep_refine and job.sweep_spec is not None:
                        done = [o.job.level for o in outcomes if o.job.sweep == job.sweep and o.job.level]
                        added = [
                            replace(job, settings=job.sweep_spec.level_spec(c), label=_level_label(job, c), level=c)
                            for c in refine_levels(stop.last_growing, stop.level, done=done)
                        ]
                        if added:
                            jobs[index + 1 : index + 1] = added
                            skipped = {i + len(added) if i > index else i for i in skipped}
                            self._emit("jobs_added", index + 1, tuple(added))
            index += 1
        return tuple(outcomes)

    @staticmethod
    def _saturated(job: Job, outcomes: Sequence[JobOutcome]) -> Saturation | None:
        points = sorted(
            (SweepPoint.of(o.job.level or 0, o.result) for o in outcomes if o.job.sweep == job.sweep and o.result),
            key=lambda p: p.concurrency,
        )
        return saturation(points)

    async def _one(self, job: Job, job_start: float) -> JobOutcome:
        name = job.endpoint.name
        if name not in self._kv_asked:
            self._kv_asked.add(name)
            kv = await fetch_measured_kv(job.endpoint, timeout_s=5.0, secrets=self._secrets)
            self._emit("kv", name, kv)
        scraper_stop = asyncio.Event()
        scraper = None
        if self._scrape:
            scraper = asyncio.create_task(
                scrape_metrics(
                    job.endpoint,
                    interval_s=SCRAPE_INTERVAL_S,
                    stop=scraper_stop,
                    on_sample=lambda sample: self._emit("sample", sample),
                    start=job_start,
                    timeout_s=min(5.0, job.settings.timeout_s),
                    secrets=self._secrets,
                )
            )
        note = None
        try:
            result = await run_load(
                job.endpoint,
                job.settings,
                on_progress=lambda progress: self._emit("progress", progress),
                on_record=lambda record: self._emit("record", record),
                on_in_flight=lambda t_s, n: self._emit("in_flight", t_s, n),
                secrets=self._secrets,
                stop=self.stop,
                remote=send_on_ray,
            )
        except PlannerError as exc:
            self._emit("error", f"{job.label}: {exc}")
            return JobOutcome(job, error=f"{job.label}: {exc}")
        finally:
            scraper_stop.set()
            if scraper is not None:
                note = await scraper
                self._emit("scrape_note", note)
        self._emit("saved", saved_run(result, job.label, started=self._started, sweep=job.sweep, repeat=job.repeat))
        return JobOutcome(job, result, scrape_note=note)


async def _work(payload: Any, emit: Callable[..., None], stop: asyncio.Event) -> None:
    jobs, started, scrape, secrets = payload
    await JobQueue(jobs, started=started, scrape=scrape, secrets=secrets, emit=emit, stop=stop).run()


def worker_main() -> None:
    """Entry of the worker process (``python -m planner.loadtest.worker``, see :mod:`planner.serving.worker_process`):
    the jobs come pickled on stdin, one pickled message per state change goes out on stdout."""
    run_child(_work)


class BenchmarkRun(ProcessRun):
    """Run :class:`Job` s one after another in a worker PROCESS; poll :meth:`snapshot`, stop with :meth:`cancel`
    (the run in progress keeps what finished; later runs are not started).

    Why a process: a Streamlit server is one Python process; a load test on one of its threads shares the GIL with
    every page render (the live charts redraw twice a second), which delayed chunk handling by 100–400 ms and made
    the page report worse latency than ``python -m planner bench`` for the same load. The worker is
    ``python -m planner.loadtest.worker``; jobs and keys go to it over its stdin (never argv or the environment) and
    every record, progress update and ``/metrics`` sample comes back pickled over its stdout.

    A run nobody polls for :data:`ABANDONED_S` seconds (its browser tab was closed) is cancelled, so a closed
    tab does not keep loading a server.

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
        self._jobs = list(jobs)
        self._skipped: set[int] = set()
        self._sweep_stops: dict[str, str] = {}
        payload = (tuple(self._jobs), started, scrape_metrics, dict(secrets) if secrets is not None else None)
        super().__init__("planner.loadtest.worker", payload, name="load-test", abandoned_s=ABANDONED_S)
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

    @property
    def _cancelled(self) -> bool:
        return self._worker.cancelled

    def _apply(self, kind: str, payload: tuple[Any, ...]) -> None:
        with self._lock:
            if kind == "job":
                index, job_start = payload
                self._current, self._progress, self._job_start = self._jobs[index], None, job_start
                self._records, self._in_flight, self._server, self._scrape_note = [], [], [], None
            elif kind == "job_done":
                self._jobs_done += 1
            elif kind == "progress":
                self._progress = payload[0]
            elif kind == "record":
                self._records.append(payload[0])
                self._requests_done += 1
            elif kind == "in_flight":
                t_s, n = payload
                if t_s == 0.0 and n == 0:  # the measured run starts: earlier points were warmups
                    self._in_flight.clear()
                self._in_flight.append((t_s, n))
            elif kind == "sample":
                self._server.append(payload[0])
            elif kind == "scrape_note":
                self._scrape_note = payload[0]
            elif kind == "saved":
                self._saved.append(payload[0])
            elif kind == "kv":
                self._kv[payload[0]] = payload[1]
            elif kind == "sweep_stopped":
                sweep, reason, later = payload
                self._sweep_stops[sweep] = reason
                self._skipped.update(later)
            elif kind == "jobs_added":
                at, added = payload
                self._jobs[at:at] = added
                self._skipped = {i + len(added) if i >= at else i for i in self._skipped}
            elif kind in ("error", "fatal"):
                self._errors.append(payload[0])

    def snapshot(self) -> BenchmarkSnapshot:
        """A frozen copy of the current state (thread-safe, cheap: tuples of immutable records). Polling it keeps
        the run alive (see :data:`ABANDONED_S`)."""
        self._worker.poll()
        done = self._worker.done
        with self._lock:
            progress = self._progress
            run_start = None if progress is None else progress.start_s
            shift = 0.0 if run_start is None else run_start - self._job_start
            server = tuple(replace(s, t_s=s.t_s - shift) for s in self._server)
            kept = [j for i, j in enumerate(self._jobs) if i not in self._skipped]
            return BenchmarkSnapshot(
                jobs_total=len(kept),
                jobs_done=self._jobs_done,
                current=None if done else self._current,
                progress=progress,
                requests_total=sum(j.settings.num_prompts for j in kept),
                requests_done=self._requests_done,
                records=tuple(self._records),
                run_start=run_start,
                in_flight=tuple(self._in_flight),
                server=server,
                scrape_note=self._scrape_note,
                saved=tuple(self._saved),
                measured_kv=tuple(self._kv.items()),
                errors=tuple(self._errors),
                sweep_stops=tuple(self._sweep_stops.items()),
                done=done,
                cancelled=self._cancelled,
            )


if __name__ == "__main__":
    worker_main()
