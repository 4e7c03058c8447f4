"""Concurrency sweeps: run a load at 1, 2, 4, … N requests in flight and find the knee of the throughput curve.

* :func:`sweep_levels` gives the doubling levels (N included even when it is not a power of two).
* :class:`SweepSpec` is base :class:`~planner.loadtest.settings.LoadSettings` plus the levels and how many requests
  each level sends; every level is bounded in requests AND in time (``level_duration_s``).
* The page and the CLI run a sweep's levels one after another as jobs of :class:`planner.loadtest.worker.JobQueue`
  (:func:`planner.loadtest.worker.plan_jobs` makes one job per :meth:`SweepSpec.level_spec`; closed loop at each
  level's concurrency, the base request rate still applying); :meth:`SweepPoint.of` takes each level's headline
  figures.
* :func:`saturation` says when a sweep should stop (throughput no longer growing while latency keeps rising), and
  :func:`refine_levels` which level to add between the last growing level and the first saturated one.
* :func:`find_knee` locates the knee with Kneedle (Satopää, Albrecht, Irwin and Raghavan, "Finding a 'Kneedle' in a
  Haystack: Detecting Knee Points in System Behavior", ICDCS 2011 Workshops, doi:10.1109/ICDCSW.2011.20).

Why a knee: past it, doubling the requests in flight buys little throughput while each request's latency keeps
growing (queueing), so the knee is the concurrency a deployment should be sized and load-balanced for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.errors import InvalidParameterError
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import MAX_LEVEL, LoadSettings

__all__ = [
    "MAX_LEVEL",
    "MIN_LATENCY_RISE",
    "MIN_THROUGHPUT_GAIN",
    "Saturation",
    "SweepPoint",
    "SweepSpec",
    "find_knee",
    "refine_levels",
    "saturation",
    "sweep_levels",
]

#: Least output-throughput gain over the best level so far that still counts as growing (10%). A level that doubles
#: the requests in flight should roughly double throughput while the server has room; under a tenth of that is
#: noise-level growth (one run of a level varies by a few percent, ``bench/data/h200_sweeps``' parity runs).
MIN_THROUGHPUT_GAIN = 0.10
#: Least rise of median TTFT or median E2E latency over the level before that counts as latency rising (25%).
MIN_LATENCY_RISE = 0.25


def sweep_levels(max_concurrency: int) -> tuple[int, ...]:
    """Doubling concurrency levels 1, 2, 4, … up to ``max_concurrency``, which is always the last level.

    Raises:
        InvalidParameterError: ``max_concurrency`` is not an integer in [1, :data:`MAX_LEVEL`].

    Example:
        >>> sweep_levels(12)
        (1, 2, 4, 8, 12)
    """
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or not 1 <= max_concurrency <= MAX_LEVEL
    ):
        raise InvalidParameterError("max_concurrency", max_concurrency, f"an integer in [1, {MAX_LEVEL}]")
    levels = [1 << k for k in range(max_concurrency.bit_length()) if 1 << k < max_concurrency]
    return (*levels, max_concurrency)


@dataclass(frozen=True)
class SweepSpec:
    """A concurrency sweep.

    Attributes:
        base: The load of every level (lengths, prompts, rate, warmups, SLOs, timeouts); its ``max_concurrency``
            and ``num_prompts`` are replaced per level.
        levels: Concurrency levels, strictly increasing, each in [1, :data:`MAX_LEVEL`].
        prompts_per_level: Requests of every level; None = ``max(base.num_prompts, rounds × level)``, so each
            slot serves at least ``rounds`` requests and the ramp-up/drain of a level stays a small share.
        rounds: Requests per concurrency slot when ``prompts_per_level`` is None (≥ 1; default 4).
        level_duration_s: Wall-time cap of each level, seconds (the smaller of it and ``base.duration_s``);
            a level cut by it is reported with ``stopped="duration"``.
        warmups_per_level: Unmeasured requests before each level; None = ``base.num_warmups``, at least 1, so
            the first level does not carry the client's first connection (measured here: a 350 ms p99 TTFT on
            the first level of an unwarmed sweep against a 30 ms server).

    Raises:
        InvalidParameterError: a value is outside what is accepted.

    Example:
        >>> SweepSpec(LoadSettings(num_prompts=10), (1, 2, 4)).num_prompts(4)
        16
    """

    base: LoadSettings
    levels: tuple[int, ...]
    prompts_per_level: int | None = None
    rounds: int = 4
    level_duration_s: float = 120.0
    warmups_per_level: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.base, LoadSettings):
            raise InvalidParameterError("base", self.base, "a LoadSettings")
        object.__setattr__(self, "levels", tuple(self.levels))
        ok = all(isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= MAX_LEVEL for c in self.levels)
        if not self.levels or not ok or list(self.levels) != sorted(set(self.levels)):
            raise InvalidParameterError("levels", self.levels, f"strictly increasing integers in [1, {MAX_LEVEL}]")
        for name, value in (("prompts_per_level", self.prompts_per_level), ("rounds", self.rounds)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidParameterError(name, value, "an integer ≥ 1")
        w = self.warmups_per_level
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 0):
            raise InvalidParameterError("warmups_per_level", w, "an integer ≥ 0, or None")
        if not (isinstance(self.level_duration_s, int | float) and 0 < self.level_duration_s < math.inf):
            raise InvalidParameterError("level_duration_s", self.level_duration_s, "a finite number of seconds > 0")

    @classmethod
    def doubling(cls, base: LoadSettings, max_concurrency: int, **kwargs: Any) -> SweepSpec:
        """A sweep over :func:`sweep_levels` of ``max_concurrency``."""
        return cls(base, sweep_levels(max_concurrency), **kwargs)

    def num_prompts(self, level: int) -> int:
        """Requests sent at ``level``."""
        if self.prompts_per_level is not None:
            return self.prompts_per_level
        return max(self.base.num_prompts, self.rounds * level)

    def level_spec(self, level: int) -> LoadSettings:
        """The :class:`LoadSettings` of one level."""
        cap = (
            self.level_duration_s if self.base.duration_s is None else min(self.base.duration_s, self.level_duration_s)
        )
        warmups = max(1, self.base.num_warmups) if self.warmups_per_level is None else self.warmups_per_level
        return replace(
            self.base, max_concurrency=level, num_prompts=self.num_prompts(level), duration_s=cap, num_warmups=warmups
        )


@dataclass(frozen=True)
class SweepPoint:
    """The headline figures of one level (from its :class:`~planner.loadtest.runner.LoadResult`). Seconds inside.

    Attributes:
        concurrency: Requests in flight allowed.
        completed: Successful requests.
        failed: Failed requests.
        request_throughput: Requests/s.
        output_throughput: Output tokens/s.
        ttft_median_s: Median TTFT; None without a sample.
        ttft_p99_s: 99th-percentile TTFT; None without a sample.
        tpot_median_s: Median TPOT (first token not counted); None without a sample.
        e2el_median_s: Median end-to-end latency; None without a sample.
        stopped: Why the level stopped early (``"duration"``, ``"cancelled"``), else None.
    """

    concurrency: int
    completed: int
    failed: int
    request_throughput: float
    output_throughput: float
    ttft_median_s: float | None
    ttft_p99_s: float | None
    tpot_median_s: float | None
    e2el_median_s: float | None
    stopped: str | None = None

    @classmethod
    def of(cls, level: int, result: LoadResult) -> SweepPoint:
        """The point of ``result`` run at concurrency ``level``."""
        m = result.metrics
        return cls(
            concurrency=level,
            completed=m.completed,
            failed=m.failed,
            request_throughput=m.request_throughput,
            output_throughput=m.output_throughput,
            ttft_median_s=None if m.ttft is None else m.ttft.median_s,
            ttft_p99_s=None if m.ttft is None else m.ttft.p99_s,
            tpot_median_s=None if m.tpot is None else m.tpot.median_s,
            e2el_median_s=None if m.e2el is None else m.e2el.median_s,
            stopped=result.stopped,
        )


@dataclass(frozen=True)
class Saturation:
    """Where and why a sweep stopped.

    Attributes:
        level: The first saturated level (the last one run).
        last_growing: The level before it, the last whose throughput still grew.
        reason: One line with the figures, e.g. ``"concurrency 16: output throughput +0.4% over the best so far
            (< 10%) while median TTFT rose +102% (≥ 25%)"``.
    """

    level: int
    last_growing: int
    reason: str


def _rise(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None or old <= 0 else new / old - 1


def saturation(
    points: Sequence[SweepPoint],
    *,
    min_gain: float = MIN_THROUGHPUT_GAIN,
    min_rise: float = MIN_LATENCY_RISE,
) -> Saturation | None:
    """The first level at which the server is saturated, from the levels run so far (in increasing order).

    The test, at each level i after the first, against the level before it (j) and the best throughput of the
    levels up to j: the server is saturated at i when

    * output throughput stopped growing: ``y_i < (1 + min_gain) · max(y_1 … y_j)`` (default: less than 10% more than
      the best so far, although the level doubles the requests in flight), **and**
    * latency keeps rising, i.e. requests queue: median TTFT or median E2E latency at i is at least ``(1 + min_rise)``
      times level j's (default 25%).

    Throughput alone would stop a sweep on one noisy level; latency alone rises at every level of a server that
    batches (each step serves more sequences). Together they mark where more concurrency only adds queueing, the
    point past which a sweep spends time (guidellm #588: a 7-hour sweep) without learning more. A level with no
    completed request (no throughput to speak of) is saturated outright.

    Args:
        points: The levels run so far, concurrency increasing.
        min_gain: Throughput gain that still counts as growing (fraction ≥ 0).
        min_rise: Latency rise that counts as rising (fraction ≥ 0).

    Returns:
        The :class:`Saturation` at the first level that passes the test; None when none does.

    Example:
        >>> p = lambda c, y, t: SweepPoint(c, 10, 0, y / 10, y, t, t, 0.02, t + 1)
        >>> saturation([p(1, 100, .1), p(2, 200, .1), p(4, 205, .3)]).level
        4
    """
    for i in range(1, len(points)):
        cur, prev = points[i], points[i - 1]
        if not cur.completed:
            return Saturation(cur.concurrency, prev.concurrency, f"concurrency {cur.concurrency}: no request completed")
        best = (
            max(p.output_throughput for p in points[:i] if p.completed) if any(p.completed for p in points[:i]) else 0
        )
        gain = cur.output_throughput / best - 1 if best > 0 else math.inf
        if gain >= min_gain:
            continue
        rises = {
            "median TTFT": _rise(cur.ttft_median_s, prev.ttft_median_s),
            "median E2E latency": _rise(cur.e2el_median_s, prev.e2el_median_s),
        }
        rising = [(name, r) for name, r in rises.items() if r is not None and r >= min_rise]
        if rising:
            name, r = max(rising, key=lambda x: x[1])
            return Saturation(
                cur.concurrency,
                prev.concurrency,
                f"concurrency {cur.concurrency}: output throughput {gain:+.1%} over the best so far "
                f"(< {min_gain:.0%}) while {name} rose {r:+.0%} over concurrency {prev.concurrency} (≥ {min_rise:.0%})",
            )
    return None


def refine_levels(last_growing: int, saturated: int, *, done: Sequence[int] = ()) -> tuple[int, ...]:
    """Levels to add between the last growing level and the first saturated one: their geometric midpoint (the
    levels double, so the midpoint on the log axis), rounded; none when no integer level lies between them or it
    was run already.

    Example:
        >>> refine_levels(8, 16)
        (11,)
    """
    mid = round(math.sqrt(last_growing * saturated))
    return (mid,) if last_growing < mid < saturated and mid not in done else ()


def find_knee(
    points: Sequence[tuple[int, float | None]], *, min_gain: float = 0.0, max_gain_after: float = 0.25
) -> int | None:
    """Concurrency at the knee of the concurrency → output-throughput curve (Kneedle, offline form); None if none.

    Method (Satopää et al. 2011, §III, for a concave increasing curve): with x = log₂(concurrency) (the levels
    double, so this spaces them evenly) and y = output tokens/s, normalise both to [0, 1] by their min and max,
    form the difference curve d = y_n − x_n, and take the point of largest d (ties: the lower concurrency). It
    is the knee when d there exceeds ``min_gain`` and it is neither the first nor the last level: a curve that
    never bends (each doubling adding as much throughput as the one before, or more) has d ≤ 0 and no knee.
    The paper's smoothing spline and online threshold are left out: a sweep has a handful of points.

    Confirmation (our addition, because a sweep's points are few and noisy — one slow level bends the
    normalised curve): the candidate is kept only if no later level still gains more than ``max_gain_after``
    throughput per doubling over it, i.e. ``(y_j / y_knee) ** (1 / log2(c_j / c_knee)) − 1 ≤ max_gain_after``
    for every later level j (default 25 % per doubling).

    Args:
        points: ``(concurrency, output tokens/s)`` per level; None throughputs (no data) are dropped.
        min_gain: Smallest difference-curve value that counts as a knee (≥ 0).
        max_gain_after: Largest throughput gain per doubling any later level may still show (fraction, ≥ 0).

    Returns:
        The concurrency of the knee, or None (fewer than 3 usable points, flat or never-bending curve).

    Example:
        >>> find_knee([(1, 100.0), (2, 200.0), (4, 400.0), (8, 700.0), (16, 800.0), (32, 820.0)])
        8
    """
    usable = sorted((c, float(y)) for c, y in points if y is not None and math.isfinite(y) and c >= 1)
    if len(usable) < 3:
        return None
    xs = [math.log2(c) for c, _ in usable]
    ys = [y for _, y in usable]
    x_span, y_span = xs[-1] - xs[0], max(ys) - min(ys)
    if x_span <= 0 or y_span <= 0:
        return None
    diff = [(y - min(ys)) / y_span - (x - xs[0]) / x_span for x, y in zip(xs, ys, strict=True)]
    best = max(range(len(diff)), key=lambda i: (diff[i], -i))
    if best in (0, len(diff) - 1) or diff[best] <= min_gain:
        return None
    c_knee, y_knee = usable[best]
    for c, y in usable[best + 1 :]:
        if y_knee <= 0 or (y / y_knee) ** (1 / math.log2(c / c_knee)) - 1 > max_gain_after:
            return None
    return c_knee
