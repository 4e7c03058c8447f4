"""The Live Compare page with AppTest: empty state, a bad endpoints file, links, the add form, and a real run
against the timed SSE server (planner/demo/) with one closed-port endpoint.

AppTest does not fire ``st.fragment(run_every=...)`` timers, so the tests poll with plain ``at.run()``; the page
renders the latest snapshot on every run.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.compare.charts import history_csv
from planner.compare.run import run_compare, to_csv, to_json
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from tests.pages.apptest_text import page_text
from tests.servers.empty_answer import empty_answer_server
from tests.servers.scripted_stream import Script, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "compare.py")
TIMEOUT_S = 30
KEY_ENV = "CMP_TEST_API_KEY"
PLANTED = "sk-planted-compare-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_endpoints_file(monkeypatch):
    monkeypatch.delenv("LLM_PLANNER_ENDPOINTS", raising=False)
    monkeypatch.delenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", raising=False)


def _write(tmp_path: Path, text: str, monkeypatch) -> Path:
    path = tmp_path / "endpoints.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
    return path


def _app(**params: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def test_router_lists_the_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
    at.switch_page("pages/compare.py").run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.title[0].value == "Live Compare"


def test_empty_state_explains_endpoints_toml_and_the_form():
    if (ROOT / "endpoints.toml").exists():
        pytest.skip("a local endpoints.toml exists at the repo root")
    at = _app()
    assert not at.exception and not at.error and not at.warning
    info = at.info[0].value
    assert "endpoints.toml" in info and "[[endpoint]]" in info and "add one above" in info
    assert at.text_input(key="cmp.new.name") is not None


def test_empty_state_without_custom_endpoints(monkeypatch):
    if (ROOT / "endpoints.toml").exists():
        pytest.skip("a local endpoints.toml exists at the repo root")
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "false")
    at = _app()
    assert not at.exception
    assert "turned off" in at.info[0].value
    assert not [w for w in at.text_input if w.key == "cmp.new.name"]


def test_bad_file_gives_one_error_per_problem_and_page_stays_usable(tmp_path, monkeypatch):
    _write(
        tmp_path,
        '[[endpoint]]\nname = "a"\nkind = "warp"\nbase_url = "http://127.0.0.1:1"\n'
        '[[endpoint]]\nname = "b"\nkind = "vllm"\nbase_url = "ftp://x"\n',
        monkeypatch,
    )
    at = _app()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 2
    assert "kind" in errors[0] and "base_url" in errors[1]
    assert all("\n" not in e for e in errors)
    at.text_input(key="cmp.new.name").input("local")
    at.text_input(key="cmp.new.url").input("http://127.0.0.1:1")
    at.button[0].click()  # the form's submit button
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.multiselect(key="cmp.endpoints").value == ["local"]


def test_add_endpoint_form_rejects_bad_values_in_one_line(monkeypatch):
    at = _app()
    at.text_input(key="cmp.new.name").input("x")
    at.text_input(key="cmp.new.url").input("not a url")
    at.button[0].click()
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert len(at.error) == 1 and at.error[0].value.startswith("Endpoint not added: base_url=")
    at.text_input(key="cmp.new.url").input("http://127.0.0.1:1")
    at.text_input(key="cmp.new.key_env").input(PLANTED)  # a key pasted where its NAME belongs
    at.button[0].click()
    at.run(timeout=TIMEOUT_S)
    assert len(at.error) == 1 and PLANTED not in at.error[0].value and "<not shown>" in at.error[0].value


@pytest.mark.parametrize(("page", "prefix"), [("compare.py", "cmp"), ("loadtest.py", "lt")])
def test_add_form_placeholders_read_as_examples_and_an_empty_name_is_one_line(page, prefix):
    # issue 24: the placeholders looked like filled values, and "Add" then said "name='' is not valid"
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=TIMEOUT_S).run(timeout=TIMEOUT_S)
    for field in ("name", "url", "key_env"):
        assert at.text_input(key=f"{prefix}.new.{field}").placeholder.startswith("e.g. "), field
    at.text_input(key=f"{prefix}.new.url").input("http://127.0.0.1:1")
    next(b for b in at.button if b.label == "Add endpoint").click()
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Endpoint not added: name is empty: expected up to 64 letters, digits, '_', '.', '-' (not starting with a "
        "symbol), e.g. my-vllm"
    ]
    assert at.text_input(key=f"{prefix}.new.url").value == "http://127.0.0.1:1"  # nothing typed is lost


def test_add_form_refuses_a_name_in_use_and_keeps_what_was_typed(tmp_path, monkeypatch):
    # the new-user trial: a second "local" was added, then the run refused ("expected endpoints with unique names")
    _write(tmp_path, '[[endpoint]]\nname = "a"\nkind = "vllm"\nbase_url = "http://127.0.0.1:1"\n', monkeypatch)
    at = _app()
    at.text_input(key="cmp.new.name").input("local")
    at.text_input(key="cmp.new.url").input("http://127.0.0.1:1")
    at.button[0].click()
    at.run(timeout=TIMEOUT_S)
    assert not at.error and at.multiselect(key="cmp.endpoints").value == ["a", "local"]
    for name, where in (("local", "it is added in this session"), ("a", "it is in endpoints.toml")):
        at.text_input(key="cmp.new.name").input(name)
        at.text_input(key="cmp.new.url").input("http://127.0.0.1:2")
        at.button[0].click()
        at.run(timeout=TIMEOUT_S)
        assert not at.exception
        assert [e.value for e in at.error] == [
            f"Endpoint not added: name={name!r} is not valid: expected a name not already used ({where}); pick another"
        ]
        assert at.text_input(key="cmp.new.name").value == name  # nothing typed is lost
        assert at.text_input(key="cmp.new.url").value == "http://127.0.0.1:2"
        assert at.multiselect(key="cmp.endpoints").value == ["a", "local"]
        # outside the add form's expander, which is drawn collapsed once an endpoint exists: the refusal is seen
        assert _outside_expanders(at, "Endpoint not added: ")


def _outside_expanders(at, start: str) -> bool:
    """Whether an error starting with ``start`` is drawn and no expander holds it."""

    def walk(node, in_expander: bool):
        if getattr(node, "type", None) == "error" and str(node.value).startswith(start):
            yield in_expander
        for child in getattr(node, "children", {}).values():
            yield from walk(child, in_expander or getattr(node, "type", None) == "expander")

    found = list(walk(at.main, False))
    return bool(found) and not any(found)


def test_link_restores_settings_and_hostile_params_warn(tmp_path, monkeypatch):
    _write(tmp_path, '[[endpoint]]\nname = "a"\nkind = "vllm"\nbase_url = "http://127.0.0.1:1"\n', monkeypatch)
    at = _app(ep="a,ghost", prompt="Hi there", max_tokens="64", repeat="3", temperature="nan", api_key="zzz")
    assert not at.exception
    assert at.multiselect(key="cmp.endpoints").value == ["a"]
    assert at.text_area(key="cmp.prompt").value == "Hi there"
    assert at.text_input(key="cmp.max_tokens").value == "64"
    assert at.text_input(key="cmp.repeat").value == "3"
    warnings = " ".join(w.value for w in at.warning)
    assert "temperature" in warnings and "api_key" in warnings and "ghost" in warnings
    assert "zzz" not in warnings
    assert "ignored — " not in warnings  # each line says what was ignored or used; the prefix does not contradict it
    assert at.query_params["ep"] == "a" and at.query_params["max_tokens"] == "64"
    assert "api_key" not in at.query_params


def test_link_params_are_checked_with_no_endpoint_configured():
    # the new-user trial: with no endpoint the page stopped before reading the link, and said nothing of these
    if (ROOT / "endpoints.toml").exists():
        pytest.skip("a local endpoints.toml exists at the repo root")
    at = _app(ep="nope", prompt="x" * 20_000, max_tokens="-4", temperature="99")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert "URL parameter ep: endpoint 'nope' is not configured here; add it above or in endpoints.toml" in warnings
    for start, accepted in (
        ("prompt='xxx", "expected at most 2,000 characters"),
        ("max_tokens='-4'", "expected an integer from 1 to 32768"),
        ("temperature='99'", "expected a number in [0, 2] (or none)"),
    ):
        assert any(
            w.startswith(f"URL parameter — {start}") and f"{accepted}; the default is used" in w for w in warnings
        )
    assert "endpoints.toml" in at.info[0].value  # the empty state still explains how to add one


def test_repeated_link_parameter_warning_does_not_contradict_itself(tmp_path, monkeypatch):
    _write(tmp_path, '[[endpoint]]\nname = "a"\nkind = "vllm"\nbase_url = "http://127.0.0.1:1"\n', monkeypatch)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT_S)
    at.query_params["ep"] = ["ghost", "a"]
    at.query_params["prompt"] = "\x00\x01"
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.multiselect(key="cmp.endpoints").value == ["a"]  # the last ep is used
    warnings = [w.value for w in at.warning]
    assert "URL parameter — ep is given 2 times; the last value is used" in warnings
    assert any(
        w.startswith("URL parameter — prompt=") and "without control characters; the default is used" in w
        for w in warnings
    )


def _poll_until_done(at: AppTest, limit_s: float = 30) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.2)
        at.run(timeout=TIMEOUT_S)
        assert not at.exception
        if at.session_state.get("compare.history"):
            return
    pytest.fail("the compare run did not finish within the time limit")


def test_run_against_timed_server(timed_server, closed_port_url, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, PLANTED)
    _write(
        tmp_path,
        f'[[endpoint]]\nname = "fast"\nkind = "vllm"\nbase_url = "{timed_server.url}"\napi_key_env = "{KEY_ENV}"\n'
        f'[[endpoint]]\nname = "fast2"\nkind = "vllm"\nbase_url = "{timed_server.url}/v1"\n'
        f'[[endpoint]]\nname = "down"\nkind = "vllm"\nbase_url = "{closed_port_url}"\n',
        monkeypatch,
    )
    # The warm-up pays this process's one-off import costs; 5 repeats give a median robust to a busy machine.
    asyncio.run(run_compare([Endpoint("warm", "vllm", timed_server.url)], ChatRequest("warm [tokens=2]")))

    at = _app()
    assert not at.exception
    assert at.multiselect(key="cmp.endpoints").value == ["fast", "fast2", "down"]
    discovery = at.dataframe[0].value.set_index("endpoint")
    assert discovery.loc["fast", "model"] == "timed-model"
    assert discovery.loc["fast", "context (tokens)"] == "4,096"
    assert discovery.loc["down", "health"] == "down"
    assert any(
        c.value.startswith(":orange[:material/cloud_off: down: ") and "cannot connect" in c.value for c in at.caption
    )

    at.text_area(key="cmp.prompt").input("Say something [tokens=12]")
    at.text_input(key="cmp.repeat").input("5")
    at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
    assert not at.exception
    _poll_until_done(at)

    markdown = [m.value for m in at.markdown]
    answer = "t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12"
    assert markdown.count(answer) == 2  # both columns on the timed server
    assert "**fast** · :green[:material/check_circle:] done · request 5/5 · 12 tokens" in markdown
    assert "**down** · :red[:material/error:] error · request 5/5 · 5 failed" in markdown
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "cannot connect" in errors[0] and "\n" not in errors[0]

    metrics = next(df.value for df in at.dataframe if "TTFT ms" in df.value.columns).set_index("endpoint")
    for name in ("fast", "fast2"):
        ttft = float(metrics.loc[name, "TTFT ms"].split()[0])
        # The page shows the timed server's 150 ms / 20 ms (accuracy itself: bench/measurement_accuracy.py).
        assert ttft == pytest.approx(150, abs=50)
        assert float(metrics.loc[name, "TPOT ms"].split()[0]) == pytest.approx(20, abs=10)
    assert metrics.loc["down", "TTFT ms"] == "n/a"
    assert len(at.session_state["compare.history"]) == 1
    assert len(at.get("plotly_chart")) == 4  # tokens, TTFT, ITL and the history chart

    # The planted key appears nowhere: page text, URL, downloads.
    assert PLANTED not in page_text(at)
    assert PLANTED not in str(dict(at.query_params))
    history = at.session_state["compare.history"]
    for export in (to_csv(history[-1]), to_json(history[-1]), history_csv(history)):
        assert PLANTED not in export
        assert "fast" in export

    # The link carries endpoint names and settings only, never a base URL.
    assert set(at.query_params) == {"ep", "prompt", "repeat"}
    assert at.query_params["ep"] == "fast,fast2,down"
    link = str(dict(at.query_params))
    assert timed_server.url not in link and "127.0.0.1" not in link and KEY_ENV not in link


def test_answers_stream_from_a_real_llama_cpp_server(llama_url, tmp_path, monkeypatch):
    # The real server: llama-cpp-python with the gemma3 270M GGUF (tests/conftest.py, llama_url).
    _write(tmp_path, f'[[endpoint]]\nname = "llama"\nkind = "llamacpp"\nbase_url = "{llama_url}"\n', monkeypatch)
    at = _app()
    assert not at.exception
    at.text_area(key="cmp.prompt").input("Name three colours.")
    at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
    _poll_until_done(at)
    assert not at.exception
    history = at.session_state["compare.history"]
    record = history[-1].records[0]
    assert record.ok and record.text.strip(), record.error
    assert record.text in [m.value for m in at.markdown]  # the streamed answer is in its column
    metrics = next(df.value for df in at.dataframe if "TTFT ms" in df.value.columns).set_index("endpoint")
    assert metrics.loc["llama", "TTFT ms"] != "n/a"
    assert metrics.loc["llama", "output tokens"].split()[0] == str(record.output_tokens)


def test_empty_answer_is_a_named_failure_instead_of_waiting(tmp_path, monkeypatch):
    with empty_answer_server() as url:
        _write(tmp_path, f'[[endpoint]]\nname = "lcp"\nkind = "llamacpp"\nbase_url = "{url}"\n', monkeypatch)
        at = _app()
        at.text_area(key="cmp.prompt").input("Write a long story about a dragon.")
        at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
        _poll_until_done(at)
    assert not at.exception
    record = at.session_state["compare.history"][-1].records[0]
    assert (record.ok, record.error_kind, record.output_tokens, record.first_token_s) == (False, "empty", 0, None)
    assert "**lcp** · :red[:material/error:] error · empty answer (0 tokens)" in [m.value for m in at.markdown]
    assert [e.value for e in at.error] == [
        "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"
    ]
    assert "waiting for the first token…" not in [c.value for c in at.caption]
    metrics = next(df.value for df in at.dataframe if "TTFT ms" in df.value.columns).set_index("endpoint")
    assert (metrics.loc["lcp", "ok / requests"], metrics.loc["lcp", "output tokens"]) == ("0/1", "n/a")
    assert (metrics.loc["lcp", ["TTFT ms", "TPOT ms", "E2E ms"]] == "n/a").all()


def test_output_tokens_without_usage_are_counted_or_flagged(tmp_path, monkeypatch):
    # No usage in the streams, 3 chunks of 4 tokens: the vllm server's /tokenize counts 12 (its column says so once
    # the run is over); an openai kind has no tokenizer route, so its 3 (one per chunk) are flagged as an estimate.
    with (
        ScriptedServer(Script(usage="none", ttft_ms=5, gap_ms=5, chunks=3, tokenize=True)) as counted,
        ScriptedServer(Script(usage="none", ttft_ms=5, gap_ms=5, chunks=3)) as chunky,
    ):
        endpoints = (
            f'[[endpoint]]\nname = "counted"\nkind = "vllm"\nbase_url = "{counted.url}"\n\n'
            f'[[endpoint]]\nname = "chunky"\nkind = "openai"\nbase_url = "{chunky.url}"\n'
        )
        _write(tmp_path, endpoints, monkeypatch)
        at = _app(ep="counted,chunky")
        at.text_area(key="cmp.prompt").input("hi")
        at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
        _poll_until_done(at)
    assert not at.exception
    headers = [m.value for m in at.markdown]
    assert "**counted** · :green[:material/check_circle:] done · 12 tokens" in headers
    assert "**chunky** · :green[:material/check_circle:] done · 3 tokens" in headers
    metrics = next(df.value for df in at.dataframe if "TTFT ms" in df.value.columns).set_index("endpoint")
    assert metrics.loc["counted", "output tokens"] == "12 (server tokenizer)"
    assert metrics.loc["chunky", "output tokens"] == "3 (1 per chunk, estimate)"
    assert [w.value for w in at.warning] == [
        "chunky: output tokens are estimates, one per chunk (total_output_tokens 3, 1 of 1 requests): the stream "
        "carried no usage and no tokenizer route counted the text; with several tokens per chunk, total_output_tokens "
        "and output_throughput read low and TPOT high"
    ]


def test_an_endpoint_without_its_api_key_fails_alone(timed_server, tmp_path, monkeypatch):
    """Issue 24 item 5: one endpoint whose ``api_key_env`` is not set aborted the whole run ("The run failed: ...")
    and every column then showed "done" with an empty answer. Now that endpoint's column shows its one line and the
    others run, as the Load Test does."""
    monkeypatch.delenv("CMP_UNSET_KEY", raising=False)
    _write(
        tmp_path,
        f'[[endpoint]]\nname = "fast"\nkind = "vllm"\nbase_url = "{timed_server.url}"\n'
        f'[[endpoint]]\nname = "hosted"\nkind = "openai"\nbase_url = "{timed_server.url}"\nmodel = "m"\n'
        'api_key_env = "CMP_UNSET_KEY"\n',
        monkeypatch,
    )
    at = _app()
    at.text_area(key="cmp.prompt").input("Say something [tokens=3]")
    at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
    _poll_until_done(at)
    markdown = [m.value for m in at.markdown]
    assert "**fast** · :green[:material/check_circle:] done · 3 tokens" in markdown
    assert "t1 t2 t3" in markdown  # its answer streamed into its column
    assert "**hosted** · :red[:material/error:] error" in markdown
    errors = [e.value for e in at.error]
    assert errors == ["endpoint 'hosted': API key variable CMP_UNSET_KEY is not set (env or secrets)"]
    (result,) = at.session_state["compare.history"]
    assert [(r.endpoint, r.ok, r.error_kind) for r in result.records] == [
        ("fast", True, None),
        ("hosted", False, "setup"),
    ]
    metrics = next(df.value for df in at.dataframe if "TTFT ms" in df.value.columns).set_index("endpoint")
    assert metrics.loc["hosted", "TTFT ms"] == "n/a" and metrics.loc["fast", "TTFT ms"] != "n/a"
