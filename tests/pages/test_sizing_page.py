"""The Sizing page with AppTest: the answer for the default question, links that restore it (chosen row, prices),
hostile links, a bad SLO typed in, and an SLO nothing meets."""

from __future__ import annotations

import html
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "sizing.py")
TIMEOUT_S = 90
#: Two priced GPUs, one GPU a replica, the checkpoint as published: a quick search.
NARROW = {"gpus": "h100-sxm-80gb,a100-sxm4-80gb", "max_gpus": "1", "quantization": "none", "target_rate": "6"}


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_question_is_answered_first() -> None:
    at = _app()
    assert not at.exception and not at.warning and not at.error
    (answer,) = at.success
    assert " × " in answer.value and "per million output tokens" in answer.value
    metrics = _metrics(at)
    assert {"replicas", "GPUs in all", "$/hour", "$/M output tokens", "p99 TTFT (ms)", "p99 TPOT (ms)"} <= set(metrics)
    assert at.code[0].value.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct")
    assert dict(at.query_params) == {}  # the defaults are not written
    assert len(at.get("plotly_chart")) == 2  # the Pareto views


def test_link_restores_the_question_and_the_chosen_row() -> None:
    at = _app(**NARROW, row="2")
    assert not at.exception and not at.warning and not at.error
    assert at.text_input(key="size.target_rate").value == "6"
    assert at.multiselect(key="size.gpus").value == ["h100-sxm-80gb", "a100-sxm4-80gb"]
    assert at.selectbox(key="size.row").value == 2
    assert at.query_params["row"] == "2" and at.query_params["gpus"] == NARROW["gpus"]
    assert at.caption[0].value  # the page's caption, then the chosen row's
    at.selectbox(key="size.row").set_value(1).run(timeout=TIMEOUT_S)
    assert "row" not in at.query_params and at.selectbox(key="size.row").value == 1


def test_a_price_in_the_link_changes_the_cheapest() -> None:
    cheap = _app(**NARROW).success[0].value
    winner = "H100" if "H100" in cheap.split(" serves ")[0] else "A100"
    gpu = "h100-sxm-80gb" if winner == "H100" else "a100-sxm4-80gb"
    edited = _app(**NARROW, price=f"{gpu}=50")
    assert not edited.exception and not edited.warning
    assert winner not in edited.success[0].value.split(" serves ")[0]
    assert edited.query_params["price"] == f"{gpu}=50"


def test_unknown_gpus_in_the_link_warn_and_the_page_still_answers() -> None:
    at = _app(gpus="nope,l4", price="nope=1")
    assert not at.exception and not at.error
    shown = [w.value for w in at.warning]
    assert any(w.startswith("URL parameter — gpus='nope,l4' is not valid") and "unknown GPU 'nope'" in w for w in shown)
    assert any(w.startswith("URL parameter — price='nope=1' is not valid") for w in shown)
    assert at.success  # the defaults are answered
    assert "gpus" not in at.query_params and "price" not in at.query_params  # the link no longer carries them


def test_hostile_link_warns_by_name() -> None:
    at = _app(target_rate="inf", slo="p95_ttft_ms=1", price="h100=free", row="-1", bogus="1", **{"max_gpus": "x"})
    assert not at.exception
    shown = " ".join(w.value for w in at.warning)
    for key in ("target_rate", "slo", "price", "row", "max_gpus", "bogus"):
        assert key in shown, key
    assert at.success  # the defaults are answered


def test_bad_slo_typed_in_is_one_error_line() -> None:
    at = _app(**NARROW)
    at.text_input(key="size.slo").set_value("ttft_p99_ms=fast").run(timeout=TIMEOUT_S)
    assert not at.exception
    (error,) = at.error
    assert "slo='ttft_p99_ms=fast' is not valid: expected METRIC_STAT_ms=LIMIT" in error.value


def test_nothing_meets_says_what_binds() -> None:
    at = _app(**NARROW, slo="tpot_p99_ms=1")
    assert not at.exception and not at.success
    (warning,) = at.warning
    assert warning.value.startswith("No configuration meets the SLOs") and "tpot_p99_ms binds" in warning.value


def test_a_link_the_page_cannot_size_is_still_written_back_clean() -> None:
    """The link holds what the page shows even when it stops ("Cannot size"): the refused parameters leave the URL,
    so sharing or reloading it does not repeat their warnings (issue 24, found by tests/pages/test_hostile_params.py:
    the URL kept them whenever the model could not be resolved)."""
    at = _app(model="unknown-org/no-such-model", bogus="1", target_rate="nan")
    assert not at.exception
    assert any("unknown-org/no-such-model" in e.value for e in at.error)
    assert dict(at.query_params) == {"model": "unknown-org/no-such-model"}


def _estimate_caption(at: AppTest) -> str:
    (caption,) = [c.value for c in at.caption if c.value.startswith("SLOs checked against")]
    return caption


def test_the_answer_says_which_end_of_the_band_and_the_widget_switches_it() -> None:
    at = _app(**NARROW)
    assert not at.exception and at.radio(key="size.slo_estimate").value == "pessimistic"
    assert _estimate_caption(at).startswith(
        'SLOs checked against the pessimistic end of the predictor\'s error band ("SLOs checked at: point" below to '
        "use the point estimate)"
    )
    assert "slo_estimate" not in at.query_params  # the default is not written
    at.radio(key="size.slo_estimate").set_value("point").run(timeout=TIMEOUT_S)
    assert not at.exception and not at.warning
    assert _estimate_caption(at).startswith("SLOs checked against the predictor's point estimate")
    assert at.query_params["slo_estimate"] == "point"


def test_a_link_restores_the_point_estimate() -> None:
    at = _app(**NARROW, slo_estimate="point")
    assert not at.exception and not at.warning
    assert at.radio(key="size.slo_estimate").value == "point"
    assert _estimate_caption(at).startswith("SLOs checked against the predictor's point estimate")
    bad = _app(**NARROW, slo_estimate="optimistic")
    assert any(
        "slo_estimate='optimistic' is not valid: expected one of pessimistic, point" in w.value for w in bad.warning
    )
    assert bad.radio(key="size.slo_estimate").value == "pessimistic"


def test_disaggregated_layouts_join_the_ranking() -> None:
    at = _app(**NARROW, disaggregation="both", kv_cache_dtype="auto")
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "layout" in d.value.columns)
    layouts = set(table["layout"])
    assert "aggregated" in layouts and any(v.endswith("D") for v in layouts)
    assert at.query_params["disaggregation"] == "both"
    files = {b.label for b in at.get("download_button")}
    assert "kubernetes: vllm.yaml" in files and "llm-d: values.yaml" in files


def test_a_disaggregated_row_is_launched_with_both_pools() -> None:
    at = _app(**NARROW, disaggregation="on", kv_cache_dtype="auto")
    assert not at.exception and not at.error
    assert "prefill + decode" in _metrics(at)
    command = at.code[0].value
    assert "# prefill" in command and "# decode" in command and "NixlConnector" in command
    assert any("P/D-aware router" in c.value for c in at.caption)


def _headline(at: AppTest) -> list[str]:
    """The columns of the ranked table's first screen: the header cells of its HTML table (pages/_light.py)."""
    (table,) = [h.value for h in at.html if ">verdict</th>" in h.value]
    return [html.unescape(c) for c in re.findall(r"<th [^>]*>(.*?)</th>", table)]


def test_the_layout_column_is_shown_first_only_when_a_row_is_disaggregated() -> None:
    # eleven headline columns overflowed the 1400-px page by 50 px (tests/e2e/test_browser_layout.py): an all-
    # aggregated ranking folds "layout" into "All N columns"
    assert "layout" not in _headline(_app(**NARROW))
    assert "layout" in _headline(_app(**NARROW, disaggregation="both", kv_cache_dtype="auto"))


def test_a_new_question_starts_the_verdict_filter_again() -> None:
    # the new-user trial: "misses an SLO" chosen alone, the SLOs made impossible and then restored, and the table
    # listed no row that meets the SLOs, #1 included
    at = _app(**NARROW)
    (show,) = [m for m in at.multiselect if m.label == "Show"]
    assert "meets the SLOs" in show.value
    show.set_value(["costs more"]).run(timeout=TIMEOUT_S)
    (show,) = [m for m in at.multiselect if m.label == "Show"]
    assert show.value == ["costs more"]  # kept while the question stays
    slo = at.text_input(key="size.slo")
    slo.set_value("tpot_p99_ms=0.1").run(timeout=TIMEOUT_S)
    at.text_input(key="size.slo").set_value("ttft_p99_ms=1000, tpot_p99_ms=50").run(timeout=TIMEOUT_S)
    assert not at.exception
    (show,) = [m for m in at.multiselect if m.label == "Show"]
    assert "meets the SLOs" in show.value
    (table,) = [h.value for h in at.html if ">verdict</th>" in h.value]
    assert ">meets the SLOs</td>" in table
