"""The console tables of ``python -m planner bench``: ``vllm bench serve``'s result table (plus P90 and sample
counts), a sweep's row per level, the repeats' confidence intervals, TTFT by turn and static vs continuous batching.

Every figure that has no sample (no successful request, no server counter) is printed ``n/a``, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.loadtest.runner import LoadResult
    from planner.loadtest.sweep import SweepPoint

__all__ = ["batching_text", "bench_text", "confidence_text", "sweep_text", "turns_text"]

#: Width of the tables' rules and of a row's label.
_WIDTH, _LABEL = 50, 40
#: The latency sections of the result table: vLLM's titles and short names.
_LATENCIES = {
    "ttft": ("Time to First Token", "TTFT"),
    "tpot": ("Time per Output Token (excl. 1st token)", "TPOT"),
    "itl": ("Inter-token Latency", "ITL"),
    "e2el": ("End-to-end Latency", "E2EL"),
}
_STATS = (("mean", "Mean"), ("median", "Median"), ("std", "Std"), ("p90", "P90"), ("p99", "P99"))


def _rule(title: str, fill: str) -> str:
    """``====== title ======``, :data:`_WIDTH` wide."""
    return "{s:{c}^{n}}".format(s=title, n=_WIDTH, c=fill)


def _row(label: str, value: object, fmt: str = "{:.2f}") -> str:
    """One ``label  value`` row; None is ``n/a``, floats as ``fmt``."""
    shown = "n/a" if value is None else (fmt.format(value) if isinstance(value, float) else str(value))
    return f"{label:<{_LABEL}} {shown}"


def _ms(value_s: float | None) -> float | None:
    return None if value_s is None else value_s * 1000


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _headline_rows(result: LoadResult) -> list[str]:
    """Counts, duration and throughputs; with no successful request the duration and throughputs are undefined
    (vLLM would print 0.00): n/a."""
    m, spec = result.metrics, result.settings
    measured = m.completed > 0

    def rate(value: float | None) -> float | None:
        return value if measured else None

    lines = [
        _rule(" Serving Benchmark Result ", "="),
        _row("Successful requests:", m.completed),
        _row("Failed requests:", m.failed),
        _row("Maximum request concurrency:", spec.max_concurrency),
        *([_row("Batching (client):", "static batches")] if spec.batching == "static" else []),
        _row("Request rate configured (RPS):", spec.request_rate),
        _row("Benchmark duration (s):", rate(m.duration_s)),
        _row("Total input tokens:", m.total_input_tokens),
        _row("Total generated tokens:", m.total_output_tokens),
        _row("Output tokens counted by:", result.output_tokens_method),
        _row("Request throughput (req/s):", rate(m.request_throughput)),
    ]
    if m.request_goodput is not None:
        lines.append(_row("Request goodput (req/s):", rate(m.request_goodput)))
    lines.append(_row("Output token throughput (tok/s):", rate(m.output_throughput)))
    lines.append(_row("Total Token throughput (tok/s):", rate(m.total_token_throughput)))
    return lines


def _latency_rows(result: LoadResult) -> list[str]:
    """Each latency's samples and statistics in ms, then TTFT to the first chunk as ``vllm bench serve`` takes it."""
    lines = []
    for key, (title, short) in _LATENCIES.items():
        d = getattr(result.metrics, key)
        lines.append(_rule(title, "-"))
        lines.append(_row(f"Samples ({short}):", 0 if d is None else d.count))
        for stat, label in _STATS:
            lines.append(_row(f"{label} {short} (ms):", None if d is None else _ms(getattr(d, f"{stat}_s"))))
    first = result.ttft_first_chunk
    lines.append(_rule("TTFT to first chunk (vllm bench serve)", "-"))
    for stat, label in (("mean", "Mean"), ("median", "Median"), ("p99", "P99")):
        lines.append(
            _row(f"{label} TTFT first chunk (ms):", None if first is None else _ms(getattr(first, f"{stat}_s")))
        )
    return lines


def _server_rows(result: LoadResult) -> list[str]:
    """Input sizing, the server's prefix-cache and speculative-decoding counters, the workload's reusable prefix."""
    lines = []
    if result.input_calibration is not None:
        lines.append(_row("Input lengths:", result.input_calibration.label))
    cache = result.prefix_cache
    if cache is not None:
        counts = f"{cache.hits_tokens:,.0f} of {cache.queries_tokens:,.0f}"
        lines.append(_row("Prefix cache hit rate:", f"{_share(cache.hit_rate)} ({counts})"))
    spec = result.spec_decode
    if spec is not None:
        length = spec.mean_acceptance_length
        lines.append(_row("Spec decode acceptance rate:", _share(spec.acceptance_rate)))
        lines.append(_row("Spec decode mean accept length:", "n/a" if length is None else f"{length:.2f}"))
        per_position = ", ".join(f"{a:.2f}" for a in spec.per_position_acceptance) or "n/a"
        lines.append(_row("Spec decode accepted per position:", per_position))
        lines.append(_row("Spec decode drafts:", f"{spec.num_drafts:,.0f}"))
    share = result.reusable_prefix_share
    if share is not None and result.settings.dataset_name != "random":
        lines.append(_row("Reusable prefix (workload):", f"{share:.1%}"))
    if result.settings.flush_cache:
        lines.append(_row("Prefix cache flushed first:", "yes" if result.cache_flushed else "no"))
    check = result.input_check
    if check is not None and check.requested_tokens is not None:
        asked = f"{check.requested_tokens} / {check.measured_tokens}"
        lines.append(_row("Input tokens asked / server-counted:", asked))
    return lines


def _failure_rows(result: LoadResult) -> list[str]:
    """What failed (by kind, with one example), the Ray workers' share, and why the run stopped early."""
    lines = [f"failed: {count} x {kind}" for kind, count in result.metrics.failures_by_kind]
    first_error = next((r for r in result.records if not r.ok), None)
    if first_error is not None:
        lines.append(f"  e.g. {first_error.error_kind}: {first_error.error}")
    if result.num_workers is not None:
        counts = ", ".join(str(n) for n in result.worker_requests)
        lines.append(f"Ray workers: {result.num_workers} (requests per worker: {counts})")
    lines += [f"  {line}" for line in result.worker_errors]
    if result.stopped is not None:
        lines.append(f"stopped by {result.stopped}: {result.cancelled} cancelled in flight, {result.not_sent} not sent")
    return lines


def bench_text(result: LoadResult) -> str:
    """The vLLM-style summary table of one run (``vllm bench serve`` console output, plus P90 and sample counts)."""
    lines = [*_headline_rows(result), *_latency_rows(result), *_server_rows(result), "=" * _WIDTH]
    return "\n".join([*lines, *_failure_rows(result)])


def batching_text(frame: object) -> str:
    """The static-vs-continuous lines of a ``--batching compare`` run (from
    :func:`planner.loadtest.results.batching_frame`)."""

    def num(value: object, fmt: str) -> str:
        return "n/a" if value is None or value != value else fmt.format(value)

    lines = [_rule(" Static vs continuous batching ", "=")]
    for row in frame.to_dict(orient="records"):  # type: ignore[attr-defined]
        lines.append(f"{'Concurrency / batch size:':<{_LABEL}} {row['max_concurrency']}")
        lines.append(_row("Static output throughput (tok/s):", num(row["static_output_throughput"], "{:.2f}")))
        lines.append(_row("Continuous output throughput (tok/s):", num(row["continuous_output_throughput"], "{:.2f}")))
        lines.append(_row("Continuous / static:", num(row["throughput_ratio"], "{:.2f}x")))
    if len(lines) == 1:
        lines.append("n/a: a run failed")
    return "\n".join(lines)


def sweep_text(points: Sequence[SweepPoint], knee: int | None, stopped: str | None) -> str:
    """One row per level, then the knee."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.1f}"

    head = f"{'conc':>5} {'ok':>5} {'fail':>5} {'req/s':>8} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9}"
    lines = [head + f" {'TPOT p50':>9} {'E2EL p50':>9}  (latencies in ms)"]
    for p in points:
        # no successful request: throughputs are undefined, not 0
        req_s = f"{p.request_throughput:.2f}" if p.completed else "n/a"
        out_s = f"{p.output_throughput:.1f}" if p.completed else "n/a"
        lines.append(
            f"{p.concurrency:>5} {p.completed:>5} {p.failed:>5} {req_s:>8} "
            f"{out_s:>10} {ms(p.ttft_median_s):>9} {ms(p.ttft_p99_s):>9} "
            f"{ms(p.tpot_median_s):>9} {ms(p.e2el_median_s):>9}" + (f"  stopped by {p.stopped}" if p.stopped else "")
        )
    if knee is None:
        lines.append("knee: none found (Kneedle on concurrency -> output tok/s; needs 3+ levels and a bend)")
    else:
        lines.append(f"knee: concurrency {knee} (Kneedle on concurrency -> output tok/s)")
    if stopped:
        lines.append(f"sweep stopped by {stopped}")
    return "\n".join(lines)


def turns_text(frame: object) -> str:
    """TTFT by turn: one row per turn (``planner.loadtest.results.ttft_by_turn``)."""
    lines = [
        _rule(" TTFT by turn ", "-"),
        f"{'turn':>5} {'requests':>9} {'prompt tok':>11} {'TTFT p50':>9} {'TTFT p90':>9}  (ms)",
    ]
    for row in frame.itertuples():  # type: ignore[attr-defined]
        tokens = "n/a" if row.mean_input_tokens is None else f"{row.mean_input_tokens:,.0f}"
        lines.append(f"{row.turn:>5} {row.requests:>9} {tokens:>11} {row.median_ttft_ms:>9.1f} {row.p90_ttft_ms:>9.1f}")
    return "\n".join(lines)


def confidence_text(frame: object) -> str:
    """Mean ± 95% interval of each headline metric over the repeats."""
    lines = [_rule(" Repeats: mean and 95% interval ", "=")]
    for row in frame.itertuples():  # type: ignore[attr-defined]
        half_pct = row.ci95_half_width_pct
        half = "" if half_pct is None or half_pct != half_pct else f" ± {half_pct:.1f}%"
        low = "n/a" if row.ci95_low != row.ci95_low else f"{row.ci95_low:.2f}"
        high = "n/a" if row.ci95_high != row.ci95_high else f"{row.ci95_high:.2f}"
        lines.append(f"{row.metric:<24} {row.mean:>10.2f}{half:<10} [{low}, {high}]  n={row.runs}")
    return "\n".join(lines)
