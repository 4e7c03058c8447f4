"""Figures and tables of predictions: pure functions returning plotly figures, pandas frames and display text.

* :func:`curve_points`: every level of every predicted curve as :func:`planner.loadtest.charts.curve_row` points
  (so measured and predicted curves share one table shape and one figure), with the KV-cache columns added and each
  level's error band (:mod:`planner.predict.band`) as the band columns.
* :func:`performance_figure`: the Performance page's chart, :func:`planner.loadtest.charts.curves_figure` with one
  colour per scenario (the capacity pages' colours), the error band shaded around each curve, each curve's knee
  starred and the level at which its KV cache fills marked "KV cache full".
* :func:`headline_metrics`: the answer above the chart: the knee (or the highest level), the output throughput,
  median TPOT and TTFT there with their bands, and where the KV cache fills.
* :func:`band_caption`: what the shaded bands of curves are, in one line.
* :func:`workload_caption`: the workload a curve was predicted for, in one line.
* :func:`points_table`: :func:`curve_points` for reading ("n/a" where a value is missing).
* :func:`overlay_errors`: measured against predicted for each measured run (Load Test), ``predicted / measured − 1``
  per metric (:func:`planner.predict.calibration.relative_errors`) and whether the measurement lies inside the
  prediction's band; :func:`overlay_curves` the sweeps with their predictions and bands, :func:`overlay_caption`
  what the bands are and how many measurements they hold.
* :func:`fit_table`: a recalibration's error on each run, with the default coefficients and with the fitted ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.errors import InvalidParameterError
from planner.loadtest.charts import curve_row, curves_figure, sweep_curves
from planner.loadtest.results import SavedRun
from planner.loadtest.settings import LoadSettings
from planner.predict.band import PredictionBand, band_note, range_text, with_band
from planner.predict.calibration import RunScore, relative_errors, scored_values
from planner.predict.curves import CurvePoint, PredictedCurve
from planner.predict.overlay import Overlay
from planner.units import MS_PER_S

__all__ = [
    "OVERLAY_HEADLINE",
    "POINTS_HEADLINE",
    "band_caption",
    "curve_points",
    "fit_table",
    "headline_metrics",
    "overlay_caption",
    "overlay_curves",
    "overlay_errors",
    "performance_figure",
    "points_table",
    "workload_caption",
]

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
    ("median_tpot", "median TPOT (ms)", MS_PER_S),
    ("median_ttft", "median TTFT (ms)", MS_PER_S),
    ("median_itl", "median ITL (ms)", MS_PER_S),
)


#: (band metric of :data:`planner.predict.band.BAND_METRICS`, the curve column it shades, scale to that column's unit,
#: decimals shown: those of :meth:`planner.predict.band.PredictionBand.text`).
_BAND_COLUMNS: tuple[tuple[str, str, float, int], ...] = (
    ("output_throughput", "output_throughput", 1.0, 0),
    ("median_tpot", "median_tpot_ms", MS_PER_S, 1),
    ("median_ttft", "median_ttft_ms", MS_PER_S, 1),
)


def _band_columns(band: PredictionBand | None) -> dict[str, tuple[float, float]]:
    """A prediction's band as :func:`planner.loadtest.charts.curve_row`'s ``band`` (tokens/s and ms)."""
    out = {}
    for metric, column, scale, _ in _BAND_COLUMNS:
        r = band.get(metric) if band is not None else None
        if r is not None:
            out[column] = (r[0] * scale, r[1] * scale)
    return out


def _check(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> None:
    if len(labels) != len(curves):
        raise InvalidParameterError("labels", len(labels), f"one label per curve ({len(curves)})")


def curve_points(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> pd.DataFrame:
    """One row per level of each curve: :data:`planner.loadtest.charts.CURVE_COLUMNS` (the ``*_low`` and ``*_high``
    columns: the level's error band, None without one) plus ``axis``, ``kv_saturated``, ``preemptions`` and
    ``mean_running`` (sequences per engine step).

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
            row = curve_row(label, point.level, point.metrics, predicted=True, band=_band_columns(point.band))
            row |= {
                "axis": curve.axis,
                "kv_saturated": point.kv_saturated,
                "preemptions": point.preemptions,
                "mean_running": point.mean_running,
            }
            rows.append(row)
    return pd.DataFrame(rows)


def performance_figure(curves: Sequence[PredictedCurve], labels: Sequence[str]) -> go.Figure:
    """Output throughput, TPOT and TTFT against the load, a colour per scenario, each curve's error band shaded
    around it (:func:`band_caption` says what it is), knees and KV saturation marked.

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
    )


def _level(curve: PredictedCurve, level: float) -> str:
    text = f"{level:,.0f}" if float(level).is_integer() else f"{level:g}"
    return f"{text} req/s" if curve.axis == "rate" else f"{text} in flight"


#: A rate level is kept up with when the run's request throughput is at least this share of what a run that never
#: queues would measure (:func:`kept_up`).
KEPT_UP = 0.95


def kept_up(point: CurvePoint) -> bool:
    """Whether a rate level's requests were served as fast as they came. A finite run of ``n`` requests at ``r``
    req/s that never queues still ends one request's latency after its last arrival, so it measures
    ``n / (n / r + E2E)`` req/s, well under ``r`` when ``n`` is small; the level is kept up with when the measured
    throughput is at least :data:`KEPT_UP` of that (median E2E)."""
    m = point.metrics
    if m.completed == 0 or point.level <= 0:
        return False
    e2e = m.e2el.median_s if m.e2el is not None and m.e2el.median_s is not None else 0.0
    ideal = m.completed / (m.completed / point.level + e2e)
    return m.request_throughput >= KEPT_UP * ideal


def headline_metrics(curve: PredictedCurve) -> tuple[tuple[str, str, str, str | None], ...]:
    """The answer of a curve, as ``(label, value, help, band)`` for five metrics.

    The point reported is the knee (concurrency sweeps; Kneedle, :func:`planner.loadtest.sweep.find_knee`) or, when
    the curve does not bend, its highest level; for a rate sweep, the highest rate kept up with (:data:`KEPT_UP`),
    else the lowest. Values are text: tokens/s with thousands separators, latencies in ms, "n/a" where missing.
    ``band`` is the point's error band in the value's unit (``"band 8.8–12.7 ms"``) for throughput, TPOT and TTFT;
    None for the others and where the point has none.

    Raises:
        InvalidParameterError: a curve without points.
    """
    if not curve.points:
        raise InvalidParameterError("curve", "no points", "a curve with at least one level")
    at_knee = curve.knee is not None
    point = next(p for p in curve.points if p.level == curve.knee) if at_knee else curve.points[-1]
    where = f"at the knee, {_level(curve, point.level)}" if at_knee else f"at the top, {_level(curve, point.level)}"
    if curve.axis == "rate":
        kept = [p for p in curve.points if kept_up(p)]
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
            f"least {KEPT_UP:.0%} of what a run of that many requests that never queues measures: the rate, less the "
            f"last request's own latency); past it the queue grows. At most {served:,.2f} req/s were served.",
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

    def band(metric: str, unit: str) -> str | None:
        text = point.band.text(metric) if point.band is not None else None
        return None if text is None else f"band {text} {unit}"

    top = _level(curve, curve.points[-1].level)
    full = "never" if curve.saturation_level is None else _level(curve, curve.saturation_level)
    bound = display.number(curve.kv_max_concurrency, 1)
    at = f"{point.level:,.4g} req/s" if curve.axis == "rate" else f"c={point.level:,.4g}"
    return (
        (*first, None),
        (
            f"Throughput @ {at}",
            display.rate(m.output_throughput, "tok/s"),
            f"Output tokens/s {where}.",
            band("output_throughput", "tok/s"),
        ),
        (
            f"Median TPOT @ {at}",
            display.ms(m.tpot.median_s if m.tpot else None),
            f"Time per output token after the first, {where}.",
            band("median_tpot", "ms"),
        ),
        (
            f"Median TTFT @ {at}",
            display.ms(m.ttft.median_s if m.ttft else None),
            f"Time to first token, {where}.",
            band("median_ttft", "ms"),
        ),
        (
            "KV cache full at",
            full,
            f"The first level whose requests filled the KV cache (then requests wait for blocks); sweep up to {top}. "
            f"The cache holds {bound} requests of this workload's length at once.",
            None,
        ),
    )


def band_caption(curves: Sequence[PredictedCurve]) -> str | None:
    """What the band shaded around each curve (and under its headline figures, in parentheses in its table) is, in one
    line; None when no level has one.

    Example: ``"Shaded around each curve, "band" under the figures and (low–high) in the table: the predictor's error
    band for dense models by load, from its errors on models it was not fitted to; it held 82% of their
    measurements."``
    """
    note = band_note(p.band for c in curves for p in c.points)
    if note is None:
        return None
    return f'Shaded around each curve, "band" under the figures and (low–high) in the table: {note}.'


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
    """:func:`curve_points` for reading: named columns with units, numbers rounded, "n/a" for missing values; a
    shaded metric's value followed by its band as the headline writes it, ``"34.51 (27.8–38.8)"`` (the Budget page's
    outlook reads the same; the CSV keeps ``*_low`` and ``*_high`` as numbers)."""
    if not len(points):
        return pd.DataFrame(columns=list(_TABLE_COLUMNS.values()))
    axis = points["axis"].iloc[0]
    frame = points[list(_TABLE_COLUMNS)].astype(object).map(display.cell)
    for _, column, _, digits in _BAND_COLUMNS:
        ends = zip(frame[column], points[f"{column}_low"], points[f"{column}_high"], strict=True)
        frame[column] = [with_band(value, range_text(lo, hi, digits=digits)) for value, lo, hi in ends]
    frame["level"] = [f"{v:,.4g}" for v in points["level"]]
    frame = frame.rename(columns=_TABLE_COLUMNS)
    return frame.rename(columns={"level": "concurrency" if axis == "concurrency" else "request rate (req/s)"})


#: The columns of :func:`overlay_errors` that answer first and fit a page's width (the rest fold away on the page).
OVERLAY_HEADLINE: tuple[str, ...] = (
    "run",
    "concurrency",
    *(f"{name.split(' (')[0]} error" for _, name, _ in _ERROR_METRICS),
    "in band",
)


def _inside(band: PredictionBand | None, metric: str, measured: float | None) -> str:
    """Whether a measurement lies inside the prediction's band: "yes", "no, above", "no, below", or "n/a"."""
    inside = band.contains(metric, measured) if band is not None else None
    if band is None or measured is None or inside is None:
        return display.NA
    if inside:
        return "yes"
    _, high = band.get(metric) or (0.0, 0.0)
    return "no, above" if measured > high else "no, below"


def _band_counts(band: PredictionBand | None, measured: SavedRun) -> tuple[int, int]:
    """``(inside, known)``: how many of a run's measurements (output tok/s, median TPOT, TTFT, ITL) lie inside its
    band, of those that have both a measurement and a band."""
    values = scored_values(measured.metrics)
    said = [_inside(band, metric, values[metric]) for metric, _, _ in _ERROR_METRICS]
    known = [text for text in said if text != display.NA]
    return known.count("yes"), len(known)


def overlay_errors(
    pairs: Sequence[tuple[SavedRun, SavedRun]], bands: Sequence[PredictionBand | None] = ()
) -> pd.DataFrame:
    """Measured against predicted for each ``(measured, predicted)`` run: the value of each, the error, and whether
    the measurement lies inside the prediction's error band.

    Args:
        pairs: a measured (or imported) run and the prediction of the same workload.
        bands: the error band of each prediction, in the order of ``pairs`` (:attr:`Overlay.bands
            <planner.predict.overlay.Overlay.bands>`); missing or None = "n/a".

    Returns:
        One row per pair: ``run``, ``concurrency``, the ``error`` (``predicted / measured − 1``, as a signed
        percentage) of output tok/s, median TPOT, TTFT and ITL, how many measurements are ``in band`` ("3 of 4"),
        whether each is (``<metric> in band``: "yes", "no, above", "no, below"), then their ``measured`` and
        ``predicted`` values and the ``band`` (tokens/s, ms); "n/a" where a value is missing. :data:`OVERLAY_HEADLINE`
        are the columns that answer first.
    """
    rows = []
    for i, (measured, predicted) in enumerate(pairs):
        band = bands[i] if i < len(bands) else None
        values_m, values_p = scored_values(measured.metrics), scored_values(predicted.metrics)
        errors = relative_errors(values_p, values_m)
        row: dict[str, object] = {
            "run": measured.label,
            "concurrency": display.NA if measured.max_concurrency is None else measured.max_concurrency,
        }
        for metric, name, _ in _ERROR_METRICS:  # the errors first: they are what the table is read for
            row[f"{name.split(' (')[0]} error"] = _error(errors[metric])
        # one short cell for the headline, narrow enough to sit beside the errors; the columns after it say which
        inside, known = _band_counts(band, measured)
        row["in band"] = f"{inside} of {known}" if known else display.NA
        for metric, name, _ in _ERROR_METRICS:
            row[f"{name.split(' (')[0]} in band"] = _inside(band, metric, values_m[metric])
        for metric, name, scale in _ERROR_METRICS:
            m, p = values_m[metric], values_p[metric]
            row[f"{name} measured"] = display.NA if m is None else display.number(m * scale, 1)
            row[f"{name} predicted"] = display.NA if p is None else display.number(p * scale, 1)
            row[f"{name} band"] = (band.text(metric) if band is not None else None) or display.NA
        rows.append(row)
    return pd.DataFrame(rows)


def overlay_curves(runs: Sequence[SavedRun], overlay: Overlay | None = None) -> pd.DataFrame:
    """The sweeps among ``runs`` as :func:`planner.loadtest.charts.sweep_curves` points, each predicted level of
    ``overlay`` with its error band (so :func:`planner.loadtest.charts.curves_figure` shades it)."""
    bands = {}
    if overlay is not None:
        bands = {p.label: _band_columns(b) for (_, p), b in zip(overlay.pairs, overlay.bands, strict=False)}
    return sweep_curves(runs, bands)


def overlay_caption(overlay: Overlay) -> str | None:
    """What the predictions' bands are and how many of the measurements (output tok/s, median TPOT, TTFT and ITL)
    they hold, in one line; None when no prediction has a band.

    Example: ``"Shaded around each predicted sweep, and "in band": the predictor's error band for dense models by
    load, from its errors on models it was not fitted to; it held 82% of their measurements. Here: 10 of 12 measured
    values inside."``
    """
    note = band_note(overlay.bands)
    if note is None:
        return None
    counts = [_band_counts(band, measured) for (measured, _), band in zip(overlay.pairs, overlay.bands, strict=False)]
    inside, known = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return (
        f'Shaded around each predicted sweep, and "in band": {note}. Here: {inside} of {known} measured values inside.'
    )


def _error(value: float | None) -> str:
    return display.percent(value, signed=True)


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
