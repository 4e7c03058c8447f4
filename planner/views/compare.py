"""The Live Compare page's view: each endpoint's live column, the charts, the final metrics of a run, and the history
of the session's runs.

:func:`live_view` is called on every refresh of the live panel with the run's latest
:class:`~planner.compare.run.CompareSnapshot`; :func:`history_view` once a page run with the finished results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.compare.charts import (
    display_metrics,
    endpoint_metrics,
    endpoint_status,
    history_csv,
    history_figure,
    history_frame,
    itl_figure,
    tokens_figure,
    ttft_figure,
)
from planner.compare.run import CompareResult, CompareSnapshot, notes, to_csv, to_json

__all__ = ["METRICS_CAPTION", "HistoryView", "LiveColumn", "LiveView", "history_view", "live_view"]

#: What the final metrics table's caption says: each metric's formula.
METRICS_CAPTION = (
    "TTFT = first token − request sent · ITL = gap between token-bearing chunks, split per token · "
    "TPOT = (E2E − TTFT) / (output tokens − 1) · E2E = last token − request sent · tokens/s = output "
    "tokens / E2E. Medians over the ok requests with sample counts; n/a where undefined."
)


@dataclass(frozen=True)
class LiveColumn:
    """One endpoint's live column.

    Attributes:
        endpoint: its name.
        state: ``waiting``, ``streaming``, ``done``, ``error``, ``cut`` (partial answer kept) or ``cancelled``
            (:func:`planner.compare.charts.endpoint_status`); ``label`` the header text beside it.
        error: the last failed request's error; None when none failed.
        boxed: whether the answer box is drawn (not for a failure without any answer).
        reasoning: the reasoning text streamed so far ("" for none); ``text`` the answer so far.
        waiting: nothing has come yet: the box says it waits for the first token.
        cut: the stream failed after this partial answer.
    """

    endpoint: str
    state: str
    label: str
    error: str | None
    boxed: bool
    reasoning: str
    text: str
    waiting: bool
    cut: bool


@dataclass(frozen=True)
class LiveView:
    """A snapshot of a run as the page shows it.

    Attributes:
        error: why the whole run failed; None when it did not.
        columns: one :class:`LiveColumn` per endpoint (none before the run starts them).
        figures: tokens received, median TTFT and the ITL distribution (none without columns).
        metrics_title: the final metrics' heading, once the run is done with records; else None.
        metrics: the final metrics, a row per endpoint (:func:`planner.compare.charts.display_metrics`).
        notes: a line per endpoint whose output tokens are estimates.
    """

    error: str | None
    columns: tuple[LiveColumn, ...] = ()
    figures: tuple[go.Figure, ...] = ()
    metrics_title: str | None = None
    metrics: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()


def live_view(snapshot: CompareSnapshot, repeat: int) -> LiveView:
    """The live panel of ``snapshot``, a run of ``repeat`` requests per endpoint."""
    error = f"The run failed: {snapshot.error}" if snapshot.error else None
    if not snapshot.endpoints:
        return LiveView(error)
    columns = []
    for progress in snapshot.endpoints:
        status = endpoint_status(progress, repeat)
        answered = bool(progress.text or progress.reasoning_text)
        columns.append(
            LiveColumn(
                endpoint=progress.endpoint,
                state=status.state,
                label=status.label,
                error=status.error,
                boxed=answered or status.state not in ("error", "cancelled"),
                reasoning=progress.reasoning_text,
                text=progress.text,
                waiting=not progress.text and status.state in ("waiting", "streaming"),
                cut=status.state == "cut",
            )
        )
    figures = (tokens_figure(snapshot.endpoints), ttft_figure(snapshot.endpoints), itl_figure(snapshot.endpoints))
    result = snapshot.result
    if not (snapshot.done and result is not None and result.records):
        return LiveView(error, tuple(columns), figures)
    return LiveView(
        error,
        tuple(columns),
        figures,
        metrics_title="Metrics" + (" (cancelled run)" if result.cancelled else ""),
        metrics=display_metrics(endpoint_metrics(result)),
        notes=notes(result),
    )


@dataclass(frozen=True)
class HistoryView:
    """The session's runs: median TTFT, TPOT, ITL and E2E per endpoint per run (``table``, one decimal, "n/a" where
    undefined; ``figure``), and the downloads: the last run as CSV and JSON, every request of every run as CSV."""

    table: pd.DataFrame
    figure: go.Figure
    last_csv: str
    last_json: str
    history_csv: str


def history_view(history: Sequence[CompareResult]) -> HistoryView | None:
    """The history of ``history`` (oldest run first); None when there is none."""
    if not history:
        return None
    frame = history_frame(history)
    return HistoryView(
        table=frame.astype(object).map(lambda v: display.cell(v, 1)),
        figure=history_figure(frame),
        last_csv=to_csv(history[-1]),
        last_json=to_json(history[-1]),
        history_csv=history_csv(history),
    )
