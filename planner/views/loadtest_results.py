"""Load Test's results area: what it shows for the runs shown (and the predictions beside them), as frozen data: the
runs table and chart, the prefix-cache, speculative-decoding, batching, turns and repeats sections (tables as text),
the sweeps with their knees and stops, the predicted-against-measured lines, the planned-vs-measured KV table and the
downloads.

Numbers become text in this module's few private helpers (``_share``, ``_fixed``, ``_count``), the ones a display
module holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from planner.loadtest.charts import (
    LATENCY_AXES,
    PREFIX_CACHE_HEADLINE,
    curve_knees,
    curves_figure,
    display_runs,
    runs_figure,
    sweep_figure,
    sweep_points,
    turns_figure,
)
from planner.loadtest.confidence import repeat_summary
from planner.loadtest.results import (
    SavedRun,
    batching_frame,
    failure_summary,
    prefix_cache_frame,
    requests_frame,
    runs_frame,
    same_model,
    spec_decode_frame,
    to_vllm_file,
    ttft_by_turn,
)
from planner.loadtest.sweep import find_knee
from planner.predict.charts import overlay_caption, overlay_curves, overlay_errors
from planner.predict.overlay import Overlay
from planner.serving.server_metrics import MeasuredKV, compare_kv
from planner.views.message import Metric

__all__ = [
    "RUNS_CAPTION",
    "Download",
    "KvView",
    "ResultsView",
    "Section",
    "SweepView",
    "downloads",
    "has_sweeps",
    "kv_view",
    "overlay_lines",
    "overlay_table",
    "results_view",
    "sweep_view",
]

#: What the runs table's columns mean (vLLM's definitions), under the table.
RUNS_CAPTION = (
    "vLLM's key names; latencies in ms. TTFT = first token − sent · TPOT = (E2EL − TTFT)/(output tokens − 1) · "
    "ITL = gap between chunks (one sample per chunk) · E2EL = last token − sent · throughput = tokens / run "
    "duration · goodput = requests meeting every SLO / duration. `*_samples` = samples behind each percentile. "
    "TTFT here counts from the first token-bearing chunk; `median_ttft_first_chunk_ms` is TTFT as `vllm bench serve` "
    "measures it (first chunk with `choices`, vLLM's empty role chunk included)."
)
_CACHE_CAPTION = (
    "Hit rate = Δ hits / Δ queries of the server's counters over the measured requests (vLLM "
    "`prefix_cache_queries`/`prefix_cache_hits`, SGLang `cached_tokens`/`prompt_tokens`); n/a where the server "
    "exports none (llama.cpp, TGI). Reusable prefix = tokens at the start of each prompt that repeat an earlier "
    "prompt's start (a later turn: the conversation so far), over all prompt tokens."
)
_SPEC_CAPTION = (
    "From the server's vLLM `spec_decode_*` counters over the measured requests: acceptance rate = accepted / "
    "draft tokens; mean acceptance length = 1 + accepted / drafts (tokens per target step, the bonus token "
    "included); per position = accepted at position i / drafts (vLLM's own definitions)."
)
_BATCHING_CAPTION = (
    "The same load sent in fixed batches (the next only when the slowest ends) and continuously at the same "
    "concurrency; ratio = continuous / static output throughput (the source article claims 2–5×). The static run "
    "goes first: give warm-up requests so a cold server's first request does not count against it."
)
_CURVES_CAPTION = (
    "Each sweep against concurrency: solid measured, dashed predicted (when overlaid) in the same colour, shaded "
    "by its error band (under Predicted against measured); the thin dotted lines are the p99."
)


# --- formatting: the helpers a display module would hold ---------------------------------------------------------
def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _share(value: object, digits: int = 1) -> str:
    """A fraction as a percentage: ``0.613`` → ``"61.3%"``; "n/a" when missing."""
    return "n/a" if _missing(value) else f"{value:.{digits}%}"


def _fixed(value: object, digits: int = 2, suffix: str = "") -> str:
    """A number with thousands separators and ``digits`` decimals; "n/a" when missing."""
    return "n/a" if _missing(value) else f"{value:,.{digits}f}{suffix}"


def _count(value: object) -> str:
    """A whole count with thousands separators; "n/a" when missing."""
    return "n/a" if _missing(value) else f"{value:,.0f}"


def _as_text(frame: pd.DataFrame, columns: Mapping[str, Callable[[object], str]]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` written by its formatter, every other missing cell "n/a"."""
    shown = frame.astype(object).where(frame.notna(), None)
    for column, write in columns.items():
        shown[column] = [write(v) for v in shown[column]]
    return shown.fillna("n/a")


# --- the sections --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """One results section: a subheader, tiles, a table as text, a figure and a caption (each optional).

    Attributes:
        title: the subheader.
        table: the table, its cells as text ("n/a" where missing).
        headline: the table's columns that answer first (the rest fold away); () = every column.
        tiles: metric tiles above the table.
        figure: a chart above the table.
        caption: what the figures mean, under the table.
        key: the page's name of the section (its widget keys: ``lt.<key>.table``, ``lt.chart.<key>``).
    """

    title: str
    table: pd.DataFrame
    headline: tuple[str, ...] = ()
    tiles: tuple[Metric, ...] = ()
    figure: go.Figure | None = None
    caption: str | None = None
    key: str = ""


@dataclass(frozen=True)
class ResultsView:
    """Everything the results show for the runs shown (and the predictions beside them).

    Attributes:
        runs: the runs table (measured and predicted), as text.
        warnings: ``(is_note, line)``: why a run failed, and each run's notes.
        figure: the runs chart (None without a shown run).
        sections: prefix cache, speculative decoding, static vs continuous batching, TTFT by turn, repeats (those
            that apply).
    """

    runs: pd.DataFrame
    warnings: tuple[tuple[bool, str], ...]
    figure: go.Figure | None
    sections: tuple[Section, ...] = ()


def _cache_section(shown: Sequence[SavedRun]) -> Section | None:
    cache = prefix_cache_frame(shown)
    if not len(cache):
        return None
    tiles: tuple[Metric, ...] = ()
    best = cache.dropna(subset=["prefix_cache_hit_rate"])
    if len(best):
        last = best.iloc[-1]
        workload_help = (
            "The most of the prompt tokens a prefix cache could serve on this workload (before block rounding)."
        )
        tiles = (
            Metric("hit rate (server)", _share(last.prefix_cache_hit_rate), f"{last.run}"),
            Metric(
                "reusable prefix (workload)",
                _share(None if pd.isna(last.reusable_prefix_share) else last.reusable_prefix_share),
                workload_help,
            ),
            Metric("median TTFT (ms)", _fixed(None if pd.isna(last.median_ttft_ms) else last.median_ttft_ms, 1)),
        )
    columns: dict[str, Callable[[object], str]] = {
        c: _share for c in ("prefix_cache_hit_rate", "reusable_prefix_share")
    }
    columns |= {c: _count for c in ("prefix_cache_hits", "prefix_cache_queries", "median_ttft_ms")}
    table = _as_text(cache, columns)
    return Section("Prefix cache", table, PREFIX_CACHE_HEADLINE, tiles, caption=_CACHE_CAPTION, key="cache")


def _spec_section(shown: Sequence[SavedRun]) -> Section | None:
    spec = spec_decode_frame(shown)
    if not len(spec):
        return None
    columns: dict[str, Callable[[object], str]] = {
        "acceptance_rate": _share,
        "mean_acceptance_length": _fixed,
        "median_tpot_ms": _fixed,
        "num_drafts": _count,
        "output_throughput": lambda v: _fixed(v, 1),
    }
    return Section("Speculative decoding", _as_text(spec, columns), caption=_SPEC_CAPTION, key="spec")


def _batching_section(shown: Sequence[SavedRun]) -> Section | None:
    pairs = batching_frame(shown)
    if not len(pairs):
        return None
    columns: dict[str, Callable[[object], str]] = {c: (lambda v: _fixed(v, 1)) for c in pairs.columns[2:]}
    columns["throughput_ratio"] = lambda v: _fixed(v, 2, "×")
    return Section("Static vs continuous batching", _as_text(pairs, columns), caption=_BATCHING_CAPTION, key="batching")


def _turns_section(shown: Sequence[SavedRun]) -> Section | None:
    turns = ttft_by_turn(shown)
    if not len(turns):
        return None
    table = turns.round({"median_ttft_ms": 1, "p90_ttft_ms": 1, "mean_input_tokens": 0})
    return Section("TTFT by turn", table, figure=turns_figure(turns), key="turns")


def _repeats_section(shown: Sequence[SavedRun]) -> Section | None:
    repeats = repeat_summary(shown)
    if not len(repeats):
        return None
    caption = "mean ± t₀.₉₇₅ · s / √K over the K repeats of each run (Student's t)."
    return Section("Repeats: mean and 95% confidence interval", repeats, caption=caption, key="repeats")


def results_view(shown: Sequence[SavedRun], predicted: Sequence[SavedRun] = ()) -> ResultsView:
    """The results of the runs ``shown`` (with ``predicted`` runs beside them in the runs table)."""
    warnings: list[tuple[bool, str]] = []
    for run in shown:
        reason = failure_summary(run)
        if reason:
            warnings.append((False, f"{run.label}: {reason}"))
        warnings += [(True, f"{run.label}: {note.removeprefix(run.endpoint + ': ')}") for note in run.notes]
    builders = (_cache_section, _spec_section, _batching_section, _turns_section, _repeats_section)
    sections = tuple(s for s in (build(shown) for build in builders) if s is not None)
    figure = runs_figure(shown) if shown else None
    return ResultsView(display_runs([*shown, *predicted]), tuple(warnings), figure, sections)


@dataclass(frozen=True)
class SweepView:
    """The sweeps among the runs shown.

    Attributes:
        figure: throughput and latency against concurrency, knees marked.
        stops: one line per sweep that stopped at saturation.
        knees: one line per sweep: its knee, or why none was found.
        curves: measured (and predicted) curves with their bands.
        caption: what the curves' lines mean.
    """

    figure: go.Figure
    stops: tuple[str, ...]
    knees: tuple[str, ...]
    curves: go.Figure
    caption: str = _CURVES_CAPTION


def has_sweeps(shown: Sequence[SavedRun]) -> bool:
    """Whether a sweep is among the runs ``shown`` (so the page draws the latency-axis choice and the sweep charts)."""
    return bool(len(sweep_points(shown)))


def sweep_view(
    shown: Sequence[SavedRun], tabled: Sequence[SavedRun], overlay: Overlay | None, axis: str, stops: Mapping[str, str]
) -> SweepView | None:
    """The sweeps of ``shown`` with ``axis`` (one of :data:`~planner.loadtest.charts.LATENCY_AXES`) as latency; None
    when no sweep is shown."""
    points = sweep_points(shown, axis if axis in LATENCY_AXES else next(iter(LATENCY_AXES)))
    if not len(points):
        return None
    knees = {
        sweep: find_knee(list(zip(g["concurrency"], g["output_throughput"], strict=True)))
        for sweep, g in points.groupby("sweep", sort=False)
    }
    stopped = tuple(f"{sweep}: stopped at saturation — {reason}." for sweep, reason in stops.items() if sweep in knees)
    knee_lines = tuple(
        f"{sweep}: "
        + (
            f"knee at concurrency {knee} — beyond it throughput grows little while latency keeps rising."
            if knee is not None
            else "no knee found (throughput still grows, or too few levels)."
        )
        for sweep, knee in knees.items()
    )
    curves = overlay_curves(tabled, overlay)
    return SweepView(
        sweep_figure(points, knees, axis), stopped, knee_lines, curves_figure(curves, knees=curve_knees(curves))
    )


def overlay_lines(overlay: Overlay, scenario_text: str) -> tuple[str, tuple[str, ...]]:
    """The caption over the predicted-against-measured table, and the lines under it (band, notes)."""
    caption = (
        f"The same workload as each run, predicted for {scenario_text}. Coefficients: {overlay.calibration}. "
        "Error = predicted / measured − 1."
    )
    band = overlay_caption(overlay)
    return caption, (*([band] if band is not None else []), *(f"Note: {note}." for note in overlay.notes))


def overlay_table(overlay: Overlay) -> pd.DataFrame:
    """Predicted against measured, one row per run (:func:`planner.predict.charts.overlay_errors`)."""
    return overlay_errors(overlay.pairs, overlay.bands)


@dataclass(frozen=True)
class KvView:
    """The KV cache the servers report against the plan of a VRAM Budget scenario.

    Attributes:
        table: endpoint, served model, measured and planned KV tokens, the error, the source.
        warnings: one line per endpoint that serves another model than the scenario plans.
    """

    table: pd.DataFrame
    warnings: tuple[str, ...]


def kv_view(
    measured_kv: Mapping[str, MeasuredKV | None],
    plan_tokens: int | None,
    runs: Sequence[SavedRun],
    planned_model: str | None,
) -> KvView:
    """The planned-vs-measured KV table of the last finished queue."""
    served = {r.endpoint: r.model for r in runs if r.model}
    rows, warnings = [], []
    for name, measured in measured_kv.items():
        cmp = compare_kv(plan_tokens, measured)
        model = served.get(name)
        if planned_model and model and not same_model(planned_model, model):
            warnings.append(
                f"{name} serves {model}, the scenario plans {planned_model}: the two figures are not comparable."
            )
        rows.append(
            {
                "endpoint": name,
                "served model": model or "n/a",
                "measured KV tokens": _count(cmp.measured_tokens),
                "planned KV tokens": _count(cmp.plan_tokens),
                "(plan − measured) / measured": None if cmp.error_frac is None else f"{cmp.error_frac:+.1%}",
                "source": None if measured is None else (measured.error or measured.source),
            }
        )
    return KvView(pd.DataFrame(rows).astype(object).fillna("n/a"), tuple(warnings))


@dataclass(frozen=True)
class Download:
    """One download button: its label, content, file name, MIME type and widget key."""

    label: str
    data: str
    file_name: str
    mime: str
    key: str


def downloads(shown: Sequence[SavedRun], tabled: Sequence[SavedRun]) -> tuple[Download, ...]:
    """The runs as JSON Lines (``vllm bench serve``'s result format, re-importable), the requests and the metrics as
    CSV."""
    return (
        Download(
            "Runs (JSONL)",
            "\n".join(json.dumps(to_vllm_file(r)) for r in tabled),
            "loadtest_runs.jsonl",
            "application/jsonl",
            "lt.dl.json",
        ),
        Download(
            "Requests (CSV)",
            requests_frame(shown).to_csv(index=False),
            "loadtest_requests.csv",
            "text/csv",
            "lt.dl.req",
        ),
        Download(
            "Metrics (CSV)", runs_frame(tabled).to_csv(index=False), "loadtest_metrics.csv", "text/csv", "lt.dl.metrics"
        ),
    )
