"""Repeated runs: the mean and a 95% confidence interval of each headline metric over K repeats of one run.

A run's figures vary from one repeat to the next (which requests share an engine step, the client's scheduling, the
server's warm state); one run says nothing about how much. Repeating it K times (``num_runs``) and reporting
mean ± t₀.₉₇₅,K−1 · s / √K (Student's t interval for the mean of K independent runs, s the sample standard deviation)
says whether two configurations differ by more than their noise. Critical values: NIST/SEMATECH e-Handbook of
Statistical Methods, §1.3.6.7.2 "Critical Values of the Student's t Distribution" (two-sided 95%, i.e. the 0.975
quantile).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from planner.errors import InvalidParameterError
from planner.loadtest.results import SavedRun

__all__ = ["HEADLINE", "T_975", "Interval", "confidence_interval", "repeat_groups", "repeat_summary"]

#: t₀.₉₇₅ for 1–30 degrees of freedom (NIST/SEMATECH e-Handbook §1.3.6.7.2); beyond 30, 1.96 (the normal's).
T_975: tuple[float, ...] = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def _ms(name: str, stat: str) -> Callable[[SavedRun], float | None]:
    def get(run: SavedRun) -> float | None:
        dist = getattr(run.metrics, name)
        value = None if dist is None else getattr(dist, f"{stat}_s")
        return None if value is None else value * 1000.0

    return get


#: Headline metrics (vLLM's key names; latencies in ms, hit rate 0–1) and how to read each from a run.
HEADLINE: dict[str, Callable[[SavedRun], float | None]] = {
    "request_throughput": lambda r: r.metrics.request_throughput if r.metrics.completed else None,
    "output_throughput": lambda r: r.metrics.output_throughput if r.metrics.completed else None,
    "median_ttft_ms": _ms("ttft", "median"),
    "p99_ttft_ms": _ms("ttft", "p99"),
    "median_tpot_ms": _ms("tpot", "median"),
    "median_itl_ms": _ms("itl", "median"),
    "median_e2el_ms": _ms("e2el", "median"),
    "prefix_cache_hit_rate": lambda r: r.prefix_cache_hit_rate,
}


@dataclass(frozen=True)
class Interval:
    """Mean and two-sided 95% confidence interval of one metric over K runs.

    Attributes:
        n: Runs with a value.
        mean: Their mean.
        std: Sample standard deviation (K − 1 in the denominator); None for one run.
        low / high: The interval's bounds, mean ∓ t · std / √n; None for one run.
    """

    n: int
    mean: float
    std: float | None
    low: float | None
    high: float | None

    @property
    def half_width_frac(self) -> float | None:
        """Half the interval over the mean (e.g. 0.03 for ±3%); None for one run or a zero mean."""
        if self.high is None or self.low is None or self.mean == 0:
            return None
        return (self.high - self.low) / 2 / abs(self.mean)


def confidence_interval(values: Sequence[float]) -> Interval:
    """The mean and 95% Student's t interval of ``values`` (see the module docstring).

    Raises:
        InvalidParameterError: no value, or a value that is not finite.

    Example:
        >>> i = confidence_interval([10.0, 12.0, 11.0])
        >>> round(i.low, 3), round(i.high, 3)
        (8.516, 13.484)
    """
    if not values or not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
        raise InvalidParameterError("values", values, "one or more finite numbers")
    n, mean = len(values), statistics.fmean(values)
    if n == 1:
        return Interval(1, mean, None, None, None)
    std = statistics.stdev(values)
    t = T_975[n - 2] if n - 1 <= len(T_975) else 1.96
    half = t * std / math.sqrt(n)
    return Interval(n, mean, std, mean - half, mean + half)


def repeat_groups(runs: Sequence[SavedRun]) -> dict[str, list[SavedRun]]:
    """Runs by their ``repeat`` id, in order; only groups of two or more."""
    groups: dict[str, list[SavedRun]] = {}
    for run in runs:
        if run.repeat is not None:
            groups.setdefault(run.repeat, []).append(run)
    return {k: v for k, v in groups.items() if len(v) >= 2}


def repeat_summary(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """One row per group of repeats and headline metric: ``group``, ``metric``, ``runs``, ``mean``, ``std``,
    ``ci95_low``, ``ci95_high``, ``ci95_half_width_pct`` (± % of the mean). Metrics a run lacks are left out of its
    group's figure; a metric no run has gives no row. Empty when no group has two runs."""
    rows = []
    for group, members in repeat_groups(runs).items():
        for metric, get in HEADLINE.items():
            values = [v for v in (get(r) for r in members) if v is not None and math.isfinite(v)]
            if not values:
                continue
            ci = confidence_interval(values)
            rows.append(
                {
                    "group": group,
                    "metric": metric,
                    "runs": ci.n,
                    "mean": ci.mean,
                    "std": ci.std,
                    "ci95_low": ci.low,
                    "ci95_high": ci.high,
                    "ci95_half_width_pct": None if ci.half_width_frac is None else 100 * ci.half_width_frac,
                }
            )
    columns = ["group", "metric", "runs", "mean", "std", "ci95_low", "ci95_high", "ci95_half_width_pct"]
    return pd.DataFrame(rows, columns=columns)
