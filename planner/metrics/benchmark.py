"""Aggregate metrics of a load-test run, computed as ``vllm bench serve``'s ``calculate_metrics``.

Source: vllm-project/vllm ``vllm/benchmarks/serve.py`` ``calculate_metrics`` and ``BenchmarkMetrics`` (v0.24).
Per request the definitions of :mod:`planner.metrics.latency` apply (TTFT and E2EL
measured
from the moment the request is sent to the first / last token-bearing chunk). Over the run:

* ``completed`` = successful requests; ``failed`` = the others (in-stream errors and cut streams included), counted
  by ``error_kind`` too. Failed requests contribute no token and no latency sample (vLLM counts their output as 0).
* ``total_input_tokens`` = Σ input tokens of completed requests; ``total_output_tokens`` = Σ output tokens of
  completed requests (the server's count; where the stream carried none, its tokenizer route's count of the answer,
  else one per chunk: :data:`planner.metrics.latency.OUTPUT_TOKENS_METHODS`).
* ``request_throughput`` = completed / duration, ``output_throughput`` = Σoutput / duration,
  ``total_token_throughput`` = (Σinput + Σoutput) / duration, with duration = wall time of the run, seconds.
* ``request_goodput`` = completed requests meeting EVERY given SLO / duration (DistServe definition); a request
  meets an SLO when its value ≤ the limit. As in vLLM, a request with one output token has TPOT 0 for the goodput
  test (it cannot violate a TPOT SLO). None when no SLO is given.
* TTFT: one sample per completed request. TPOT = (E2EL − TTFT) / (output_tokens − 1), the first token NOT counted
  (:func:`planner.metrics.latency.tpot_s`), one sample per completed request with output_tokens > 1. ITL: every
  chunk gap of every completed request, pooled (one sample per chunk, however many tokens it carries; vLLM
  definition). E2EL: one sample per completed request.
* Each distribution: mean, median, population std (``np.std``), p90 and p99 with linear interpolation
  (:func:`planner.metrics.latency.percentiles`, ``np.percentile``'s default), and its sample count; the whole
  distribution is None when it has no sample (never 0).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from planner.errors import InvalidParameterError
from planner.metrics.latency import compute_metrics, summarize, tpot_s
from planner.parsing import MAX_COUNT, finite_number
from planner.serving.streaming import RequestRecord
from planner.units import MS_PER_S

__all__ = ["METRIC_NAMES", "BenchmarkMetrics", "Distribution", "compute_benchmark_metrics", "metrics_from_samples"]

#: Latency distributions of a run, in vLLM's naming.
METRIC_NAMES: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True)
class Distribution:
    """Summary of one latency sample, seconds.

    Attributes:
        count: Number of samples; None when unknown (imported from a vLLM file without per-request arrays).
        mean_s: Arithmetic mean.
        median_s: 50th percentile (linear interpolation).
        std_s: Population standard deviation ``sqrt(Σ(x − mean)² / n)``; None when not reported.
        p90_s: 90th percentile, linear interpolation; None when not reported.
        p99_s: 99th percentile, linear interpolation; None when not reported.
    """

    count: int | None
    mean_s: float
    median_s: float | None
    std_s: float | None
    p90_s: float | None
    p99_s: float | None

    @classmethod
    def of(cls, values_s: Sequence[float]) -> Distribution | None:
        """The distribution of ``values_s`` (seconds); None when empty."""
        s = summarize(values_s)
        if s is None:
            return None
        return cls(count=s.count, mean_s=s.mean, median_s=s.median, std_s=s.std, p90_s=s.p90, p99_s=s.p99)


@dataclass(frozen=True)
class BenchmarkMetrics:
    """Aggregate metrics of one load-test run (formulas in the module docstring). Seconds inside.

    Attributes:
        duration_s: Wall time of the run, seconds.
        completed: Successful requests.
        failed: Failed requests.
        failures_by_kind: Failed requests per ``error_kind`` (sorted by kind).
        total_input_tokens: Σ input tokens of completed requests.
        total_output_tokens: Σ output tokens of completed requests.
        request_throughput: completed / duration_s, requests/s.
        request_goodput: Completed requests meeting every SLO / duration_s, requests/s; None without SLO.
        output_throughput: total_output_tokens / duration_s, tokens/s.
        total_token_throughput: (total_input_tokens + total_output_tokens) / duration_s, tokens/s.
        ttft: Time to first token; None when no sample.
        tpot: Time per output token after the first (output_tokens > 1 only); None when no sample.
        itl: Inter-chunk latency, every gap pooled; None when no sample.
        e2el: End-to-end latency; None when no sample.
        slo_ms: The SLOs used for goodput, e.g. ``(("ttft", 500.0),)``.
    """

    duration_s: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    request_goodput: float | None = None
    failures_by_kind: tuple[tuple[str, int], ...] = ()
    ttft: Distribution | None = None
    tpot: Distribution | None = None
    itl: Distribution | None = None
    e2el: Distribution | None = None
    slo_ms: tuple[tuple[str, float], ...] = field(default=())

    def to_vllm_json(self) -> dict[str, Any]:
        """The metrics under ``vllm bench serve --save-result`` key names (milliseconds for latencies).

        A missing distribution gives None values (vLLM would write 0; we never do).
        """
        out: dict[str, Any] = {
            "duration": self.duration_s,
            "completed": self.completed,
            "failed": self.failed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput": self.request_throughput,
            "request_goodput": self.request_goodput,
            "output_throughput": self.output_throughput,
            "total_token_throughput": self.total_token_throughput,
        }
        for name in METRIC_NAMES:
            d: Distribution | None = getattr(self, name)
            for stat in ("mean", "median", "std", "p90", "p99"):
                value = None if d is None else getattr(d, f"{stat}_s")
                out[f"{stat}_{name}_ms"] = None if value is None else value * MS_PER_S
        return out

    @classmethod
    def from_vllm_json(cls, data: Mapping[str, Any]) -> BenchmarkMetrics:
        """Read a ``vllm bench serve --save-result`` JSON object (unknown keys are ignored).

        Sample counts come from the per-request arrays when the file has them (``output_lens``, ``itls``);
        TTFT/E2EL counts are ``completed``. A distribution whose mean is missing (or 0 with no sample) is None; a
        statistic that is not a finite number (NaN, Infinity) is missing.

        Raises:
            InvalidParameterError: a required key (``duration``, ``completed``) is missing or has a bad type.
        """
        from pydantic import ValidationError

        try:
            model = _VllmResult.model_validate(dict(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "data"
            raise InvalidParameterError(
                where, first.get("input"), f"a vllm bench serve result ({first['msg']})"
            ) from exc
        extra = model.model_extra or {}
        output_lens = extra.get("output_lens")
        itls = extra.get("itls")
        counts: dict[str, int | None] = {"ttft": model.completed, "e2el": model.completed, "tpot": None, "itl": None}
        if isinstance(output_lens, list):
            counts["tpot"] = sum(1 for n in output_lens if isinstance(n, int) and n > 1)
        if isinstance(itls, list):
            counts["itl"] = sum(len(x) for x in itls if isinstance(x, list))
        dists: dict[str, Distribution | None] = {}
        for name in METRIC_NAMES:

            def _get(stat: str, name: str = name) -> float | None:
                # NaN or Infinity is no measurement: missing (n/a), as a key that is not there
                value = finite_number(extra.get(f"{stat}_{name}_ms"))
                return None if value is None else value / MS_PER_S

            mean = _get("mean")
            if mean is None or counts[name] == 0:
                dists[name] = None
                continue

            dists[name] = Distribution(
                count=counts[name],
                mean_s=mean,
                median_s=_get("median"),
                std_s=_get("std"),
                p90_s=_get("p90"),
                p99_s=_get("p99"),
            )
        return cls(
            duration_s=model.duration,
            completed=model.completed,
            failed=model.failed,
            total_input_tokens=model.total_input_tokens,
            total_output_tokens=model.total_output_tokens,
            request_throughput=model.request_throughput,
            output_throughput=model.output_throughput,
            total_token_throughput=model.total_token_throughput,
            request_goodput=model.request_goodput,
            **dists,
        )


class _VllmResult(BaseModel):
    """Schema of the aggregate keys of a vLLM ``--save-result`` file (the JSON boundary); extra keys kept."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    duration: float = Field(gt=0)
    completed: int = Field(ge=0, le=MAX_COUNT)
    failed: int = Field(default=0, ge=0, le=MAX_COUNT)
    total_input_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    total_output_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    request_throughput: float = 0.0
    request_goodput: float | None = None
    output_throughput: float = 0.0
    total_token_throughput: float = 0.0


def compute_benchmark_metrics(
    records: Sequence[RequestRecord],
    input_tokens: Sequence[int],
    duration_s: float,
    *,
    slo_ms: Mapping[str, float] | None = None,
) -> BenchmarkMetrics:
    """Compute :class:`BenchmarkMetrics` like vLLM's ``calculate_metrics`` (formulas in the module docstring).

    Args:
        records: One record per measured request (warmups excluded).
        input_tokens: Input tokens of each request, aligned with ``records`` (the server's ``prompt_tokens`` when
            it reported them, else the dataset's length).
        duration_s: Wall time of the run, seconds (> 0).
        slo_ms: Goodput SLOs in milliseconds by metric name (``ttft``, ``tpot``, ``e2el``); None = no goodput.

    Returns:
        The metrics.

    Raises:
        InvalidParameterError: lengths differ, ``duration_s`` ≤ 0, or an SLO name/value is not accepted.

    Example:
        >>> compute_benchmark_metrics([], [], 1.0).completed
        0
    """
    if len(records) != len(input_tokens):
        raise InvalidParameterError("input_tokens", len(input_tokens), f"one count per record ({len(records)})")
    if not (isinstance(duration_s, int | float) and duration_s > 0 and math.isfinite(duration_s)):
        raise InvalidParameterError("duration_s", duration_s, "a finite number of seconds > 0")
    slos = dict(slo_ms or {})
    for name, value in slos.items():
        if name not in ("ttft", "tpot", "e2el"):
            raise InvalidParameterError("slo_ms", name, "SLO names ttft, tpot, e2el")
        if not (isinstance(value, int | float) and value > 0):
            raise InvalidParameterError("slo_ms", {name: value}, "a limit in milliseconds > 0")
    ttfts: list[float] = []
    e2els: list[float] = []
    outputs: list[int] = []
    inputs: list[int] = []
    itls: list[float] = []
    failures: Counter[str] = Counter()
    for record, n_in in zip(records, input_tokens, strict=True):
        m = compute_metrics(record)
        if not m.ok or m.ttft_s is None or m.e2e_s is None:
            failures[record.error_kind or "no_output"] += 1
            continue
        ttfts.append(m.ttft_s)
        e2els.append(m.e2e_s)
        outputs.append(record.output_tokens if record.output_tokens is not None else len(record.chunks))
        inputs.append(n_in)
        itls.extend(m.itl_chunk_s)
    return metrics_from_samples(
        ttft_s=ttfts,
        e2e_s=e2els,
        output_tokens=outputs,
        input_tokens=inputs,
        itl_s=itls,
        duration_s=duration_s,
        failures=failures,
        slo_ms=slos,
    )


def metrics_from_samples(
    *,
    ttft_s: Sequence[float],
    e2e_s: Sequence[float],
    output_tokens: Sequence[int],
    input_tokens: Sequence[int],
    itl_s: Sequence[float],
    duration_s: float,
    failures: Mapping[str, int] | None = None,
    slo_ms: Mapping[str, float] | None = None,
) -> BenchmarkMetrics:
    """The run's aggregates from per-request samples of its COMPLETED requests (formulas in the module docstring).

    Measured runs (:func:`compute_benchmark_metrics`) and predicted ones (:mod:`planner.predict`) both end here, so
    every key has one definition.

    Args:
        ttft_s, e2e_s, output_tokens, input_tokens: One entry per completed request, aligned (seconds, tokens).
        itl_s: Every inter-token (inter-chunk) gap of the completed requests, pooled, seconds (a sequence or a
            numpy array).
        duration_s: Wall time of the run, seconds (> 0).
        failures: Failed requests by ``error_kind``.
        slo_ms: Validated goodput SLOs in milliseconds by metric name; None or empty = no goodput.

    Returns:
        The metrics.
    """
    slos = dict(slo_ms or {})
    failures = Counter(failures or {})
    tpots = [tpot_s(ttft, e2e, n) for ttft, e2e, n in zip(ttft_s, e2e_s, output_tokens, strict=True)]
    good = 0
    if slos:
        for ttft, tpot, e2e in zip(ttft_s, tpots, e2e_s, strict=True):
            values = {"ttft": ttft, "tpot": tpot or 0.0, "e2el": e2e}  # vLLM: TPOT 0 for one-token requests
            if all(values[k] * MS_PER_S <= v for k, v in slos.items()):
                good += 1
    completed = len(ttft_s)
    total_in = int(sum(input_tokens))
    total_out = int(sum(output_tokens))
    return BenchmarkMetrics(
        duration_s=duration_s,
        completed=completed,
        failed=sum(failures.values()),
        failures_by_kind=tuple(sorted(failures.items())),
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=completed / duration_s,
        request_goodput=good / duration_s if slos else None,
        output_throughput=total_out / duration_s,
        total_token_throughput=(total_in + total_out) / duration_s,
        ttft=Distribution.of(ttft_s),
        tpot=Distribution.of([t for t in tpots if t is not None]),
        itl=Distribution.of(itl_s),
        e2el=Distribution.of(e2e_s),
        slo_ms=tuple(sorted((k, float(v)) for k, v in slos.items())),
    )
