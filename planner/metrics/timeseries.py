"""Per-window time series of a load run, for live and final charts (pure functions over request records).

A record's completion time is ``t_sent + end_s`` (absolute ``time.perf_counter()``; ``last_token_s`` when the
record has no end; see :class:`planner.serving.streaming.RequestRecord`). Window ``i`` covers ``[start + i·w, start +
(i + 1)·w)`` seconds; every request is attributed to the window in which it COMPLETED, with all of its output
tokens (so a long request adds its tokens at its end; short windows under long requests look bursty — choose
``window_s`` several times the typical E2E latency for a smooth throughput line).

Per window, with the definitions of :mod:`planner.metrics.latency` / :mod:`planner.metrics.benchmark` (TTFT = first
token-bearing chunk − sent, E2E = last token-bearing chunk − sent; a completed request is ok with a first and a
last token; failed requests add no token and no latency sample, as in ``vllm bench serve``):

* ``completed`` / ``failed`` requests; ``output_tokens`` = Σ output tokens of the completed ones (server usage, else
  the chunk count);
* ``requests_per_s`` = completed / span, ``output_tokens_per_s`` = output_tokens / span, where span = the window
  length, or for the last window the part up to ``end_s`` when given;
* TTFT p50/p90/p99 and E2E p50/p99 in milliseconds (linear-interpolation percentiles, :func:`planner.metrics.latency.
  percentile`) with their sample counts; None where the window has no sample (never 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from planner.errors import InvalidParameterError
from planner.metrics.latency import percentile
from planner.serving.streaming import RequestRecord
from planner.units import MS_PER_S

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["WindowStats", "completion_time", "default_window_s", "timeseries", "timeseries_frame"]

#: Target number of windows over a run, and the shortest window, seconds.
TARGET_WINDOWS = 30
MIN_WINDOW_S = 0.5


@dataclass(frozen=True)
class WindowStats:
    """What completed in one window of a run.

    Attributes:
        start_s: Window start, seconds after the run start.
        end_s: Window end, seconds after the run start.
        span_s: Seconds the rates are divided by (``end_s − start_s``, or less for a last window cut by the run
            end).
        completed: Requests that completed successfully in the window.
        failed: Requests that failed in the window.
        output_tokens: Output tokens of the completed requests.
        requests_per_s: ``completed / span_s``.
        output_tokens_per_s: ``output_tokens / span_s``.
        ttft_samples: TTFT samples (= completed).
        ttft_p50_ms: Median TTFT, ms; None without a sample.
        ttft_p90_ms: 90th-percentile TTFT, ms; None without a sample.
        ttft_p99_ms: 99th-percentile TTFT, ms; None without a sample.
        e2e_samples: E2E samples (= completed).
        e2e_p50_ms: Median E2E latency, ms; None without a sample.
        e2e_p99_ms: 99th-percentile E2E latency, ms; None without a sample.
    """

    start_s: float
    end_s: float
    span_s: float
    completed: int
    failed: int
    output_tokens: int
    requests_per_s: float
    output_tokens_per_s: float
    ttft_samples: int
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    ttft_p99_ms: float | None
    e2e_samples: int
    e2e_p50_ms: float | None
    e2e_p99_ms: float | None


def default_window_s(duration_s: float) -> float:
    """About :data:`TARGET_WINDOWS` windows over ``duration_s`` seconds, never shorter than :data:`MIN_WINDOW_S`.

    Example:
        >>> default_window_s(60.0), default_window_s(3.0)
        (2.0, 0.5)
    """
    if not (isinstance(duration_s, int | float) and duration_s >= 0 and math.isfinite(duration_s)):
        raise InvalidParameterError("duration_s", duration_s, "a finite number of seconds ≥ 0")
    return max(MIN_WINDOW_S, duration_s / TARGET_WINDOWS)


def completion_time(record: RequestRecord) -> float | None:
    """Absolute completion time of a record: ``t_sent + end_s`` (else ``+ last_token_s``); None when neither."""
    end = record.end_s if record.end_s is not None else record.last_token_s
    return None if end is None else record.t_sent + end


def _pct_ms(values: list[float], q: float) -> float | None:
    return percentile(values, q) * MS_PER_S if values else None


def timeseries(
    records: Sequence[RequestRecord],
    start_s: float,
    *,
    window_s: float | None = None,
    end_s: float | None = None,
) -> tuple[WindowStats, ...]:
    """Bucket ``records`` by completion time into windows from ``start_s`` (formulas in the module docstring).

    Args:
        records: Finished records (e.g. ``LoadSnapshot.records`` during a run, ``LoadResult.records`` after).
        start_s: Absolute ``time.perf_counter()`` of the run start (``LoadResult.start_s``).
        window_s: Window length, seconds (> 0); default :func:`default_window_s` of the time covered.
        end_s: Absolute end of the run (``start_s + LoadResult.duration_s``); the windows reach it, and the last
            window's rates use only the part before it. Default: the last completion.

    Returns:
        One :class:`WindowStats` per window, in time order, empty windows included; ``()`` when there is no
        record and no ``end_s``. A record completing before ``start_s`` counts in the first window.

    Raises:
        InvalidParameterError: ``window_s`` ≤ 0 or not finite, or ``end_s`` before ``start_s``.
    """
    if window_s is not None and not (isinstance(window_s, int | float) and window_s > 0 and math.isfinite(window_s)):
        raise InvalidParameterError("window_s", window_s, "a finite number of seconds > 0")
    if end_s is not None and end_s < start_s:
        raise InvalidParameterError("end_s", end_s, f"an absolute time ≥ start_s ({start_s})")
    done = [(t, r) for r in records if (t := completion_time(r)) is not None]
    last = max((t for t, _ in done), default=None)
    if end_s is not None:
        horizon = end_s - start_s
    elif last is not None:
        horizon = max(0.0, last - start_s)
    else:
        return ()
    width = window_s if window_s is not None else default_window_s(horizon)
    n = max(1, math.ceil(horizon / width))
    if last is not None and last - start_s >= n * width:  # a completion exactly on the horizon
        n = math.floor((last - start_s) / width) + 1
    buckets: list[list[RequestRecord]] = [[] for _ in range(n)]
    for t, record in done:
        buckets[min(n - 1, max(0, math.floor((t - start_s) / width)))].append(record)
    out = []
    for i, bucket in enumerate(buckets):
        lo, hi = i * width, (i + 1) * width
        span = min(hi, horizon) - lo if end_s is not None and i == n - 1 and horizon > lo else width
        ok = [r for r in bucket if r.ok and r.first_token_s is not None and r.last_token_s is not None]
        tokens = sum(r.output_tokens if r.output_tokens is not None else len(r.chunks) for r in ok)
        ttfts = sorted(r.first_token_s for r in ok)  # type: ignore[misc]
        e2es = sorted(r.last_token_s for r in ok)  # type: ignore[misc]
        out.append(
            WindowStats(
                start_s=lo,
                end_s=hi,
                span_s=span,
                completed=len(ok),
                failed=len(bucket) - len(ok),
                output_tokens=tokens,
                requests_per_s=len(ok) / span,
                output_tokens_per_s=tokens / span,
                ttft_samples=len(ttfts),
                ttft_p50_ms=_pct_ms(ttfts, 50),
                ttft_p90_ms=_pct_ms(ttfts, 90),
                ttft_p99_ms=_pct_ms(ttfts, 99),
                e2e_samples=len(e2es),
                e2e_p50_ms=_pct_ms(e2es, 50),
                e2e_p99_ms=_pct_ms(e2es, 99),
            )
        )
    return tuple(out)


def timeseries_frame(windows: Sequence[WindowStats]) -> pd.DataFrame:
    """The windows as a pandas DataFrame (one row per window, the :class:`WindowStats` fields as columns,
    None as NaN), ready for a line chart indexed by ``end_s``."""
    import pandas as pd

    columns = list(WindowStats.__dataclass_fields__)
    return pd.DataFrame([asdict(w) for w in windows], columns=columns).astype(
        {c: "float64" for c in columns if c.endswith("_ms")}
    )
