"""Load Test's results area (planner/views/loadtest_results.py): the results as text and the planned-vs-measured KV
table. Figures from vLLM's own result file of the H200 EAGLE-3 run (bench/data/h200_sweeps/README.md) or worked by
hand."""

from __future__ import annotations

from pathlib import Path

from planner.loadtest.results import import_runs
from planner.serving.server_metrics import MeasuredKV
from planner.views import loadtest_results as shown_view

ROOT = Path(__file__).resolve().parents[3]
EAGLE3 = ROOT / "bench/data/h200_sweeps/llama-3.1-8b-eagle3/in512_c1.json.gz"


def test_results_as_text_from_vllms_own_file():
    # 333 of 543 draft tokens accepted over 181 drafts: 61.3%, mean acceptance length 1 + 333/181 = 2.84
    runs = list(import_runs(EAGLE3.read_bytes(), "in512_c1.json"))
    results = shown_view.results_view(runs)
    (spec,) = [s for s in results.sections if s.key == "spec"]
    (row,) = spec.table.to_dict(orient="records")
    assert (row["acceptance_rate"], row["mean_acceptance_length"], row["per_position_acceptance"]) == (
        "61.3%",
        "2.84",
        "n/a",
    )
    assert list(results.runs["run"]) == [runs[0].label] and results.figure is not None


def test_kv_table_compares_the_plan_with_what_the_server_reports():
    # plan 36,864 tokens against 32,768 reported: (36,864 − 32,768) / 32,768 = +12.5%
    measured = {"a": MeasuredKV(source="vllm:cache_config_info", kv_capacity_tokens=32_768), "b": None}
    kv = shown_view.kv_view(measured, 36_864, [], None)
    assert kv.table.to_dict(orient="records") == [
        {
            "endpoint": "a",
            "served model": "n/a",
            "measured KV tokens": "32,768",
            "planned KV tokens": "36,864",
            "(plan − measured) / measured": "+12.5%",
            "source": "vllm:cache_config_info",
        },
        {
            "endpoint": "b",
            "served model": "n/a",
            "measured KV tokens": "n/a",
            "planned KV tokens": "36,864",
            "(plan − measured) / measured": "n/a",
            "source": "n/a",
        },
    ]
    assert kv.warnings == ()
