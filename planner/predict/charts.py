"""Figures and tables of predictions: pure functions returning plotly figures, pandas frames and display text.

* :func:`curve_points`: every level of every predicted curve as :func:`planner.loadtest.charts.curve_row` points
  (so measured and predicted curves share one table shape and one figure), with the KV-cache columns added.
* :func:`performance_figure`: the Performance page's chart, :func:`planner.loadtest.charts.curves_figure` with one
  colour per scenario (the capacity pages' colours), each curve's knee starred and the level at which its KV cache
  fills marked "KV cache full".
* :func:`headline_metrics`: the answer above the chart: the knee (or the highest level), the output throughput,
  median TPOT and TTFT there, and where the KV cache fills.
* :func:`workload_caption`: the workload a curve was predicted for, in one line.
* :func:`points_table`: :func:`curve_points` for reading ("n/a" where a value is missing).
* :func:`overlay_errors`: measured against predicted for each measured run (Load Test), ``predicted / measured − 1``
  per metric (:func:`planner.predict.calibration.relative_errors`).
* :func:`fit_table`: a recalibration's error on each run, with the default coefficients and with the fitted ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.capacity.charts import COLORS
from planner.errors import InvalidParameterError
from planner.loadtest.charts import curve_row, curves_figure
from planner.loadtest.results import SavedRun
from planner.loadtest.settings import LoadSettings
from planner.predict.calibration import RunScore, relative_errors, scored_values
from planner.predict.curves import PredictedCurve

__all__ = [
    "POINTS_HEADLINE",
    "curve_points",
    "fit_table",
    "headline_metrics",
    "overlay_errors",
    "performance_figure",
    "points_table",
    "workload_caption",
]

_MS = 1000.0
#: Display names and units of :func:`points_table`'s columns.
_TABLE_COLUMNS: dict[str, str] = {
    "series": "scenario",
    "level": "level",
    "output_throughput": "output tok/s",
    "request_throughput": "req/s",
    "median_tpot_ms": "median TPOT (ms)",
    "p99_tpot_ms": "p99 TPOT (ms)",
    "median_ttft_ms": "median TTFT (ms)",
    "p99_ttft_ms": "p99 TTFT (ms)",
    "median_itl_ms": "median ITL (ms)",
    "mean_running": "mean running",
    "preemptions": "preemptions",
    "kv_saturated": "KV cache full",
}
#: (metric of :data:`~planner.predict.calibration.SCORED`, display name, scale to the display unit).
_ERROR_METRICS: tuple[tuple[str, str, float], ...] = (
    ("output_throughput", "output tok/s", 1.0),
    ("median_tpot", "median TPOT (ms)", _MS),
    ("median_ttft", "median TTFT (ms)", _MS),
    ("median_itl", "median ITL (ms)", _MS),
)


def _check(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> None:
    if len(labels) != len(curves):
        raise InvalidParameterError("labels", len(labels), f"one label per curve ({len(curves)})")


def curve_points(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> pd.DataFrame:
    """One row per level of each curve: :data:`planner.loadtest.charts.CURVE_COLUMNS` plus ``axis``,
    ``kv_saturated``, ``preemptions`` and ``mean_running`` (sequences per engine step).

    Args:
        curves: predicted curves (:func:`planner.predict.curves.predict_curve`).
        labels: one series name per curve (the scenario's label).

    Raises:
        InvalidParameterError: ``labels`` and ``curves`` differ in length.
    """
    _check(curves, labels)
    rows = []
    for curve, label in zip(curves, labels, strict=True):
        for point in curve.points:
            row = curve_row(label, point.level, point.metrics, predicted=True)
            row |= {
                "axis": curve.axis,
                "kv_saturated": point.kv_saturated,
                "preemptions": point.preemptions,
                "mean_running": point.mean_running,
            }
            rows.append(row)
    return pd.DataFrame(rows)


def performance_figure(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> go.Figure:
    """Output throughput, TPOT and TTFT against the load, a colour per scenario, knees and KV saturation marked.

    Args:
        curves: predicted curves of one axis.
        labels: one label per curve.

    Raises:
        InvalidParameterError: mismatched ``labels``, no curve, or curves of different axes.
    """
    _check(curves, labels)
    if not curves or len({c.axis for c in curves}) != 1:
        raise InvalidParameterError("curves", [c.axis for c in curves], "one or more curves of one axis")
    return curves_figure(
        curve_points(curves, labels),
        axis=curves[0].axis,
        knees={label: c.knee for c, label in zip(curves, labels, strict=True)},
        saturation={label: c.saturation_level for c, label in zip(curves, labels, strict=True)},
        dash_predicted=False,
        colors=COLORS,
    )


def _level(curve: PredictedCurve, level: float) -> str:
    text = f"{level:,.0f}" if float(level).is_integer() else f"{level:g}"
    return f"{text} req/s" if curve.axis == "rate" else f"{text} in flight"


def _ms(value_s: float | None) -> str:
    return "n/a" if value_s is None else f"{value_s * _MS:,.1f} ms"


#: A rate level is kept up with when the run's request throughput is at least this share of the offered rate (a run
#: of a finite number of requests ends a little after its last arrival, so throughput is a little under the rate even
#: when nothing queues).
KEPT_UP = 0.95


def headline_metrics(curve: PredictedCurve) -> tuple[tuple[str, str, str], ...]:
    """The answer of a curve, as ``(label, value, help)`` for five metrics.

    The point reported is the knee (concurrency sweeps; Kneedle, :func:`planner.loadtest.sweep.find_knee`) or, when
    the curve does not bend, its highest level; for a rate sweep, the highest rate kept up with (:data:`KEPT_UP`),
    else the lowest. Values are text: tokens/s with thousands
    separators, latencies in ms, "n/a" where missing.

    Raises:
        InvalidParameterError: a curve without points.
    """
    if not curve.points:
        raise InvalidParameterError("curve", "no points", "a curve with at least one level")
    at_knee = curve.knee is not None
    point = next(p for p in curve.points if p.level == curve.knee) if at_knee else curve.points[-1]
    where = f"at the knee, {_level(curve, point.level)}" if at_knee else f"at the top, {_level(curve, point.level)}"
    if curve.axis == "rate":
        kept = [p for p in curve.points if p.metrics.request_throughput >= KEPT_UP * p.level]
        point = kept[-1] if kept else curve.points[0]
        served = max(p.metrics.request_throughput for p in curve.points)
        where = (
            f"at {_level(curve, point.level)}, the highest rate served as it arrives"
            if kept
            else (f"at the lowest rate, {_level(curve, point.level)}, which is already more than it serves")
        )
        first = (
            "Sustained rate",
            _level(curve, point.level) if kept else f"< {_level(curve, point.level)}",
            f"The highest rate of the sweep whose requests were served as fast as they came (request throughput at "
            f"least {KEPT_UP:.0%} of the rate); past it the queue grows. At most {served:,.2f} req/s were served.",
        )
    elif at_knee:
        first = (
            "Knee",
            _level(curve, point.level),
            "Beyond the knee, doubling the requests in flight buys little throughput while latency keeps rising.",
        )
    else:
        first = (
            "Knee",
            "none",
            f"The curve does not bend up to {_level(curve, point.level)}: figures at the top level.",
        )
    m = point.metrics
    top = _level(curve, curve.points[-1].level)
    full = "never" if curve.saturation_level is None else _level(curve, curve.saturation_level)
    bound = "n/a" if curve.kv_max_concurrency is None else f"{curve.kv_max_concurrency:,.1f}"
    at = f"{point.level:,.4g} req/s" if curve.axis == "rate" else f"c={point.level:,.4g}"
    return (
        first,
        (f"Throughput @ {at}", f"{m.output_throughput:,.0f} tok/s", f"Output tokens/s {where}."),
        (
            f"Median TPOT @ {at}",
            _ms(m.tpot.median_s if m.tpot else None),
            f"Time per output token after the first, {where}.",
        ),
        (f"Median TTFT @ {at}", _ms(m.ttft.median_s if m.ttft else None), f"Time to first token, {where}."),
        (
            "KV cache full at",
            full,
            f"The first level whose requests filled the KV cache (then requests wait for blocks); sweep up to {top}. "
            f"The cache holds {bound} requests of this workload's length at once.",
        ),
    )


def workload_caption(settings: LoadSettings, axis: str, levels: Sequence[float]) -> str:
    """The workload of a sweep in one line, e.g. ``512 prompt tokens and 128 output tokens a request, 256 requests a
    level (at least 4 a slot), closed loop at 1, 2, 4, … 256 requests in flight``.

    Args:
        settings: the workload.
        axis: ``concurrency`` or ``rate``.
        levels: the sweep's levels (:func:`planner.predict.curves.curve_levels`).
    """
    lengths = f"{settings.input_len:,} prompt tokens and {settings.output_len:,} output tokens a request"
    if settings.range_ratio:
        lengths += f" (each drawn within ±{settings.range_ratio:.0%})"
    shown = [f"{v:,.4g}" for v in levels]
    if len(shown) > 4:
        shown = [*shown[:3], "…", shown[-1]]
    at = ", ".join(shown)
    if axis == "concurrency":
        load = f"{settings.num_prompts:,} requests a level (at least 4 a slot), closed loop at {at} in flight"
    else:
        arrivals = "Poisson" if settings.burstiness == 1 else f"gamma, burstiness {settings.burstiness:g}"
        load = f"{settings.num_prompts:,} requests a level, open loop at {at} req/s ({arrivals} arrivals)"
    return f"{lengths}; {load}."


def _cell(value: object) -> object:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return value


#: The columns of :func:`points_table` that answer first and fit a page's width (the rest fold away on the page).
POINTS_HEADLINE: tuple[str, ...] = (
    "scenario",
    "concurrency",
    "request rate (req/s)",
    "output tok/s",
    "median TPOT (ms)",
    "median TTFT (ms)",
    "KV cache full",
)


def points_table(points: pd.DataFrame) -> pd.DataFrame:
    """:func:`curve_points` for reading: named columns with units, numbers rounded, "n/a" for missing values."""
    if not len(points):
        return pd.DataFrame(columns=list(_TABLE_COLUMNS.values()))
    axis = points["axis"].iloc[0]
    frame = points[list(_TABLE_COLUMNS)].astype(object)
    frame["level"] = [f"{v:,.4g}" for v in points["level"]]
    frame = frame.rename(columns=_TABLE_COLUMNS)
    frame = frame.rename(columns={"level": "concurrency" if axis == "concurrency" else "request rate (req/s)"})
    return frame.map(_cell)


def overlay_errors(pairs: Sequence[tuple[SavedRun, SavedRun]]) -> pd.DataFrame:
    """Measured against predicted for each ``(measured, predicted)`` run: the value of each and the error.

    Args:
        pairs: a measured (or imported) run and the prediction of the same workload.

    Returns:
        One row per pair: ``run``, ``concurrency``, the ``error`` (``predicted / measured − 1``, as a signed
        percentage) of output tok/s, median TPOT, TTFT and ITL, then their ``measured`` and ``predicted`` values
        (tokens/s, ms); "n/a" where a value is missing.
    """
    rows = []
    for measured, predicted in pairs:
        values_m, values_p = scored_values(measured.metrics), scored_values(predicted.metrics)
        errors = relative_errors(values_p, values_m)
        row: dict[str, object] = {
            "run": measured.label,
            "concurrency": "n/a" if measured.max_concurrency is None else measured.max_concurrency,
        }
        for metric, name, _ in _ERROR_METRICS:  # the errors first: they are what the table is read for
            row[f"{name.split(' (')[0]} error"] = _error(errors[metric])
        for metric, name, scale in _ERROR_METRICS:
            m, p = values_m[metric], values_p[metric]
            row[f"{name} measured"] = "n/a" if m is None else f"{m * scale:,.1f}"
            row[f"{name} predicted"] = "n/a" if p is None else f"{p * scale:,.1f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _error(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def fit_table(before: Sequence[RunScore], after: Sequence[RunScore]) -> pd.DataFrame:
    """The error of each run (``predicted / measured − 1``) with the default and with the fitted coefficients.

    Args:
        before: :func:`planner.predict.calibration.score` with the default coefficients.
        after: the fit's scores (``Fit.scores``), the same runs in the same order.

    Returns:
        One row per run: ``run``, then ``<metric> default`` and ``<metric> fitted`` for output tok/s and median TPOT,
        TTFT and ITL; "n/a" where the run lacks the metric.

    Raises:
        InvalidParameterError: ``before`` and ``after`` are not the same runs.
    """
    if [s.label for s in before] != [s.label for s in after]:
        raise InvalidParameterError("after", len(after), f"scores of the same {len(before)} run(s) as before")
    rows = []
    for b, a in zip(before, after, strict=True):
        row: dict[str, object] = {"run": b.label}
        for metric, name, _ in _ERROR_METRICS:
            row[f"{name.split(' (')[0]} default"] = _error(b.errors.get(metric))
            row[f"{name.split(' (')[0]} fitted"] = _error(a.errors.get(metric))
        rows.append(row)
    return pd.DataFrame(rows)
