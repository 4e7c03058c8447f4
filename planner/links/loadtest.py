"""One explicit codec between the Load Test page's settings and a URL query string.

Keys follow ``vllm bench serve``'s flag spelling (``--num-prompts`` → ``num_prompts``); every key is optional and
only values that differ from :data:`DEFAULT` are written:

* ``ep``: endpoint NAMES, comma separated (never a URL or a key, as on Live Compare);
* ``mode``: ``run`` (one load per endpoint) or ``sweep`` (concurrency 1, 2, 4, … ``sweep_max``);
* ``num_prompts`` (1–:data:`MAX_PROMPTS`), ``max_concurrency`` (1–1024 or none), ``request_rate`` (req/s > 0 or
  ``inf`` = burst), ``burstiness`` (gamma shape, 0.01–100), ``num_warmups`` (0–100), ``duration`` (cap of a run,
  1–3600 s), ``timeout`` (per request, 1–600 s), ``seed``;
* ``dataset_name``: ``random`` (synthetic prompts of ``input_len`` tokens), ``examples`` (the eight built-in
  example prompts), ``custom`` (an uploaded JSONL file; the file itself is never in a link);
* ``input_len`` (1–131072), ``output_len`` (1–32768), ``range_ratio`` ([0, 1)), ``ignore_eos`` (true/false);
* ``goodput``: SLOs as vLLM's ``--goodput`` takes them, ``ttft:500,tpot:50,e2el:2000`` (milliseconds);
* ``sweep_max`` (1–1024), ``scrape_metrics`` (true/false: poll the server's ``/metrics`` during the run).

Every run the page can start is bounded: at most :data:`MAX_PROMPTS` requests per run, at most 11 sweep levels, a
duration cap of at most an hour per run. :func:`decode` never raises (see :mod:`planner.links.rules`).

Example:
    >>> encode(LoadSettings(endpoints=("a",), max_concurrency=4))
    {'ep': 'a', 'max_concurrency': '4'}
    >>> decode({"request_rate": "nan"}).warnings[0][:32]
    "request_rate='nan' is not valid:"
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

from planner.links.rules import (
    BadValue,
    decode_query,
    encode_settings,
    format_endpoint_names,
    format_value,
    parse_endpoint_names,
    parse_number,
)
from planner.loadtest.runner import LoadSpec

__all__ = [
    "DATASETS",
    "DEFAULT",
    "KEYS",
    "MAX_PROMPTS",
    "MODES",
    "DecodedLoad",
    "LoadSettings",
    "decode",
    "encode",
    "format_goodput",
    "parse_goodput",
    "to_spec",
]

#: Most measured requests of one run.
MAX_PROMPTS = 10_000
MODES = ("run", "sweep")
DATASETS = ("random", "examples", "custom")
_SLO_NAMES = ("ttft", "tpot", "e2el")

#: ``(low, high, integer, optional, allow_inf)`` of each numeric setting.
_NUMBERS: dict[str, tuple[float, float, bool, bool, bool]] = {
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
}


@dataclass(frozen=True)
class LoadSettings:
    """What a Load Test link restores. Lengths in tokens, times in seconds, SLOs in milliseconds.

    Attributes:
        endpoints: Names of the endpoints to load, run one after another with the same workload.
        mode: ``run`` or ``sweep``.
        num_prompts: Measured requests of a run (of each sweep level).
        max_concurrency: Most requests in flight (closed loop); None = no cap.
        request_rate: Send rate, requests/s; ``inf`` = all at once.
        burstiness: Gamma shape of the arrival gaps (1 = Poisson).
        num_warmups: Requests sent before the measured ones, not counted.
        duration_s: Wall-time cap of one run (of each sweep level), seconds.
        timeout_s: Connect/read timeout of each request, seconds.
        seed: Seed of the arrival schedule and the sampled lengths.
        dataset_name: ``random``, ``examples`` or ``custom``.
        input_len: Prompt length of ``random`` prompts, tokens.
        output_len: ``max_tokens`` of each request.
        range_ratio: Lengths drawn from [L(1 − r), L(1 + r)].
        ignore_eos: Ask for exactly ``output_len`` tokens (vLLM, SGLang, llama.cpp; not TGI).
        goodput_ms: SLOs ``((name, limit_ms), ...)`` with names ``ttft``, ``tpot``, ``e2el``.
        sweep_max: Highest concurrency of a sweep.
        scrape_metrics: Poll the server's ``/metrics`` during runs.
    """

    endpoints: tuple[str, ...] = ()
    mode: str = "run"
    num_prompts: int = 32
    max_concurrency: int | None = 8
    request_rate: float = float("inf")
    burstiness: float = 1.0
    num_warmups: int = 0
    duration_s: float = 300.0
    timeout_s: float = 60.0
    seed: int = 0
    dataset_name: str = "random"
    input_len: int = 128
    output_len: int = 64
    range_ratio: float = 0.0
    ignore_eos: bool = False
    goodput_ms: tuple[tuple[str, float], ...] = ()
    sweep_max: int = 16
    scrape_metrics: bool = True


#: The settings of a page opened without a link.
DEFAULT = LoadSettings()
#: Query key of each setting.
KEYS: dict[str, str] = {f.name: f.name for f in fields(LoadSettings)} | {
    "endpoints": "ep",
    "duration_s": "duration",
    "timeout_s": "timeout",
    "goodput_ms": "goodput",
}
_FIELD_OF = {key: name for name, key in KEYS.items()}


@dataclass(frozen=True)
class DecodedLoad:
    """What a query string holds: the settings (defaults where it is silent or wrong) and one warning per problem."""

    settings: LoadSettings
    warnings: tuple[str, ...] = ()


def parse_goodput(text: str) -> tuple[tuple[str, float], ...]:
    """``"ttft:500,tpot:50"`` (commas or spaces) → ``(("ttft", 500.0), ("tpot", 50.0))``; "" → ().

    Raises:
        BadValue: a part is not ``ttft|tpot|e2el:<ms>`` with 0 < ms ≤ 3,600,000, or a name repeats.
    """
    accepted = "name:ms pairs such as ttft:500,tpot:50 (names ttft, tpot, e2el; 0 < ms ≤ 3600000)"
    out: dict[str, float] = {}
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if len(parts) > len(_SLO_NAMES):
        raise BadValue(accepted)
    for part in parts:
        name, sep, value = part.partition(":")
        if not sep or name not in _SLO_NAMES or name in out:
            raise BadValue(accepted)
        try:
            out[name] = float(parse_number(value, 0, 3_600_000, low_open=True))  # type: ignore[arg-type]
        except BadValue:
            raise BadValue(accepted) from None
    return tuple(out.items())


def format_goodput(slos: Sequence[tuple[str, float]]) -> str:
    """The inverse of :func:`parse_goodput`: ``"ttft:500,tpot:50"``."""
    return ",".join(f"{name}:{format_value(float(ms))}" for name, ms in slos)


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise BadValue("true or false")


def _parse(name: str, text: str) -> object:
    if name == "endpoints":
        return parse_endpoint_names(text)
    if name == "mode":
        if text not in MODES:
            raise BadValue(" or ".join(MODES))
        return text
    if name == "dataset_name":
        if text not in DATASETS:
            raise BadValue(", ".join(DATASETS))
        return text
    if name in ("ignore_eos", "scrape_metrics"):
        return _flag(text)
    if name == "goodput_ms":
        return parse_goodput(text)
    low, high, integer, optional, allow_inf = _NUMBERS[name]
    return parse_number(
        text, low, high, integer=integer, optional=optional, allow_inf=allow_inf, low_open=name == "request_rate"
    )


def encode(settings: LoadSettings) -> dict[str, str]:
    """Query parameters for ``settings``: only values that differ from :data:`DEFAULT`; never a URL or a key."""
    special = {"endpoints": format_endpoint_names, "goodput_ms": format_goodput}
    return encode_settings(settings, DEFAULT, KEYS, special)


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedLoad:
    """Settings from query parameters; never raises. A repeated key warns and its last value is used."""
    values, warnings = decode_query(query, _FIELD_OF, _parse)
    return DecodedLoad(settings=replace(DEFAULT, **values), warnings=tuple(warnings))


def to_spec(settings: LoadSettings, prompts: Sequence[str] = (), *, max_concurrency: int | None = -1) -> LoadSpec:
    """The :class:`~planner.loadtest.runner.LoadSpec` of one run of ``settings``.

    Args:
        settings: The page settings.
        prompts: Prompts to cycle through (``examples`` / ``custom`` datasets); empty = synthetic.
        max_concurrency: Override of the concurrency cap (a sweep level); -1 = the settings' own.

    Raises:
        InvalidParameterError: the combination is not accepted (e.g. empty prompts).
    """
    return LoadSpec(
        num_prompts=settings.num_prompts,
        max_concurrency=settings.max_concurrency if max_concurrency == -1 else max_concurrency,
        request_rate=settings.request_rate,
        burstiness=settings.burstiness,
        seed=settings.seed,
        num_warmups=settings.num_warmups,
        duration_s=settings.duration_s,
        input_len=settings.input_len,
        output_len=settings.output_len,
        range_ratio=settings.range_ratio,
        ignore_eos=settings.ignore_eos,
        prompts=tuple(prompts),
        timeout_s=settings.timeout_s,
        slo_ms=settings.goodput_ms,
    )
