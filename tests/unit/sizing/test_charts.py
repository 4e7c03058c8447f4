"""planner.sizing.charts: the options table, the answer's tiles, the Pareto figure and the price table, on options
built by hand (tests/unit/sizing/test_options.py)."""

from __future__ import annotations

from planner.catalog.gpus import get_gpu
from planner.sizing.charts import OPTIONS_HEADLINE, headline, options_table, pareto_figure, prices_frame
from planner.sizing.options import SizingOption, SizingResult
from planner.sizing.prices import GpuPrice
from planner.sizing.settings import SizingSettings
from tests.unit.sizing.test_options import AWQ, _meets
from tests.unit.sizing.test_pareto import POINTS


def test_the_options_table_as_shown() -> None:
    bound = SizingOption(AWQ, "not_searched", "cannot beat the cheapest", GpuPrice(0.75), least_replicas=3,
                         least_usd_per_hour=2.25)  # fmt: skip
    table = options_table(SizingResult(SizingSettings(), (_meets(), bound), "x"))
    assert set(OPTIONS_HEADLINE) <= set(table.columns)
    best, other = table.to_dict("records")
    assert (best["rank"], best["verdict"], best["replicas"], best["GPUs"], best["$/hour"]) == (
        "1",
        "meets the SLOs",
        "4",
        "8",
        "23.92",
    )
    assert (best["why"], best["p99 TTFT (ms)"], best["p99 TPOT (ms)"], best["req/s per replica"]) == (
        "the cheapest",
        "300",
        "25.0",
        "≥ 6 (< 9)",
    )
    assert best["SLO values checked"] == "ttft_p99_ms=600.0, tpot_p99_ms=36.0"  # 400 × 1.5, 30 × 1.2
    # a bound, not a count: at least 3 replicas of 1 GPU, at least $2.25 an hour; unknown figures are n/a
    assert (other["rank"], other["replicas"], other["GPUs"], other["$/hour"], other["p99 TTFT (ms)"]) == (
        "",
        "≥ 3",
        "≥ 3",
        "≥ 2.25",
        "n/a",
    )
    assert len(options_table(SizingResult(SizingSettings(), (_meets(), bound), "x"), limit=1)) == 1


def test_the_answers_tiles() -> None:
    tiles = headline(_meets(), target_rate=20.0)
    assert [label for label, _, _ in tiles] == ["replicas", "GPUs in all", "$/hour", "$/M output tokens",
                                                "p99 TTFT (ms)", "p99 TPOT (ms)"]  # fmt: skip
    assert tiles[0] == ("replicas", "4", "of H100 80GB SXM5 · TP 2 · fp8 · KV fp8, behind a load balancer")
    assert tiles[2] == ("$/hour", "23.92", "at $2.99 per GPU-hour")
    assert tiles[4] == ("p99 TTFT (ms)", "300", "predicted at 5 req/s per replica")  # 20 req/s over 4 replicas


def test_the_pareto_figure() -> None:
    fig = pareto_figure(POINTS, chosen="A")
    gpu, edge = fig.data
    assert list(gpu.x) == [100, 50, 80, 120] and list(gpu.y) == [500, 900, 400, 200]
    assert list(edge.x) == [50, 100, 120] and edge.name == "Pareto frontier"
    assert list(gpu.marker.size) == [15, 9, 9, 9]  # the chosen configuration's point, outlined; no rank here
    cost = pareto_figure(POINTS, cost=True)
    assert list(cost.data[0].y) == [0.5, 0.3, 0.6] and cost.layout.yaxis.type == "log"  # D has no price


def test_the_price_table_marks_the_users_prices() -> None:
    table = prices_frame([get_gpu("h100"), get_gpu("h200")], prices=[("h200-sxm-141gb", 3.5)])
    h100, h200 = table.to_dict("records")
    assert (h100["gpu"], h100["USD per GPU-hour"], h100["date"]) == ("h100-sxm-80gb", 2.99, "n/a")
    assert (h200["USD per GPU-hour"], h200["source"]) == (3.5, "your price")
    bare = prices_frame([get_gpu("h200")]).to_dict("records")[0]
    assert (bare["USD per GPU-hour"], bare["source"]) == (None, "no public price: type one")
