"""Hostile endpoints files and ``--endpoint`` flags, property-based (issue 24): ``endpoints.toml`` (Live Compare, Load
Test, ``compare --endpoints-file``) and ``compare``/``bench --endpoint NAME=KIND:URL``.

Entries mix valid values with names holding newlines, NUL, markup or 10,000 characters, unknown kinds, URLs that are
no http(s) URL, point at cloud-metadata addresses or carry credentials, API-key variable names that are keys, wrong
types, unknown fields, and damaged TOML. Properties: nothing raises but the package's own errors; every line of a
refusal is one clear line naming the file (an ``endpoints.toml`` refusal has one line per bad entry); a credential in
a URL is never echoed; an accepted entry is the endpoint as written (its URL without trailing slashes and ``/v1``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.errors import EndpointConfigError
from planner.serving.endpoints import KINDS, load_endpoints, parse_endpoint_flag
from tests.hostile import COUNTS, assert_one_line, hostile_settings, hostile_text, json_values, mostly

#: Generated files and flags.
FILE_EXAMPLES = 400
FLAG_EXAMPLES = 400
SECRET = "sk-hostile-0123456789"

_GOOD = {
    "name": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,20}", fullmatch=True),
    "kind": st.sampled_from(KINDS),
    "base_url": st.sampled_from(["http://127.0.0.1:8000", "https://example.com/prefix/", "http://gpu-01:9000/v1"]),
    "model": st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "m"]),
    "api_key_env": st.sampled_from(["VLLM_API_KEY", "_KEY"]),
}
_BAD: dict[str, st.SearchStrategy[Any]] = {
    "name": st.one_of(hostile_text(), st.sampled_from(["a\n", "a b", "x" * 10_000, "-a", "ok\x00"])),
    "kind": st.one_of(hostile_text(), st.sampled_from(["VLLM", "vllm ", "openai-compatible"])),
    "base_url": st.one_of(
        hostile_text(),
        st.sampled_from(
            [
                "ftp://x",
                "http://169.254.169.254",
                "http://0xa9fea9fe",
                "http://[fe80::1]:80",
                f"http://user:{SECRET}@host:80",
                "http://host:80\n",
                "http://h\u3002st",
                "http:// space",
            ]
        ),
    ),
    "model": st.one_of(hostile_text(), st.just(7)),
    "api_key_env": st.one_of(st.just(SECRET), hostile_text()),
}


@st.composite
def entries(draw: st.DrawFn) -> tuple[dict[str, Any], bool]:
    """An ``[[endpoint]]`` table and whether every value in it is a valid one."""
    entry: dict[str, Any] = {}
    good = True
    for field in _GOOD:
        if field in ("model", "api_key_env") and draw(st.booleans()):
            continue  # optional
        if draw(st.integers(0, 7)) == 0:
            entry[field], good = draw(_BAD[field]), False
        else:
            entry[field] = draw(_GOOD[field])
    if draw(st.integers(0, 9)) == 0:
        entry[draw(st.sampled_from(["api_key", "url", "Name"]))] = draw(json_values(2))
        good = False
    return entry, good


def _toml_value(value: Any) -> str:
    # a TOML basic string is JSON's string syntax; other JSON values are written as JSON (which TOML may refuse)
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture
def endpoints_path(tmp_path):
    return tmp_path / "endpoints.toml"


@hostile_settings(FILE_EXAMPLES)
@given(tables=st.lists(entries(), max_size=4), damage=st.integers(0, 9))
def test_endpoints_file_is_read_as_written_or_refused_line_by_line(endpoints_path, tables, damage) -> None:
    text = "".join(
        "[[endpoint]]\n" + "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in entry.items())
        for entry, _ in tables
    )
    if damage == 0:
        text = text[: len(text) // 2]
    endpoints_path.write_text(text, encoding="utf-8", errors="surrogatepass")
    tally = COUNTS["files.endpoints"]
    tally.cases += 1
    try:
        endpoints = load_endpoints(endpoints_path)
    except EndpointConfigError as exc:
        tally.refused += 1
        for line in exc.problems:
            assert_one_line(line, [str(endpoints_path)])
            assert SECRET not in line, line
        tally.one_line += 1
        assert damage == 0 or not tables or not all(good for _, good in tables) or _same_names(tables), exc.problems
        return
    except Exception:
        tally.crashes += 1
        raise
    if damage == 0:
        return  # half a file that still reads: what it holds is not known here
    assert len(endpoints) == len(tables)
    for endpoint, (entry, _) in zip(endpoints, tables, strict=True):
        assert (endpoint.name, endpoint.kind) == (entry["name"], entry["kind"])
        assert (endpoint.model, endpoint.api_key_env) == (entry.get("model"), entry.get("api_key_env"))
        url = entry["base_url"].strip().rstrip("/")
        assert endpoint.base_url == url.removesuffix("/v1"), (endpoint.base_url, entry["base_url"])


def _same_names(tables: list[tuple[dict[str, Any], bool]]) -> bool:
    names = [entry.get("name") for entry, _ in tables]
    return len(set(map(str, names))) < len(names)


@hostile_settings(FLAG_EXAMPLES)
@given(
    name=mostly(_GOOD["name"], _BAD["name"]),
    kind=mostly(_GOOD["kind"], _BAD["kind"]),
    url=mostly(_GOOD["base_url"], _BAD["base_url"]),
    form=st.integers(0, 5),
)
def test_endpoint_flag_is_read_as_written_or_refused_in_one_line(name, kind, url, form) -> None:
    text = f"{name}={kind}:{url}" if form else f"{name}{kind}{url}"
    tally = COUNTS["flags.endpoint"]
    tally.cases += 1
    try:
        endpoint = parse_endpoint_flag(text)
    except EndpointConfigError:
        raise
    except Exception as exc:
        from planner.errors import PlannerError

        if not isinstance(exc, PlannerError):
            tally.crashes += 1
            raise
        tally.refused += 1
        assert_one_line(str(exc), ["endpoint"])
        assert SECRET not in str(exc), str(exc)
        tally.one_line += 1
        return
    assert endpoint.name == name.strip() and endpoint.kind == kind.strip().lower(), (endpoint, text)
