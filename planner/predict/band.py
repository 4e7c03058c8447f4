"""How far a prediction can be trusted: an error band from the predictor's own leave-one-model-out errors.

``bench/prediction_accuracy.py`` predicts every measured run (vLLM 0.24.0 on one H200, ``bench/data/h200_*``) with
default coefficients refitted without the run's model, and keeps ``measured / predicted`` per run and metric. Those
ratios, grouped by **regime** (metric × architecture class × load band), are the band: for a new prediction ``v``
of a metric in a regime, the band is ``[v · q_low, v · q_high]``, an 85% prediction interval for a model not yet
seen (:meth:`ErrorBand.from_samples`: each model's errors share a bias, so the spread between models counts as well as
the spread of runs); a regime seen on fewer than ``MIN_MODELS`` models or ``MIN_SAMPLES`` runs borrows the next coarser
one: metric × class, then metric × load, then the metric alone. The prediction itself always lies inside its band.
``bench/prediction_accuracy.py`` checks the band the same way it checks the predictor: rebuilt without each model
and tested on that model's runs (the share of measured values inside it, and its median width).

* **Architecture classes** (:func:`architecture_class`): ``mla-moe`` (multi-head latent attention with routed
  experts, DeepSeek-V2/V3), ``mla``, ``moe`` (routed experts), ``fp8-dense`` (dense with FP8 weights), ``sliding``
  (sliding-window layers), ``dense``. A class no measurement covers borrows the coarser regimes above.
* **Load bands** (:func:`load_band`): ``c1`` (one request at a time), ``c2-16``, ``c32-64``, ``c128-256`` (closed
  loop at that ``max_concurrency``; a rate so high that every request goes out within a millisecond counts as that
  burst) and ``open`` (requests at a rate, Poisson or gamma).

The table the product ships is ``planner/predict/data/error_band.json`` (written by ``bench/prediction_accuracy.py
--write-band``; it names its measurements). It speaks for vLLM 0.24.0 on an H200 with the default coefficients; on
other GPUs and versions the true error is likely wider, and a calibration profile usually narrows it.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner import display
from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.predict.calibration import SCORED
from planner.predict.shape import StepShape

__all__ = [
    "ARCHITECTURE_CLASSES",
    "BAND_FILE",
    "BAND_METRICS",
    "HIGHER_IS_WORSE",
    "LOAD_BANDS",
    "MIN_SAMPLES",
    "BandCell",
    "ErrorBand",
    "PredictionBand",
    "Sample",
    "architecture_class",
    "band_for",
    "band_note",
    "load_band",
    "range_text",
    "shipped_band",
    "with_band",
]

#: The table the product ships.
BAND_FILE = Path(__file__).resolve().parent / "data" / "error_band.json"
#: Metrics a band is kept for: every one the predictor is scored on.
BAND_METRICS: tuple[str, ...] = SCORED
#: Metrics whose high end is the pessimistic one (for throughput it is the low end).
HIGHER_IS_WORSE = frozenset(m for m in BAND_METRICS if m != "output_throughput")
ARCHITECTURE_CLASSES: tuple[str, ...] = ("dense", "sliding", "fp8-dense", "moe", "mla", "mla-moe")
LOAD_BANDS: tuple[str, ...] = ("c1", "c2-16", "c32-64", "c128-256", "open")
#: Fewest ratios a regime needs before its own percentiles are used.
MIN_SAMPLES = 6
#: Fewest distinct models a regime's ratios must come from before its own percentiles are used: the errors of one
#: model's runs share that model's bias, so a regime seen on one or two models says little of the next model.
MIN_MODELS = 3
#: The share of a new model's measurements the band is built to hold (two-sided, nominal). Checked
#: leave-one-model-out by ``bench/prediction_accuracy.py``: at 0.75 nominal, 70% of eleven models' points fell inside
#: (models differ by more than ten of them show), so the band is built at 0.85.
COVERAGE = 0.85
#: Student's t quantiles at (1 + COVERAGE) / 2 = 0.925 by degrees of freedom 1-10 (any statistics table; 1 dof:
#: tan(0.425 π) = 4.165), and the normal quantile beyond.
_T_QUANTILES = (4.165, 2.282, 1.924, 1.778, 1.699, 1.650, 1.617, 1.592, 1.574, 1.559)
_Z = 1.4395


def _t_quantile(dof: int) -> float:
    """Student's t quantile at (1 + :data:`COVERAGE`) / 2 for ``dof`` degrees of freedom."""
    return _T_QUANTILES[dof - 1] if dof <= len(_T_QUANTILES) else _Z + 1.0 / dof


def load_band(settings: LoadSettings) -> str:
    """The load band of a workload (module docstring)."""
    # a rate that sends every request within a millisecond is the burst it amounts to
    if settings.request_rate != math.inf and settings.num_prompts / settings.request_rate > 1e-3:
        return "open"
    c = settings.max_concurrency or settings.num_prompts
    if c <= 1:
        return "c1"
    if c <= 16:
        return "c2-16"
    if c <= 64:
        return "c32-64"
    return "c128-256"


def architecture_class(shape: StepShape) -> str:
    """The architecture class of a deployment (module docstring), from its step shape."""
    if shape.mla:
        return "mla-moe" if shape.num_experts else "mla"
    if shape.num_experts:
        return "moe"
    if shape.fp8_weights:
        return "fp8-dense"
    if any(g.window_tokens is not None for g in shape.groups):
        return "sliding"
    return "dense"


@dataclass(frozen=True)
class Sample:
    """One scored prediction: whose, in which regime, and ``measured / predicted``."""

    model: str
    klass: str
    load: str
    metric: str
    measured_over_predicted: float


@dataclass(frozen=True)
class BandCell:
    """The band of one regime: ``measured / predicted`` percentiles over ``n`` runs of ``models`` models.

    Attributes:
        metric / klass / load: the regime (``klass`` or ``load`` ``"*"`` for a pooled one).
        low / high: the ratios a prediction is multiplied by for the band's ends (``low ≤ 1 ≤ high``).
        n: ratios behind it. models: distinct models behind it.
    """

    metric: str
    klass: str
    load: str
    low: float
    high: float
    n: int
    models: int


@dataclass(frozen=True)
class ErrorBand:
    """Bands by regime (module docstring); :meth:`ratios` picks the most specific one with enough samples."""

    cells: tuple[BandCell, ...]
    source: str = ""
    #: share of measurements inside the band when it was rebuilt without each model in turn (None: not checked)
    measured_coverage: float | None = None

    @classmethod
    def from_samples(cls, samples: Iterable[Sample], *, source: str = "") -> ErrorBand:
        """The band of some scored predictions, for each regime and the pooled ones.

        The error of a prediction for a model not yet seen is that model's bias (its runs' errors share it) and the
        run's own scatter, so each cell is a prediction interval for a new model (random effects): with ``M``
        models whose mean log-ratios ``b_m`` scatter by ``s_b`` and whose runs scatter about them by ``s_w``, the
        band is ``exp(mean(b) ± t · sqrt(s_b² (1 + 1/M) + s_w²))``, ``t`` Student's quantile of
        :data:`COVERAGE` with ``M − 1`` degrees of freedom (Gelman and Hill, "Data Analysis Using Regression and
        Multilevel/Hierarchical Models", 2007, ch. 12).
        """
        kept = [s for s in samples if math.isfinite(s.measured_over_predicted) and s.measured_over_predicted > 0]
        models_of: dict[str, set[str]] = {}
        for s in kept:
            models_of.setdefault(s.klass, set()).add(s.model)
        groups: dict[tuple[str, str, str], list[Sample]] = {}
        for s in kept:
            keys = [(s.metric, s.klass, s.load), (s.metric, s.klass, "*")]
            # A class seen on one model only keeps its errors to its own cells: that model's bias may be the class's
            # (the pooled cells speak for the classes that several models agree on).
            if len(models_of[s.klass]) > 1:
                keys += [(s.metric, "*", s.load), (s.metric, "*", "*")]
            for key in keys:
                groups.setdefault(key, []).append(s)
        cells = []
        for (metric, klass, load), group in sorted(groups.items()):
            by_model: dict[str, list[float]] = {}
            for s in group:
                by_model.setdefault(s.model, []).append(math.log(s.measured_over_predicted))
            means = np.array([np.median(v) for v in by_model.values()])
            within = np.concatenate([np.array(v) - np.median(v) for v in by_model.values()])
            m = len(means)
            # the runs' scatter about their model, robustly (1.4826 · median absolute deviation, a normal's σ): one
            # stalled run must not widen every band of its regime
            s_w2 = float((1.4826 * np.median(np.abs(within))) ** 2) if within.size > m else 0.0
            s_b2 = float(means.var(ddof=1)) if m > 1 else 0.0
            half = _t_quantile(max(m - 1, 1)) * math.sqrt(s_b2 * (1 + 1 / m) + s_w2)
            centre = float(means.mean())
            cells.append(
                BandCell(
                    metric,
                    klass,
                    load,
                    round(min(math.exp(centre - half), 1.0), 4),
                    round(max(math.exp(centre + half), 1.0), 4),
                    len(group),
                    m,
                )
            )
        return cls(tuple(cells), source)

    @functools.cached_property
    def _index(self) -> dict[tuple[str, str, str], BandCell]:
        return {(c.metric, c.klass, c.load): c for c in self.cells}

    def cell(self, metric: str, klass: str, load: str) -> BandCell | None:
        """The cell used for a regime: its own with :data:`MIN_SAMPLES` runs of :data:`MIN_MODELS` models, else
        metric × class, then metric × load, then the metric alone; None when the metric has no sample at all. A
        class seen on too few models to stand alone still widens the band it borrows: the result spans both."""
        own = self._index.get((metric, klass, "*"))
        for key in ((metric, klass, load), (metric, klass, "*"), (metric, "*", load), (metric, "*", "*")):
            c = self._index.get(key)
            if c is None:
                continue
            if (c.n >= MIN_SAMPLES and c.models >= MIN_MODELS) or key[1:] == ("*", "*"):
                if key[1] == "*" and own is not None and own.n >= MIN_SAMPLES:
                    return BandCell(metric, klass, load, min(c.low, own.low), max(c.high, own.high), c.n, c.models)
                return c
        return None

    def ratios(self, metric: str, klass: str, load: str) -> tuple[float, float]:
        """``(low, high)`` multipliers of a prediction of ``metric`` in the regime; ``(1, 1)`` where nothing is
        known."""
        c = self.cell(metric, klass, load)
        return (1.0, 1.0) if c is None else (c.low, c.high)

    def range_of(self, value: float | None, metric: str, klass: str, load: str) -> tuple[float, float] | None:
        """``(low, high)`` values around a predicted ``value``; None when ``value`` is None."""
        if value is None:
            return None
        low, high = self.ratios(metric, klass, load)
        return value * low, value * high

    def to_json(self, *, source: str | None = None, measured_coverage: float | None = None) -> str:
        """The table as JSON (:data:`BAND_FILE`'s form)."""
        data = {
            "measured_coverage": measured_coverage if measured_coverage is not None else self.measured_coverage,
            "what": "measured / predicted: an 85% prediction interval for a model not yet seen, from the predictor's "
            "leave-one-model-out errors (planner/predict/band.py)",
            "source": source if source is not None else self.source,
            "coverage": COVERAGE,
            "cells": [c.__dict__ for c in self.cells],
        }
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> ErrorBand:
        """A table written by :meth:`to_json`.

        Raises:
            InvalidParameterError: not such a table.
        """
        try:
            data = json.loads(text)
            cells = tuple(BandCell(**c) for c in data["cells"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidParameterError("error band", "a malformed table", "the JSON of ErrorBand.to_json") from exc
        coverage = data.get("measured_coverage")
        return cls(cells, str(data.get("source", "")), float(coverage) if coverage is not None else None)


@functools.lru_cache(maxsize=1)
def shipped_band() -> ErrorBand:
    """The band the product ships (:data:`BAND_FILE`); an empty one (every band ``(1, 1)``) if it is missing."""
    if not BAND_FILE.exists():
        return ErrorBand(())
    return ErrorBand.from_json(BAND_FILE.read_text())


#: Display names of the band's metrics (units: seconds for times, tokens/s for throughput).
_TIME_METRICS = frozenset(BAND_METRICS) - {"output_throughput"}


@dataclass(frozen=True)
class PredictionBand:
    """The band around one prediction: its regime and, per metric, the low and high values.

    Attributes:
        klass: the deployment's architecture class (:func:`architecture_class`).
        load: the workload's load band (:func:`load_band`).
        ranges: ``(metric, low, high)`` per metric of :data:`BAND_METRICS` the prediction has (seconds for times,
            tokens/s for throughput).
        source: where the table comes from, in words.
        measured_coverage: the share of unseen models' measurements such bands held (``bench/prediction_accuracy.py``).
    """

    klass: str
    load: str
    ranges: tuple[tuple[str, float, float], ...]
    source: str = ""
    measured_coverage: float | None = None

    def get(self, metric: str) -> tuple[float, float] | None:
        """``(low, high)`` of ``metric``; None when it was not predicted."""
        return next(((lo, hi) for m, lo, hi in self.ranges if m == metric), None)

    def contains(self, metric: str, value: float | None) -> bool | None:
        """Whether ``value`` (a measurement of ``metric``, seconds or tokens/s) lies inside the band, ends included;
        None when either is unknown."""
        r = self.get(metric)
        if r is None or value is None:
            return None
        return r[0] <= value <= r[1]

    def text(self, metric: str) -> str | None:
        """The band of ``metric`` for reading, in its display unit: ``"5.8–8.0"`` (ms, one decimal) for a time,
        ``"1,210–1,480"`` (tokens/s) for throughput; None when it was not predicted."""
        r = self.get(metric)
        if r is None:
            return None
        if metric in _TIME_METRICS:
            return range_text(r[0] * 1e3, r[1] * 1e3, digits=1)
        return range_text(r[0], r[1], digits=0)

    def pessimistic(self, metric: str) -> float | None:
        """The band's worse end of ``metric``: the high end of a time, the low end of a throughput."""
        r = self.get(metric)
        if r is None:
            return None
        return r[1] if metric in HIGHER_IS_WORSE else r[0]

    def to_json(self) -> dict[str, object]:
        """The band as JSON: the regime, and ``[low, high]`` per metric (``*_ms`` in milliseconds for times)."""
        out: dict[str, object] = {
            "architecture": self.klass,
            "load": self.load,
            "nominal_coverage": COVERAGE,
            "measured_coverage": self.measured_coverage,
        }
        for metric, lo, hi in self.ranges:
            if metric in _TIME_METRICS:
                out[f"{metric}_ms"] = [lo * 1e3, hi * 1e3]
            else:
                out[metric] = [lo, hi]
        return out


def band_for(
    shape: StepShape, settings: LoadSettings, values: dict[str, float | None], table: ErrorBand | None = None
) -> PredictionBand:
    """The band around predicted ``values`` (:data:`BAND_METRICS` keys, seconds and tokens/s) of ``settings``'
    workload on ``shape``, from ``table`` (default the shipped one)."""
    table = table if table is not None else shipped_band()
    klass, load = architecture_class(shape), load_band(settings)
    found: dict[str, tuple[float, float]] = {}
    for metric in BAND_METRICS:
        r = table.range_of(values.get(metric), metric, klass, load)
        if r is not None:
            found[metric] = r
    # A p99 is never below its median, so neither end of its band is (the two regimes' ratios are fitted apart).
    for median, p99 in (("median_ttft", "p99_ttft"), ("median_tpot", "p99_tpot")):
        if median in found and p99 in found:
            found[p99] = (max(found[p99][0], found[median][0]), max(found[p99][1], found[median][1]))
    ranges = tuple((m, lo, hi) for m, (lo, hi) in found.items())
    return PredictionBand(klass, load, ranges, table.source, table.measured_coverage)


def range_text(low: float | None, high: float | None, *, digits: int) -> str:
    """``"low–high"`` with thousands separators and ``digits`` decimals (``"1,210–1,481"``); "n/a" where either end
    is missing (None or NaN)."""
    if display.is_missing(low) or display.is_missing(high):
        return display.NA
    return f"{display.number(low, digits)}–{display.number(high, digits)}"


def with_band(value: str, band: str | None) -> str:
    """A figure as text followed by its band (:func:`range_text`) in parentheses, as every page shows them:
    ``"7.2 (5.8–8.0)"``; ``value`` alone where either is missing (None or "n/a")."""
    return value if band is None or display.NA in (value, band) else f"{value} ({band})"


def band_note(bands: Iterable[PredictionBand | None]) -> str | None:
    """What the bands shown beside predicted figures are, in one line (for a caption, a legend or the CLI).

    Example: ``"the predictor's error band for dense models at load c1, from its errors on models it was not fitted
    to; it held 82% of their measurements"`` ("by load" when the bands span several load bands).

    Returns:
        The line; None when no band is given.
    """
    given = [b for b in bands if b is not None]
    if not given:
        return None
    classes = " and ".join(dict.fromkeys(b.klass for b in given))
    loads = list(dict.fromkeys(b.load for b in given))
    at = f"at load {loads[0]}" if len(loads) == 1 else "by load"
    coverage = next((b.measured_coverage for b in given if b.measured_coverage is not None), None)
    held = "" if coverage is None else f"; it held {coverage:.0%} of their measurements"
    return f"the predictor's error band for {classes} models {at}, from its errors on models it was not fitted to{held}"
