"""Hostile links through the pages, property-based (issues 6 and 24): every parameter of every page, with values
built to hurt (:mod:`tests.hostile.links`: wrong types, NaN/inf, negative and huge numbers, 10⁶-character strings,
NUL, RTL overrides, zero-width and emoji, markup and paths, unknown GPU/model/endpoint names, repeated keys, unknown
keys).

The codecs themselves get thousands of such queries in ``tests/unit/links/test_hostile_links.py``; here a few per
page go through Streamlit's AppTest: no exception, every parameter that must be rejected named in a warning the page
shows, every run finishes within the AppTest timeout, the page keeps at most four scenarios, and the URL it writes
back is canonical (decodes without a warning, holds no long or NUL value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import Phase, example, given, settings
from streamlit.runtime.state.query_params import (
    CLIENT_STATE_QUERY_STRING_MAX_FIELDS,
    CLIENT_STATE_QUERY_STRING_MAX_LENGTH,
)
from streamlit.testing.v1 import AppTest

from planner.links import budget as url_state
from tests.hostile import COUNTS, hostile_settings
from tests.hostile.links import LONGEST_ACCEPTED, SPECS, PageSpec, must_reject, named, queries

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30
#: Examples per page through AppTest (the file runs in about half a minute).
PAGE_EXAMPLES = 20
#: Explicit page examples (the @example queries below), tried on every page before the generated ones.
PAGE_EXPLICIT = 3
#: The pages this file opens.
PAGES = ("budget", "concurrency", "compare", "loadtest", "performance", "sizing", "fleet")
#: Hostile-parameter cases this file tries.
CASES = (PAGE_EXAMPLES + PAGE_EXPLICIT) * len(PAGES)


def _check_names(spec: PageSpec, query: Mapping[str, Any], shown: str) -> None:
    for key, value in query.items():
        if must_reject(spec, key, value):
            assert named(key, shown), f"{key}={str(value)[:60]!r} not named in: {shown[:2000]}"


# --- page level ------------------------------------------------------------------------------------------------------
@pytest.fixture
def endpoints_file(tmp_path, monkeypatch, closed_port_url) -> None:
    """Two configured endpoints, ``a`` and ``b``, on a closed port (discovery fails at once: no wait)."""
    path = tmp_path / "endpoints.toml"
    path.write_text(
        "".join(f'[[endpoint]]\nname = "{n}"\nkind = "vllm"\nbase_url = "{closed_port_url}"\n' for n in "ab"),
        encoding="utf-8",
    )
    monkeypatch.setenv("LLM_PLANNER_ENDPOINTS", str(path))
    monkeypatch.setenv("LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS", "1")


def _run(spec: PageSpec, query: Mapping[str, str | Sequence[str]]) -> AppTest:
    at = AppTest.from_file(str(ROOT / spec.file), default_timeout=TIMEOUT_S)
    for key, value in query.items():
        at.query_params[key] = list(value) if isinstance(value, list) else value
    return at.run(timeout=TIMEOUT_S)  # raises if the run does not finish in time: the work is bounded


def _dropped_by_streamlit(query: Mapping[str, Any]) -> bool:
    """Streamlit ignores a whole query string over 512 Ki characters or 1,000 fields, before any page runs."""
    encoded = urlencode(query, doseq=True)
    return len(encoded) > CLIENT_STATE_QUERY_STRING_MAX_LENGTH or encoded.count("&") + 1 > (
        CLIENT_STATE_QUERY_STRING_MAX_FIELDS
    )


def _final_query(at: AppTest) -> dict[str, str]:
    """The page's query string after the run (AppTest keeps it as a dict of strings or lists)."""
    return {key: value[-1] if isinstance(value, list) else value for key, value in at.query_params.items()}


@pytest.mark.parametrize("page", PAGES)
def test_page_survives_hostile_links(page, endpoints_file):
    spec = SPECS[page]

    # No shrinking: each step is a page run; a failure prints its query as found. Derandomized: the same cases on
    # every run, so the count quoted in the closing note is exact.
    @settings(hostile_settings(PAGE_EXAMPLES), phases=(Phase.explicit, Phase.generate))
    @given(query=queries(spec))
    @example(query={"ep": "a,ghost", "bogus": "1"})  # an endpoint that is not configured
    @example(query={"model": "unknown-org/no-such-model", "gpu": "h100-sxm-81gb", "s2.gpu": "🙂"})
    @example(query={"s4.max_model_len": "1e308", "scenarios": ["4", "9"], "timeout": "nan", "repeat": "1e999"})
    def check(query):
        tally = COUNTS["pages.links"]
        tally.cases += 1
        at = _run(spec, query)
        if at.exception:
            tally.crashes += 1
        assert not at.exception, [e.value for e in at.exception]
        for shown in at.warning:
            assert "\n" not in shown.value.strip(), shown.value
        warnings = "\n".join(w.value for w in at.warning)
        if at.warning:
            tally.refused += 1
            tally.one_line += 1
        if _dropped_by_streamlit(query):
            # the page never sees such a link, so it has nothing to warn about: it opens with its defaults
            assert not any(w.value.startswith("URL parameter") for w in at.warning)
            return
        _check_names(spec, query, warnings)
        for key, value in query.items():
            last = value[-1] if isinstance(value, list) else value
            if key == "ep" and spec.needs_endpoints and "ghost" in last.split(","):
                assert named("ep", warnings), f"unknown endpoint in {last!r} not named in: {warnings}"
            if key in spec.model_keys and value == "unknown-org/no-such-model":
                # a well-formed repo id is the page's business: it says it cannot resolve it, naming it
                assert "unknown-org/no-such-model" in warnings + "\n".join(e.value for e in at.error)
        final = _final_query(at)
        assert all(len(v) <= LONGEST_ACCEPTED and "\x00" not in v for v in final.values()), final
        assert spec.decode(final).warnings == (), (final, spec.decode(final).warnings)
        scenarios = at.session_state["planner.scenarios"] if "planner.scenarios" in at.session_state else ()  # noqa: SIM401 (SessionState has no get)
        assert len(scenarios) <= url_state.MAX_SCENARIOS

    check()
