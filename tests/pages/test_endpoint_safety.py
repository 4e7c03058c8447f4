"""Endpoint safety (issue 6): links never reach unconfigured URLs, the add form refuses dangerous URLs and can be
switched off, servers cannot steer the client elsewhere, and a planted API key appears in no export, link, page
text or log.

Servers are real sockets: :class:`tests.servers.faulty.FaultyServer` counts every request it reads (``hits``) and
records ``Authorization`` headers, so "never called" is a count of 0 and "the key is sent" is a header seen.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets as pysecrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.compare.charts import history_csv
from planner.compare.run import to_csv, to_json
from planner.errors import InvalidParameterError
from planner.serving.backends import stream_request
from planner.serving.discovery import discover
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from tests.pages.apptest_text import page_text
from tests.servers.faulty import FaultyServer

stream_tgi = functools.partial(stream_request, backend="huggingface_hub")


ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30
#: Pages that talk to endpoints, with their widget-key prefix (pages/_endpoints.py).
ENDPOINT_PAGES = {"pages/compare.py": "cmp", "pages/loadtest.py": "lt"}
KEY_ENV = "PLANNER_SAFETY_TEST_KEY"
PLANTED = "sk-PLANTED-" + pysecrets.token_hex(16)

#: URLs the add form must refuse, one error line each: other schemes, link-local and cloud-metadata addresses in
#: every spelling a resolver accepts (decimal, hex, octal, short forms, trailing dot, IPv4-mapped IPv6).
REFUSED_URLS = (
    "javascript:alert(1)",
    "file:///etc/passwd",
    "ftp://127.0.0.1/",
    "gopher://127.0.0.1:70/_x",
    "data:text/plain,hi",
    "http://",
    "http://169.254.169.254",
    "http://169.254.169.254/latest/meta-data/iam/",
    "https://169.254.170.2/v2/credentials",
    "http://169.254.169.254.:80/",
    "http://user:pw@169.254.169.254/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]:8000/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.GOOGLE.INTERNAL./",
    "http://metadata/",
    "http://2852039166/",  # 169.254.169.254 as one decimal number
    "http://0xa9fea9fe/",  # ... as one hex number
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://0251.0376.0251.0376/",  # ... octal
    "http://169.254.43518/",  # ... a.b.c short form
    "http://169。254。169。254/",  # ideographic full stops: IDNA maps them to "."
    "http://１６９.２５４.１６９.２５４/",  # fullwidth digits
    "http://ⓜⓔⓣⓐⓓⓐⓣⓐ.google.internal/",  # circled letters
)
#: Cases this file tries (the closing note quotes it): refused URLs at the planner and page level, hostile links on
#: each endpoint page, the switch, redirects, and the planted key.
REFUSED_CASES = 2 * len(REFUSED_URLS)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv("LLM_PLANNER_ENDPOINTS", raising=False)
    monkeypatch.delenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", raising=False)


@pytest.fixture
def trap() -> Iterator[FaultyServer]:
    """A server nobody configured: any request it reads is a failure of the test."""
    with FaultyServer() as server:
        yield server


def _endpoints_file(tmp_path: Path, monkeypatch, entries: list[dict[str, str]]) -> Path:
    text = ""
    for entry in entries:
        text += "[[endpoint]]\n" + "".join(f'{k} = "{v}"\n' for k, v in entry.items())
    path = tmp_path / "endpoints.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
    return path


def _page(page: str) -> str:
    return str(ROOT / page)


def _app(page: str, query: dict | None = None, secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(_page(page), default_timeout=TIMEOUT_S)
    for key, value in (secrets or {}).items():
        at.secrets[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run(timeout=TIMEOUT_S)


def _custom_key() -> str:
    from pages import _endpoints

    return _endpoints.CUSTOM_KEY


# --- a link never reaches a URL that is not configured ---------------------------------------------------------------
def _hostile_links(url: str) -> list[dict[str, str | list[str]]]:
    bare = url.removeprefix("http://")
    return [
        {"ep": url},
        {"ep": f"a,{url}"},
        {"ep": bare},
        {"ep": ["a", url]},
        {"ep": "trap", "trap": url},
        {"base_url": url, "ep": "a"},
        {"url": url},
        {"endpoint": f"x=vllm:{url}"},
        {"api_base": url, "OPENAI_BASE_URL": url},
        {"cmp.new.url": url, "cmp.new.name": "x", "lt.new.url": url, "lt.new.name": "x"},
        {"endpoints.custom": url},
        {"ep": "a", "prompt": url, "system": url},
    ]


LINK_CASES = 12 * len(ENDPOINT_PAGES)


@pytest.mark.parametrize("page", list(ENDPOINT_PAGES))
def test_a_link_never_calls_an_unconfigured_url(page, trap, closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    prefix = ENDPOINT_PAGES[page]
    for query in _hostile_links(trap.url):
        at = _app(page, query)
        assert not at.exception, query
        assert at.session_state[_custom_key()] == {}, query  # a link never adds an endpoint
        run = [b for b in at.button if b.key == f"{prefix}.run"]
        if run and not run[0].disabled and page == "pages/compare.py":
            run[0].click().run(timeout=TIMEOUT_S)  # the run goes to "a" only
            _poll_until_done(at)
        assert trap.hits == 0, query
        if "prompt" not in query:  # a URL in the prompt is prompt text, kept; anywhere else the link drops it
            assert trap.url not in str(dict(at.query_params)), query


# --- the switch ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", list(ENDPOINT_PAGES))
@pytest.mark.parametrize("off", ["0", "false", "off", "no", " FALSE "])
def test_switch_off_by_env_hides_the_form(page, off, closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", off)
    at = _app(page)
    assert not at.exception
    prefix = ENDPOINT_PAGES[page]
    assert not [w for w in at.text_input if w.key and w.key.startswith(f"{prefix}.new.")]


@pytest.mark.parametrize("page", list(ENDPOINT_PAGES))
def test_switch_off_by_secrets_wins_over_env(page, closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "1")
    at = _app(page, secrets={"allow_custom_endpoints": False})
    assert not at.exception
    prefix = ENDPOINT_PAGES[page]
    assert not [w for w in at.text_input if w.key and w.key.startswith(f"{prefix}.new.")]


def test_switch_on_by_default_shows_the_form(closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    at = _app("pages/compare.py")
    assert at.text_input(key="cmp.new.url") is not None


def test_endpoints_added_before_the_switch_went_off_are_dropped(trap, closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    at = AppTest.from_file(_page("pages/compare.py"), default_timeout=TIMEOUT_S)
    at.session_state[_custom_key()] = {"x": Endpoint("x", "vllm", trap.url)}
    at.query_params["ep"] = "a,x"
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "0")
    at.run(timeout=TIMEOUT_S)
    assert not at.exception
    assert at.multiselect(key="cmp.endpoints").value == ["a"]
    assert trap.hits == 0


# --- the add form refuses dangerous URLs -----------------------------------------------------------------------------
@pytest.mark.parametrize("url", REFUSED_URLS)
def test_endpoint_refuses_url(url):
    with pytest.raises(InvalidParameterError) as info:
        Endpoint("x", "vllm", url)
    assert info.value.name == "base_url"
    assert "pw@" not in str(info.value)  # credentials in a URL are never echoed


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "https://example.com/v1", "http://10.0.0.5:8080/prefix"])
def test_endpoint_accepts_serving_urls(url):
    assert Endpoint("x", "vllm", url).base_url == url.removesuffix("/v1")


def test_add_form_refuses_each_url_in_one_line(trap, closed_port_url, tmp_path, monkeypatch):
    _endpoints_file(tmp_path, monkeypatch, [{"name": "a", "kind": "vllm", "base_url": closed_port_url}])
    at = _app("pages/compare.py")
    for url in REFUSED_URLS:
        at.text_input(key="cmp.new.name").input("x")
        at.text_input(key="cmp.new.url").input(url)
        next(b for b in at.button if b.label == "Add endpoint").click()
        at.run(timeout=TIMEOUT_S)
        assert not at.exception, url
        errors = [e.value for e in at.error]
        assert len(errors) == 1, (url, errors)
        assert errors[0].startswith("Endpoint not added: base_url=") and "\n" not in errors[0], errors[0]
        assert "x" not in at.session_state[_custom_key()], url
    assert trap.hits == 0


# --- a server cannot steer the client to another address -------------------------------------------------------------
@pytest.fixture
def redirector() -> Iterator[tuple[FaultyServer, FaultyServer]]:
    """``(redirecting server, its target)``: the target stands for a metadata address the client must not reach."""
    with FaultyServer() as target, FaultyServer() as server:
        server.redirect_to = target.url
        yield server, target


@pytest.mark.parametrize("path", ["discovery", "openai-vllm", "tgi-chat", "tgi-native"])
def test_redirects_are_not_followed(redirector, path):
    server, target = redirector
    kind = "tgi" if path.startswith("tgi") else "vllm"
    endpoint = Endpoint("r", kind, f"{server.url}/m/redirect", model="faulty-model")
    if path == "discovery":
        info = asyncio.run(discover(endpoint, 2.0))
        assert not info.healthy or info.model is None or info.error
    elif path == "tgi-native":
        record = asyncio.run(stream_tgi(endpoint, ChatRequest("hi"), timeout_s=2.0, route="generate_stream"))
        assert not record.ok
    else:
        record = asyncio.run(stream_request(endpoint, ChatRequest("hi"), timeout_s=2.0))
        assert not record.ok
    assert server.hits >= 1
    assert target.hits == 0


# --- a planted key appears nowhere -----------------------------------------------------------------------------------
def _history(at: AppTest) -> list:
    return at.session_state["compare.history"] if "compare.history" in at.session_state else []  # noqa: SIM401


def _poll_until_done(at: AppTest, limit_s: float = 30) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.2)
        at.run(timeout=TIMEOUT_S)
        assert not at.exception
        if _history(at):
            return
    pytest.fail("the compare run did not finish within the time limit")


def test_planted_key_is_sent_but_never_shown_logged_exported_or_linked(
    timed_server, tmp_path, monkeypatch, caplog, capsys
):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, PLANTED)
    with FaultyServer() as faulty:
        _endpoints_file(
            tmp_path,
            monkeypatch,
            [
                {"name": "keyed", "kind": "vllm", "base_url": f"{faulty.url}/m/ok", "api_key_env": KEY_ENV},
                {"name": "keyed-tgi", "kind": "tgi", "base_url": f"{faulty.url}/m/ok", "api_key_env": KEY_ENV},
                {"name": "failing", "kind": "vllm", "base_url": f"{faulty.url}/m/http503", "api_key_env": KEY_ENV},
                {"name": "echo", "kind": "vllm", "base_url": f"{faulty.url}/m/echo_auth", "api_key_env": KEY_ENV},
                {"name": "echo-tgi", "kind": "tgi", "base_url": f"{faulty.url}/m/echo_auth", "api_key_env": KEY_ENV},
                {"name": "timed", "kind": "vllm", "base_url": timed_server.url, "api_key_env": KEY_ENV},
            ],
        )
        at = _app("pages/compare.py", {"ep": "keyed,keyed-tgi,failing,echo,echo-tgi,timed"})
        assert not at.exception
        at.text_area(key="cmp.prompt").input("Say two tokens [tokens=2]")
        at.button(key="cmp.run").click().run(timeout=TIMEOUT_S)
        _poll_until_done(at)
        # not vacuous: the key went to the servers, and the failing endpoints failed where a key could leak
        assert f"Bearer {PLANTED}" in faulty.authorizations
        history = at.session_state["compare.history"]
        records = {r.endpoint: r for r in history[-1].records}
        assert records["keyed"].ok and records["timed"].ok, records
        assert not records["echo"].ok and not records["failing"].ok

        places = {
            "page": page_text(at),
            "link": str(dict(at.query_params)),
            "csv": to_csv(history[-1]),
            "json": to_json(history[-1]),
            "history_csv": history_csv(history),
            "logs": caplog.text,
            "stdout+stderr": "".join(capsys.readouterr()),
        }
        leaks = [name for name, text in places.items() if PLANTED in text or PLANTED[3:] in text]
        assert leaks == [], f"the planted key appears in: {leaks}"
        assert KEY_ENV not in places["link"]


#: The planted key is looked for in this many places (the closing note's "leaked keys" count is over these).
KEY_PLACES = 7


# --- the scrubber behind every error message -------------------------------------------------------------------------
def test_error_messages_are_scrubbed_of_keys_read(monkeypatch):
    from planner.serving.endpoints import api_key, redact
    from planner.serving.streaming import one_line

    key = "k3y-" + pysecrets.token_hex(12)  # no known prefix: found because api_key read it, not by its shape
    monkeypatch.setenv(KEY_ENV, key)
    assert api_key(Endpoint("x", "vllm", "http://127.0.0.1:1", api_key_env=KEY_ENV)) == key
    assert key not in one_line(f"HTTP 401: the key {key} is not valid")
    assert one_line(f"HTTP 401: the key {key} is not valid") == "HTTP 401: the key <redacted> is not valid"
    assert redact('got "Authorization: Bearer abc123.def456"') == 'got "Authorization: Bearer <redacted>"'
    for prose in ("an EMPTY answer", "bearer token required", "invalid token id 5", "the first token arrived"):
        assert redact(prose) == prose  # placeholders, short strings and prose are left alone
