"""Failing servers × client paths: every failure ends as a record (never an exception), and the others carry on.

Servers are real sockets: :class:`tests.servers.faulty.FaultyServer` (failure chosen by a ``/m/<mode>`` path prefix,
see its docstring), a closed port (refused), and the timed server for the healthy endpoint. Client paths are the
three the app uses: the ``openai`` SDK (vLLM and generic OpenAI kinds),
``huggingface_hub`` chat (kind ``tgi``, also through ``stream_request``), and TGI's native ``/generate_stream``
(backend ``huggingface_hub`` with ``route="generate_stream"``), all through
:func:`planner.serving.backends.stream_request`.

What each case checks (issue 6, "failing servers"): ``ok`` is False, ``error_kind`` names the failure, ``error`` is
one line and carries the server's own message when it sent one, the partial answer received before the failure is
kept (``partial`` True), a hang ends within the timeout plus 1 s.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.compare.run import run_compare
from planner.serving.backends import stream_request
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from planner.serving.streaming import ERROR_KINDS
from tests.servers.faulty import HTTP422_MESSAGE, HTTP503_MESSAGE, STREAM_ERROR_MESSAGE, FaultyServer

stream_tgi = functools.partial(stream_request, backend="huggingface_hub")


TIMEOUT_S = 1.0
#: Slack on a hang: the read timeout plus scheduling on a busy 2-core machine.
HANG_SLACK_S = 1.0
PATHS = ("openai-vllm", "openai-generic", "tgi-chat", "tgi-native")

# mode -> (error_kind, text that must be in the error or None, partial answer kept, HTTP status)
EXPECTED: dict[str, tuple[str, str | None, bool, int | None]] = {
    "refused": ("connect", "cannot connect", False, None),
    "hang": ("timeout", "no response within 1 s", False, None),
    "hang_mid": ("timeout", "within 1 s", True, None),  # "no response" (read timeout) or "no stream data" (idle)
    "http422": ("http", HTTP422_MESSAGE, False, 422),
    "http503": ("http", HTTP503_MESSAGE, False, 503),
    "not_json": ("in_stream", "malformed", True, None),
    "no_prefix": ("cut", None, True, None),
    "truncated_json": ("in_stream", "malformed", True, None),
    "error_vllm": ("in_stream", STREAM_ERROR_MESSAGE, True, None),
    "error_tgi": ("in_stream", STREAM_ERROR_MESSAGE, True, None),
    "cut": ("cut", None, True, None),
    "trickle": ("timeout", None, True, None),
}
#: Client paths run_compare uses (it sends chat requests; the native route is covered by the matrix).
COMPARE_PATHS = PATHS[:3]
#: Failing-server cases this file tries: the matrix, one run_compare (good + failing endpoint) per mode and chat
#: path, and the page run with one endpoint per mode (12 × 4 + 12 × 3 + 12 = 96; the healthy controls not counted).
CASES = len(EXPECTED) * len(PATHS) + len(EXPECTED) * len(COMPARE_PATHS) + len(EXPECTED)


@pytest.fixture(scope="module")
def faulty() -> Iterator[FaultyServer]:
    with FaultyServer() as server:
        yield server


def _endpoint(path: str, url: str, name: str = "bad") -> Endpoint:
    kind = {"openai-vllm": "vllm", "openai-generic": "openai"}.get(path, "tgi")
    return Endpoint(name, kind, url, model="faulty-model")


async def _request(path: str, endpoint: Endpoint, request: ChatRequest):
    if path == "tgi-native":
        return await stream_tgi(endpoint, request, timeout_s=TIMEOUT_S, route="generate_stream")
    return await stream_request(endpoint, request, timeout_s=TIMEOUT_S)


def _url(mode: str, faulty: FaultyServer, closed_port_url: str) -> str:
    return closed_port_url if mode == "refused" else f"{faulty.url}/m/{mode}"


def _check_record(record, mode: str) -> None:
    kind, text, partial, status = EXPECTED[mode]
    assert record.ok is False
    assert record.error_kind == kind, record.error
    assert record.error_kind in ERROR_KINDS
    assert record.error and "\n" not in record.error and len(record.error) <= 300
    if text is not None:
        assert text in record.error
    assert record.partial is partial, record
    if partial:
        assert record.text == "f1 "  # the answer received before the failure is kept
    if status is not None:
        assert record.http_status == status


def _matrix(paths: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(mode, path) for mode in EXPECTED for path in paths]


@pytest.mark.parametrize(("mode", "path"), _matrix(PATHS))
def test_failure_ends_as_a_record(faulty, closed_port_url, mode, path):
    endpoint = _endpoint(path, _url(mode, faulty, closed_port_url))
    started = time.monotonic()
    record = asyncio.run(_request(path, endpoint, ChatRequest("Say two tokens")))
    elapsed_s = time.monotonic() - started
    _check_record(record, mode)
    assert elapsed_s <= TIMEOUT_S + HANG_SLACK_S, f"{mode} took {elapsed_s:.2f} s"


@pytest.mark.parametrize("path", PATHS)
def test_the_faulty_server_itself_answers_ok(faulty, path):
    # The control: in mode ok the same server and client path give a complete answer, so the failures above are
    # the modes', not the harness's.
    record = asyncio.run(_request(path, _endpoint(path, f"{faulty.url}/m/ok"), ChatRequest("Say two tokens")))
    assert record.ok, record.error
    assert record.text == "f1 f2 "


@pytest.mark.parametrize(("mode", "path"), _matrix(COMPARE_PATHS))
def test_compare_keeps_the_good_endpoint(timed_server, faulty, closed_port_url, mode, path):
    good = Endpoint("good", "vllm", timed_server.url, model="timed-model")
    bad = _endpoint(path, _url(mode, faulty, closed_port_url))
    request = ChatRequest("Say something [tokens=3] [ttft_ms=10] [itl_ms=5]")
    started = time.monotonic()
    result = asyncio.run(run_compare([good, bad], request, timeout_s=TIMEOUT_S))
    # Discovery, the prompt-token count and the request each wait at most one timeout on a hanging server.
    assert time.monotonic() - started <= 3 * TIMEOUT_S + HANG_SLACK_S
    (good_record,) = result.for_endpoint("good")
    (bad_record,) = result.for_endpoint("bad")
    assert good_record.ok, good_record.error
    assert good_record.text == "t1 t2 t3 "
    _check_record(bad_record, mode)


def test_compare_page_carries_on_with_every_failure_at_once(
    timed_server, faulty, closed_port_url, tmp_path, monkeypatch
):
    # The page (pages/compare.py through AppTest) with one good endpoint and one per failure mode, all in one run:
    # each failure ends in its own column as an error line (with the partial answer when there was one), and the
    # good endpoint's answer and metrics are there. A page test, kept here with the matrix it extends.
    from streamlit.testing.v1 import AppTest

    from pages.compare import W

    names = {"good": timed_server.url}
    names |= {f"bad-{m}": _url(m, faulty, closed_port_url) for m in EXPECTED}
    path = tmp_path / "endpoints.toml"
    path.write_text(
        "".join(f'[[endpoint]]\nname = "{n}"\nkind = "vllm"\nbase_url = "{u}"\n' for n, u in names.items()),
        encoding="utf-8",
    )
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
    root = Path(__file__).resolve().parents[2]
    at = AppTest.from_file(str(root / "pages" / "compare.py"), default_timeout=30)
    at.query_params["ep"] = ",".join(names)
    at.run(timeout=30)
    assert not at.exception
    at.text_area(key=W["prompt"]).input("Say something [tokens=3] [ttft_ms=10] [itl_ms=5]")
    at.text_input(key=W["timeout_s"]).input(str(TIMEOUT_S))
    at.button(key="cmp.run").click().run(timeout=30)
    deadline = time.monotonic() + 30
    while not (at.session_state["compare.history"] if "compare.history" in at.session_state else None):  # noqa: SIM401
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.2)
        at.run(timeout=30)
        assert not at.exception
    (result,) = at.session_state["compare.history"]
    records = {r.endpoint: r for r in result.records}
    assert records["good"].ok and records["good"].text == "t1 t2 t3 "
    markdown = [m.value for m in at.markdown]
    errors = [e.value for e in at.error]
    for mode in EXPECTED:
        record = records[f"bad-{mode}"]
        assert not record.ok, mode
        assert record.error in errors, mode  # its own column shows its one-line error
        if record.partial:
            assert "f1" in markdown, mode  # and the partial answer
    assert sum(m.startswith("**good** · ") and "done" in m for m in markdown) == 1
    assert any("TTFT ms" in df.value.columns for df in at.dataframe)  # the metrics table still renders
