"""Load Test: what the page shows, as frozen data: the settings its widgets hold, the runs they plan, the live panel,
the run history and every results section (tables as text, captions, figures), and the planned-vs-measured KV
table.

The page reads its widgets, calls these and draws the answer; the run history (the page's finished and imported
runs, oldest first) is a :class:`History`, kept in the session by the page. Numbers become text in this module's
few private helpers (``_share``, ``_fixed``, ``_count``), the ones a display module would hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from planner import fields
from planner.errors import BadValue, PlannerError
from planner.loadtest.charts import (
    LATENCY_AXES,
    PREFIX_CACHE_HEADLINE,
    curve_knees,
    curves_figure,
    display_runs,
    live_figure,
    live_frames,
    run_headline,
    runs_figure,
    sweep_figure,
    sweep_points,
    turns_figure,
)
from planner.loadtest.confidence import repeat_summary
from planner.loadtest.datasets import read_sharegpt, read_trace
from planner.loadtest.results import (
    SavedRun,
    batching_frame,
    failure_summary,
    group_sweeps,
    import_runs,
    prefix_cache_frame,
    requests_frame,
    runs_frame,
    same_model,
    spec_decode_frame,
    to_vllm_file,
    ttft_by_turn,
)
from planner.loadtest.settings import DEFAULT, MAX_PROMPTS, LoadSettings, parse_goodput
from planner.loadtest.sweep import find_knee
from planner.loadtest.worker import BenchmarkSnapshot, Job, plan_jobs
from planner.loadtest.workload import example_prompts, parse_prompts_jsonl
from planner.predict.charts import overlay_caption, overlay_curves, overlay_errors
from planner.predict.overlay import Overlay
from planner.serving.endpoints import Endpoint
from planner.serving.requests import IGNORE_EOS_KINDS
from planner.serving.server_metrics import MeasuredKV, compare_kv

__all__ = [
    "RUNS_CAPTION",
    "UPLOAD_TYPES",
    "Built",
    "Download",
    "History",
    "KvView",
    "LiveView",
    "Planned",
    "Prompts",
    "ResultsView",
    "Section",
    "SweepView",
    "Tile",
    "build_settings",
    "downloads",
    "example_caption",
    "has_sweeps",
    "kv_view",
    "live_view",
    "overlay_lines",
    "overlay_table",
    "plan_runs",
    "read_upload",
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
#: What an upload of each file dataset may be.
UPLOAD_TYPES: dict[str, list[str]] = {
    "custom": ["jsonl", "json"],
    "sharegpt": ["json", "jsonl"],
    "timed_trace": ["jsonl"],
    "burstgpt": ["csv"],
}


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


# --- settings and the runs they plan ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    """The settings the page's widgets hold.

    Attributes:
        settings: the settings; None when the widgets hold none the page can run (``error`` says why).
        error: why not, one line; or the goodput text's problem (the settings then carry no SLO and Run waits).
    """

    settings: LoadSettings | None
    error: str | None = None


def build_settings(values: Mapping[str, Any], goodput_text: str) -> Built:
    """The settings of the widgets' ``values`` (field name → value, as :class:`planner.fields` names them) and the
    goodput SLO text (``ttft:500,tpot:50``), which stays as typed in its box until it is fixed."""
    error = None
    try:
        slos = parse_goodput(goodput_text)
    except BadValue as bad:
        error, slos = f"goodput SLOs {goodput_text!r} are not valid: expected {bad.accepted}", ()
    try:
        settings = fields.replace(DEFAULT, **values, goodput_ms=slos)
    except PlannerError as exc:  # e.g. fewer prompts than prefixes: the widgets keep what was typed
        return Built(None, str(exc))
    return Built(settings, error)


@dataclass(frozen=True)
class Prompts:
    """The prompts or trace rows of the chosen workload, and what to say about them.

    Attributes:
        prompts: the prompts to cycle (examples, a JSONL or ShareGPT file).
        rows: a trace's rows.
        caption: what was read (None when nothing was).
        error: why the file was refused, one line.
    """

    prompts: tuple[str, ...] = ()
    rows: tuple[Any, ...] = ()
    caption: str | None = None
    error: str | None = None


def example_caption() -> Prompts:
    """The built-in example prompts and a caption showing the first three."""
    prompts = example_prompts()
    shown = " · ".join(p[:40] for p in prompts[:3])
    return Prompts(prompts, caption=f"{len(prompts)} built-in example prompts, cycled: {shown} …")


def read_upload(dataset: str, name: str, data: bytes, settings: Mapping[str, Any]) -> Prompts:
    """The prompts or rows of an uploaded file of ``dataset`` (``settings``: the widget values read so far, for a
    trace's request limit, chunk size and time scale)."""
    try:
        if dataset in ("custom", "sharegpt"):
            prompts = parse_prompts_jsonl(data) if dataset == "custom" else read_sharegpt(data, limit=MAX_PROMPTS)
            return Prompts(prompts, caption=f"{len(prompts):,} prompts from {name}, cycled.")
        limit = int(settings["num_prompts"]) + int(settings["num_warmups"])
        rows = read_trace(data, dataset, limit=limit, chunk_hash_size=int(settings["trace_chunk_hash_size"]))
    except PlannerError as exc:
        return Prompts(error=f"{name}: {exc}")
    if not rows:
        return Prompts(rows=rows)
    span_s = (rows[-1].timestamp - rows[0].timestamp) * float(settings["time_scale"])
    return Prompts(
        rows=rows, caption=f"{len(rows):,} requests from {name}, spanning {span_s:,.1f} s at this time_scale."
    )


@dataclass(frozen=True)
class Planned:
    """The runs the settings ask for.

    Attributes:
        jobs: the runs, in order.
        error: why none can run (a dataset without its file, a bad goodput text).
        caption: how many runs and requests, their time cap, and where ``ignore_eos`` is not sent.
    """

    jobs: tuple[Job, ...] = ()
    error: str | None = None
    caption: str | None = None


def plan_runs(
    chosen: Sequence[Endpoint], settings: LoadSettings, prompts: Sequence[str], rows: Sequence[Any], problem: str | None
) -> Planned:
    """The runs of ``settings`` on ``chosen`` (``problem``: a goodput text to fix first)."""
    try:
        jobs = plan_jobs(chosen, settings, prompts, trace_rows=rows)
    except PlannerError as exc:
        return Planned(error=str(exc))
    if problem or not jobs:
        return Planned(jobs, problem)
    total = sum(j.settings.num_prompts for j in jobs)
    cap_s = settings.duration_s
    caption = f"{len(jobs)} run(s), {total:,} measured requests at most" + (
        f", each run capped at {cap_s:g} s (≤ {len(jobs) * cap_s / 60:,.0f} min in all)." if cap_s else "."
    )
    no_eos = sorted({e.kind for e in chosen if e.kind not in IGNORE_EOS_KINDS})
    if settings.ignore_eos and no_eos:
        caption += f" ignore_eos is not sent to {', '.join(no_eos)} endpoints."
    return Planned(jobs, None, caption)


# --- the run history ----------------------------------------------------------------------------------------------
class History:
    """The page's runs, oldest first (finished ones as their runs end, imported files, a search's steps), and what
    the page remembers about them. Both are the page's session lists and dicts, changed in place, so the runs stay a
    plain list of :class:`~planner.loadtest.results.SavedRun` any part of the page may extend.

    Args:
        runs: the runs (the session's list).
        memory: the session's dict for the rest: the labels known at the last rerun, each queue's runs already taken,
            each sweep's saturation stop and what the servers of the last queue report of their KV cache.
    """

    def __init__(self, runs: list[SavedRun], memory: dict[str, Any]) -> None:
        self.runs = runs
        self.memory = memory
        memory.setdefault("known", [])
        memory.setdefault("recorded", {})
        memory.setdefault("sweep_stops", {})
        memory.setdefault("measured_kv", {})

    @property
    def sweep_stops(self) -> dict[str, str]:
        """``{sweep id: why it stopped at saturation}``."""
        return self.memory["sweep_stops"]

    @property
    def measured_kv(self) -> dict[str, MeasuredKV | None]:
        """``{endpoint name: what its server reports}`` of the last finished queue."""
        return self.memory["measured_kv"]

    def record(self, run_id: int, snap: BenchmarkSnapshot) -> bool:
        """Take the runs ``snap`` finished since the last call for the queue ``run_id``; True when any was new."""
        done = self.memory["recorded"].get(run_id, 0)
        new = snap.saved[done:]
        self.runs.extend(new)
        self.memory["recorded"][run_id] = done + len(new)
        self.sweep_stops.update(dict(snap.sweep_stops))
        if snap.done:
            self.memory["measured_kv"] = dict(snap.measured_kv)
        return bool(new)

    def import_files(self, files: Iterable[tuple[str, bytes]]) -> tuple[tuple[bool, str], ...]:
        """Import result files (``(name, content)``); returns ``(ok, message)`` per file. A run whose label is already
        here is left out; levels of one sweep in separate files become one sweep."""
        messages = []
        known = {r.label for r in self.runs}
        for name, data in files:
            try:
                runs = import_runs(data, name)
            except PlannerError as exc:
                messages.append((False, f"{name} not added: {exc}"))
                continue
            added = [run for run in runs if run.label not in known]
            self.runs.extend(added)
            known.update(run.label for run in added)
            skipped = len(runs) - len(added)
            kept = f"; {skipped} already shown (same label) left out." if skipped else "."
            messages.append((True, f"{name}: {len(added)} run(s) added{kept}"))
        self.runs[:] = group_sweeps(self.runs)  # one vllm bench serve file per concurrency: one sweep
        return tuple(messages)

    def labels_to_show(self, chosen: Sequence[str] | None) -> list[str] | None:
        """The labels to show when runs were added or removed since the last call: the reader's choice (``chosen``)
        that still exists, then every new run; None when nothing changed (the reader's choice stands)."""
        labels = [r.label for r in self.runs]
        known = self.memory["known"]
        if labels == known:
            return None
        shown = [label for label in (chosen or []) if label in labels] + [
            label for label in labels if label not in known
        ]
        self.memory["known"] = labels
        return shown

    def selected(self, labels: Sequence[str]) -> list[SavedRun]:
        """The runs of ``labels``, in history order."""
        return [r for r in self.runs if r.label in labels]


# --- the live panel -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tile:
    """One metric tile: label, value and help."""

    label: str
    value: str
    help: str | None = None


@dataclass(frozen=True)
class LiveView:
    """The run in progress (or the last one).

    Attributes:
        errors: one line per run that could not start.
        headlines: ``(ok, line)`` per finished run, once all are done (ok: some request completed, none failed).
        progress: done fraction, 0–1, and its text.
        tiles: in flight, completed, failed, elapsed, the server's KV cache usage.
        waiting: what is happening before the first measured request (None once requests arrive).
        figure: the live chart (None before requests).
        footer: "Done." / "Cancelled…" once done.
    """

    errors: tuple[str, ...]
    headlines: tuple[tuple[bool, str], ...]
    progress: tuple[float, str]
    tiles: tuple[Tile, ...]
    waiting: str | None
    figure: go.Figure | None
    footer: str | None


def live_view(snap: BenchmarkSnapshot) -> LiveView:
    """What the live panel shows for ``snap``; once done, each run's answer first."""
    headlines = tuple(
        (not (run.metrics.failed or not run.metrics.completed), run_headline(run)) for run in snap.saved if snap.done
    )
    done_requests, total_requests = snap.requests_done, snap.requests_total
    if snap.done:
        text = f"{done_requests:,} / {total_requests:,} requests · {len(snap.saved)} of {snap.jobs_total} run(s) kept"
    else:
        run_no = min(snap.jobs_done + 1, snap.jobs_total)
        text = f"{done_requests:,} / {total_requests:,} requests · run {run_no} of {snap.jobs_total}"
        if snap.current is not None:
            text += f" · {snap.current.label}"
    p = snap.progress
    # while running, the latest scrape; once done, the run's peak (the last scrape, after the run, reads idle)
    usages = [u.kv_cache_usage_perc for u in snap.server if u.kv_cache_usage_perc is not None]
    kv = None if not usages else (max(usages) if snap.done else usages[-1])
    tiles = (
        Tile("in flight", "n/a" if p is None else str(p.in_flight)),
        Tile("completed", "n/a" if p is None else str(p.completed)),
        Tile("failed", "n/a" if p is None else str(p.failed)),
        Tile("elapsed (s)", "n/a" if p is None else _fixed(p.elapsed_s, 1)),
        Tile(
            "KV cache usage (server, peak)" if snap.done else "KV cache usage (server)",
            _share(kv, 0),
            snap.scrape_note or "From the server's /metrics.",
        ),
    )
    waiting = figure = None
    if not snap.records and len(snap.in_flight) <= 1:
        if not snap.done and snap.current is not None:
            waiting = f"{snap.current.label}: discovery, prompt sizing and warm-up before the first measured request…"
    else:
        windows, server = live_frames(snap.records, snap.run_start, snap.server)
        figure = live_figure(windows, snap.in_flight, server)
    footer = None
    if snap.done:
        footer = "Done." if not snap.cancelled else "Cancelled: the requests that finished are kept below."
    progress = (min(1.0, done_requests / max(1, total_requests)), text)
    return LiveView(snap.errors, headlines, progress, tiles, waiting, figure, footer)


# --- results ------------------------------------------------------------------------------------------------------
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
    tiles: tuple[Tile, ...] = ()
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
    sections: tuple[Section, ...] = field(default=())


def _cache_section(shown: Sequence[SavedRun]) -> Section | None:
    cache = prefix_cache_frame(shown)
    if not len(cache):
        return None
    tiles: tuple[Tile, ...] = ()
    best = cache.dropna(subset=["prefix_cache_hit_rate"])
    if len(best):
        last = best.iloc[-1]
        workload_help = (
            "The most of the prompt tokens a prefix cache could serve on this workload (before block rounding)."
        )
        tiles = (
            Tile("hit rate (server)", _share(last.prefix_cache_hit_rate), f"{last.run}"),
            Tile(
                "reusable prefix (workload)",
                _share(None if pd.isna(last.reusable_prefix_share) else last.reusable_prefix_share),
                workload_help,
            ),
            Tile("median TTFT (ms)", _fixed(None if pd.isna(last.median_ttft_ms) else last.median_ttft_ms, 1)),
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
    import json

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
