"""One explicit codec between the Load Test page's settings and a URL query string.

The settings themselves (:class:`~planner.loadtest.settings.LoadSettings`, its defaults, limits and the goodput SLO
format) live in :mod:`planner.loadtest.settings`; this module only writes and reads them.

Keys follow ``vllm bench serve``'s flag spelling (``--num-prompts`` → ``num_prompts``); every key is optional and
only values that differ from :data:`~planner.loadtest.settings.DEFAULT` are written:

* ``ep``: endpoint NAMES, comma separated (never a URL or a key, as on Live Compare);
* ``mode``: ``run`` (one load per endpoint) or ``sweep`` (concurrency 1, 2, 4, … ``sweep_max``);
* ``num_prompts`` (1–:data:`~planner.loadtest.settings.MAX_PROMPTS`), ``max_concurrency`` (1–1024 or none),
  ``request_rate`` (req/s > 0 or ``inf`` = burst), ``burstiness`` (gamma shape, 0.01–100), ``num_warmups`` (0–100),
  ``duration`` (cap of a run, 1–3600 s), ``timeout`` (per request, 1–600 s), ``seed``;
* ``dataset_name``: ``random`` (synthetic prompts of ``input_len`` tokens), ``examples`` (the eight built-in
  example prompts), ``custom`` (an uploaded JSONL file; the file itself is never in a link);
* ``input_len`` (1–131072), ``output_len`` (1–32768), ``range_ratio`` ([0, 1)), ``ignore_eos`` (true/false);
* ``input_sizing``: ``tokenize`` (the default), ``token_ids`` or ``words`` (see ``LoadSettings``);
* ``goodput``: SLOs as vLLM's ``--goodput`` takes them, ``ttft:500,tpot:50,e2el:2000`` (milliseconds);
* ``sweep_max`` (1–1024), ``scrape_metrics`` (true/false: poll the server's ``/metrics`` during the run);
* workloads: ``dataset_name`` also ``prefix_repetition``, ``multi_turn``, ``sharegpt``, ``timed_trace``, ``burstgpt``
  (a file's content is never in a link); ``prefix_len`` (0–131072), ``suffix_len`` (1–131072), ``num_prefixes``
  (1–1000), ``num_turns`` (1–64), ``think_time_s`` (0–600 s), ``time_scale`` (0.0001–1000),
  ``trace_chunk_hash_size`` (1–65536);
* ``flush_cache`` (true/false: flush, prime, measure), ``num_runs`` (1–20 repeats), ``sweep_stop`` and
  ``sweep_refine`` (true/false);
* ``batching``: ``continuous`` (the default), ``static`` (fixed batches of ``max_concurrency``, the next when the
  slowest ends) or ``compare`` (a static and a continuous run).

Every run the page can start is bounded: at most :data:`~planner.loadtest.settings.MAX_PROMPTS` requests per run,
at most 11 sweep levels, a duration cap of at most an hour per run. :func:`decode` never raises (see
:mod:`planner.links.rules`).

Example:
    >>> from planner.loadtest.settings import LoadSettings
    >>> encode(LoadSettings(endpoints=("a",), max_concurrency=4))
    {'ep': 'a', 'max_concurrency': '4'}
    >>> decode({"request_rate": "nan"}).warnings[0][:32]
    "request_rate='nan' is not valid:"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from planner.capacity.scenario import Scenario
from planner.links import budget
from planner.links.rules import (
    decode_settings,
    encode_settings,
    format_endpoint_names,
    parse_choice,
    parse_endpoint_names,
    parse_flag,
    parse_number,
)
from planner.loadtest.settings import (
    BATCHINGS,
    DATASETS,
    DEFAULT,
    INPUT_SIZINGS,
    MAX_PROMPTS,
    MAX_RUNS,
    MAX_TURNS,
    MODES,
    LoadSettings,
    format_goodput,
    parse_goodput,
)

__all__ = [
    "KEYS",
    "NUMBERS",
    "DecodedLink",
    "DecodedLoad",
    "decode",
    "decode_link",
    "encode",
    "encode_link",
    "parse_field",
]

#: ``(low, high, integer, optional, allow_inf)`` of each numeric setting.
NUMBERS: dict[str, tuple[float, float, bool, bool, bool]] = {
    "num_prompts": (1, MAX_PROMPTS, True, False, False),
    "max_concurrency": (1, 1024, True, True, False),
    "request_rate": (0, 10_000, False, False, True),
    "burstiness": (0.01, 100, False, False, False),
    "num_warmups": (0, 100, True, False, False),
    "duration_s": (1, 3600, False, False, False),
    "timeout_s": (1, 600, False, False, False),
    "seed": (0, 2**32 - 1, True, False, False),
    "input_len": (1, 131_072, True, False, False),
    "output_len": (1, 32_768, True, False, False),
    "range_ratio": (0, 0.99, False, False, False),
    "sweep_max": (1, 1024, True, False, False),
    "prefix_len": (0, 131_072, True, False, False),
    "suffix_len": (1, 131_072, True, False, False),
    "num_prefixes": (1, 1000, True, False, False),
    "num_turns": (1, MAX_TURNS, True, False, False),
    "think_time_s": (0, 600, False, False, False),
    "time_scale": (0.0001, 1000, False, False, False),
    "trace_chunk_hash_size": (1, 65_536, True, False, False),
    "num_runs": (1, MAX_RUNS, True, False, False),
}


#: Settings a link never carries: file contents, and where the client runs (Ray workers, the cluster's address).
_UNLINKED = ("prompts", "trace_rows", "num_workers", "ray_address")
#: Query key of each setting.
KEYS: dict[str, str] = {f.name: f.name for f in fields(LoadSettings) if f.name not in _UNLINKED} | {
    "endpoints": "ep",
    "duration_s": "duration",
    "timeout_s": "timeout",
    "goodput_ms": "goodput",
}
_OWN = frozenset(KEYS.values())


@dataclass(frozen=True)
class DecodedLoad:
    """What a query string holds: the settings (defaults where it is silent or wrong) and one warning per problem."""

    settings: LoadSettings
    warnings: tuple[str, ...] = ()


def parse_field(name: str, text: str) -> object:
    """The value of the :class:`~planner.loadtest.settings.LoadSettings` field ``name`` from its link text.

    The one rule per field, for this page's links and for any other link that carries load settings (the Performance
    page's workload, :mod:`planner.links.performance`).

    Args:
        name: A field of ``LoadSettings`` that has a key in :data:`KEYS`.
        text: The parameter's text.

    Returns:
        The field's value (numbers within :data:`NUMBERS`).

    Raises:
        BadValue: the text is not acceptable; ``accepted`` says what is.
    """
    if name == "endpoints":
        return parse_endpoint_names(text)
    if name == "mode":
        return parse_choice(text, MODES)
    if name == "dataset_name":
        return parse_choice(text, DATASETS)
    if name == "input_sizing":
        return parse_choice(text, INPUT_SIZINGS)
    if name == "batching":
        return parse_choice(text, BATCHINGS)
    if name in ("ignore_eos", "scrape_metrics", "flush_cache", "sweep_stop", "sweep_refine"):
        return parse_flag(text)
    if name == "goodput_ms":
        return parse_goodput(text)
    low, high, integer, optional, allow_inf = NUMBERS[name]
    return parse_number(
        text, low, high, integer=integer, optional=optional, allow_inf=allow_inf, low_open=name == "request_rate"
    )


def encode(settings: LoadSettings) -> dict[str, str]:
    """Query parameters for ``settings``: only values that differ from the defaults; never a URL or a key."""
    special = {"endpoints": format_endpoint_names, "goodput_ms": format_goodput}
    special |= {name: _unlinked for name in _UNLINKED}
    return encode_settings(settings, DEFAULT, KEYS, special)


def _unlinked(_: object) -> None:
    """A setting left out of links (:data:`_UNLINKED`)."""
    return None


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedLoad:
    """Settings from query parameters; never raises. A repeated key warns and its last value is used.

    Keys not in :data:`KEYS` are left to the scenario codec, which reads the same link with ``foreign=KEYS`` and
    reports a key neither knows (:func:`planner.links.budget.decode`): the page's link carries the scenarios too.
    """
    own = {key: value for key, value in query.items() if key in _OWN}
    settings, warnings = decode_settings(own, DEFAULT, KEYS, parse_field)
    return DecodedLoad(settings=settings, warnings=warnings)


@dataclass(frozen=True)
class DecodedLink:
    """A whole Load Test link: the scenarios (every page's link carries them) and this page's settings.

    Attributes:
        state: the scenario codec's answer (:func:`planner.links.budget.decode` with ``foreign`` = :data:`KEYS`).
        settings: this codec's answer.
        warnings: the scenario codec's warnings (a key neither codec knows is named there), then this codec's.
    """

    state: budget.DecodedState
    settings: LoadSettings
    warnings: tuple[str, ...]


def decode_link(query: Mapping[str, str | Sequence[str]]) -> DecodedLink:
    """The whole Load Test link: scenarios and settings; never raises."""
    state = budget.decode(query, foreign=tuple(KEYS.values()))
    own = decode(query)
    return DecodedLink(state, own.settings, state.warnings + own.warnings)


def encode_link(
    scenarios: Sequence[Scenario],
    settings: LoadSettings,
    *,
    min_context: int | None = None,
    max_context: int | None = None,
) -> dict[str, str]:
    """The whole Load Test link: :func:`planner.links.budget.encode` of the scenarios, then :func:`encode`.

    Raises:
        InvalidParameterError: no scenario, or more than :data:`planner.links.budget.MAX_SCENARIOS`.
    """
    return budget.encode(scenarios, min_context=min_context, max_context=max_context) | encode(settings)
