"""planner.sizing.pareto: the frontier of hand-placed points (``vllm bench sweep plot_pareto``'s sweep), and the
points of a search's simulations."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planner.sizing.options import SizingOption
from planner.sizing.pareto import ParetoPoint, frontier, pareto_points
from planner.sizing.prices import GpuPrice
from tests.unit.sizing.test_options import H100, _probe


def _point(label: str, per_user: float, per_gpu: float, usd: float | None) -> ParetoPoint:
    return ParetoPoint(label, "h100", 1.0, per_user, per_gpu, usd, True)


#: B (50, 900), A (100, 500), D (120, 200) trade off; C (80, 400) is beaten by A on both axes.
POINTS = (
    _point("A", 100, 500, 0.5),
    _point("B", 50, 900, 0.3),
    _point("C", 80, 400, 0.6),
    _point("D", 120, 200, None),
)


def test_the_frontier_keeps_what_nothing_beats_on_both_axes() -> None:
    assert [POINTS[i].label for i in frontier(POINTS)] == ["B", "A", "D"]  # ordered by tokens/s per user


def test_the_cost_frontier_leaves_unpriced_points_out() -> None:
    # more tokens/s per user and fewer USD: A (100, $0.5) and B (50, $0.3); C costs more than A for less; D no price
    assert [POINTS[i].label for i in frontier(POINTS, cost=True)] == ["B", "A"]
    assert frontier(()) == ()


def test_points_of_the_simulations_that_keep_up() -> None:
    # two simulations of 2 GPUs at $2.99: 6 req/s of 300 output tokens met the SLOs, 9 req/s did not
    met, missed = _probe(6.0, 0.400, 0.030), _probe(9.0, 0.900, 0.045)
    stalled = _probe(12.0, 2.0, 0.050)
    stalled = SimpleNamespace(**{**stalled.__dict__, "queue_growth": 50, "keeps_up": False,
                                 "tokens_per_s_per_user": 20.0})  # fmt: skip
    option = SizingOption(H100, "meets", None, GpuPrice(2.99), probes=((met, True), (missed, False), (stalled, False)),
                          rank=1)  # fmt: skip
    result = SimpleNamespace(settings=SimpleNamespace(output_len=300), options=(option,), coefficients=None)
    progress = []
    points = pareto_points(result, on_progress=lambda f, text: progress.append((f, text)))  # type: ignore[arg-type]
    assert [(p.rate, p.meets_slo, p.rank) for p in points] == [(6.0, True, 1), (9.0, False, 1)]  # a growing queue: out
    first = points[0]
    assert first.tokens_per_s_per_user == pytest.approx(1 / 0.030)  # 1 / median TPOT
    assert first.tokens_per_s_per_gpu == pytest.approx(6 * 300 / 2)  # 900 tokens/s per GPU
    # $5.98/h over 6 × 300 × 3,600 = 6.48 M tokens/h
    assert first.usd_per_million_output_tokens == pytest.approx(2 * 2.99 / 6.48)
    assert first.label == H100.label and progress == [(1.0, "Done")]  # nothing to explore without a shape
