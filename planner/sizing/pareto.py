"""The Pareto view of a sizing search: tokens/s per user against tokens/s per GPU, and against cost per token.

Each point is one replica of one configuration simulated at one request rate (:mod:`planner.sizing.probe`), as
``vllm bench sweep plot_pareto`` plots one point per measured run (``vllm/benchmarks/sweep/plot_pareto.py``, v0.24:
``tokens_per_gpu = output_throughput / gpu_count``, the frontier of the runs no other beats on both axes):

* **tokens/s per user** = 1 / median TPOT: how fast one request's answer streams (interactivity);
* **tokens/s per GPU** = ``rate · output_len / GPUs of the replica``: what each GPU delivers at that load (a probe
  that keeps up serves its offered rate; one whose queue grows is no operating point and is left out);
* **USD per million output tokens** = ``price · GPUs / (rate · output_len · 3600) · 10⁶`` at that load.

The points are the search's own simulations, plus :func:`pareto_points`' exploration: for each priced GPU searched,
its configuration with the lowest cost bound simulated at :data:`LOADS` of its rate bound, so every GPU type shows
its trade-off (the search itself simulates only configurations that can win).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner.sizing.options import SizingOption, SizingResult
from planner.sizing.prices import usd_per_million_output_tokens
from planner.sizing.probe import Probe
from planner.sizing.search import replica_verdict

__all__ = ["LOADS", "ParetoPoint", "frontier", "pareto_points"]

#: Fractions of a configuration's rate bound the exploration simulates.
LOADS: tuple[float, ...] = (0.25, 0.5, 0.85)


@dataclass(frozen=True)
class ParetoPoint:
    """One replica of one configuration at one request rate.

    Attributes:
        label: the configuration (:attr:`planner.sizing.search.Configuration.label`).
        gpu_id: its GPU.
        rate: the replica's request rate, req/s.
        tokens_per_s_per_user: 1 / median TPOT.
        tokens_per_s_per_gpu: ``rate · output_len / GPUs``.
        usd_per_million_output_tokens: cost per token at that load; None without a price.
        meets_slo: the simulation met every SLO (at the end of the error band the search checked,
            :func:`planner.sizing.search.replica_verdict`).
        rank: the configuration's rank when it is a ranked option; None otherwise.
    """

    label: str
    gpu_id: str
    rate: float
    tokens_per_s_per_user: float
    tokens_per_s_per_gpu: float
    usd_per_million_output_tokens: float | None
    meets_slo: bool
    rank: int | None = None


def _point(option: SizingOption, p: Probe, met: bool, output_len: int) -> ParetoPoint | None:
    per_user = p.tokens_per_s_per_user
    if per_user is None or not p.keeps_up:
        return None
    gpus = option.config.num_gpus
    usd = option.price.usd_per_hour
    return ParetoPoint(
        label=option.config.label,
        gpu_id=option.config.gpu_id,
        rate=float(p.rate),
        tokens_per_s_per_user=float(per_user),
        tokens_per_s_per_gpu=float(p.rate) * output_len / gpus,
        usd_per_million_output_tokens=(
            None if usd is None else usd_per_million_output_tokens(usd * gpus, float(p.rate), output_len)
        ),
        meets_slo=met,
        rank=option.rank,
    )


def pareto_points(
    result: SizingResult,
    *,
    loads: Sequence[float] = LOADS,
    on_progress: Callable[[float, str], object] | None = None,
) -> tuple[ParetoPoint, ...]:
    """The points of the Pareto view (module docstring): the search's simulations, and each priced GPU's most
    promising configuration at ``loads`` of its rate bound.

    Args:
        result: a finished search.
        loads: fractions (0, 1] of each explored configuration's rate bound.
        on_progress: called as ``on_progress(fraction, text)`` per simulation.

    Returns:
        The points (operating points that keep up), search first.
    """
    s = result.settings

    def verdict(o: SizingOption, rate: float) -> tuple[Probe, bool]:
        assert o.shape is not None and o.bounds is not None and o.ends is not None
        v = replica_verdict(o.shape, o.bounds, result.coefficients, s, o.ends, rate)
        return v.probe, v.met

    out = [
        point
        for o in result.options
        if o.prefill is None  # a prefill/decode layout is no replica of one configuration: not a point here
        for p, met in o.probes + ((verdict(o, o.at_size.rate),) if o.at_size is not None else ())
        if (point := _point(o, p, met, s.output_len)) is not None
    ]
    best: dict[str, SizingOption] = {}
    for o in result.options:
        if o.shape is None or o.bounds is None or o.bounds.rate_bound <= 0:
            continue
        cost = o.usd_per_hour if o.usd_per_hour is not None else o.least_usd_per_hour
        held = best.get(o.config.gpu_id)
        held_cost = None if held is None else (held.usd_per_hour or held.least_usd_per_hour)
        if cost is not None and (held_cost is None or cost < held_cost):
            best[o.config.gpu_id] = o
    todo = [(o, f) for o in best.values() for f in loads]
    for i, (o, fraction) in enumerate(todo):
        if on_progress is not None:
            on_progress(i / max(1, len(todo)), f"Simulating {o.config.label} at {fraction:.0%} of its bound")
        point = _point(o, *verdict(o, float(o.bounds.rate_bound * fraction)), s.output_len)
        if point is not None:
            out.append(point)
    if on_progress is not None:
        on_progress(1.0, "Done")
    return tuple(out)


def frontier(points: Sequence[ParetoPoint], *, cost: bool = False) -> tuple[int, ...]:
    """Indices of the points no other point beats on both axes: more tokens/s per user and more tokens/s per GPU
    (with ``cost``: more tokens/s per user and fewer USD per million tokens; unpriced points left out), ordered by
    tokens/s per user. The sweep of ``plot_pareto``'s ``_pareto_frontier``: sort by x descending, keep a point when
    its y is the best seen so far.
    """

    def y(p: ParetoPoint) -> float | None:
        if cost:
            return None if p.usd_per_million_output_tokens is None else -p.usd_per_million_output_tokens
        return p.tokens_per_s_per_gpu

    usable = [(i, p) for i, p in enumerate(points) if y(p) is not None]
    usable.sort(key=lambda ip: (-ip[1].tokens_per_s_per_user, -(y(ip[1]) or 0.0)))
    kept: list[int] = []
    best = float("-inf")
    for i, p in usable:
        value = y(p)
        assert value is not None
        if value > best:
            kept.append(i)
            best = value
    return tuple(sorted(kept, key=lambda i: points[i].tokens_per_s_per_user))
