"""Sizing: what the page shows, as frozen data: the settings its widgets hold, the prices typed into its table, the
answer (verdict, tiles, the launch command and what it is predicted to serve), the ranked table and the Pareto views.

The page reads its widgets, calls these and draws the answer. Numbers become text in this module's private helper
``_rate`` (``3 s.f.`` request rates) and in :mod:`planner.sizing.charts`' table builders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from planner import display, fields
from planner.catalog.gpus import GPU
from planner.errors import PlannerError
from planner.metrics.slo import format_slos, parse_slos
from planner.sizing.charts import OPTIONS_HEADLINE, VERDICT_TEXT, headline, options_table, pareto_figure, prices_frame
from planner.sizing.estimate import describe_estimate
from planner.sizing.options import SizingOption, SizingResult
from planner.sizing.pareto import ParetoPoint
from planner.sizing.settings import DEFAULT, DEFAULT_NODE_GPUS, SizingSettings

__all__ = [
    "OPTIONS_HEADLINE",
    "PARETO_CAPTION",
    "Answer",
    "Built",
    "Pareto",
    "Table",
    "answer",
    "build_settings",
    "options",
    "pareto",
    "price_table",
    "typed_prices",
    "widget_values",
]

#: What a Pareto view's points are, over the charts.
PARETO_CAPTION = (
    "Each point: one replica simulated at one request rate — the search's own simulations and, for each priced GPU, "
    "its most promising configuration at 25%, 50% and 85% of its rate bound. Filled: meets every SLO; hollow: "
    "misses one; ★: a ranked option. The dotted line is the frontier: no point beats it on both axes."
)


def _rate(value: float) -> str:
    """A request rate to 3 significant figures: ``12.5``, ``0.123``."""
    return f"{value:.3g}"


def widget_values(settings: SizingSettings, catalog_gpus: Iterable[str]) -> dict[str, Any]:
    """What each widget holds for ``settings`` (field name → value): the SLOs as text, the catalog GPUs among the
    settings' (a list), one GPUs-per-node figure for them, the lists as lists."""
    known = set(catalog_gpus)
    values = {d.name: fields.get(settings, d.name) for d in fields.declared(SizingSettings)}
    values |= {
        "slos": format_slos(settings.slos).replace(",", ", "),
        "gpus": [g for g in settings.gpus if g in known],
        "node_gpus": min((n for _, n in settings.node_gpus), default=DEFAULT_NODE_GPUS),
        "quantizations": list(settings.quantizations),
        "kv_cache_dtypes": list(settings.kv_cache_dtypes),
    }
    return values


def typed_prices(
    edited: pd.DataFrame, searched: Sequence[GPU], kept: Sequence[tuple[str, float]]
) -> tuple[tuple[str, float], ...]:
    """The prices the reader gave: those typed in the price table (``edited``, :func:`price_table`'s columns) that
    are not the catalog's, and those kept from before for GPUs the table does not list."""
    catalog = {g.id: g.price_usd_per_hour for g in searched}
    typed = []
    for _, row in edited.iterrows():
        value, listed = row["USD per GPU-hour"], catalog[row["gpu"]]
        if pd.notna(value) and (listed is None or abs(float(value) - listed) > 1e-9):
            typed.append((row["gpu"], float(value)))
    return tuple([(g, p) for g, p in kept if g not in catalog] + typed)


def price_table(searched: Sequence[GPU], prices: Sequence[tuple[str, float]]) -> pd.DataFrame:
    """The editable price table of the GPUs searched (:func:`planner.sizing.charts.prices_frame`)."""
    return prices_frame(searched, prices)


@dataclass(frozen=True)
class Built:
    """The settings the widgets hold, or why they hold none (then the last good ones are used)."""

    settings: SizingSettings | None
    problem: str | None = None


def build_settings(values: Mapping[str, Any], slo_text: str, node: int) -> Built:
    """The settings of the widgets' ``values`` (field name → value), the SLO text and the GPUs per node of the GPUs
    chosen (the default size writes no node size).

    Args:
        values: field name → widget value (lists for the list fields).
        slo_text: the SLO box's text, ``ttft_p99_ms=1000, tpot_p99_ms=50``.
        node: GPUs per node of every chosen GPU.
    """
    if not slo_text.strip():  # said in the box's own terms, not as the settings field's empty tuple
        return Built(None, "the SLOs box is empty: type at least one SLO, e.g. ttft_p99_ms=1000, tpot_p99_ms=50")
    try:
        gpus = tuple(values["gpus"])
        given = dict(values) | {
            "model": str(values["model"] or DEFAULT.model),
            "slos": parse_slos([slo_text]),
            "gpus": gpus,
            "node_gpus": tuple((g, node) for g in gpus) if node != DEFAULT_NODE_GPUS else (),
            "quantizations": tuple(values["quantizations"]),
            "kv_cache_dtypes": tuple(values["kv_cache_dtypes"]),
        }
        return Built(fields.replace(DEFAULT, **given))
    except PlannerError as exc:
        return Built(None, str(exc))


@dataclass(frozen=True)
class Answer:
    """The answer above the inputs.

    Attributes:
        verdict: the search's answer, one sentence; ``ok``: a configuration meets the SLOs.
        checked_at: what the SLO checks stand on (the band's worse end or the point estimate), with the widget that
            changes it.
        tiles: ``(label, value, help)`` of the chosen row: replicas, GPUs, cost, p99 TTFT and TPOT.
        rows: the ranked rows a launch command can be shown for, and each row's label.
        command: the chosen row's launch command; None when nothing is ranked.
        serves: what one replica of the chosen row is predicted to serve (a prefill/decode row: how its pools run).
        files: the chosen row's deployment files, ``(button label, file name, text)`` per target it has files for.
        counts: the configurations by verdict, the simulations and the coefficients.
        notes: the search's notes.
    """

    verdict: str
    ok: bool
    checked_at: str
    tiles: tuple[tuple[str, str, str], ...]
    rows: Mapping[int, str]
    command: str | None
    serves: str | None
    counts: str
    notes: tuple[str, ...]
    files: tuple[tuple[str, str, str], ...] = ()


def _serves(chosen: SizingOption) -> str:
    """What one replica of ``chosen`` is predicted to serve, and where it is predicted to miss; for a prefill/decode
    layout, how its pools run."""
    if chosen.prefill is not None:
        return (
            f"Run {chosen.layout} (prefill and decode instances, vLLM's NIXL connector) behind a P/D-aware router "
            f"(llm-d, the production-stack router's disaggregated_prefill); the KV transfer takes "
            f"{display.ms(chosen.kv_transfer_s)} a request."
        )
    missed = [p.rate for p, met in chosen.probes if not met]
    if missed:
        tail = f" and to miss them at {_rate(min(missed))} req/s"
    elif chosen.replica_rate_limit:
        tail = f" (at most {_rate(chosen.replica_rate_limit)} req/s by the step model's bound)"
    else:
        tail = ""
    return (
        f"Run {chosen.replicas} replica(s) of this command behind a load balancer; each is predicted to meet the "
        f"SLOs up to at least {_rate(chosen.replica_rate)} req/s{tail}."
    )


def answer(result: SizingResult, settings: SizingSettings, row: int) -> Answer:
    """The answer of ``result`` with the ranked row ``row`` (1 = the cheapest) chosen."""
    estimate = fields.widget(SizingSettings, "slo_estimate")
    checked_at = describe_estimate(settings.slo_estimate, switch=f'"{estimate.label}: {{}}" below')
    ranked = result.ranked
    rows = {o.rank: f"#{o.rank}: {o.summary}, ${o.usd_per_hour:,.2f}/h" for o in ranked}
    chosen = ranked[row - 1] if result.best is not None and 1 <= row <= len(ranked) else None
    counts = result.counts()
    count_text = (
        f"{len(result.options):,} configurations: "
        + ", ".join(f"{n} {VERDICT_TEXT[k]}" for k, n in counts.items() if n)
        + f" · {result.probes_run} simulations in {result.elapsed_s:.2f} s · coefficients: {result.calibration}."
    )
    return Answer(
        verdict=result.answer,
        ok=result.best is not None,
        checked_at=checked_at,
        tiles=tuple(headline(chosen, settings.target_rate)) if chosen is not None else (),
        rows=rows if chosen is not None else {},
        command=chosen.launch_command if chosen is not None else None,
        serves=_serves(chosen) if chosen is not None else None,
        counts=count_text,
        notes=tuple(f"Note: {note}." for note in result.notes),
        files=_files(chosen) if chosen is not None else (),
    )


def _files(chosen: SizingOption) -> tuple[tuple[str, str, str], ...]:
    """The chosen row's deployment files (:meth:`planner.sizing.options.SizingOption.deployment_files`)."""
    return tuple(
        (f"{target}: {name}", f"{target}-{name}", text)
        for target in chosen.deployment_targets
        for name, text in chosen.deployment_files(target).items()
    )


@dataclass(frozen=True)
class Table:
    """Every configuration, cheapest first: the table, the verdicts it holds (the first three shown by default), the
    columns shown first (``layout`` only when a row is disaggregated: the rest fold into "All N columns") and the
    downloads' contents."""

    table: pd.DataFrame
    verdicts: tuple[str, ...]
    csv: str
    json: str
    headline: tuple[str, ...] = OPTIONS_HEADLINE


def options(result: SizingResult) -> Table:
    """The ranked table of ``result`` with its downloads."""
    import json

    table = options_table(result)
    verdicts = tuple(VERDICT_TEXT[v] for v, n in result.counts().items() if n)
    aggregated = len(table) == 0 or bool((table["layout"] == "aggregated").all())
    headline = tuple(c for c in OPTIONS_HEADLINE if not (aggregated and c == "layout"))
    return Table(table, verdicts, table.to_csv(index=False), json.dumps(result.to_json(), indent=2), headline)


@dataclass(frozen=True)
class Pareto:
    """The Pareto views: per GPU and per cost; the points as CSV. ``empty``: why there is nothing to draw."""

    per_gpu: go.Figure | None
    per_cost: go.Figure | None
    csv: str
    empty: str | None = None


def pareto(points: Sequence[ParetoPoint], result: SizingResult, row: int) -> Pareto:
    """The Pareto views of ``points`` with the chosen row's configuration starred."""
    from dataclasses import asdict

    if not points:
        empty = "No simulated operating point to draw: no priced configuration fits and meets its latency floors."
        return Pareto(None, None, "", empty)
    ranked = result.ranked
    label = ranked[row - 1].config.label if ranked and 1 <= row <= len(ranked) else None
    csv = pd.DataFrame([asdict(p) for p in points]).to_csv(index=False)
    return Pareto(pareto_figure(points, chosen=label), pareto_figure(points, cost=True, chosen=label), csv)
