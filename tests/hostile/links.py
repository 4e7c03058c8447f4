"""What the hostile-link suites know about each page's link: its keys, which are numbers, and its codec.

Used by the codec suite (``tests/unit/links/test_hostile_links.py``, many cases) and the page suite
(``tests/pages/test_hostile_params.py``, a few cases per page through AppTest). The parameter names come from the
codecs' own tables (``Scenario`` fields × scenario prefixes, :data:`planner.links.compare.KEYS`,
:data:`planner.links.loadtest.KEYS`, :data:`planner.links.performance.KEYS`, :data:`planner.links.sizing.KEYS`), so a
new parameter is attacked without editing this file.

"Must be rejected" is decided by this file's own rules, from the documented limits, not by the codecs: a repeated
key; a value over 2,000 characters or holding NUL; for a non-text parameter, a value from :data:`BAD_NON_TEXT`; for
a numeric one, a value from :data:`BAD_NUMBER` (``inf`` only where no rate accepts it, ``-1`` only where it is
vLLM's ``--max-model-len -1``, i.e. auto: :data:`planner.capacity.scenario.MAX_MODEL_LEN_AUTO`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from hypothesis import strategies as st

from planner.capacity.scenario import LIMITS as SCENARIO_LIMITS
from planner.capacity.scenario import Scenario
from planner.fields import Number
from planner.links import budget as url_state
from planner.links import compare as compare_state
from planner.links import fleet as fleet_state
from planner.links import loadtest as loadtest_state
from planner.links import performance as perf_state
from planner.links import sizing as sizing_state

__all__ = [
    "BAD_EVERYWHERE",
    "BAD_NON_TEXT",
    "BAD_NUMBER",
    "LONGEST_ACCEPTED",
    "MIXED",
    "SPECS",
    "PageSpec",
    "flatten",
    "must_reject",
    "named",
    "queries",
]

#: Longest value any parameter of any page accepts (the compare prompt: 2,000 characters).
LONGEST_ACCEPTED = 2000

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
    "8192.0",
    "١٢٨",  # Arabic-Indic digits: Python's float() reads them as 128
    "vllm",
    "warp-drive",
    "h100-sxm-81gb",
    "h100-sxm-80gb",
    "unknown-org/no-such-model",
    "meta-llama/Llama-3.1-8B-Instruct",
    "ghost",
    "a,b,ghost",
    "a," * 20,
    " 8192 ",
    "custom",
    "fp8",
    "0.19.0",
    "ttft:500,tpot:50",
    "ttft_p99_ms=500,tpot_p99_ms=50",
    "h100-sxm-80gb=2.5",
    "h100-sxm-80gb:8,l4",
    "none,fp8",
    "rate",
    "1,2,4",
    '{"method": "ngram", "num_speculative_tokens": 3}',
)
UNKNOWN_KEYS = ("bogus", "api_key", "base_url", "url", "S2.gpu", "s5.gpu", "s1.gpu", "s2.", "__proto__", "gpu[]")


@dataclass(frozen=True)
class PageSpec:
    """What this file knows about a page: its file, its parameters and its codec.

    Attributes:
        decode: the whole link's decode (query → an object with ``warnings``).
        canonical: the link a decoded object writes back (its codec's ``encode``).
    """

    file: str
    keys: tuple[str, ...]
    numeric: frozenset[str]
    decode: Callable[[Mapping[str, Any]], Any]
    canonical: Callable[[Any], Mapping[str, str]]
    text: frozenset[str] = frozenset()
    inf_ok: frozenset[str] = frozenset()
    model_keys: frozenset[str] = frozenset()
    needs_endpoints: bool = False
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


def _settings_spec(file: str, codec: Any, numeric: frozenset[str], **extra: Any) -> PageSpec:
    """The scenario keys (every page's link carries them) and a settings codec's (``codec``: its ``KEYS``,
    ``decode_link`` and ``encode_link``) in one link."""
    scenarios = _scenario_spec(file)

    def canonical(decoded: Any) -> Mapping[str, str]:
        state = decoded.state
        return codec.encode_link(
            state.scenarios, decoded.settings, min_context=state.min_context, max_context=state.max_context
        )

    return PageSpec(
        file,
        scenarios.keys + tuple(codec.KEYS.values()),
        scenarios.numeric | numeric,
        codec.decode_link,
        canonical,
        needs_endpoints=True,
        auto_keys=scenarios.auto_keys,  # no model_keys: the page carries the scenarios but plans none of them
        **extra,
    )


def _numbers(codec: Any) -> frozenset[str]:
    """The keys of a settings codec whose fields are declared numbers (:class:`planner.fields.Number`)."""
    return frozenset(d.key for d in codec.CODEC.fields if isinstance(d.setting, Number))


def _compare_spec() -> PageSpec:
    """Live Compare's link (:mod:`planner.links.compare`): the prompt, system prompt and stop strings are free text."""
    keys = compare_state.KEYS
    text = frozenset(keys[n] for n in ("prompt", "system", "stop"))
    return _settings_spec("pages/compare.py", compare_state, _numbers(compare_state), text=text)


def _loadtest_spec() -> PageSpec:
    """The Load Test's link (:mod:`planner.links.loadtest`): a rate may be ``inf`` (a burst)."""
    fields_ = loadtest_state.CODEC.fields
    inf_ok = frozenset(d.key for d in fields_ if isinstance(d.setting, Number) and d.setting.typed_inf)
    return _settings_spec("pages/loadtest.py", loadtest_state, _numbers(loadtest_state), inf_ok=inf_ok)


def _performance_spec() -> PageSpec:
    """The scenario keys and the workload's (:mod:`planner.links.performance`) in one link."""
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
        auto_keys=scenarios.auto_keys,  # the scenarios' max_model_len=-1 is vLLM's auto here too
    )


def _fleet_spec() -> PageSpec:
    """The scenario keys, the workload's and the fleet's (:mod:`planner.links.fleet`) in one link."""
    scenarios = _scenario_spec("pages/fleet.py")
    own = tuple(fleet_state.KEYS.values())

    def canonical(decoded: Any) -> Mapping[str, str]:
        return fleet_state.encode_link(decoded.state.scenarios, decoded.fleet.workload, decoded.fleet.fleet)

    return PageSpec(
        "pages/fleet.py",
        scenarios.keys + own,
        scenarios.numeric | (frozenset(own) - {"dataset_name", "router"}),
        fleet_state.decode_link,
        canonical,
        inf_ok=frozenset({"request_rate"}),
        model_keys=scenarios.model_keys,
        auto_keys=scenarios.auto_keys,
    )


def _sizing_spec() -> PageSpec:
    """The Sizing page's own keys (:mod:`planner.links.sizing`); its link carries no scenario."""
    lists = frozenset({"model", "slo", "gpus", "price", "quantization", "kv_cache_dtype"})

    def canonical(decoded: Any) -> Mapping[str, str]:
        return sizing_state.encode(decoded.settings, row=decoded.row)

    return PageSpec(
        "pages/sizing.py",
        tuple(sizing_state.KEYS),
        frozenset(sizing_state.KEYS) - lists,
        sizing_state.decode,
        canonical,
        model_keys=frozenset({"model"}),
    )


SPECS: dict[str, PageSpec] = {
    "budget": _scenario_spec("pages/budget.py"),
    "concurrency": _scenario_spec("pages/concurrency.py"),
    "compare": _compare_spec(),
    "loadtest": _loadtest_spec(),
    "performance": _performance_spec(),
    "sizing": _sizing_spec(),
    "fleet": _fleet_spec(),
}


# --- strategies ------------------------------------------------------------------------------------------------------
_VALUE = st.one_of(
    st.sampled_from(BAD_EVERYWHERE),
    st.sampled_from(BAD_NON_TEXT),
    st.sampled_from(BAD_NUMBER),
    st.sampled_from(MIXED),
    st.sampled_from(MIXED),
    st.text(max_size=40),
    st.floats().map(repr),
    st.floats(min_value=-2, max_value=2000).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.integers(min_value=0, max_value=70_000).map(str),
)
VALUES = _VALUE
_PARAM_VALUE = st.one_of(_VALUE, _VALUE, st.lists(_VALUE, min_size=2, max_size=4))  # a list = a repeated key
_UNKNOWN_KEY = st.one_of(st.sampled_from(UNKNOWN_KEYS), st.from_regex(r"[a-z_]{1,24}", fullmatch=True))


def queries(spec: PageSpec) -> st.SearchStrategy[dict[str, str | list[str]]]:
    """Query strings of ``spec``'s page: one to six of its keys with hostile values, and up to two unknown keys."""
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
    if key in spec.numeric and value in BAD_NUMBER:
        return not (value.lower() in ("inf", "infinity") and key in spec.inf_ok)
    return False


def named(key: str, text: str) -> bool:
    """``key`` appears in ``text`` as a whole parameter name (``gpu`` is not found inside ``s2.gpu``)."""
    shown = key if len(key) <= 30 else key[:30]
    return re.search(r"(?<![\w.])" + re.escape(shown) + (r"(?![\w.])" if shown == key else ""), text) is not None


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of a decoded link by its path (``state.scenarios.1.max_model_len``), warnings left out; a tuple's
    length is a leaf too (``state.scenarios.#``), so a scenario added or dropped is a difference."""
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in fields(value):
            if f.name != "warnings":
                out |= flatten(getattr(value, f.name), f"{path}{f.name}.")
        return out
    if isinstance(value, tuple) and any(is_dataclass(v) for v in value):
        out = {f"{path}#": len(value)}
        for i, item in enumerate(value):
            out |= flatten(item, f"{path}{i}.")
        return out
    return {path.rstrip("."): value}
