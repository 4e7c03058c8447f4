"""The Load Test page's view (planner/views/loadtest.py): the settings its widgets hold, the runs they plan and the
run history. Values worked by hand, or from vLLM's own result file of the H200 EAGLE-3 run
(bench/data/h200_sweeps/README.md)."""

from __future__ import annotations

import math
from pathlib import Path

from planner import fields
from planner.loadtest.settings import DEFAULT
from planner.serving.endpoints import Endpoint
from planner.views import loadtest as view

ROOT = Path(__file__).resolve().parents[3]
EAGLE3 = ROOT / "bench/data/h200_sweeps/llama-3.1-8b-eagle3/in512_c1.json.gz"


def _values(**changes: object) -> dict[str, object]:
    """The widget values of the default settings, with ``changes``."""
    names = [d.name for d in fields.declared(type(DEFAULT)) if d.name != "goodput_ms"]
    return {name: fields.get(DEFAULT, name) for name in names} | changes


def test_settings_from_widgets_and_a_goodput_text_to_fix():
    built = view.build_settings(_values(num_prompts=8, sweep_max=4), "ttft:500")
    assert built.error is None and built.settings.num_prompts == 8 and built.settings.sweep.sweep_max == 4
    assert built.settings.goodput_ms == (("ttft", 500.0),)
    bad = view.build_settings(_values(), "ttft")  # kept as typed; the settings carry no SLO until it is fixed
    assert bad.settings is not None and bad.settings.goodput_ms == () and bad.error.startswith("goodput SLOs 'ttft'")
    refused = view.build_settings(_values(dataset_name="prefix_repetition", num_prompts=5), "")
    assert refused.settings is None and "num_prefixes" in refused.error


def test_planned_runs_say_how_many_and_how_long():
    settings = view.build_settings(_values(mode="sweep", sweep_max=4, ignore_eos=True), "").settings
    endpoints = [Endpoint("a", "vllm", "http://127.0.0.1:9"), Endpoint("b", "tgi", "http://127.0.0.1:9")]
    planned = view.plan_runs(endpoints, settings, (), (), None)
    # levels 1, 2, 4 on two endpoints: 6 runs of max(32, 4 × level) = 32, 32, 32 requests each; 6 × 300 s = 30 min
    assert len(planned.jobs) == 6 and planned.error is None
    assert planned.caption == (
        "6 run(s), 192 measured requests at most, each run capped at 300 s (≤ 30 min in all). "
        "ignore_eos is not sent to tgi endpoints."
    )
    assert view.plan_runs(endpoints, DEFAULT, (), (), "fix the SLOs").error == "fix the SLOs"


def test_history_imports_once_by_label_and_shows_new_runs():
    runs: list = []
    history = view.History(runs, {})
    raw = EAGLE3.read_bytes()
    (first,) = history.import_files([("in512_c1.json", raw)])
    (again,) = history.import_files([("in512_c1.json", raw)])
    assert first == (True, "in512_c1.json: 1 run(s) added.")
    assert again == (True, "in512_c1.json: 0 run(s) added; 1 already shown (same label) left out.")
    assert history.import_files([("bad.json", b"{oops")])[0][0] is False
    label = runs[0].label
    assert history.labels_to_show(None) == [label]  # a new run is shown
    assert history.labels_to_show([]) is None  # nothing changed: the reader's choice (none) stands
    assert history.selected([label]) == runs


def test_a_burst_rate_is_the_default():
    assert math.isinf(view.build_settings(_values(), "").settings.request_rate)
