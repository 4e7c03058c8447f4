"""endpoints.toml loading, --endpoint flag parsing and API-key lookup."""

from __future__ import annotations

import json

import pytest

from planner.errors import EndpointConfigError, InvalidParameterError, MissingAPIKeyError, PlannerError
from planner.serving.endpoints import (
    Endpoint,
    api_key,
    load_endpoints,
    parse_endpoint_flag,
)

GOOD = """
[[endpoint]]
name = "vllm-a"
kind = "vllm"
base_url = "http://127.0.0.1:8000/v1/"
model = "Qwen/Qwen3-0.6B"
api_key_env = "VLLM_KEY"

[[endpoint]]
name = "tgi-b"
kind = "tgi"
base_url = "https://tgi.example:8080"
"""


def test_load_good_file(tmp_path):
    path = tmp_path / "endpoints.toml"
    path.write_text(GOOD, encoding="utf-8")
    a, b = load_endpoints(path)
    assert a == Endpoint("vllm-a", "vllm", "http://127.0.0.1:8000", "Qwen/Qwen3-0.6B", "VLLM_KEY")
    assert a.openai_base_url == "http://127.0.0.1:8000/v1"  # a trailing /v1/ is normalized away and re-added
    assert (b.kind, b.model, b.api_key_env) == ("tgi", None, None)


def test_bad_entries_one_line_each(tmp_path):
    path = tmp_path / "endpoints.toml"
    path.write_text(
        """
[[endpoint]]
name = "a"
kind = "ollama"
base_url = "http://x:1"

[[endpoint]]
name = "b"
kind = "vllm"
base_url = "ftp://x"

[[endpoint]]
kind = "vllm"
base_url = "http://x:2"
colour = "red"

[[endpoint]]
name = "d"
kind = "vllm"
base_url = "http://x:3"
api_key_env = "sk-live-123"
""",
        encoding="utf-8",
    )
    with pytest.raises(EndpointConfigError) as info:
        load_endpoints(path)
    problems = info.value.problems
    assert len(problems) == 5 and str(info.value).count("\n") == 4
    assert "endpoint[0] (a): kind='ollama' is not valid; expected one of vllm, tgi, openai, sglang" in problems[0]
    assert "endpoint[1] (b): base_url='ftp://x'" in problems[1] and "http://" in problems[1]
    assert any("endpoint[2]: name is missing" in p for p in problems)
    assert any("endpoint[2]: unknown field 'colour'" in p for p in problems)
    assert (
        "endpoint[3] (d): api_key_env=<not shown>" in problems[4] and "NAME of an environment variable" in problems[4]
    )
    assert "sk-live" not in str(info.value)  # a key pasted by mistake is never echoed


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no [[endpoint]] tables"),
        ("endpoint = [", "not valid TOML"),
        ("endpoint = " + "[" * 5000 + "]" * 5000, "nested too deeply to read; expected [[endpoint]] tables in TOML"),
        ("[[endpoint]]\nname = 3", "name=3"),
    ],
)
def test_unreadable_files(tmp_path, text, problem):
    path = tmp_path / "endpoints.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EndpointConfigError, match=problem.replace("[", r"\[")):
        load_endpoints(path)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    """A binary file raised UnicodeDecodeError through the CLI (issue 24, found by the hostile-flags suite)."""
    path = tmp_path / "endpoints.toml"
    path.write_bytes(b"\xff\xfe[[endpoint]]")
    with pytest.raises(EndpointConfigError) as info:
        load_endpoints(path)
    (line,) = info.value.problems
    assert str(path) in line and "not UTF-8" in line


@pytest.mark.parametrize("name", ["a\nb", "a\n", "x" * 10_000, "x" * 65, "tab\there"])
def test_a_bad_name_is_refused_and_shown_short_on_its_one_line(tmp_path, name):
    """A name is what a link carries (at most 64 characters; a 10,000-character name was accepted, then left out of
    every link without a word, and "a\\n" passed the pattern's $); the entry label quotes a bad name as a short
    repr (a newline in it made its problem two lines) (issue 24, found by the hostile-endpoints suite)."""
    path = tmp_path / "endpoints.toml"
    path.write_text(f'[[endpoint]]\nname = {json.dumps(name)}\nkind = "vllm"\nbase_url = "http://x:1"\n')
    with pytest.raises(EndpointConfigError) as info:
        load_endpoints(path)
    (line,) = info.value.problems
    assert "\n" not in line and len(line) < len(str(path)) + 300 and "name=" in line


def test_missing_file_and_duplicates(tmp_path):
    with pytest.raises(EndpointConfigError, match="cannot read"):
        load_endpoints(tmp_path / "nope.toml")
    path = tmp_path / "e.toml"
    path.write_text(GOOD + GOOD, encoding="utf-8")
    with pytest.raises(EndpointConfigError, match="used twice"):
        load_endpoints(path)


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("a=vllm:http://127.0.0.1:8000", Endpoint("a", "vllm", "http://127.0.0.1:8000")),
        ("tgi-1=TGI:https://h.example/v1", Endpoint("tgi-1", "tgi", "https://h.example")),
        ("l=llamacpp:http://localhost:8080/", Endpoint("l", "llamacpp", "http://localhost:8080")),
    ],
)
def test_parse_endpoint_flag(flag, expected):
    assert parse_endpoint_flag(flag) == expected


@pytest.mark.parametrize("flag", ["vllm:http://x", "a=vllm", "a=foo:http://x", "a=vllm:file:///etc", "=vllm:http://x"])
def test_parse_endpoint_flag_rejects(flag):
    with pytest.raises(InvalidParameterError) as info:
        parse_endpoint_flag(flag)
    assert info.value.name == "endpoint" and "NAME=KIND:URL" in str(info.value)


def test_api_key_from_secrets_then_env_never_in_repr(monkeypatch):
    ep = Endpoint("a", "vllm", "http://x:1", api_key_env="PLANNER_TEST_KEY")
    assert api_key(Endpoint("n", "vllm", "http://x:1")) is None
    monkeypatch.setenv("PLANNER_TEST_KEY", "sk-env")
    assert api_key(ep) == "sk-env"
    assert api_key(ep, {"PLANNER_TEST_KEY": "sk-secret"}) == "sk-secret"
    assert "sk-" not in repr(ep)
    monkeypatch.delenv("PLANNER_TEST_KEY")
    with pytest.raises(MissingAPIKeyError, match="PLANNER_TEST_KEY is not set") as info:
        api_key(ep)
    assert isinstance(info.value, PlannerError)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254",
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.1.1:8000",
        "http://metadata.google.internal",
        "http://[fd00:ec2::254]",
        "http://[fe80::1]:8000",
    ],
)
def test_link_local_and_metadata_addresses_are_refused(url: str) -> None:
    # A config file or the page's form must never make the server call a cloud metadata service.
    with pytest.raises(InvalidParameterError, match=r"base_url|endpoint"):
        parse_endpoint_flag(f"a=vllm:{url}")


def test_credentials_in_a_url_are_never_echoed() -> None:
    with pytest.raises(InvalidParameterError) as exc:
        parse_endpoint_flag("a=vllm:http://user:secret@127.0.0.1:8000")
    assert "secret" not in str(exc.value)
