"""The Load Test page with AppTest: empty state, links, a run and a sweep against the timed SSE server.

AppTest does not fire ``st.fragment(run_every=...)`` timers, so the tests poll with plain ``at.run()``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.capacity.scenario import Scenario
from planner.loadtest.results import import_runs
from planner.predict.calibration import load_profile

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "loadtest.py")
TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def _no_endpoints_file(monkeypatch):
    monkeypatch.delenv("LLM_PLANNER_ENDPOINTS", raising=False)
    monkeypatch.delenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", raising=False)


def _endpoints(tmp_path, monkeypatch, *entries: tuple[str, str, str]) -> None:
    """An endpoints.toml of ``(name, kind, base_url)`` entries, named in LLM_PLANNER_ENDPOINTS."""
    path = tmp_path / "endpoints.toml"
    tables = [f'[[endpoint]]\nname = "{n}"\nkind = "{k}"\nbase_url = "{u}"\n' for n, k, u in entries]
    path.write_text("\n".join(tables), encoding="utf-8")
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))


@pytest.fixture
def timed_endpoints(tmp_path, monkeypatch, timed_server, closed_port_url) -> None:
    _endpoints(tmp_path, monkeypatch, ("timed", "vllm", timed_server.url), ("down", "vllm", closed_port_url))


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _table(at: AppTest, column: str):
    """The widest table with ``column`` (AppTest does not expose dataframe keys): a wide table's every column, which
    the page folds under its headline columns (pages/_tables.py)."""
    return max((d.value for d in at.dataframe if column in d.value.columns), key=lambda frame: len(frame.columns))


def _run_to_end(at: AppTest, timeout_s: float = 60.0) -> AppTest:
    at.button(key="lt.run").click().run()
    deadline = time.monotonic() + timeout_s
    while not at.session_state["lt.current"]["run"].done:
        assert time.monotonic() < deadline, "the load test did not finish"
        time.sleep(0.2)
        at.run()
    return at.run()


def test_empty_state_explains_how_to_configure(monkeypatch):
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "0")
    at = _app()
    assert not at.exception
    assert "No endpoint is configured" in at.info[0].value
    assert "turned off" in at.info[0].value


@pytest.mark.usefixtures("timed_endpoints")
def test_link_restores_the_settings():
    at = _app(ep="timed", mode="sweep", num_prompts="6", sweep_max="4", request_rate="2.5", goodput="ttft:500")
    assert not at.exception and not at.warning
    assert at.multiselect(key="lt.endpoints").value == ["timed"]
    assert at.radio(key="lt.mode").value == "sweep"
    assert at.text_input(key="lt.num_prompts").value == "6"
    assert at.text_input(key="lt.sweep_max").value == "4"
    assert at.text_input(key="lt.request_rate").value == "2.5"
    assert at.text_input(key="lt.goodput_ms").value == "ttft:500"
    assert "3 run(s)" in " ".join(c.value for c in at.caption)  # levels 1, 2, 4
    assert at.query_params["sweep_max"] == "4"


@pytest.mark.usefixtures("timed_endpoints")
def test_ray_workers_go_into_the_run_and_stay_out_of_the_link(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "ray://10.0.0.5:10001")
    at = _app(ep="timed")
    assert at.text_input(key="lt.num_workers").value == "0"
    assert at.session_state["lt.settings"].num_workers is None  # 0: one process, no Ray
    at.text_input(key="lt.num_workers").input("3").run()
    assert not at.exception
    settings = at.session_state["lt.settings"]
    assert (settings.num_workers, settings.ray_address) == (3, "ray://10.0.0.5:10001")
    assert "num_workers" not in at.query_params and "ray_address" not in at.query_params


@pytest.mark.usefixtures("timed_endpoints")
def test_hostile_link_warns_by_name_and_keeps_defaults():
    at = _app(num_prompts="1e12", request_rate="nan", ep="http://169.254.169.254", secret_token="sk-x")
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    assert "num_prompts=" in text and "request_rate=" in text and "ep=" in text
    assert "sk-x" not in text
    assert at.text_input(key="lt.num_prompts").value == "32"


@pytest.mark.usefixtures("timed_endpoints")
def test_run_shows_results_kv_and_downloads():
    at = _app(ep="timed,down", num_prompts="4", max_concurrency="2", output_len="4")
    at = _run_to_end(at)
    assert not at.exception
    table = _table(at, "request_throughput")
    assert list(table["endpoint"]) == ["timed", "down"]
    assert list(table["completed"]) == ["4", "0"] and list(table["failed"]) == ["0", "4"]  # counts as text
    assert list(table["output_tokens_method"]) == ["usage", "n/a"]
    kv = _table(at, "measured KV tokens")
    assert kv.loc[kv["endpoint"] == "timed", "measured KV tokens"].item() == "32,768"  # 2048 blocks x 16
    labels = {b.label for b in at.get("download_button")}
    assert {"Runs (JSONL)", "Requests (CSV)", "Metrics (CSV)"} <= labels


def _in_order(at: AppTest) -> list[tuple[str, str]]:
    """Every element of the main area as ``(type, text)`` in page order."""
    out: list[tuple[str, str]] = []

    def walk(node) -> None:
        text = getattr(node, "label", None) or getattr(node, "value", None)
        out.append((type(node).__name__, text if isinstance(text, str) else ""))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    return out


@pytest.mark.usefixtures("timed_endpoints")
def test_the_answer_of_a_run_is_right_under_the_run_button():
    # issue 24: the result landed below the fold, so after Run the first screen looked unchanged
    at = _run_to_end(_app(ep="timed,down", num_prompts="4", max_concurrency="2", output_len="4"))
    assert not at.exception
    order = _in_order(at)
    run = order.index(("Button", "Run"))
    results = next(i for i, (_, text) in enumerate(order) if text == "Results")
    answers = [
        (i, text) for i, (kind, text) in enumerate(order) if kind in ("Success", "Warning") and " completed, " in text
    ]
    assert [text.split(": ")[1].split(" · ")[0] for _, text in answers] == [
        "4 completed, 0 failed",
        "0 completed, 4 failed",
    ]
    assert answers[0][1].startswith("timed · ") and answers[1][1].startswith("down · ")
    assert all(run < i < results for i, _ in answers)
    assert [kind for i, (kind, _) in enumerate(order) if i in dict(answers)] == ["Success", "Warning"]
    # between Run and the answers only the Cancel button and layout: the answer is the next thing read
    between = [kind for kind, _ in order[run + 1 : answers[0][0]]]
    assert set(between) <= {"Button", "Column", "Block", "Fragment", "Container"}, between
    median_ttft_ms = float(answers[0][1].split("median TTFT ")[1].split(" ms")[0].replace(",", ""))
    assert 0 < median_ttft_ms < 10_000  # a sanity bound, not a timing assertion


@pytest.mark.usefixtures("timed_endpoints")
def test_sweep_draws_its_curve():
    at = _app(ep="timed", mode="sweep", num_prompts="2", sweep_max="4", output_len="4")
    at = _run_to_end(at)
    assert not at.exception
    table = _table(at, "request_throughput")
    assert list(table["max_concurrency"]) == ["1", "2", "4"]
    charts = [c for c in at.get("plotly_chart")]
    assert any("Concurrency sweep" in c.proto.spec for c in charts)


def test_saved_runs_can_be_viewed_with_no_endpoint_configured(monkeypatch, tmp_path):
    # a vllm bench serve --save-result file is worth a look before any server exists
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(tmp_path / "none.toml"))
    monkeypatch.chdir(tmp_path)
    at = _app()
    assert not at.exception
    assert "python -m planner demo-server" in at.info[0].value  # how to get a server without a GPU
    assert at.button(key="lt.run").disabled  # nothing to run
    assert any(e.label.startswith("Add earlier runs") for e in at.expander)  # the import stays reachable


# --- the prediction beside measured runs ------------------------------------------------------------------------------
def _imported_sweep() -> list:
    """Three levels of an imported sweep of Llama 3.1 8B on an H100 (vllm bench serve --save-result keys)."""
    levels = []
    for concurrency, tok_s, tpot_ms, ttft_ms in ((1, 140.0, 6.9, 35.0), (2, 275.0, 7.0, 45.0), (4, 530.0, 7.2, 60.0)):
        levels.append(
            {
                "duration": 32 * 128 / tok_s,
                "completed": 32,
                "failed": 0,
                "num_prompts": 32,
                "max_concurrency": concurrency,
                "request_rate": "inf",
                "total_input_tokens": 32 * 512,
                "total_output_tokens": 32 * 128,
                "request_throughput": tok_s / 128,
                "output_throughput": tok_s,
                "total_token_throughput": tok_s * 5,
                **{f"{stat}_tpot_ms": tpot_ms for stat in ("mean", "median", "p99")},
                **{f"{stat}_ttft_ms": ttft_ms for stat in ("mean", "median", "p99")},
                **{f"{stat}_itl_ms": tpot_ms for stat in ("mean", "median", "p99")},
                "planner_label": f"h100 c={concurrency}",
                "planner_sweep": "h100 sweep",
                "planner_endpoint": "h100",
            }
        )
    return list(import_runs(json.dumps(levels), "sweep.json"))


def _with_history(runs: list, **state: object) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    at.session_state["lt.history"] = runs
    for key, value in state.items():
        at.session_state[key] = value
    return at.run(timeout=TIMEOUT_S)


def _trace_names(at: AppTest, title: str) -> list[str]:
    chart = next(c for c in at.get("plotly_chart") if title in c.proto.spec)
    return [t.get("name") for t in json.loads(chart.proto.spec)["data"]]


@pytest.mark.usefixtures("timed_endpoints")
def test_overlay_predicts_each_run_and_recalibrate_fits_them():
    at = _with_history(_imported_sweep())
    assert not at.exception
    assert _trace_names(at, "TPOT (ms): median, p99 thin")[0] == "h100 sweep"  # measured only until overlaid
    at.toggle(key="lt.predict").set_value(True).run(timeout=TIMEOUT_S)
    assert not at.exception and not at.warning
    errors = _table(at, "output tok/s error")
    assert errors["run"].tolist() == ["h100 c=1", "h100 c=2", "h100 c=4"]
    assert all(e.endswith("%") and e[0] in "+-" for e in errors["median TPOT error"])
    runs = _table(at, "request_throughput")
    assert runs["source"].tolist() == ["imported"] * 3 + ["predicted"] * 3
    assert runs["run"].tolist()[3] == "predicted · h100 c=1"
    assert "h100 sweep · predicted" in _trace_names(at, "TPOT (ms): median, p99 thin")
    assert "h100 sweep · predicted band" in _trace_names(at, "TPOT (ms): median, p99 thin")
    assert "h100 sweep band" not in _trace_names(at, "TPOT (ms): median, p99 thin")  # measured: no band
    assert all(v in ("yes", "no, above", "no, below") for v in errors["median TPOT in band"])
    assert all(re.fullmatch(r"[0-4] of 4", v) for v in errors["in band"]), errors["in band"].tolist()
    assert all("–" in v for v in errors["median TPOT (ms) band"])
    (held,) = [c.value for c in at.caption if "in band" in c.value]
    assert held.startswith('Shaded around each predicted sweep, and "in band": the predictor\'s error band for dense')
    assert held.endswith("measured values inside.")
    assert any("Coefficients: default coefficients" in c.value for c in at.caption)

    at.button(key="lt.recalibrate").click().run(timeout=TIMEOUT_S)
    assert not at.exception and not at.error
    fit = _table(at, "median TPOT fitted")
    assert fit["run"].tolist() == ["h100 c=1", "h100 c=2", "h100 c=4"]
    assert any(
        "calibrated on 3 run(s) of meta-llama/Llama-3.1-8B-Instruct (h100-sxm-80gb)" in c.value for c in at.caption
    )
    assert "Calibration profile (JSON)" in {b.label for b in at.get("download_button")}
    fitted_profile = at.session_state["lt.recalibration"]["recalibration"].profile
    assert load_profile(fitted_profile.to_json()).coefficients == fitted_profile.coefficients  # the file reads back
    # the fitted median TPOT is closer to the measurements than the default one, on every run
    fitted = [abs(float(e.rstrip("%"))) for e in fit["median TPOT fitted"]]
    default = [abs(float(e.rstrip("%"))) for e in fit["median TPOT default"]]
    assert max(fitted) <= max(default)

    at.button(key="lt.recalibrate.reset").click().run(timeout=TIMEOUT_S)
    assert not at.exception
    assert not any("median TPOT fitted" in d.value.columns for d in at.dataframe)
    assert any("Coefficients: default coefficients" in c.value for c in at.caption)


@pytest.mark.usefixtures("timed_endpoints")
def test_overlay_for_a_scenario_that_does_not_fit_says_why():
    at = _with_history(
        _imported_sweep(), **{"planner.scenarios": (Scenario(model="meta-llama/Llama-3.1-70B-Instruct"),)}
    )
    at.toggle(key="lt.predict").set_value(True).run(timeout=TIMEOUT_S)
    assert not at.exception
    (warning,) = at.warning
    assert warning.value.startswith("No prediction for 1 · Llama-3.1-70B-Instruct") and "fits" in warning.value
    assert not any("output tok/s error" in d.value.columns for d in at.dataframe)


@pytest.fixture
def cache_endpoint(tmp_path, monkeypatch):
    from tests.servers.timed_sse import TimedServer

    with TimedServer(tokenizer="bytes", prefix_caching=True, prefill_ms_per_token=0.1) as server:
        path = tmp_path / "endpoints.toml"
        path.write_text(f'[[endpoint]]\nname = "cached"\nkind = "vllm"\nbase_url = "{server.url}"\n', encoding="utf-8")
        monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
        yield server


def test_multi_turn_run_shows_the_hit_rate_and_ttft_by_turn(cache_endpoint):
    at = _app(
        ep="cached",
        dataset_name="multi_turn",
        num_turns="3",
        num_prompts="6",
        max_concurrency="2",
        input_len="40",
        output_len="4",
        ignore_eos="true",
    )
    assert at.session_state["lt.num_turns"] == "3"
    at = _run_to_end(at)
    assert not at.exception
    cache = _table(at, "cache_flushed")
    (row,) = cache.to_dict(orient="records")
    assert row["dataset_name"] == "multi_turn" and row["prefix_cache_hit_rate"].endswith("%")
    turns = _table(at, "mean_input_tokens")
    assert list(turns["turn"]) == [1, 2, 3] and list(turns["requests"]) == [2, 2, 2]
    assert "TTFT by turn" in [s.value for s in at.subheader]


def test_a_malformed_trace_upload_is_refused_by_line():
    # the uploader's content goes through the same reader as the CLI's; AppTest cannot upload, so the reader is
    # driven here with the page's settings and the message the page shows is the reader's one line
    from planner.errors import PlannerError
    from planner.loadtest.datasets import read_trace

    with pytest.raises(PlannerError, match=r"^dataset line 2='output_length'"):
        read_trace(
            '{"timestamp": 0, "input_length": 4, "output_length": 1}\n{"timestamp": 1, "input_length": 4}\n',
            "timed_trace",
        )
    at = _app(dataset_name="timed_trace")
    assert not at.exception
    assert any("Upload a trace: Mooncake JSONL" in i.value for i in at.info)


def test_imported_eagle3_run_shows_its_acceptance():
    # vLLM's own result file of the H200 EAGLE-3 run at c=1 (bench/data/h200_sweeps/README.md): 333 of 543 draft
    # tokens accepted over 181 drafts -> 61.3%, mean acceptance length 1 + 333/181 = 2.84
    raw = (ROOT / "bench/data/h200_sweeps/llama-3.1-8b-eagle3/in512_c1.json.gz").read_bytes()
    at = _with_history(list(import_runs(raw, "in512_c1.json")))
    assert not at.exception
    (row,) = _table(at, "mean_acceptance_length").to_dict(orient="records")
    assert (row["acceptance_rate"], row["mean_acceptance_length"], row["median_tpot_ms"]) == ("61.3%", "2.84", "2.28")
    assert row["per_position_acceptance"] == "n/a"  # vLLM's file has no per-position counts


@pytest.fixture
def spec_endpoint(tmp_path, monkeypatch):
    from tests.servers.timed_sse import TimedServer

    flags = ("--ttft-ms", "5", "--itl-ms", "1", "--num-speculative-tokens", "3", "--spec-accepted-per-draft", "2")
    with TimedServer(flags=flags) as server:
        path = tmp_path / "endpoints.toml"
        path.write_text(f'[[endpoint]]\nname = "spec"\nkind = "vllm"\nbase_url = "{server.url}"\n', encoding="utf-8")
        monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
        yield server


def test_compare_run_shows_the_batching_ratio_and_the_spec_counters(spec_endpoint):
    at = _app(ep="spec", batching="compare", num_prompts="4", max_concurrency="2", output_len="10", ignore_eos="true")
    assert at.session_state["lt.batching"] == "compare"
    at = _run_to_end(at)
    assert not at.exception
    (pair,) = _table(at, "throughput_ratio").to_dict(orient="records")
    assert pair["max_concurrency"] == 2 and pair["throughput_ratio"].endswith("×")
    spec = _table(at, "mean_acceptance_length")
    # 10-token answers: ceil(9 / 3) = 3 drafts each, 2 of 3 accepted (demo server's count_drafts)
    assert list(spec["mean_acceptance_length"]) == ["3.00", "3.00"]
    assert list(spec["per_position_acceptance"]) == ["1.00, 1.00, 0.00"] * 2
    assert list(spec["acceptance_rate"]) == ["66.7%", "66.7%"]


def test_output_tokens_method_and_the_estimate_warning(tmp_path, monkeypatch):
    # No usage in the streams: the vllm server's /tokenize counts the answers, the openai one has none (an estimate).
    from tests.servers.scripted_stream import Script, ScriptedServer

    script = Script(usage="none", ttft_ms=5, gap_ms=5, chunks=3, tokenize=True)
    with ScriptedServer(script) as counted, ScriptedServer(script) as chunky:
        _endpoints(tmp_path, monkeypatch, ("counted", "vllm", counted.url), ("chunky", "openai", chunky.url))
        at = _run_to_end(_app(ep="counted,chunky", num_prompts="2", max_concurrency="2", input_sizing="words"))
    assert not at.exception
    table = _table(at, "request_throughput")
    assert list(table["output_tokens_method"]) == ["tokenizer", "chunks (estimate)"]
    warnings = [w.value for w in at.warning if "output tokens are estimates" in w.value]
    assert len(warnings) == 1 and warnings[0].endswith(
        ": output tokens are estimates, one per chunk (total_output_tokens 6, 2 of 2 requests): the stream carried "
        "no usage and no tokenizer route counted the text; with several tokens per chunk, total_output_tokens and "
        "output_throughput read low and TPOT high"
    )
