"""Figures and tables of the Live compare page, built from :class:`~planner.compare.run.CompareRun` snapshots.

Pure functions: nothing here draws in place or imports streamlit; pages pass the figures to ``st.plotly_chart``
and the frames to ``st.dataframe``. Metric formulas are those of :mod:`planner.metrics.latency` (``vllm bench serve``
semantics):

* TTFT = t(first token-bearing chunk) − t(request sent).
* ITL = gap between successive token-bearing chunks; per token, each gap is split evenly over the chunk's tokens.
* TPOT = (E2E − TTFT) / (output tokens − 1); the first token is not counted; n/a when output tokens ≤ 1.
* E2E = t(last token-bearing chunk) − t(request sent).
* Output tokens/s = output tokens / E2E.

Live curves: while a request streams, :class:`~planner.compare.run.EndpointProgress` holds only chunk arrival times,
so a chunk counts as one token until the request ends; a finished request is drawn from its record's chunks with
their exact token counts when the server sent them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner import display
from planner.compare.run import CompareResult, EndpointProgress, metrics_frame, summary_frame
from planner.metrics.latency import chunk_tokens, compute_metrics, output_tokens_method, summarize
from planner.serving.streaming import TOKEN_SOURCE_LABELS, RequestRecord
from planner.units import MS_PER_S

__all__ = [
    "METRIC_HELP",
    "EndpointStatus",
    "display_metrics",
    "endpoint_metrics",
    "endpoint_status",
    "history_csv",
    "history_figure",
    "history_frame",
    "itl_figure",
    "itl_samples_ms",
    "token_curve",
    "tokens_figure",
    "ttft_figure",
    "ttft_values_ms",
]


#: Help text (formula and unit) of each column of :func:`display_metrics`.
METRIC_HELP: dict[str, str] = {
    "endpoint": "Endpoint name.",
    "ok / requests": "Requests that completed without error / requests sent.",
    "TTFT ms": "Time to first token = first token-bearing chunk − request sent; median over the ok requests.",
    "TPOT ms": "Time per output token = (E2E − TTFT) / (output tokens − 1), first token not counted; median; "
    "n/a when a request has ≤ 1 token.",
    "ITL p50 ms": "Inter-token latency per token: each gap between token-bearing chunks split evenly over the "
    "chunk's tokens; 50th percentile of all samples.",
    "ITL p90 ms": "Inter-token latency per token, 90th percentile (linear interpolation).",
    "ITL p99 ms": "Inter-token latency per token, 99th percentile (linear interpolation).",
    "ITL samples": "Per-token ITL samples pooled over the ok requests (per chunk in brackets).",
    "E2E ms": "End-to-end latency = last token-bearing chunk − request sent; median.",
    "output tokens": "Generated tokens per request (median) and where the count came from.",
    "tokens/s": "Output tokens / E2E per request (TTFT included); median.",
}


@dataclass(frozen=True)
class EndpointStatus:
    """What a live column shows in its header.

    Attributes:
        state: "waiting", "streaming", "done", "error", "cut" (partial answer kept) or "cancelled".
        label: Short header text, e.g. "streaming · request 2/3 · 14 tokens", "error · empty answer (0 tokens)".
        error: One-line error of the last failed request; None when none failed.
        empty_answer: The last request failed as an empty answer: it ended normally without any token-bearing
            chunk (no text, reasoning or tool call), e.g. llama.cpp answering with finish_reason "stop" and nothing
            else.
    """

    state: str
    label: str
    error: str | None = None
    empty_answer: bool = False


def _empty_answer_label(record: RequestRecord) -> str:
    n = record.output_tokens
    return "empty answer" if n is None else f"empty answer ({n} token{'' if n == 1 else 's'})"


def _finished_times(progress: EndpointProgress) -> set[tuple[float, ...]]:
    return {tuple(c.t_s for c in r.chunks) for r in progress.records}


def _mid_stream(progress: EndpointProgress) -> bool:
    """The endpoint's current request has streamed chunks that no finished record holds yet."""
    return bool(progress.token_times_s) and progress.token_times_s not in _finished_times(progress)


def endpoint_status(progress: EndpointProgress, repeat: int) -> EndpointStatus:
    """The status of one endpoint in a run.

    Args:
        progress: The endpoint's live state.
        repeat: Requests per endpoint in the run.

    Returns:
        ``error`` when the last finished request failed without output, ``cut`` when it failed after some
        output (the partial answer is kept), ``cancelled`` for a cancelled request, ``done`` when every request
        finished, ``streaming`` while chunks arrive, else ``waiting``. An endpoint whose last request was an empty
        answer says so (``"error · empty answer (0 tokens)"``, :attr:`EndpointStatus.empty_answer`).
    """
    n_done = len(progress.records)
    current = min(n_done + (0 if progress.done else 1), repeat)
    of = f"request {current}/{repeat}" if repeat > 1 else ""
    last = progress.records[-1] if progress.records else None
    failed = sum(1 for r in progress.records if not r.ok)
    error = next((r.error for r in reversed(progress.records) if not r.ok and r.error), None)
    if progress.done or (last is not None and not last.ok and not _mid_stream(progress)):
        if last is not None and last.error_kind == "cancelled":
            state = "cancelled"
        elif last is not None and not last.ok:
            state = "cut" if last.partial else "error"
        else:
            state = "done"
    elif _mid_stream(progress):
        state = "streaming"
    else:
        state = "waiting"
    empty = state == "error" and last is not None and last.error_kind == "empty"
    parts = [state, of]
    if empty and last is not None:
        parts.append(_empty_answer_label(last))
    elif state in ("streaming", "done", "cut") and progress.tokens:
        parts.append(f"{progress.tokens} tokens")
    if failed and repeat > 1:
        parts.append(f"{failed} failed")
    return EndpointStatus(state=state, label=" · ".join(p for p in parts if p), error=error, empty_answer=empty)


def token_curve(progress: EndpointProgress) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Cumulative tokens against time (seconds after sent) of the endpoint's current or last request.

    A finished request uses its record's chunks with their tokens (:func:`~planner.metrics.latency.chunk_tokens`:
    the server's count per chunk, or its total spread over the chunks); a request still streaming counts one token
    per chunk.

    Returns:
        ``(times_s, cumulative_tokens)``, equally long; empty when nothing arrived.
    """
    times = progress.token_times_s
    for record in reversed(progress.records):
        if record.chunks and tuple(c.t_s for c in record.chunks) == times:
            return times, tuple(accumulate(chunk_tokens(record)))
    return times, tuple(range(1, len(times) + 1))


def tokens_figure(progresses: Sequence[EndpointProgress]) -> go.Figure:
    """Line chart: tokens received against seconds since the request was sent, one line per endpoint.

    A line whose tokens are not known (a request still streaming, or a finished one whose count is one per chunk, an
    estimate) counts chunks and says so in its name: ``"name (chunks)"``.
    """
    fig = go.Figure()
    for p in progresses:
        xs, ys = token_curve(p)
        exact = any(
            r.chunks
            and tuple(c.t_s for c in r.chunks) == xs
            and r.output_tokens is not None
            and r.output_tokens_source != "estimate"
            for r in p.records
        )
        fig.add_trace(
            go.Scatter(
                x=list(xs),
                y=list(ys),
                mode="lines+markers",
                line_shape="hv",
                name=p.endpoint if exact or not xs else f"{p.endpoint} (chunks)",
                marker={"size": 4},
                hovertemplate=f"<b>{p.endpoint}</b><br>%{{x:.3f}} s: %{{y}} tokens<extra></extra>",
            )
        )
    fig.update_layout(
        title="Tokens received",
        xaxis_title="seconds since request sent",
        yaxis_title="tokens (cumulative)",
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def _ttft_of(record: RequestRecord) -> float | None:
    return compute_metrics(record).ttft_s


def ttft_values_ms(progress: EndpointProgress) -> list[float]:
    """TTFT samples of an endpoint in ms: every ok finished request, plus the request now streaming."""
    values = [t * MS_PER_S for r in progress.records if r.ok and (t := _ttft_of(r)) is not None]
    if _mid_stream(progress):
        values.append(progress.token_times_s[0] * MS_PER_S)
    return values


def ttft_figure(progresses: Sequence[EndpointProgress]) -> go.Figure:
    """Bar chart: median TTFT (ms) per endpoint; endpoints without a first token get no bar (n/a)."""
    names, medians, labels = [], [], []
    for p in progresses:
        s = summarize(ttft_values_ms(p))
        names.append(p.endpoint)
        medians.append(None if s is None else s.median)
        labels.append(
            display.NA
            if s is None
            else f"{display.number(s.median, 0)} ms" + (f" (n={s.count})" if s.count > 1 else "")
        )
    fig = go.Figure(
        go.Bar(
            x=names,
            y=medians,
            text=labels,
            textposition="outside",
            cliponaxis=False,
            marker_color="#4C78A8",
            hovertemplate="<b>%{x}</b><br>TTFT %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title="Time to first token (median)",
        yaxis_title="TTFT (ms)",
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return fig


def itl_samples_ms(progress: EndpointProgress) -> tuple[list[float], str]:
    """Inter-token latency samples of an endpoint in ms, and their kind.

    Returns:
        Per-token ITL of the ok finished requests (kind "per token"); while no request has finished, the chunk
        gaps of the request streaming now (kind "per chunk").
    """
    values = [x * MS_PER_S for r in progress.records if r.ok for x in compute_metrics(r).itl_token_s]
    if values or progress.records:
        return values, "per token"
    times = progress.token_times_s
    return [(b - a) * MS_PER_S for a, b in pairwise(times)], "per chunk"


def itl_figure(progresses: Sequence[EndpointProgress]) -> go.Figure:
    """Box plot: inter-token latency distribution (ms) per endpoint, with the sample count in the name."""
    fig = go.Figure()
    for p in progresses:
        values, kind = itl_samples_ms(p)
        fig.add_trace(
            go.Box(
                y=values,
                name=f"{p.endpoint} (n={len(values)})",
                boxpoints="outliers",
                hovertemplate=f"<b>{p.endpoint}</b> ITL {kind}<br>%{{y:.1f}} ms<extra></extra>",
            )
        )
    fig.update_layout(
        title="Inter-token latency (per token)",
        yaxis_title="ITL (ms)",
        height=320,
        showlegend=False,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return fig


# --- final tables ----------------------------------------------------------------------------------------------------
def endpoint_metrics(result: CompareResult) -> pd.DataFrame:
    """One row per endpoint of a finished run (numbers; None where undefined).

    Columns: ``endpoint``, ``requests``, ``ok``, ``ttft_ms``, ``tpot_ms``, ``e2e_ms`` (medians over ok requests),
    ``ttft_n``, ``tpot_n``, ``e2e_n`` (their sample counts), ``itl_p50_ms``, ``itl_p90_ms``, ``itl_p99_ms``,
    ``itl_n`` (per-token ITL pooled over ok requests), ``itl_chunk_n`` (per-chunk samples), ``output_tokens``
    (median), ``output_tokens_source``, ``output_tokens_method`` (:data:`planner.metrics.latency.
    OUTPUT_TOKENS_METHODS`), ``output_tokens_per_s`` (median).
    """
    metrics = result.metrics()
    names = list(dict.fromkeys(r.endpoint for r in result.records))
    rows = []
    for name in names:
        ms = [m for m in metrics if m.endpoint == name]
        ok = [m for m in ms if m.ok]
        ok_records = [r for r in result.records if r.endpoint == name and r.ok]

        def med(values: list[float | None], scale: float = MS_PER_S) -> tuple[float | None, int]:
            s = summarize(values)
            return (None, 0) if s is None else (s.median * scale, s.count)

        ttft, ttft_n = med([m.ttft_s for m in ok])
        tpot, tpot_n = med([m.tpot_s for m in ok])
        e2e, e2e_n = med([m.e2e_s for m in ok])
        tokens, _ = med([None if r.output_tokens is None else float(r.output_tokens) for r in ok_records], 1.0)
        rate, _ = med([m.output_tokens_per_s for m in ok], 1.0)
        itl = summarize(x for m in ok for x in m.itl_token_s)
        sources = sorted({r.output_tokens_source for r in ok_records if r.output_tokens_source})
        rows.append(
            {
                "endpoint": name,
                "requests": len(ms),
                "ok": len(ok),
                "ttft_ms": ttft,
                "ttft_n": ttft_n,
                "tpot_ms": tpot,
                "tpot_n": tpot_n,
                "itl_p50_ms": None if itl is None else itl.median * MS_PER_S,
                "itl_p90_ms": None if itl is None else itl.p90 * MS_PER_S,
                "itl_p99_ms": None if itl is None else itl.p99 * MS_PER_S,
                "itl_n": 0 if itl is None else itl.count,
                "itl_chunk_n": sum(len(m.itl_chunk_s) for m in ok),
                "e2e_ms": e2e,
                "e2e_n": e2e_n,
                "output_tokens": tokens,
                "output_tokens_source": ", ".join(TOKEN_SOURCE_LABELS.get(x, x) for x in sources) or None,
                "output_tokens_method": output_tokens_method(ok_records),
                "output_tokens_per_s": rate,
            }
        )
    return pd.DataFrame(rows)


def display_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`endpoint_metrics` as text for display: "n/a" where undefined, sample counts next to medians.

    Columns are the keys of :data:`METRIC_HELP`.
    """
    rows = []
    for row in frame.to_dict("records"):

        def with_n(value: float | None, n: int) -> str:
            return display.NA if display.is_missing(value) else f"{display.number(value, 1)} (n={n})"

        tokens = display.NA if display.is_missing(row["output_tokens"]) else f"{row['output_tokens']:g}"
        if tokens != display.NA and row["output_tokens_source"]:
            tokens += f" ({row['output_tokens_source']})"
        rows.append(
            {
                "endpoint": row["endpoint"],
                "ok / requests": f"{row['ok']}/{row['requests']}",
                "TTFT ms": with_n(row["ttft_ms"], row["ttft_n"]),
                "TPOT ms": with_n(row["tpot_ms"], row["tpot_n"]),
                "ITL p50 ms": display.number(row["itl_p50_ms"], 1),
                "ITL p90 ms": display.number(row["itl_p90_ms"], 1),
                "ITL p99 ms": display.number(row["itl_p99_ms"], 1),
                "ITL samples": f"{row['itl_n']} ({row['itl_chunk_n']})",
                "E2E ms": with_n(row["e2e_ms"], row["e2e_n"]),
                "output tokens": tokens,
                "tokens/s": display.number(row["output_tokens_per_s"], 1),
            }
        )
    return pd.DataFrame(rows, columns=list(METRIC_HELP))


# --- history across runs ---------------------------------------------------------------------------------------------
def _numbered(
    results: Sequence[CompareResult], frame_of: Callable[[CompareResult], pd.DataFrame]
) -> list[pd.DataFrame]:
    """``frame_of`` each run, with its 1-based number as a ``run`` column first; runs with no rows left out."""
    frames = []
    for index, result in enumerate(results, start=1):
        frame = frame_of(result)
        if not frame.empty:
            frame.insert(0, "run", index)
            frames.append(frame)
    return frames


def history_frame(results: Sequence[CompareResult]) -> pd.DataFrame:
    """:func:`~planner.compare.run.summary_frame` of every run, with a 1-based ``run`` column first."""
    frames = _numbered(results, summary_frame)
    if not frames:
        return pd.DataFrame(columns=["run", "endpoint", "requests", "failed", "ttft_ms", "tpot_ms", "e2e_ms"])
    return pd.concat(frames, ignore_index=True)


def history_csv(results: Sequence[CompareResult]) -> str:
    """Every request of every run (:func:`~planner.compare.run.metrics_frame` rows) as CSV, with a ``run`` column.

    Records carry no API key, so neither does this.
    """
    frames = _numbered(results, metrics_frame)
    return pd.concat(frames, ignore_index=True).to_csv(index=False) if frames else "run\n"


def history_figure(frame: pd.DataFrame) -> go.Figure:
    """Median TTFT and TPOT (ms) per endpoint per run: two panels, one line per endpoint, x = run number.

    Args:
        frame: :func:`history_frame`.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT (median, ms)", "TPOT (median, ms)"))
    palette = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D")
    for i, (name, rows) in enumerate(frame.groupby("endpoint", sort=False)):
        color = palette[i % len(palette)]
        for col, metric in enumerate(("ttft_ms", "tpot_ms"), start=1):
            fig.add_trace(
                go.Scatter(
                    x=rows["run"].tolist(),
                    y=[None if pd.isna(v) else float(v) for v in rows[metric]],
                    mode="lines+markers",
                    name=str(name),
                    legendgroup=str(name),
                    showlegend=col == 1,
                    line={"color": color},
                    hovertemplate=f"<b>{name}</b><br>run %{{x}}: %{{y:.1f}} ms<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="run", dtick=1)
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
