"""The highest request rate (or concurrency) a live endpoint serves within percentile SLOs: a search over short,
bounded runs of the one load runner, as ``vllm bench sweep serve_sla`` searches a server.

``serve_sla`` (vllm-project/vllm ``vllm/benchmarks/sweep/serve_sla.py``, ``solve_sla``, before v0.24 folded it into
``serve_workload``) runs ``vllm bench serve`` first at the largest value (65,536 = an unbounded rate), then at the
smallest, then where a monotone interpolation of the SLO margin crosses zero, until the largest value that meets
the SLOs and the smallest that misses them are adjacent. This module does the same with a bounded number of steps:

1. **Ceiling**: a burst (every request at once; for a concurrency search, ``max_concurrency`` = the requests) —
   its request throughput is what the endpoint sustains at full load, ``R``; for a concurrency search, Little's law
   turns it into a concurrency, ``R × mean E2E`` (``serve_workload``'s ``_estimate_workload_value``). A rate above
   ``R`` cannot be served for long, so the search looks below it.
2. **Then**: ``R`` itself, next lower levels halving (before anything passes) or higher ones ×1.25 (before anything
   misses), then bisection between the highest level that met the SLOs and the lowest that missed them, until they
   are within ``tolerance`` of each other (concurrency: adjacent integers) or ``max_steps`` runs are done. When
   halving the load leaves the binding SLO where it was (within 10%), it is a latency floor that no lower load
   crosses, and the search stops there: nothing meets the SLOs.

Every step is one run of :func:`planner.loadtest.runner.run_load` (through :class:`planner.loadtest.worker.JobQueue`,
as the page and ``python -m planner bench`` run loads): the base settings' workload at the step's level, with
``max(num_prompts, ⌈rate · probe_s⌉)`` requests so it lasts about ``probe_s`` seconds, capped at
``step_duration_s`` of wall time. A step meets the SLOs when every SLO holds over its completed requests
(:mod:`planner.metrics.slo`), no request failed, and it was not cut short by its time cap (a server that cannot
finish the requests in time is not keeping up). When the lowest level tried misses, the search stops and says which
SLO binds and by how much; when even the burst meets them, the answer is unbounded within what was tried.

The steps are ordinary runs (saved runs, result files), so they can be overlaid with the prediction and used to
recalibrate it (:func:`planner.predict.overlay.recalibrate`, ``python -m planner calibrate``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from planner.errors import InvalidParameterError
from planner.fields import Choice, Number, Text, setting, validate
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import MAX_PROMPTS, LoadSettings
from planner.loadtest.worker import Job, JobOutcome, JobQueue
from planner.metrics.slo import Slo, SloCheck, binding, check, format_slos, margin, read_slos
from planner.serving.endpoints import Endpoint

__all__ = [
    "GROW",
    "SHRINK",
    "VARIABLES",
    "MaxRateResult",
    "MaxRateSpec",
    "MaxRateStep",
    "find_max_rate",
    "next_level",
]

#: What the search varies: the request rate (open loop) or the concurrency (closed loop).
VARIABLES: tuple[str, ...] = ("request_rate", "max_concurrency")
#: Factor of the next level while nothing has met the SLOs yet, and while nothing has missed them.
SHRINK, GROW = 0.5, 1.25
#: Levels below this fraction of the ceiling are not tried: nothing meets the SLOs.
_FLOOR = 1 / 64
#: When halving the load leaves the binding SLO at this share of its value or more, it is a floor: stop.
_FLAT = 0.9


@dataclass(frozen=True)
class MaxRateSpec:
    """A maximum-rate search: the workload (``base``) and the search's own parameters, each declared once with its
    range, ``bench`` flag and widget label (:mod:`planner.fields`).

    Attributes:
        base: the workload of every step (lengths, prompts, burstiness, timeouts, input sizing); its
            ``num_prompts`` is the fewest requests of a step; its ``request_rate`` and ``max_concurrency`` are
            replaced per step (a rate search is open loop: no concurrency cap, as ``serve_sla``'s rate runs).
        slos: the percentile SLOs every step is checked against.
        variable: ``request_rate`` or ``max_concurrency``.
        max_steps: most runs, the ceiling included (2–30).
        tolerance: stop when the levels that met and missed are within this fraction of each other.
        probe_s: seconds of arrivals a rate step aims at.
        step_duration_s: wall-time cap of each step, seconds (``bench``'s ``--duration``, the page's duration cap).

    Raises:
        InvalidParameterError: a value outside what is accepted.
    """

    base: LoadSettings
    slos: tuple[Slo, ...] = setting(
        (),
        Text(
            read=read_slos,
            write=format_slos,
            flags=("--slo",),
            nargs="append",
            metavar="METRIC_STAT_ms=LIMIT",
            label="SLOs (percentiles)",
            help="percentile SLOs METRIC_STAT_ms=LIMIT, comma separated or the flag repeated, e.g. ttft_p99_ms=500: "
            "METRIC ttft, tpot, itl or e2el; STAT p50, p90, p99 or mean",
        ),
    )
    variable: str = setting(
        "request_rate",
        Choice(
            choices=VARIABLES,
            names=(("request_rate", "request rate"), ("max_concurrency", "concurrency")),
            radio=True,
            accepted=" or ".join(VARIABLES),
            label="Search",
        ),
    )
    max_steps: int = setting(
        8,
        Number(
            low=2,
            high=30,
            integer=True,
            accepted="an integer from 2 to 30",
            flags=("--max-steps",),
            label="max runs",
            help="most runs of the search, the first burst included",
        ),
    )
    tolerance: float = setting(
        0.05,
        Number(
            low=0.001,
            high=0.5,
            entry=(0.01, 0.5),
            accepted="a fraction in [0.001, 0.5]",
            flags=("--search-tolerance",),
            label="tolerance",
            help="stop when the levels that met and missed are this close, a fraction",
        ),
    )
    probe_s: float = setting(
        20.0,
        Number(
            low=0,
            high=3600,
            low_open=True,
            entry=(1, 600),
            accepted="seconds in (0, 3600]",
            flags=("--probe-duration",),
            label="s per run",
            help="seconds of arrivals per run (--duration caps it)",
        ),
    )
    step_duration_s: float = setting(
        120.0, Number(low=0, high=3600, low_open=True, entry=(1, 3600), accepted="seconds in (0, 3600]")
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "slos", tuple(self.slos))
        validate(self)
        if not self.slos:
            raise InvalidParameterError("slo", (), "at least one SLO, e.g. ttft_p99_ms=1000")

    def level_settings(self, level: float) -> LoadSettings:
        """The settings of one step at ``level`` (inf: the ceiling's burst)."""
        n = self.base.num_prompts
        duration = self.step_duration_s
        if self.variable == "request_rate":
            if math.isfinite(level):
                n = max(n, math.ceil(level * self.probe_s))
            return replace(
                self.base,
                request_rate=level,
                max_concurrency=None,
                num_prompts=min(n, MAX_PROMPTS),
                duration_s=duration,
                mode="run",
                goodput_ms=(),
            )
        concurrency = n if math.isinf(level) else max(1, int(level))
        return replace(
            self.base,
            request_rate=math.inf,
            max_concurrency=concurrency,
            num_prompts=min(max(n, 4 * concurrency), MAX_PROMPTS),
            duration_s=duration,
            mode="run",
            goodput_ms=(),
        )


@dataclass(frozen=True)
class MaxRateStep:
    """One run of the search.

    Attributes:
        index: 1 for the ceiling, then 2, 3, …
        level: the request rate (req/s) or concurrency of the run; inf for a burst.
        label: the run's label.
        result: what the run measured.
        checks: each SLO against it.
        met: every SLO held, no request failed, and the run finished within its time cap.
        why: one line: what it met, or what it missed (the binding SLO, failures, the time cap).
    """

    index: int
    level: float
    label: str
    result: LoadResult
    checks: tuple[SloCheck, ...]
    met: bool
    why: str

    @property
    def margin(self) -> float:
        """The largest SLO ratio − 1 (≤ 0 when every SLO held)."""
        return margin(self.checks)

    @property
    def throughput(self) -> float:
        """Measured requests per second."""
        return self.result.metrics.request_throughput


@dataclass(frozen=True)
class MaxRateResult:
    """The answer of a search.

    Attributes:
        spec: the search.
        steps: every run, in order.
        best: the highest level that met the SLOs; None when none did.
        limit: the lowest level that missed them above ``best``; None when none did (unbounded within what was
            tried) or nothing met them.
        answer: one line: the level found (within which bracket), or that nothing met the SLOs and which binds.
        stopped: why the search ended: ``tolerance``, ``max_steps``, ``nothing meets``, ``unbounded``,
            ``cancelled`` or ``failed``.
    """

    spec: MaxRateSpec
    steps: tuple[MaxRateStep, ...]
    best: MaxRateStep | None
    limit: MaxRateStep | None
    answer: str
    stopped: str

    @property
    def value(self) -> float | None:
        """The highest level (req/s or concurrency) that met the SLOs; None when none did."""
        return None if self.best is None else self.best.level


def _unit(spec: MaxRateSpec) -> str:
    return "req/s" if spec.variable == "request_rate" else "concurrent requests"


def _fmt(level: float, spec: MaxRateSpec) -> str:
    if math.isinf(level):
        return "a burst" if spec.variable == "request_rate" else "every request at once"
    return f"{level:.3g} req/s" if spec.variable == "request_rate" else f"concurrency {int(level)}"


def _judge(spec: MaxRateSpec, result: LoadResult) -> tuple[tuple[SloCheck, ...], bool, str]:
    checks = check(result.metrics, spec.slos)
    m = result.metrics
    problems = [c.describe() for c in checks if not c.ok]
    if m.failed:
        problems.append(f"{m.failed} failed request(s)")
    if result.stopped == "duration":
        problems.append(
            f"cut by its {spec.step_duration_s:g} s cap with {result.not_sent + result.cancelled} unfinished"
        )
    if result.stopped == "cancelled":
        problems.append("cancelled")
    if problems:
        return checks, False, "misses: " + "; ".join(problems)
    return checks, True, "meets: " + "; ".join(c.describe() for c in checks)


def _flat(lower: MaxRateStep, higher: MaxRateStep) -> bool:
    """Halving the load did not bring the binding SLO down by :data:`_FLAT` or more: a latency floor, which no
    lower load will cross."""
    a, b = binding(lower.checks), binding(higher.checks)
    if a is None or b is None or not (math.isfinite(a.ratio) and math.isfinite(b.ratio)) or a.slo != b.slo:
        return False
    return a.ratio > 1.0 and a.ratio >= _FLAT * b.ratio


def next_level(
    spec: MaxRateSpec, steps: tuple[MaxRateStep, ...] | list[MaxRateStep]
) -> tuple[float | None, str | None]:
    """The level of the next step after ``steps`` (module docstring), or ``(None, why the search ends)``.

    Args:
        spec: the search.
        steps: the runs so far (the first is the ceiling).

    Returns:
        ``(level, None)`` or ``(None, stopped)`` with ``stopped`` one of :class:`MaxRateResult`'s.
    """
    if not steps:
        return math.inf, None
    if len(steps) >= spec.max_steps:
        return None, "max_steps"
    ceiling = steps[0]
    integer = spec.variable == "max_concurrency"
    passed = [s.level for s in steps if s.met]
    missed = [s.level for s in steps if not s.met]
    lo = max(passed, default=None)
    above = [level for level in missed if lo is None or level > lo]
    hi = min(above, default=None)
    if lo is not None and math.isinf(lo):
        return None, "unbounded"
    top = ceiling.throughput
    if integer:
        e2el = ceiling.result.metrics.e2el
        top = top * (e2el.mean_s if e2el is not None else 0.0)
    if not top > 0:
        return None, "failed"
    tried = {s.level for s in steps}
    if lo is None:  # nothing met the SLOs yet: the ceiling's level, then halving
        finite = sorted((s for s in steps if math.isfinite(s.level)), key=lambda s: s.level)
        level = top if not finite else finite[0].level * SHRINK
        if level < top * _FLOOR or (integer and finite and finite[0].level <= 1):
            return None, "nothing meets"
        if len(finite) >= 2 and _flat(finite[0], finite[1]):
            return None, "nothing meets"
    elif hi is None or math.isinf(hi):  # nothing missed above lo but the burst: grow
        level = lo * GROW
    else:
        if hi - lo <= spec.tolerance * hi or (integer and hi - lo <= 1):
            return None, "tolerance"
        level = (lo + hi) / 2
    if integer:
        level = float(max(1, round(level)))
        if level in tried:
            return None, "tolerance"
    return level, None


async def find_max_rate(
    endpoint: Endpoint,
    spec: MaxRateSpec,
    *,
    run_step: Callable[[Job], Awaitable[JobOutcome]] | None = None,
    on_step: Callable[[MaxRateStep], object] | None = None,
    emit: Callable[..., None] = lambda *_: None,
    secrets: Mapping[str, Any] | None = None,
    stop: asyncio.Event | None = None,
    started: datetime | None = None,
    tag: str = "",
) -> MaxRateResult:
    """Search the highest level of ``spec.variable`` that meets ``spec.slos`` on ``endpoint`` (module docstring).

    Args:
        endpoint: the endpoint.
        spec: the search.
        run_step: runs one job; default a :class:`~planner.loadtest.worker.JobQueue` of that job (``/metrics``
            scraped when the base settings say so), its messages going to ``emit``.
        on_step: called with each finished step.
        emit: the job queue's messages (the page's worker forwards them).
        secrets: where the endpoint's API key is.
        stop: set it to stop after the step in progress (which keeps what finished).
        started: the search's start, for the runs' dates.
        tag: appended to the runs' labels (e.g. the start time).

    Returns:
        The steps and the answer.
    """
    stop = stop or asyncio.Event()
    started = started or datetime.now()
    suffix = f" · {tag}" if tag else ""

    async def default_run(job: Job) -> JobOutcome:
        queue = JobQueue([job], started=started, scrape=spec.base.scrape_metrics, secrets=secrets, emit=emit, stop=stop)
        outcomes = await queue.run()
        return outcomes[0] if outcomes else JobOutcome(job, error="stopped before it started")

    runner = run_step or default_run
    steps: list[MaxRateStep] = []
    stopped = "max_steps"
    while True:
        level, why = next_level(spec, steps)
        if level is None:
            stopped = why or "max_steps"
            break
        if stop.is_set():
            stopped = "cancelled"
            break
        name = (
            "burst"
            if math.isinf(level)
            else (f"{level:.3g} req/s" if spec.variable == "request_rate" else f"c={int(level)}")
        )
        label = f"{endpoint.name} · max-rate {len(steps) + 1}: {name}{suffix}"
        outcome = await runner(
            Job(endpoint, spec.level_settings(level), label, sweep=f"{endpoint.name} max-rate{suffix}")
        )
        if outcome.result is None:
            stopped = "failed" if outcome.error else "cancelled"
            if outcome.error:
                emit("error", outcome.error)
            break
        checks, met, verdict = _judge(spec, outcome.result)
        step = MaxRateStep(len(steps) + 1, level, label, outcome.result, checks, met, verdict)
        steps.append(step)
        if on_step is not None:
            on_step(step)
        if outcome.result.stopped == "cancelled" or stop.is_set():
            stopped = "cancelled"
            break
    return _result(spec, tuple(steps), stopped)


def _result(spec: MaxRateSpec, steps: tuple[MaxRateStep, ...], stopped: str) -> MaxRateResult:
    passed = [s for s in steps if s.met]
    best = max(passed, key=lambda s: s.level, default=None)
    above = [s for s in steps if not s.met and (best is None or s.level > best.level)]
    limit = min(above, key=lambda s: s.level, default=None)
    unit = _unit(spec)
    if best is not None and math.isinf(best.level):
        answer = (
            f"The SLOs hold even for {_fmt(best.level, spec)} ({best.throughput:.3g} req/s measured): no limit found "
            "within what was tried."
        )
    elif best is not None:
        bracket = f", below {_fmt(limit.level, spec)} which missed them ({limit.why.removeprefix('misses: ')})"
        value = f"{best.level:.3g} {unit}" if spec.variable == "request_rate" else f"{int(best.level)} {unit}"
        answer = (
            f"Highest {spec.variable} meeting {', '.join(s.text for s in spec.slos)}: {value} "
            f"(measured {best.throughput:.3g} req/s){bracket if limit is not None else ''}; {len(steps)} runs."
        )
    elif steps:
        worst = min(steps, key=lambda s: s.margin)  # the step that came closest
        b = binding(worst.checks)
        binds = f": {b.slo.key} binds ({b.ratio:.2f}× its limit)" if b is not None and not b.ok else ""
        answer = (
            f"No {spec.variable} meets the SLOs: the closest was {_fmt(worst.level, spec)}, which {worst.why}{binds}."
        )
    else:
        answer = "No run finished: nothing measured."
    return MaxRateResult(spec, steps, best, limit, answer, stopped)
