"""SLOs: the one type (:class:`Slo`) and the one parser (:func:`parse_slos`) of every latency limit in the package.

An SLO is a limit on one latency metric of :data:`SLO_METRICS` (``vllm bench serve``'s TTFT, TPOT, ITL and E2EL,
defined in :mod:`planner.metrics.benchmark`), in one of two forms, each with the spelling its field already uses:

* **a percentile SLO** limits one statistic of a run's distribution: ``ttft_p99_ms=1000``, the run's 99th-percentile
  TTFT at most 1,000 ms. The statistic is one of :data:`SLO_STATS` (``p50`` is the median; percentiles interpolate
  linearly, :func:`planner.metrics.latency.percentiles`). vLLM's own spelling of the same figure, ``p99_ttft_ms``
  (its result key, and the key of ``vllm bench sweep serve_sla``'s ``--sla-params``, e.g. ``{"p99_e2el_ms":
  "<=500"}``), and ``:`` for ``=`` are read too. The sizing search and the measured maximum-rate search check these.
* **a per-request SLO** limits every request: ``ttft:500``, vLLM's ``--goodput`` spelling, which a request meets when
  its own TTFT is at most 500 ms; the run's ``request_goodput`` counts the requests that meet every one
  (DistServe's goodput, :mod:`planner.metrics.benchmark`). Its metric is one of :data:`GOODPUT_METRICS`, as vLLM's.

One grammar reads both: ``KEY=LIMIT_MS`` or ``KEY:LIMIT_MS`` with ``KEY`` = ``METRIC_STAT_ms`` or ``STAT_METRIC_ms``
(a percentile SLO), or ``METRIC:LIMIT_MS`` (a per-request SLO, ``:`` only, as ``--goodput`` writes it); a field
says which form it takes (``per_request``), and :attr:`Slo.text` writes each back in the spelling it was read in.

:func:`check` gives each SLO's measured value and its ratio to the limit; :func:`margin` the largest ratio − 1, ≤ 0
when every SLO is met (the "margin" of ``serve_sla``'s ``solve_sla``, relative so that SLOs of different sizes
compare); :func:`binding` the SLO closest to (or furthest past) its limit.

Example:
    >>> slo = parse_slo("ttft_p99_ms=1000")
    >>> slo.key, slo.limit_s
    ('ttft_p99_ms', 1.0)
    >>> format_slos((slo, parse_slo("p99_tpot_ms=50")))
    'ttft_p99_ms=1000,tpot_p99_ms=50'
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner.errors import BadValue, InvalidParameterError
from planner.metrics.benchmark import BenchmarkMetrics
from planner.values import format_value, parse_number, split_list

__all__ = [
    "GOODPUT_ACCEPTED",
    "GOODPUT_METRICS",
    "MAX_SLO_MS",
    "SLO_ACCEPTED",
    "SLO_METRICS",
    "SLO_STATS",
    "Slo",
    "SloCheck",
    "binding",
    "check",
    "format_goodput",
    "format_slos",
    "margin",
    "parse_slo",
    "parse_slos",
    "read_slos",
]

#: Latency distributions an SLO can limit (vLLM's names).
SLO_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
#: Statistics a percentile SLO can limit: the median (``p50``), the 90th and 99th percentiles, the mean.
SLO_STATS: tuple[str, ...] = ("p50", "p90", "p99", "mean")
#: Metrics a per-request SLO can limit: vLLM's ``--goodput`` keys (``vllm/benchmarks/serve.py``
#: ``check_goodput_args``, v0.24: ``ttft``, ``tpot``, ``e2el``).
GOODPUT_METRICS: tuple[str, ...] = ("ttft", "tpot", "e2el")
#: Largest limit, milliseconds (an hour).
MAX_SLO_MS = 3_600_000
#: What an SLO's text may be, for error lines.
SLO_ACCEPTED = (
    "METRIC_STAT_ms=LIMIT with METRIC ttft, tpot, itl or e2el, STAT p50, p90, p99 or mean and 0 < LIMIT ≤ "
    f"{MAX_SLO_MS:,} ms, e.g. ttft_p99_ms=1000"
)
#: What a per-request SLO's text may be, for error lines.
GOODPUT_ACCEPTED = f"name:ms pairs such as ttft:500,tpot:50 (names {', '.join(GOODPUT_METRICS)}; 0 < ms ≤ {MAX_SLO_MS})"
#: Most SLOs one search takes (every metric × statistic once).
MAX_SLOS = len(SLO_METRICS) * len(SLO_STATS)
_OURS = re.compile(r"^(ttft|tpot|itl|e2el)_(p50|p90|p99|mean|median)_ms$")
_VLLM = re.compile(r"^(p50|p90|p99|mean|median)_(ttft|tpot|itl|e2el)_ms$")
_FIELD = {"p50": "median_s", "p90": "p90_s", "p99": "p99_s", "mean": "mean_s"}


@dataclass(frozen=True)
class Slo:
    """A limit on one latency metric: on one statistic of a run's distribution, or on every request (``stat`` None).

    Attributes:
        metric: ``ttft``, ``tpot``, ``itl`` or ``e2el`` (a per-request SLO: ``ttft``, ``tpot`` or ``e2el``).
        stat: ``p50``, ``p90``, ``p99`` or ``mean``; None = every request (vLLM's goodput SLO).
        limit_s: the limit, seconds (> 0, at most :data:`MAX_SLO_MS`).

    Raises:
        InvalidParameterError: a value outside what is accepted.
    """

    metric: str
    stat: str | None
    limit_s: float

    def __post_init__(self) -> None:
        accepted = GOODPUT_ACCEPTED if self.per_request else SLO_ACCEPTED
        if self.metric not in (GOODPUT_METRICS if self.per_request else SLO_METRICS) or not (
            self.per_request or self.stat in SLO_STATS
        ):
            raise InvalidParameterError("slo", self.key, accepted)
        limit = self.limit_s
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit * 1e3 <= MAX_SLO_MS:
            raise InvalidParameterError("slo", f"{self.key}={limit!r}s", accepted)

    @property
    def per_request(self) -> bool:
        """Every request is held to the limit (vLLM's goodput), not a statistic of the run."""
        return self.stat is None

    @property
    def key(self) -> str:
        """Our name of the figure: ``ttft_p99_ms``; a per-request SLO's is its metric, ``ttft`` (vLLM's
        ``--goodput`` key)."""
        return self.metric if self.stat is None else f"{self.metric}_{self.stat}_ms"

    @property
    def vllm_key(self) -> str:
        """``vllm bench serve``'s name of the figure: its result key ``p99_ttft_ms``, ``median_tpot_ms``,
        ``mean_e2el_ms``; a per-request SLO's ``--goodput`` key, ``ttft``."""
        if self.stat is None:
            return self.metric
        stat = "median" if self.stat == "p50" else self.stat
        return f"{stat}_{self.metric}_ms"

    @property
    def limit_ms(self) -> float:
        """The limit in milliseconds, rounded to 9 decimals so that a limit typed in ms reads back as typed, not with
        the float noise of ``ms / 1e3 * 1e3`` (0.3, not 0.30000000000000004)."""
        return round(self.limit_s * 1e3, 9)

    @property
    def text(self) -> str:
        """``ttft_p99_ms=1000``, or ``ttft:500`` for a per-request SLO: what :func:`parse_slo` reads back."""
        if self.per_request:
            return format_goodput([(self.metric, round(self.limit_ms, 6))])
        return f"{self.key}={format_value(round(self.limit_ms, 6))}"

    def value_s(self, metrics: BenchmarkMetrics) -> float | None:
        """The run's value of this statistic, seconds; None when the run has no sample (or the statistic).

        Raises:
            InvalidParameterError: a per-request SLO, which limits requests, not a statistic of the run.
        """
        if self.stat is None:
            raise InvalidParameterError("slo", self.text, SLO_ACCEPTED + " (a statistic of the run)")
        dist = getattr(metrics, self.metric)
        return None if dist is None else getattr(dist, _FIELD[self.stat])


def parse_slo(text: str, *, per_request: bool = False) -> Slo:
    """An SLO from its text (the grammar in the module docstring; case and spaces around ignored).

    Args:
        text: ``ttft_p99_ms=1000`` (also ``ttft_p99_ms:1000`` and vLLM's ``p99_ttft_ms=1000``, ``median`` for
            ``p50``); with ``per_request``, ``ttft:500`` (vLLM's ``--goodput`` pair).
        per_request: read a per-request SLO instead of a percentile one.

    Raises:
        InvalidParameterError: anything else, naming ``slo``, the text and what is accepted
            (:data:`SLO_ACCEPTED`, or :data:`GOODPUT_ACCEPTED` with ``per_request``).
    """
    accepted = GOODPUT_ACCEPTED if per_request else SLO_ACCEPTED
    if not isinstance(text, str):
        raise InvalidParameterError("slo", text, accepted)
    name, sep, value = (text.strip() if per_request else text.strip().replace(":", "=", 1)).partition(
        ":" if per_request else "="
    )
    name = name.strip().lower()
    ours, vllm = _OURS.match(name), _VLLM.match(name)
    if per_request:
        metric, stat = name, None
        if not sep or metric not in GOODPUT_METRICS:
            raise InvalidParameterError("slo", text, accepted)
    elif not sep or not (ours or vllm):
        raise InvalidParameterError("slo", text, accepted)
    else:
        metric, stat = (ours.group(1), ours.group(2)) if ours else (vllm.group(2), vllm.group(1))  # type: ignore[union-attr]
    try:
        limit_ms = float(parse_number(value, 0, MAX_SLO_MS, low_open=True))  # type: ignore[arg-type]
    except BadValue:
        raise InvalidParameterError("slo", text, accepted) from None
    return Slo(metric, "p50" if stat == "median" else stat, limit_ms / 1e3)


def parse_slos(items: Iterable[str], *, per_request: bool = False) -> tuple[Slo, ...]:
    """SLOs from texts (each :func:`parse_slo`; a text may hold several, comma or space separated).

    Args:
        items: the texts.
        per_request: read per-request SLOs (``ttft:500,tpot:50``, vLLM's ``--goodput``) instead of percentile ones.

    Raises:
        InvalidParameterError: a text that is not an SLO of that form, or the same figure twice (naming it).
    """
    out: dict[str, Slo] = {}
    for item in items:
        for part in split_list(str(item)):
            slo = parse_slo(part, per_request=per_request)
            if slo.key in out:
                raise InvalidParameterError("slo", part, f"each figure once ({slo.key} is given twice)")
            out[slo.key] = slo
    if len(out) > MAX_SLOS:
        raise InvalidParameterError("slo", len(out), f"at most {MAX_SLOS} SLOs")
    return tuple(out.values())


def read_slos(text: str) -> tuple[Slo, ...]:
    """:func:`parse_slos` of one text (a link's, a box's), refused as :class:`~planner.errors.BadValue`.

    Raises:
        BadValue: a part that is not an SLO, or the same figure twice.
    """
    try:
        return parse_slos([text])
    except InvalidParameterError:
        raise BadValue(SLO_ACCEPTED + " (comma separated)") from None


def format_goodput(pairs: Sequence[tuple[str, float]]) -> str:
    """Per-request SLOs kept as vLLM's goodput pairs ``((metric, limit_ms), ...)`` written in ``--goodput``'s
    spelling, ``ttft:500,tpot:50`` (what :func:`parse_slos` reads back with ``per_request``)."""
    return ",".join(f"{metric}:{format_value(float(ms))}" for metric, ms in pairs)


def format_slos(slos: Sequence[Slo]) -> str:
    """``ttft_p99_ms=1000,tpot_p99_ms=50`` (``ttft:500,tpot:50`` for per-request SLOs): the inverse of
    :func:`parse_slos`."""
    return ",".join(s.text for s in slos)


@dataclass(frozen=True)
class SloCheck:
    """One SLO against a run.

    Attributes:
        slo: the SLO.
        value_s: the run's value, seconds; None when it has no sample.
        ratio: ``value_s / limit_s`` (inf without a value): ≤ 1 means met.
    """

    slo: Slo
    value_s: float | None
    ratio: float

    @property
    def ok(self) -> bool:
        """The SLO is met."""
        return self.ratio <= 1.0

    def describe(self) -> str:
        """``p99 TTFT 1,234 ms (SLO 1,000 ms)``; "no sample" when the run has none."""
        what = f"{self.slo.stat} {self.slo.metric.upper()}"
        shown = "no sample" if self.value_s is None else f"{self.value_s * 1e3:,.1f} ms"
        return f"{what} {shown} (SLO {self.slo.limit_ms:,.6g} ms)"


def check(metrics: BenchmarkMetrics, slos: Sequence[Slo]) -> tuple[SloCheck, ...]:
    """Each SLO against ``metrics``: its value and its ratio to the limit (inf when the run has no sample)."""
    out = []
    for slo in slos:
        value = slo.value_s(metrics)
        ratio = math.inf if value is None else value / slo.limit_s
        out.append(SloCheck(slo, value, ratio))
    return tuple(out)


def margin(checks: Sequence[SloCheck]) -> float:
    """The largest ``ratio − 1`` over the checks: ≤ 0 when every SLO is met (−inf without SLOs)."""
    return max((c.ratio - 1.0 for c in checks), default=-math.inf)


def binding(checks: Sequence[SloCheck]) -> SloCheck | None:
    """The check with the largest ratio: the SLO that limits (or breaks) the load; None without SLOs."""
    return max(checks, key=lambda c: c.ratio, default=None)
