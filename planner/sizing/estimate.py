"""Which end of the predictor's error band a sizing search checks the SLOs against.

Every figure the search checks is a point estimate of the simulator; the predictor's error band
(:mod:`planner.predict.band`) says how far the measurements of models it had not seen fell from such estimates. The
setting ``slo_estimate`` (:class:`~planner.sizing.settings.SizingSettings`) picks what an SLO is checked against:

* ``pessimistic`` (the default): the band's worse end of the predicted figure, the high end of a latency;
* ``point``: the predicted figure itself.

**Ratios of one regime.** The band of a predicted value ``v`` is ``[v · low, v · high]``, ``low`` and ``high`` fixed
by the regime (metric × architecture class × load band, :meth:`planner.predict.band.ErrorBand.ratios`), as
:func:`planner.predict.band.band_for` builds it. Every replica the search simulates runs the same open-loop load
(:func:`planner.sizing.probe.probe_load`, load band ``open``), so the ratios of one configuration are fixed
(:func:`ends_for`): a pessimistic check of ``v`` against a limit ``L`` is ``v · high ≤ L``, that is ``v ≤ L / high``.
The search's analytic bounds (:mod:`planner.sizing.bounds`: the floors of a request alone, the rate bounds of the
TPOT, ITL and E2EL SLOs) use those same ratios, so a bound never rules out a configuration the check would pass, nor
lets through one it would rule out.

**Which band speaks for an SLO** (:func:`band_metrics`): the band of the same figure where there is one (p99 TTFT →
``p99_ttft``, median TTFT → ``median_ttft``, median and mean TPOT → ``median_tpot``, ``mean_tpot``, p99 TPOT →
``p99_tpot``, median ITL → ``median_itl``). The band scores no other figure, so the others take the nearest figures
it does score, the widest of them when there are two:

* mean TTFT → ``median_ttft`` (its central TTFT figure); p90 TTFT → ``p99_ttft`` (its tail TTFT figure);
* p90 TPOT → ``p99_tpot``;
* mean ITL → ``median_itl``; p90 and p99 ITL → ``median_itl`` and ``p99_tpot`` (no ITL tail is scored: the ITL's own
  centre and the tail of the same decode steps averaged per request);
* E2EL = TTFT + (output_len − 1) · TPOT (:mod:`planner.metrics.benchmark`), so its relative error lies between
  theirs: TTFT's and TPOT's band of the same kind of statistic (p50 → ``median_ttft``, ``median_tpot``; mean →
  ``median_ttft``, ``mean_tpot``; p90 and p99 → ``p99_ttft``, ``p99_tpot``), the larger ratio taken.

**Throughput takes the low end.** The output-throughput band's ``low`` says a replica may serve only ``low`` times
the rate the simulator gives it. A replica is said to keep up with its share ``λ`` only when the simulator has it
keep up with ``λ / low`` (a replica ``low`` times as fast as predicted is as loaded at ``λ`` as the predicted one at
``λ / low``), and the fluid bound of its rate is lowered to ``low · λ_fluid`` alike (:mod:`planner.sizing.bounds`).

Where the product ships no band (:func:`planner.predict.band.shipped_band` empty), every ratio is 1: both ends are the
point estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import display
from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.metrics.benchmark import BenchmarkMetrics
from planner.metrics.slo import Slo, SloCheck
from planner.predict.band import COVERAGE, ErrorBand, architecture_class, load_band, shipped_band
from planner.predict.shape import StepShape

__all__ = [
    "SLO_ESTIMATES",
    "SloEnds",
    "band_metrics",
    "describe_estimate",
    "ends_for",
]

#: What an SLO can be checked against (module docstring), the default first.
SLO_ESTIMATES: tuple[str, ...] = ("pessimistic", "point")

#: The band's figures that speak for an SLO's ``(metric, statistic)`` (module docstring).
_BAND_METRICS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ttft", "p50"): ("median_ttft",),
    ("ttft", "mean"): ("median_ttft",),
    ("ttft", "p90"): ("p99_ttft",),
    ("ttft", "p99"): ("p99_ttft",),
    ("tpot", "p50"): ("median_tpot",),
    ("tpot", "mean"): ("mean_tpot",),
    ("tpot", "p90"): ("p99_tpot",),
    ("tpot", "p99"): ("p99_tpot",),
    ("itl", "p50"): ("median_itl",),
    ("itl", "mean"): ("median_itl",),
    ("itl", "p90"): ("median_itl", "p99_tpot"),
    ("itl", "p99"): ("median_itl", "p99_tpot"),
    ("e2el", "p50"): ("median_ttft", "median_tpot"),
    ("e2el", "mean"): ("median_ttft", "mean_tpot"),
    ("e2el", "p90"): ("p99_ttft", "p99_tpot"),
    ("e2el", "p99"): ("p99_ttft", "p99_tpot"),
}
#: The band's throughput figure.
_THROUGHPUT = "output_throughput"


def band_metrics(slo: Slo) -> tuple[str, ...]:
    """The band's figures (:data:`planner.predict.band.BAND_METRICS`) whose high ratio an SLO is checked with, the
    largest taken (module docstring)."""
    return _BAND_METRICS[(slo.metric, slo.stat)]


@dataclass(frozen=True)
class SloEnds:
    """The ends of the band one configuration's SLOs are checked at.

    Attributes:
        estimate: ``pessimistic`` or ``point`` (:data:`SLO_ESTIMATES`).
        slos: the SLOs.
        high: per SLO (in the order of ``slos``), the ratio its predicted value is multiplied by before it is
            checked (≥ 1; 1 at the point estimate).
        throughput_low: the ratio a replica's predicted throughput is multiplied by (≤ 1; 1 at the point estimate).
        klass / load: the band's regime (:func:`planner.predict.band.architecture_class`, ``load_band``); None at
            the point estimate.

    Raises:
        InvalidParameterError: an unknown estimate, or not one ratio per SLO.
    """

    estimate: str = "point"
    slos: tuple[Slo, ...] = ()
    high: tuple[float, ...] = ()
    throughput_low: float = 1.0
    klass: str | None = None
    load: str | None = None

    def __post_init__(self) -> None:
        if self.estimate not in SLO_ESTIMATES:
            raise InvalidParameterError("slo_estimate", self.estimate, "one of " + ", ".join(SLO_ESTIMATES))
        if len(self.high) != len(self.slos):
            raise InvalidParameterError("high", self.high, f"one ratio per SLO ({len(self.slos)})")

    def ratio(self, slo: Slo) -> float:
        """The multiplier of ``slo``'s predicted value (1 for an SLO these ends do not hold)."""
        return next((r for s, r in zip(self.slos, self.high, strict=True) if s == slo), 1.0)

    def limit_s(self, slo: Slo) -> float:
        """The largest predicted value of ``slo``'s statistic that passes, seconds: ``limit / ratio``."""
        return slo.limit_s / self.ratio(slo)

    def check(self, slo: Slo, predicted_s: float | None) -> SloCheck:
        """``slo`` checked against a predicted value (seconds; None without a sample): the value checked is
        ``predicted · ratio``."""
        if predicted_s is None:
            return SloCheck(slo, None, float("inf"))
        value = predicted_s * self.ratio(slo)
        return SloCheck(slo, value, value / slo.limit_s)

    def checks(self, metrics: BenchmarkMetrics) -> tuple[SloCheck, ...]:
        """Every SLO checked against a simulation's metrics."""
        return tuple(self.check(slo, slo.value_s(metrics)) for slo in self.slos)

    def shown(self, check: SloCheck) -> str:
        """The value ``check`` found, in words: ``53.5 ms``, or at the pessimistic end ``53.5 ms predicted, 62.8 ms at
        the band's pessimistic end``; ``no sample`` without one."""
        if check.value_s is None:
            return "no sample"
        ratio = self.ratio(check.slo)
        if ratio == 1.0:
            return display.ms(check.value_s)
        predicted, checked = display.ms(check.value_s / ratio), display.ms(check.value_s)
        return f"{predicted} predicted, {checked} at the band's {self.estimate} end"

    def describe(self, check: SloCheck) -> str:
        """``p99 TTFT 1,234.0 ms (SLO 1,000 ms)``, the predicted value beside the one checked at the pessimistic end."""
        return f"{check.slo.stat} {check.slo.metric.upper()} {self.shown(check)} (SLO {check.slo.limit_ms:,.6g} ms)"

    def to_json(self) -> dict[str, object]:
        """The ends as JSON: the estimate, the band's regime, each SLO's ratio and the throughput's."""
        return {
            "slo_estimate": self.estimate,
            "architecture": self.klass,
            "load": self.load,
            "slo_ratios": {s.key: r for s, r in zip(self.slos, self.high, strict=True)},
            "output_throughput_ratio": self.throughput_low,
        }


def ends_for(
    shape: StepShape,
    slos: tuple[Slo, ...],
    estimate: str,
    load: LoadSettings,
    *,
    table: ErrorBand | None = None,
) -> SloEnds:
    """The ends one configuration's SLOs are checked at (module docstring).

    Args:
        shape: the configuration's step shape (its architecture class).
        slos: the SLOs.
        estimate: ``pessimistic`` or ``point``.
        load: the load every simulation of the search runs (its load band).
        table: the band's table (default :func:`planner.predict.band.shipped_band`).

    Returns:
        The ratios: the band's high ratio per SLO and its low throughput ratio, or all 1 at the point estimate.
    """
    if estimate == "point":
        return SloEnds("point", slos, tuple(1.0 for _ in slos))
    table = table if table is not None else shipped_band()
    klass, band = architecture_class(shape), load_band(load)
    high = tuple(max(table.ratios(m, klass, band)[1] for m in band_metrics(slo)) for slo in slos)
    return SloEnds(estimate, slos, high, table.ratios(_THROUGHPUT, klass, band)[0], klass, band)


def describe_estimate(estimate: str, *, switch: str | None = None, table: ErrorBand | None = None) -> str:
    """What the SLOs are checked against, in one sentence.

    Args:
        estimate: ``pessimistic`` or ``point``.
        switch: how a reader picks the other estimate, ``{}`` standing for it (``"--slo-estimate {}"``); None leaves
            it out.
        table: the band's table (default :func:`planner.predict.band.shipped_band`).

    Example:
        >>> describe_estimate("point")
        "SLOs checked against the predictor's point estimate."
    """
    if estimate == "point":
        text = "SLOs checked against the predictor's point estimate"
        if switch:
            text += f" ({switch.format('pessimistic')} to check them against the worse end of its error band)"
        return text + "."
    table = table if table is not None else shipped_band()
    held = (
        f", which held {table.measured_coverage:.0%} of their measurements"
        if table.measured_coverage is not None
        else ""
    )
    switched = f" ({switch.format('point')} to use the point estimate)" if switch else ""
    return (
        f"SLOs checked against the pessimistic end of the predictor's error band{switched}: a prediction interval "
        f"of {COVERAGE:.0%} from its errors on models it had not seen{held}."
    )
