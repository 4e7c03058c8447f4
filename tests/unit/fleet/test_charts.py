"""The Fleet page's table and figures, from a small simulated fleet."""

from __future__ import annotations

import pytest

from planner.fleet.charts import hit_rate_figure, load_figure, policies_table, ttft_figure
from planner.fleet.simulation import simulate_fleet
from tests.unit.fleet.test_simulation import _conversation_and_two_requests
from tests.unit.predict.conftest import TEN_MS, tiny_shape


@pytest.fixture(scope="module")
def runs():
    requests = _conversation_and_two_requests()
    return [
        simulate_fleet(tiny_shape(), requests, replicas=2, router=r, coefficients=TEN_MS)
        for r in ("round_robin", "prefix_aware")
    ]


def test_table_row_per_policy(runs) -> None:
    table = policies_table(runs)
    assert table["router"].tolist() == ["round_robin", "prefix_aware"]
    # hand-worked in test_simulation: 48 and 144 of 272 prompt tokens hit
    assert table["prefix-cache hit rate"].tolist() == [f"{48 / 272:.1%}", f"{144 / 272:.1%}"]
    assert table["requests per replica"].tolist() == ["3 · 2", "4 · 1"]


def test_figures(runs) -> None:
    ttft = ttft_figure(runs)
    assert [t.name for t in ttft.data] == ["round_robin", "prefix_aware"]
    assert ttft.data[0].y[-1] == pytest.approx(1.0)
    hits = hit_rate_figure(runs)
    assert list(hits.data[0].y) == pytest.approx([48 / 272, 144 / 272])
    load = load_figure(runs)
    assert [list(t.y) for t in load.data] == [[3, 2], [4, 1]]
