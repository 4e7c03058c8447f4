"""The Sizing page's table and figures: pure functions returning pandas frames and plotly figures.

* :func:`options_table`: every configuration, ranked options first, with its verdict and reason ("n/a" where a
  figure is unknown).
* :func:`headline`: the answer's figures for ``st.metric`` tiles.
* :func:`pareto_figure`: tokens/s per user against tokens/s per GPU (or against USD per million output tokens),
  one colour per GPU, SLO misses hollow, the frontier drawn, the ranked options' points starred.
* :func:`prices_frame`: the price of each GPU searched with its source and date, for the editable price table.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner import display
from planner.catalog.gpus import GPU
from planner.palette import series_color
from planner.sizing.options import SizingOption, SizingResult
from planner.sizing.pareto import ParetoPoint, frontier
from planner.sizing.prices import price_of

__all__ = ["OPTIONS_HEADLINE", "VERDICT_TEXT", "headline", "options_table", "pareto_figure", "prices_frame"]

#: Each verdict in words.
VERDICT_TEXT: dict[str, str] = {
    "meets": "meets the SLOs",
    "costs_more": "costs more",
    "not_searched": "not simulated",
    "misses_slo": "misses an SLO",
    "no_price": "no price",
    "not_predicted": "cannot be predicted",
    "does_not_fit": "does not fit",
}


def _checked(o: SizingOption) -> str:
    """The values its SLOs were checked with, at the chosen end of the band: ``ttft_p99_ms=659.8, tpot_p99_ms=27``."""
    checks = o.checked
    if not checks:
        return display.NA
    return ", ".join(f"{c.slo.key}={display.ms(c.value_s, unit=False)}" for c in checks if c.value_s is not None)


def _gpus(o: SizingOption, least: int | None) -> str:
    """GPUs in all, ``≥ N`` for an option known only by its bound."""
    if o.prefill is not None and o.decode is not None:
        total = o.prefill.num_gpus + o.decode.num_gpus
        return f"≥ {total:,}" if o.replicas is None else f"{total:,}"
    return f"≥ {least * o.config.num_gpus:,}" if least else display.count(o.num_gpus)


def _capacity(o: SizingOption) -> str:
    if o.replica_rate is None:
        return display.NA
    upper = f" (< {o.replica_rate_limit:,.3g})" if o.replica_rate_limit else ""
    return f"≥ {o.replica_rate:,.3g}{upper}"


#: The columns of :func:`options_table` that answer first and fit a page's width (the rest fold away on the page).
OPTIONS_HEADLINE: tuple[str, ...] = (
    "rank",
    "verdict",
    "layout",
    "GPU",
    "TP",
    "weights",
    "KV cache",
    "replicas",
    "$/hour",
    "$/M output tokens",
    "why",
)


def options_table(result: SizingResult, *, limit: int | None = None) -> pd.DataFrame:
    """One row per configuration (ranked options first), as shown: rank, verdict, configuration, replicas, GPUs,
    cost, per-replica capacity, predicted p50/p99 TTFT and TPOT at the chosen size, the values its SLOs were checked
    with (at the chosen end of the band, at its share of the load with headroom), and why.

    Args:
        result: the search.
        limit: most rows (None = all).
    """
    rows = []
    for o in result.options[:limit]:
        c = o.config
        least = None if o.least_replicas is None or o.replicas is not None else o.least_replicas
        gpu, tp = c.gpu_name, str(c.tensor_parallel_size)
        if o.prefill is not None:  # a prefill/decode layout: prefill's / decode's
            same = o.prefill.config.gpu_name == c.gpu_name
            gpu = c.gpu_name if same else f"{o.prefill.config.gpu_name} / {c.gpu_name}"
            tp = f"{o.prefill.config.tensor_parallel_size} / {c.tensor_parallel_size}"
        rows.append(
            {
                "rank": "" if o.rank is None else str(o.rank),
                "verdict": VERDICT_TEXT[o.verdict],
                "layout": o.layout,
                "GPU": gpu,
                "TP": tp,
                "PP": c.pipeline_parallel_size,
                "weights": c.weights,
                "KV cache": c.kv_cache_dtype,
                "replicas": f"≥ {least:,}" if least else display.count(o.replicas),
                "GPUs": _gpus(o, least),
                "$/hour": f"≥ {o.least_usd_per_hour:,.2f}"
                if least and o.least_usd_per_hour is not None
                else display.number(o.usd_per_hour, 2),
                "$/M output tokens": display.number(o.usd_per_million_output_tokens, 3),
                "why": o.reason or ("the cheapest" if o.rank == 1 else ""),
                "p99 TTFT (ms)": display.number(o.at_size_ms("ttft", "p99"), 0),
                "p99 TPOT (ms)": display.number(o.at_size_ms("tpot", "p99"), 1),
                "p50 TTFT (ms)": display.number(o.at_size_ms("ttft", "p50"), 0),
                "p50 TPOT (ms)": display.number(o.at_size_ms("tpot", "p50"), 1),
                "SLO values checked": _checked(o),
                "req/s per replica": _capacity(o),
                "$/GPU-hour": display.number(o.price.usd_per_hour, 2),
                "checkpoint": c.model,
            }
        )
    return pd.DataFrame(rows)


def headline(option: SizingOption, target_rate: float) -> list[tuple[str, str, str]]:
    """``(label, value, help)`` tiles of the answer: replicas, GPUs, cost per hour and per million tokens, p99 TTFT
    and TPOT at the chosen size."""
    replicas = option.replicas or 1
    first = [
        ("replicas", f"{replicas:,}", f"of {option.config.label}, behind a load balancer"),
        ("GPUs in all", display.count(option.num_gpus), f"{option.config.num_gpus} per replica"),
    ]
    if option.prefill is not None and option.decode is not None:  # a prefill/decode layout
        p, d = option.prefill, option.decode
        first = [
            ("prefill + decode", option.layout, f"prefill: {p.config.label}; decode: {d.config.label}"),
            ("GPUs in all", display.count(option.num_gpus), f"{p.num_gpus} prefill, {d.num_gpus} decode"),
        ]
    where = f"predicted at {target_rate / replicas:.3g} req/s per replica"
    price = f"at ${option.price.usd_per_hour:,.2f} per GPU-hour"
    if option.prefill is not None:
        where, price = f"predicted at {target_rate:.3g} req/s", option.fleet_text
    return [
        *first,
        ("$/hour", display.number(option.usd_per_hour, 2), price),
        (
            "$/M output tokens",
            display.number(option.usd_per_million_output_tokens, 3),
            "at the target rate: cost per hour over output tokens per hour",
        ),
        ("p99 TTFT (ms)", display.number(option.at_size_ms("ttft", "p99"), 0), where),
        ("p99 TPOT (ms)", display.number(option.at_size_ms("tpot", "p99"), 1), where),
    ]


def pareto_figure(points: Sequence[ParetoPoint], *, cost: bool = False, chosen: str | None = None) -> go.Figure:
    """Tokens/s per user (x) against tokens/s per GPU (y), or against USD per million output tokens with ``cost``.

    Args:
        points: :func:`planner.sizing.pareto.pareto_points`.
        cost: the cost view (points without a price are left out).
        chosen: the label of the chosen configuration, whose points are outlined.

    Returns:
        The figure: one trace per GPU (filled: meets the SLOs; hollow: misses one), the frontier as a line.
    """
    fig = go.Figure()
    shown = [p for p in points if not cost or p.usd_per_million_output_tokens is not None]
    gpus = list(dict.fromkeys(p.gpu_id for p in shown))
    for k, gpu in enumerate(gpus):
        group = [p for p in shown if p.gpu_id == gpu]
        color = series_color(k)
        fig.add_trace(
            go.Scatter(
                x=[p.tokens_per_s_per_user for p in group],
                y=[p.usd_per_million_output_tokens if cost else p.tokens_per_s_per_gpu for p in group],
                mode="markers",
                name=gpu,
                marker={
                    "color": ["rgba(0,0,0,0)" if not p.meets_slo else color for p in group],
                    "line": {
                        "color": ["#222" if chosen and p.label == chosen else color for p in group],
                        "width": 1.5,
                    },
                    "size": [15 if chosen and p.label == chosen else 12 if p.rank else 9 for p in group],
                    "symbol": ["star" if p.rank else "circle" for p in group],
                },
                customdata=[
                    [p.label, f"{p.rate:.3g}", "meets" if p.meets_slo else "misses", p.rank or "–"] for p in group
                ],
                hovertemplate="<b>%{customdata[0]}</b><br>%{customdata[1]} req/s per replica: %{customdata[2]} the "
                "SLOs<br>rank %{customdata[3]}<br>%{x:,.0f} tok/s per user<br>"
                + ("$%{y:,.3f} per M output tokens" if cost else "%{y:,.0f} tok/s per GPU")
                + "<extra></extra>",
            )
        )
    edge = [shown[i] for i in frontier(shown, cost=cost)]
    if edge:
        fig.add_trace(
            go.Scatter(
                x=[p.tokens_per_s_per_user for p in edge],
                y=[p.usd_per_million_output_tokens if cost else p.tokens_per_s_per_gpu for p in edge],
                mode="lines",
                name="Pareto frontier",
                line={"color": "#444", "dash": "dot", "width": 1.5},
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        xaxis_title="output tokens/s per user (1 / median TPOT)",
        yaxis_title="USD per million output tokens" if cost else "output tokens/s per GPU",
        legend_title_text="GPU (hollow: misses an SLO; ★ ranked, outlined: chosen)",
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        height=430,
    )
    if cost:
        fig.update_yaxes(type="log")
    return fig


def prices_frame(gpus: Sequence[GPU], prices: Sequence[tuple[str, float]] = ()) -> pd.DataFrame:
    """The price of each GPU with its source and date (the user's prices marked), for an editable table: columns
    ``gpu``, ``USD per GPU-hour`` (None without a price), ``source``, ``date``."""
    given = dict(prices)
    rows = []
    for gpu in gpus:
        price = price_of(gpu, given.get(gpu.id))
        rows.append(
            {
                "gpu": gpu.id,
                "USD per GPU-hour": price.usd_per_hour,
                "source": price.source or "no public price: type one",
                "date": display.text(price.date),
            }
        )
    return pd.DataFrame(rows)
