"""The Performance page with AppTest: predicted curves for the default scenario, its link, bad links and the empty
states (a scenario that does not fit, an engine the simulator does not model, a workload too large for a page)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.links import performance as perf_links

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "performance.py")
TIMEOUT_S = 60


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _chart_names(at: AppTest) -> set[str]:
    import json

    (chart,) = at.get("plotly_chart")
    return {trace.get("name") for trace in json.loads(chart.proto.spec)["data"]}


def test_default_scenario_gets_its_curves():
    at = _app()
    assert not at.exception and not at.warning and not at.error
    metrics = _metrics(at)
    at_top = ("Throughput @ c=256", "Median TPOT @ c=256", "Median TTFT @ c=256")
    assert list(metrics) == ["Knee", *at_top, "KV cache full at"]
    # Llama 3.1 8B on one H100, 512 in / 128 out: throughput in the thousands of tok/s at 256 in flight
    tok_s = float(metrics["Throughput @ c=256"].removesuffix(" tok/s").replace(",", ""))
    assert 2_000 < tok_s < 20_000
    label = "1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · vllm"
    assert label in _chart_names(at)
    table = at.dataframe[0].value
    assert table["concurrency"].tolist() == ["1", "2", "4", "8", "16", "32", "64", "128", "256"]
    assert any("Coefficients: default coefficients" in c.value for c in at.caption)
    assert dict(at.query_params) == {}  # the default page has an empty link
    assert {b.label for b in at.get("download_button")} == {"Download points (CSV)"}


def test_each_curve_and_figure_has_its_error_band():
    at = _app()
    assert not at.exception
    label = "1 · Llama-3.1-8B-Instruct · h100-sxm-80gb · vllm"
    assert f"{label} band" in _chart_names(at)
    deltas = {m.label: m.delta for m in at.metric}
    for name in ("Throughput @ c=256", "Median TPOT @ c=256", "Median TTFT @ c=256"):
        assert deltas[name].startswith("band ") and "–" in deltas[name], deltas
    assert not deltas["Knee"] and not deltas["KV cache full at"]
    assert any(
        c.value.startswith(
            'Shaded around each curve, "band" under the figures and (low–high) in the table: the predictor'
        )
        for c in at.caption
    )
    table = at.dataframe[0].value
    assert all(re.fullmatch(r"[\d,.]+ \([\d,.]+–[\d,.]+\)", v) for v in table["median TPOT (ms)"]), table


def test_link_round_trips_the_workload_and_the_scenarios():
    at = _app(gpu="h200-sxm-141gb", max_model_len="8192", input_len="1024", output_len="64", sweep_max="32")
    assert not at.exception and not at.warning
    assert at.text_input(key="perf.input_len").value == "1024"
    assert at.text_input(key="perf.sweep_max").value == "32"
    assert at.dataframe[0].value["concurrency"].tolist() == ["1", "2", "4", "8", "16", "32"]
    written = {k: at.query_params[k] for k in at.query_params}
    assert written == {"gpu": "h200-sxm-141gb", "max_model_len": "8192", "input_len": "1024", "output_len": "64"} | {
        "sweep_max": "32"
    }
    decoded = perf_links.decode_link(written)
    assert decoded.warnings == () and decoded.workload.settings.input_len == 1024


def test_widgets_write_the_link():
    at = _app()
    at.text_input(key="perf.output_len").input("256").run(timeout=TIMEOUT_S)
    at.radio(key="perf.axis").set_value("rate").run(timeout=TIMEOUT_S)
    at.text_input(key="perf.rates").set_value("2, 1").run(timeout=TIMEOUT_S)
    assert not at.exception and not at.warning and not at.error
    assert {k: at.query_params[k] for k in at.query_params} == {
        "output_len": "256",
        "axis": "rate",
        "request_rate": "1,2",
    }
    assert _metrics(at)["Sustained rate"] == "2 req/s"
    assert at.dataframe[0].value["request rate (req/s)"].tolist() == ["1", "2"]


def test_bad_link_values_warn_by_name_and_keep_defaults():
    at = _app(input_len="nan", request_rate="inf", sweep_max="0", bogus="1", max_model_len="1e309")
    assert not at.exception
    shown = [w.value for w in at.warning]
    assert len(shown) == 5, shown  # one per bad parameter, unknown keys in one line
    for key in ("input_len=", "request_rate=", "sweep_max=", "bogus", "max_model_len="):
        assert any(key in line for line in shown), key
    assert at.text_input(key="perf.input_len").value == "512"
    assert "Knee" in _metrics(at)  # the page still answers, with the defaults
    assert "bogus" not in at.query_params


def test_bad_rates_typed_in_the_box_are_an_error_line():
    at = _app(axis="rate")
    at.text_input(key="perf.rates").set_value("1, fast").run(timeout=TIMEOUT_S)
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Cannot predict: request rates '1, fast' are not valid: expected 1 to 12 request rates in (0, 10000] req/s, "
        "comma separated, such as 1,2,4,8."
    ]


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"model": "meta-llama/Llama-3.1-70B-Instruct"}, "does not fit, so it has no performance: the weights alone"),
        ({"engine": "tgi"}, "tgi is not modelled"),
        ({"max_model_len": "256"}, "expected at most max_model_len (256 tokens)"),
    ],
)
def test_nothing_to_predict_says_why(params, reason):
    at = _app(**params)
    assert not at.exception and not at.metric
    assert any(reason in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.info and "predict" in at.info[0].value


def test_one_scenario_that_does_not_fit_leaves_the_others_drawn():
    at = _app(scenarios="2", **{"s2.model": "meta-llama/Llama-3.1-70B-Instruct"})
    assert not at.exception
    assert len(at.warning) == 1 and "Scenario 2" in at.warning[0].value
    assert len(at.metric) == 5


def test_a_workload_too_large_for_a_page_is_refused_with_the_cli_named():
    at = _app(num_prompts="10000", output_len="32768")
    assert not at.exception and not at.metric
    assert "python -m planner predict" in at.error[0].value


def test_a_results_file_uploaded_as_a_profile_is_one_line_saying_what_to_do():
    """Issue 24 item 12: a results file in the profile uploader gave pydantic's "Field required" with the file's
    first fields; now one line: a results file, and how to fit a profile on it."""
    # a real vllm bench serve result (bench/data/h200_sweeps), as its --save-result wrote it
    results = gzip.decompress((ROOT / "bench/data/h200_sweeps/llama-3.1-8b/in512_c1.json.gz").read_bytes())
    at = _app()
    (uploader,) = at.get("file_uploader")
    uploader.set_value(("run_c1.json", results, "application/json")).run(timeout=TIMEOUT_S)
    assert not at.exception
    (shown,) = [e.value for e in at.error]
    assert shown.startswith("run_c1.json not used: run_c1.json: a results file (1 run(s) of vllm bench serve")
    assert "python -m planner calibrate run_c1.json --out profile.json" in shown
    assert "\n" not in shown and "Field required" not in shown
    assert any("Coefficients: default coefficients" in c.value for c in at.caption)  # the page predicts on
