"""Hostile links, property-based: every parameter of every page, with values built to hurt (issue 6).

The parameter names come from the codecs' own tables (``Scenario`` fields × scenario prefixes for the VRAM Budget
and Concurrency pages, :data:`planner.links.compare.KEYS`, :data:`planner.links.loadtest.KEYS`), so a new parameter
is attacked without editing this file. Values: wrong types, NaN/inf, negative and huge numbers, 10⁶-character
strings, NUL, RTL overrides, zero-width and emoji, markup and paths, unknown GPU/model/endpoint names, repeated
keys (lists), and unknown keys.

Two levels:

* the codecs (``decode``), fast, many examples: never raise, a rejected parameter is named in a warning, what is
  decoded stays within the documented limits, and the link written back (``encode``) decodes without a warning;
* the pages through Streamlit's AppTest, fewer examples: no exception, the same naming rule on the warnings the
  page shows, every run finishes within the AppTest timeout, the page keeps at most four scenarios within LIMITS,
  and the URL it writes back is canonical (decodes without a warning, holds no long or NUL value).

"Must be rejected" is decided by this file's own rules, from the documented limits, not by the codecs: a repeated
key; a value over 2,000 characters or holding NUL; for a non-text parameter, a value from :data:`BAD_NON_TEXT`; for
a numeric one, a value from :data:`BAD_NUMBER` (``inf`` only where no rate accepts it, ``-1`` only where it is
vLLM's ``--max-model-len -1``, i.e. auto: :data:`planner.capacity.scenario.MAX_MODEL_LEN_AUTO`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from streamlit.runtime.state.query_params import (
    CLIENT_STATE_QUERY_STRING_MAX_FIELDS,
    CLIENT_STATE_QUERY_STRING_MAX_LENGTH,
)
from streamlit.testing.v1 import AppTest

from planner.capacity.scenario import LIMITS as SCENARIO_LIMITS
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.links import budget as url_state
from planner.links import compare as compare_state

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30
#: Examples per page through AppTest, and per codec through ``decode`` (the file runs in about a minute).
PAGE_EXAMPLES = 25
CODEC_EXAMPLES = 300
#: Longest value any parameter of any page accepts (the compare prompt: 2,000 characters).
LONGEST_ACCEPTED = 2000
#: A decode must not take longer than this, even for a 10⁶-character value (it reads at most a bounded prefix).
DECODE_LIMIT_S = 1.0

HUGE = ("x" * 10**6, "9" * 10**6, "🙂" * 3000, "ab," * 400_000)
#: Rejected by every parameter of every page.
BAD_EVERYWHERE = ("\x00", "a\x00b", "0\x00", "ep\x00a", *HUGE)
#: Rejected by every parameter that is not free text (prompt, system prompt, stop strings).
BAD_NON_TEXT = (
    "\u202e1tpircs",  # RTL override
    "8\u200b",  # zero-width space
    "🙂",
    "Ω≈ç√",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "h100-sxm-81gb/🙂",
    "'; DROP TABLE x;--",
    "{{7*7}}",
    "http://169.254.169.254/latest/meta-data/",
    "file:///etc/passwd",
)
#: Rejected by every numeric parameter (``inf`` and ``Infinity`` except where a rate accepts them).
BAD_NUMBER = ("nan", "NaN", "-nan", "-1", "-0.5e3", "1e308", "1e999", "-inf", "inf", "Infinity", "0x10", "1_0")
#: Not rejected by every parameter: types from other parameters, unknown catalog names, plausible values.
MIXED = (
    "",  # "server default" for optional numbers (temperature, seed, ...), bad for the others
    "true",
    "none",
    "None",
    "0",
    "1",
    "1.5",
    "64",
    "1e3",
    "١٢٨",  # Arabic-Indic digits: Python's float() reads them as 128
    "vllm",
    "warp-drive",
    "h100-sxm-81gb",
    "unknown-org/no-such-model",
    "ghost",
    "a,b,ghost",
    "a," * 20,
    " 8192 ",
    "custom",
    "fp8",
    "0.19.0",
    "ttft:500,tpot:50",
)
UNKNOWN_KEYS = ("bogus", "api_key", "base_url", "url", "S2.gpu", "s5.gpu", "s1.gpu", "s2.", "__proto__", "gpu[]")


@dataclass(frozen=True)
class PageSpec:
    """What this file knows about a page: its file, its parameters and its codec."""

    file: str
    keys: tuple[str, ...]
    numeric: frozenset[str]
    decode: Callable[[Mapping[str, Any]], Any]
    canonical: Callable[[Any], Mapping[str, str]]
    text: frozenset[str] = frozenset()
    inf_ok: frozenset[str] = frozenset()
    model_keys: frozenset[str] = frozenset()
    needs_endpoints: bool = False
    #: Values of BAD_NUMBER a codec is known to accept (a reported bug, listed so the rest stays checked).
    lenient: frozenset[str] = frozenset()
    #: Keys where ``-1`` is a documented value: vLLM's ``--max-model-len -1`` (auto).
    auto_keys: frozenset[str] = frozenset()


def _scenario_spec(file: str) -> PageSpec:
    names = [f.name for f in fields(Scenario)]
    keys = [url_state.scenario_key(i, n) for i in range(url_state.MAX_SCENARIOS) for n in names]
    keys += [url_state.COUNT_KEY, *url_state.PAGE_KEYS]
    numeric = {url_state.scenario_key(i, n) for i in range(url_state.MAX_SCENARIOS) for n in SCENARIO_LIMITS}
    numeric |= {url_state.COUNT_KEY, *url_state.PAGE_KEYS}
    models = {url_state.scenario_key(i, "model") for i in range(url_state.MAX_SCENARIOS)}

    def canonical(decoded: Any) -> Mapping[str, str]:
        return url_state.encode(decoded.scenarios, min_context=decoded.min_context, max_context=decoded.max_context)

    auto = frozenset(url_state.scenario_key(i, "max_model_len") for i in range(url_state.MAX_SCENARIOS))
    return PageSpec(
        file,
        tuple(keys),
        frozenset(numeric),
        url_state.decode,
        canonical,
        model_keys=frozenset(models),
        auto_keys=auto,
    )


def _compare_spec() -> PageSpec:
    """The scenario keys (every page's link carries them) and Live Compare's (:mod:`planner.links.compare`)."""
    scenarios = _scenario_spec("pages/compare.py")
    keys = tuple(compare_state.KEYS.values())
    numeric = frozenset(compare_state.KEYS[n] for n in compare_state.LIMITS)
    text = frozenset(compare_state.KEYS[n] for n in ("prompt", "system", "stop"))

    def canonical(decoded: Any) -> Mapping[str, str]:
        state = decoded.state
        return compare_state.encode_link(
            state.scenarios, decoded.settings, min_context=state.min_context, max_context=state.max_context
        )

    return PageSpec(
        "pages/compare.py",
        scenarios.keys + keys,
        scenarios.numeric | numeric,
        compare_state.decode_link,
        canonical,
        text=text,
        needs_endpoints=True,
        auto_keys=scenarios.auto_keys,  # no model_keys: the page carries the scenarios but plans none of them
    )


def _loadtest_spec() -> PageSpec | None:
    """The scenario keys and the Load Test's (:mod:`planner.links.loadtest`) in one link."""
    try:
        from planner.links import loadtest as loadtest_state
    except ImportError:
        return None
    scenarios = _scenario_spec("pages/loadtest.py")
    numbers: Mapping[str, tuple] = loadtest_state.NUMBERS
    keys = tuple(loadtest_state.KEYS.values())
    numeric = frozenset(loadtest_state.KEYS[n] for n in numbers)
    inf_ok = frozenset(loadtest_state.KEYS[n] for n, spec in numbers.items() if len(spec) > 4 and spec[4])

    def canonical(decoded: Any) -> Mapping[str, str]:
        state = decoded.state
        return loadtest_state.encode_link(
            state.scenarios, decoded.settings, min_context=state.min_context, max_context=state.max_context
        )

    return PageSpec(
        "pages/loadtest.py",
        scenarios.keys + keys,
        scenarios.numeric | numeric,
        loadtest_state.decode_link,
        canonical,
        inf_ok=inf_ok,
        needs_endpoints=True,
        auto_keys=scenarios.auto_keys,  # no model_keys: the page carries the scenarios but plans none of them
    )


def _performance_spec() -> PageSpec:
    """The scenario keys and the workload's (:mod:`planner.links.performance`) in one link."""
    from planner.links import performance as perf_state

    scenarios = _scenario_spec("pages/performance.py")
    workload = tuple(perf_state.KEYS.values())
    numeric = frozenset(perf_state.KEYS[n] for n in (*perf_state.FIELDS, "rates"))  # every key but axis

    def canonical(decoded: Any) -> Mapping[str, str]:
        state, work = decoded.state, decoded.workload
        return perf_state.encode_link(
            state.scenarios,
            work.settings,
            axis=work.axis,
            rates=work.rates,
            min_context=state.min_context,
            max_context=state.max_context,
        )

    return PageSpec(
        "pages/performance.py",
        scenarios.keys + workload,
        scenarios.numeric | numeric,
        perf_state.decode_link,
        canonical,
        model_keys=scenarios.model_keys,
    )


SPECS: dict[str, PageSpec | None] = {
    "budget": _scenario_spec("pages/budget.py"),
    "concurrency": _scenario_spec("pages/concurrency.py"),
    "compare": _compare_spec(),
    "loadtest": _loadtest_spec(),
    "performance": _performance_spec(),
}
#: Explicit page examples (the @example queries below), tried on every page before the generated ones.
PAGE_EXPLICIT = 3
#: Hostile-parameter cases this file tries: codec examples plus page examples, over the five pages (a page's are
#: skipped while its file does not exist).
CASES = (CODEC_EXAMPLES + PAGE_EXAMPLES + PAGE_EXPLICIT) * len(SPECS)


def _spec(page: str) -> PageSpec:
    spec = SPECS[page]
    if spec is None or not (ROOT / spec.file).exists():
        pytest.skip(f"{page}: the page or its codec does not exist yet")
    return spec


# --- strategies ------------------------------------------------------------------------------------------------------
_VALUE = st.one_of(
    st.sampled_from(BAD_EVERYWHERE),
    st.sampled_from(BAD_NON_TEXT),
    st.sampled_from(BAD_NUMBER),
    st.sampled_from(MIXED),
    st.text(max_size=40),
    st.floats().map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)
_PARAM_VALUE = st.one_of(_VALUE, st.lists(_VALUE, min_size=2, max_size=4))  # a list = a repeated key
_UNKNOWN_KEY = st.one_of(st.sampled_from(UNKNOWN_KEYS), st.from_regex(r"[a-z_]{1,24}", fullmatch=True))


def _queries(spec: PageSpec) -> st.SearchStrategy[dict[str, str | list[str]]]:
    known = st.dictionaries(st.sampled_from(spec.keys), _PARAM_VALUE, min_size=1, max_size=6)
    unknown = st.dictionaries(_UNKNOWN_KEY.filter(lambda k: k not in spec.keys), _VALUE, max_size=2)
    return st.builds(lambda a, b: {**a, **b}, known, unknown)


# --- the rules -------------------------------------------------------------------------------------------------------
def must_reject(spec: PageSpec, key: str, value: str | list[str]) -> bool:
    """This file's rule (see the module docstring): True when the page must warn about ``key``."""
    if key not in spec.keys:
        return True  # unknown keys are listed by name
    if isinstance(value, list):
        return True  # a repeated key warns even when its last value is good
    if len(value) > LONGEST_ACCEPTED or "\x00" in value:
        return True
    if key in spec.text:
        return False
    if value in BAD_NON_TEXT:
        return True
    if value == "-1" and key in spec.auto_keys:
        return False  # vLLM's --max-model-len -1: auto
    if key in spec.numeric and value in BAD_NUMBER and value not in spec.lenient:
        return not (value.lower() in ("inf", "infinity") and key in spec.inf_ok)
    return False


def named(key: str, text: str) -> bool:
    """``key`` appears in ``text`` as a whole parameter name (``gpu`` is not found inside ``s2.gpu``)."""
    shown = key if len(key) <= 30 else key[:30]
    return re.search(r"(?<![\w.])" + re.escape(shown) + (r"(?![\w.])" if shown == key else ""), text) is not None


def _check_names(spec: PageSpec, query: Mapping[str, Any], shown: str) -> None:
    for key, value in query.items():
        if must_reject(spec, key, value):
            assert named(key, shown), f"{key}={str(value)[:60]!r} not named in: {shown[:2000]}"


def _check_decoded(spec: PageSpec, decoded: Any) -> None:
    """What a decode may produce: bounded values, and a canonical link that decodes without warnings."""
    link = spec.canonical(decoded)
    assert all(len(v) <= LONGEST_ACCEPTED and "\x00" not in v for v in link.values()), link
    again = spec.decode(link)
    assert again.warnings == (), again.warnings
    state = getattr(decoded, "state", decoded)  # the Performance link holds the scenario codec's answer
    if hasattr(state, "scenarios"):
        assert 1 <= len(state.scenarios) <= url_state.MAX_SCENARIOS
        for scenario in state.scenarios:
            for name, (low, high) in SCENARIO_LIMITS.items():
                value = getattr(scenario, name)
                auto = name == "max_model_len" and value == MAX_MODEL_LEN_AUTO
                assert value is None or auto or low <= value <= high, (name, value)


# --- codec level -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", list(SPECS))
def test_codec_never_raises_and_names_what_it_rejects(page):
    spec = _spec(page)

    @settings(max_examples=CODEC_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(query=_queries(spec))
    def check(query):
        started = time.perf_counter()
        decoded = spec.decode(query)
        assert time.perf_counter() - started < DECODE_LIMIT_S
        assert all("\n" not in w and len(w) <= 2000 for w in decoded.warnings)
        _check_names(spec, query, "\n".join(decoded.warnings))
        _check_decoded(spec, decoded)

    check()


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


@pytest.mark.parametrize("page", list(SPECS))
def test_page_survives_hostile_links(page, endpoints_file):
    spec = _spec(page)

    # No shrinking: each step is a page run; a failure prints its query as found. Derandomized: the same cases on
    # every run, so the count quoted in the closing note is exact.
    @settings(
        max_examples=PAGE_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate),
        derandomize=True,
    )
    @given(query=_queries(spec))
    @example(query={"ep": "a,ghost", "bogus": "1"})  # an endpoint that is not configured
    @example(query={"model": "unknown-org/no-such-model", "gpu": "h100-sxm-81gb", "s2.gpu": "🙂"})
    @example(query={"s4.max_model_len": "1e308", "scenarios": ["4", "9"], "timeout": "nan", "repeat": "1e999"})
    def check(query):
        at = _run(spec, query)
        assert not at.exception, [e.value for e in at.exception]
        warnings = "\n".join(w.value for w in at.warning)
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
