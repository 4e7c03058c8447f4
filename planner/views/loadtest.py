"""Load Test: what the page shows above its results, as frozen data: the settings its widgets hold, the prompts of
the chosen workload, the runs they plan, the live panel, and the run history (the page's finished and imported runs,
oldest first, a :class:`History` kept in the session by the page). The results area is
:mod:`planner.views.loadtest_results`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from planner import fields
from planner.errors import BadValue, PlannerError
from planner.loadtest.charts import live_figure, live_frames, run_headline
from planner.loadtest.datasets import read_sharegpt, read_trace
from planner.loadtest.results import SavedRun, group_sweeps, import_runs
from planner.loadtest.settings import DEFAULT, MAX_PROMPTS, LoadSettings, parse_goodput
from planner.loadtest.worker import BenchmarkSnapshot, Job, plan_jobs
from planner.loadtest.workload import example_prompts, parse_prompts_jsonl
from planner.serving.endpoints import Endpoint
from planner.serving.requests import IGNORE_EOS_KINDS
from planner.serving.server_metrics import MeasuredKV
from planner.views.message import Metric

__all__ = [
    "UPLOAD_TYPES",
    "Built",
    "History",
    "LiveView",
    "Planned",
    "Prompts",
    "build_settings",
    "example_caption",
    "live_view",
    "plan_runs",
    "read_upload",
]

#: What an upload of each file dataset may be.
UPLOAD_TYPES: dict[str, list[str]] = {
    "custom": ["jsonl", "json"],
    "sharegpt": ["json", "jsonl"],
    "timed_trace": ["jsonl"],
    "burstgpt": ["csv"],
}


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
    tiles: tuple[Metric, ...]
    waiting: str | None
    figure: go.Figure | None
    footer: str | None


def _progress(snap: BenchmarkSnapshot) -> tuple[float, str]:
    """The done fraction and its text: requests done of all, and the run in progress (or the runs kept)."""
    done, total = snap.requests_done, snap.requests_total
    text = f"{done:,} / {total:,} requests · "
    if snap.done:
        text += f"{len(snap.saved)} of {snap.jobs_total} run(s) kept"
    else:
        text += f"run {min(snap.jobs_done + 1, snap.jobs_total)} of {snap.jobs_total}"
        text += f" · {snap.current.label}" if snap.current is not None else ""
    return min(1.0, done / max(1, total)), text


def _tiles(snap: BenchmarkSnapshot) -> tuple[Metric, ...]:
    """In flight, completed, failed, elapsed, and the server's KV cache usage: while running the latest scrape; once
    done the run's peak (the last scrape, after the run, reads idle)."""
    p = snap.progress
    counts = [("in flight", "in_flight"), ("completed", "completed"), ("failed", "failed")]
    tiles = [Metric(label, "n/a" if p is None else str(getattr(p, name))) for label, name in counts]
    tiles.append(Metric("elapsed (s)", "n/a" if p is None else f"{p.elapsed_s:,.1f}"))
    usages = [u.kv_cache_usage_perc for u in snap.server if u.kv_cache_usage_perc is not None]
    kv = None if not usages else (max(usages) if snap.done else usages[-1])
    label = "KV cache usage (server, peak)" if snap.done else "KV cache usage (server)"
    tiles.append(Metric(label, "n/a" if kv is None else f"{kv:.0%}", snap.scrape_note or "From the server's /metrics."))
    return tuple(tiles)


def live_view(snap: BenchmarkSnapshot) -> LiveView:
    """What the live panel shows for ``snap``; once done, each run's answer first."""
    headlines = tuple(
        (not (run.metrics.failed or not run.metrics.completed), run_headline(run)) for run in snap.saved if snap.done
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
    return LiveView(snap.errors, headlines, _progress(snap), _tiles(snap), waiting, figure, footer)
