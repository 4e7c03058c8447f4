"""The serving engine's own view of a load test: Prometheus ``/metrics`` samples and its reported KV capacity.

What is read, per server kind (names confirmed in the engines' sources):

* vLLM (``vllm/v1/metrics/loggers.py`` ``PrometheusStatLogger``; V0: ``vllm/engine/metrics.py``). Every series carries
  ``model_name``; V1 adds ``engine`` (one series per data-parallel engine, from ``make_per_engine``).

  - ``vllm:num_requests_running``, ``vllm:num_requests_waiting`` (gauges; summed over engines);
  - ``vllm:kv_cache_usage_perc`` (gauge, a 0–1 fraction despite the name; averaged over engines, whose pools are
    the same size). It replaced ``vllm:gpu_cache_usage_perc``, which V0 and early V1 export: the old name was
    deprecated in 0.9 ("Deprecated in 0.9 - Renamed as vllm:kv_cache_usage_perc", loggers.py), hidden from 0.11
    unless ``--show-hidden-metrics-for-version=0.10``, and slated for removal in 0.12
    (``vllm/v1/metrics/loggers.py``, v0.9–v0.11). The new name wins when both are present;
  - counters ``vllm:num_preemptions_total`` (V1 counter ``vllm:num_preemptions``; prometheus_client appends
    ``_total``), ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``, ``vllm:prefix_cache_queries_total``
    and ``vllm:prefix_cache_hits_total`` (``vllm:gpu_prefix_cache_*`` before 0.9), summed over engines;
  - ``vllm:cache_config_info``: a gauge fixed at 1 whose labels are ``CacheConfig.metrics_info()``, i.e. every
    ``CacheConfig`` field as a string (``vllm/config/cache.py``), plus ``engine`` in V1. It has no ``model_name``.
    Labels used here: ``block_size``, ``num_gpu_blocks``, ``kv_cache_size_tokens`` (newer releases: vLLM's own
    group-aware capacity, which the source notes is right where ``num_gpu_blocks × block_size`` is wrong, for hybrid
    models), ``cache_dtype``, ``gpu_memory_utilization``, ``enable_prefix_caching``, ``kv_cache_max_concurrency``.

* SGLang (``python/sglang/srt/metrics/collector.py`` ``SchedulerMetricsCollector``): ``sglang:num_running_reqs``,
  ``sglang:num_queue_reqs``, ``sglang:token_usage`` (0–1), ``sglang:prompt_tokens_total``,
  ``sglang:generation_tokens_total``, ``sglang:cached_tokens_total`` (prompt tokens served from the radix cache,
  one series per ``cache_source``, summed), and ``sglang:max_total_num_tokens`` ("Maximum total number of tokens in
  the KV cache pool") for the capacity. Its ``sglang:cache_hit_rate`` gauge is the most recent batch's, not a
  window's, so it is not read: the hit rate over a run is Δ``cached_tokens_total`` / Δ``prompt_tokens_total``.

Prefix caching (:func:`prefix_cache_stats`): the hit rate of a run is the difference of two scrapes of the counters,
one just before its measured requests and one after they end (vLLM docs/design/metrics.md, "Prefix Cache metrics":
"hit rate = hits / queries" over an interval). :func:`reset_prefix_cache` empties the cache first where the server
allows it: vLLM ``POST /reset_prefix_cache`` (served only with ``VLLM_SERVER_DEV_MODE=1``,
``vllm/entrypoints/serve/dev``), SGLang ``POST /flush_cache``.

* TGI (router ``/metrics``, ``docs/source/reference/metrics.md``): ``tgi_batch_current_size``
  (requests in the running batch, also reported as ``running``), ``tgi_queue_size`` (also ``waiting``),
  ``tgi_batch_current_max_tokens``. TGI reports no KV-usage gauge. Its capacity, ``max_batch_total_tokens``, is in
  ``GET /info`` only up to the 2.x routers (struct ``Info`` in router/src/lib.rs); TGI 3.x's ``Info`` dropped it
  (``docs/openapi.json`` of text-generation-inference 3.x), so :func:`fetch_measured_kv` returns None there.

Series are filtered to one served model (``model_name``) before summing: the requested model when some series
carries it, else the first ``model_name`` seen. Parsing uses prometheus_client's own text parser.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from planner.errors import InvalidParameterError, MetricsParseError, MissingAPIKeyError
from planner.serving.discovery import describe_error, status_error
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.streaming import one_line

__all__ = [
    "METRICS_KINDS",
    "RESET_ROUTES",
    "KVComparison",
    "MeasuredKV",
    "PrefixCacheStats",
    "ServerSample",
    "SpecDecodeStats",
    "compare_kv",
    "fetch_measured_kv",
    "fetch_sample",
    "parse_cache_config",
    "parse_metrics",
    "prefix_cache_stats",
    "reset_prefix_cache",
    "scrape_metrics",
    "spec_decode_stats",
]

#: Server kinds whose ``/metrics`` names are known here.
METRICS_KINDS: tuple[str, ...] = ("vllm", "sglang", "tgi")
#: The route that empties each kind's prefix cache (vLLM: only with ``VLLM_SERVER_DEV_MODE=1``).
RESET_ROUTES: dict[str, str] = {"vllm": "/reset_prefix_cache", "sglang": "/flush_cache"}

# field -> metric sample names tried in order (the first one present wins: new names before legacy ones)
_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "running": ("vllm:num_requests_running",),
        "waiting": ("vllm:num_requests_waiting",),
        "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        "num_preemptions_total": ("vllm:num_preemptions_total",),
        "prompt_tokens_total": ("vllm:prompt_tokens_total",),
        "generation_tokens_total": ("vllm:generation_tokens_total",),
        "prefix_cache_queries_total": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
        "prefix_cache_hits_total": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
        "spec_decode_num_drafts_total": ("vllm:spec_decode_num_drafts_total",),
        "spec_decode_num_draft_tokens_total": ("vllm:spec_decode_num_draft_tokens_total",),
        "spec_decode_num_accepted_tokens_total": ("vllm:spec_decode_num_accepted_tokens_total",),
    },
    "sglang": {
        "running": ("sglang:num_running_reqs",),
        "waiting": ("sglang:num_queue_reqs",),
        "kv_cache_usage_perc": ("sglang:token_usage",),
        "prompt_tokens_total": ("sglang:prompt_tokens_total",),
        "generation_tokens_total": ("sglang:generation_tokens_total",),
        # SGLang counts its prefix cache in prompt tokens: queried = every prompt token, hit = served from cache
        "prefix_cache_queries_total": ("sglang:prompt_tokens_total",),
        "prefix_cache_hits_total": ("sglang:cached_tokens_total",),
    },
    "tgi": {
        "running": ("tgi_batch_current_size",),
        "waiting": ("tgi_queue_size",),
        "batch_size": ("tgi_batch_current_size",),
        "queue_size": ("tgi_queue_size",),
        "batch_max_tokens": ("tgi_batch_current_max_tokens",),
    },
}
# the per-position counter, one series per draft position (label ``position``, from 0)
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
# fractions are averaged over engines (equal pools); everything else is summed
_AVERAGED = frozenset({"kv_cache_usage_perc"})
_INTS = frozenset({"running", "waiting", "batch_size", "queue_size", "batch_max_tokens", "num_preemptions_total"})
# consecutive transient failures (timeouts, 5xx) after which the scraper gives up
_MAX_FAILURES = 3


@dataclass(frozen=True)
class ServerSample:
    """One scrape of a server's ``/metrics``. Every field is None when the server does not export it.

    Attributes:
        t_s: When the scrape's response arrived, seconds since the caller's ``start`` (``time.perf_counter``).
        running: Requests being executed: vLLM ``num_requests_running`` / SGLang ``num_running_reqs`` (summed over
            engines), TGI ``tgi_batch_current_size``.
        waiting: Requests queued: vLLM ``num_requests_waiting`` / SGLang ``num_queue_reqs``, TGI ``tgi_queue_size``.
        kv_cache_usage_perc: Fraction (0–1, as vLLM reports it, not percent) of KV-cache blocks in use: vLLM
            ``kv_cache_usage_perc`` or legacy ``gpu_cache_usage_perc``, SGLang ``token_usage``; mean over engines.
        batch_size: TGI ``tgi_batch_current_size``.
        queue_size: TGI ``tgi_queue_size``.
        batch_max_tokens: TGI ``tgi_batch_current_max_tokens`` (tokens the running batch may reach).
        num_preemptions_total: vLLM cumulative preemptions (counter; compare two samples for a rate).
        prompt_tokens_total: Cumulative prefill tokens (vLLM, SGLang).
        generation_tokens_total: Cumulative generated tokens (vLLM, SGLang).
        prefix_cache_queries_total: Cumulative prefix-cache queries, in tokens: vLLM ``prefix_cache_queries``,
            SGLang ``prompt_tokens_total``.
        prefix_cache_hits_total: Cumulative prefix-cache hits, in tokens: vLLM ``prefix_cache_hits``, SGLang
            ``cached_tokens_total``. Hit rate over an interval = Δhits / Δqueries between two samples (vLLM
            docs/design/metrics.md, "Prefix Cache metrics"; :func:`prefix_cache_stats`).
        spec_decode_num_drafts_total: vLLM cumulative speculative-decoding drafts (``vllm:spec_decode_num_drafts``:
            one per request per step that proposed draft tokens), summed over engines.
        spec_decode_num_draft_tokens_total: vLLM cumulative draft tokens proposed (``spec_decode_num_draft_tokens``).
        spec_decode_num_accepted_tokens_total: vLLM cumulative draft tokens accepted
            (``spec_decode_num_accepted_tokens``; the bonus token is not counted).
        spec_decode_accepted_per_pos_total: vLLM cumulative accepted tokens per draft position 0, 1, ...
            (``spec_decode_num_accepted_tokens_per_pos``, label ``position``), summed over engines. The counters are
            registered in ``vllm/v1/metrics/loggers.py`` when a ``speculative_config`` is set (vLLM 0.24.0);
            :func:`spec_decode_stats` differences two samples.
    """

    t_s: float
    running: int | None = None
    waiting: int | None = None
    kv_cache_usage_perc: float | None = None
    batch_size: int | None = None
    queue_size: int | None = None
    batch_max_tokens: int | None = None
    num_preemptions_total: int | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    prefix_cache_queries_total: float | None = None
    prefix_cache_hits_total: float | None = None
    spec_decode_num_drafts_total: float | None = None
    spec_decode_num_draft_tokens_total: float | None = None
    spec_decode_num_accepted_tokens_total: float | None = None
    spec_decode_accepted_per_pos_total: tuple[float, ...] | None = None

    @property
    def has_data(self) -> bool:
        """True when at least one metric was found (a sample of all Nones means nothing usable was exported)."""
        return any(getattr(self, name) is not None for name in self.__dataclass_fields__ if name != "t_s")


@dataclass(frozen=True)
class MeasuredKV:
    """The KV-cache capacity a running server reports about itself.

    Attributes:
        source: Where the figure came from, e.g. ``"vllm:cache_config_info"``, ``"sglang:max_total_num_tokens"``,
            ``"TGI /info max_batch_total_tokens"``.
        kv_capacity_tokens: Tokens the KV cache of ONE engine holds. vLLM: the ``kv_cache_size_tokens`` label when
            the release exports it (group-aware), else ``num_gpu_blocks × block_size``; SGLang:
            ``max_total_num_tokens`` (smallest over series); TGI: ``max_batch_total_tokens``. None when unknown.
        num_gpu_blocks: vLLM blocks per engine (per GPU worker; every TP rank holds its share of each block).
        block_size_tokens: vLLM tokens per block.
        engines: Number of engines reporting (vLLM data-parallel engines, SGLang series); each has its own cache,
            so the server as a whole holds ``engines × kv_capacity_tokens``.
        cache_dtype: vLLM ``cache_dtype`` label (``"auto"`` = the model dtype).
        gpu_memory_utilization: vLLM ``gpu_memory_utilization`` (fraction of GPU memory vLLM may use).
        enable_prefix_caching: vLLM ``enable_prefix_caching``.
        kv_cache_max_concurrency: vLLM ``kv_cache_max_concurrency`` (requests of ``max_model_len`` tokens that fit;
            newer releases only).
        error: One-line reason the server could not be asked (refused, HTTP error, not Prometheus text); None
            when it answered.
    """

    source: str
    kv_capacity_tokens: int | None = None
    num_gpu_blocks: int | None = None
    block_size_tokens: int | None = None
    engines: int | None = None
    cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool | None = None
    kv_cache_max_concurrency: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class KVComparison:
    """Planned vs measured KV capacity of one engine.

    Attributes:
        plan_tokens: The planner's KV capacity, tokens; None when there is no plan.
        measured_tokens: The server's reported capacity (:attr:`MeasuredKV.kv_capacity_tokens`); None when unknown.
        error_frac: ``(plan − measured) / measured`` (the convention of ``bench/capacity_accuracy.py``): positive
            when the plan promises more than the server has. None when either side is missing or measured is 0.
    """

    plan_tokens: int | None
    measured_tokens: int | None
    error_frac: float | None


# --- parsing ------------------------------------------------------------------------------------------------------
_Samples = dict[str, list[tuple[dict[str, str], float]]]


def _samples(text: str) -> _Samples:
    """Every sample of ``text`` by sample name (``_total``/``_bucket`` names as exposed), non-finite values dropped.

    Indexing by sample name rather than family name makes ``# TYPE`` lines optional: counters read the same with
    or without them.
    """
    if not isinstance(text, str):
        raise MetricsParseError(f"not Prometheus text: expected str, got {type(text).__name__}")
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise MetricsParseError(one_line(f"not Prometheus text: {exc}", 200)) from exc
    out: _Samples = {}
    for family in families:
        for sample in family.samples:
            value = float(sample.value)
            if math.isfinite(value):
                out.setdefault(sample.name, []).append((dict(sample.labels), value))
    return out


def _choose_model(samples: _Samples, names: tuple[str, ...], model: str | None) -> str | None:
    seen: list[str] = []
    for name in names:
        for labels, _ in samples.get(name, []):
            label = labels.get("model_name")
            if label is not None and label not in seen:
                seen.append(label)
    if model is not None and model in seen:
        return model
    return seen[0] if seen else None


def _series(samples: _Samples, candidates: tuple[str, ...], model: str | None) -> list[float] | None:
    for name in candidates:
        values = [v for labels, v in samples.get(name, []) if model is None or labels.get("model_name", model) == model]
        if values:
            return values
    return None


def parse_metrics(text: str, kind: str, t_s: float, *, model: str | None = None) -> ServerSample:
    """Read one ``/metrics`` body into a :class:`ServerSample` (pure; no I/O).

    Args:
        text: The Prometheus text exposition (``# HELP``/``# TYPE`` lines optional).
        kind: Server kind (``"vllm"``, ``"sglang"``, ``"tgi"``); any other kind gives a sample of Nones.
        t_s: Timestamp to store, seconds since the caller's start.
        model: Served model whose series to read when several ``model_name`` values are present; ignored when no
            series carries it (the first ``model_name`` seen is used then).

    Returns:
        The sample; gauges summed over engines (usage fractions averaged), missing metrics None.

    Raises:
        MetricsParseError: ``text`` is not Prometheus text (e.g. an HTML or JSON error page).

    Example:
        >>> parse_metrics('vllm:num_requests_running{engine="0",model_name="m"} 3.0\\n', "vllm", 1.5).running
        3
    """
    samples = _samples(text)
    names = _NAMES.get(kind)
    if names is None:
        return ServerSample(t_s=t_s)
    chosen = _choose_model(samples, tuple(n for group in names.values() for n in group), model)
    fields: dict[str, Any] = {}
    for field, candidates in names.items():
        values = _series(samples, candidates, chosen)
        if values is None:
            continue
        value = sum(values) / len(values) if field in _AVERAGED else sum(values)
        fields[field] = round(value) if field in _INTS else value
    if kind == "vllm":
        fields["spec_decode_accepted_per_pos_total"] = _per_position(samples, chosen)
    return ServerSample(t_s=t_s, **fields)


def _per_position(samples: _Samples, model: str | None) -> tuple[float, ...] | None:
    """``vllm:spec_decode_num_accepted_tokens_per_pos`` by position 0..k−1, summed over engines; None when absent or
    the positions are not 0..k−1 (a body that cannot be read as one draft length)."""
    by_pos: dict[int, float] = {}
    for labels, value in samples.get(_PER_POS, []):
        if model is not None and labels.get("model_name", model) != model:
            continue
        pos = _label_int(labels.get("position"))
        if pos is None or pos < 0:
            return None
        by_pos[pos] = by_pos.get(pos, 0.0) + value
    if not by_pos or sorted(by_pos) != list(range(len(by_pos))):
        return None
    return tuple(by_pos[i] for i in range(len(by_pos)))


def _label_int(value: str | None) -> int | None:
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return int(number) if math.isfinite(number) and number == int(number) else None


def _label_float(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def parse_cache_config(text: str, kind: str = "vllm") -> MeasuredKV | None:
    """The KV capacity a vLLM (``vllm:cache_config_info``) or SGLang (``sglang:max_total_num_tokens``) body reports.

    Args:
        text: A ``/metrics`` body.
        kind: ``"vllm"`` or ``"sglang"``; other kinds give None.

    Returns:
        A :class:`MeasuredKV` (per-engine capacity, see its fields), or None when the body has no such metric.
        vLLM labels that say ``"None"`` (e.g. ``num_gpu_blocks`` before profiling) read as None.

    Raises:
        MetricsParseError: ``text`` is not Prometheus text.

    Example:
        >>> text = 'vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="2048"} 1.0\\n'
        >>> parse_cache_config(text).kv_capacity_tokens
        32768
    """
    samples = _samples(text)
    if kind == "sglang":
        values = [v for _, v in samples.get("sglang:max_total_num_tokens", []) if v > 0]
        if not values:
            return None
        return MeasuredKV(
            source="sglang:max_total_num_tokens", kv_capacity_tokens=int(min(values)), engines=len(values)
        )
    if kind != "vllm":
        return None
    series = samples.get("vllm:cache_config_info", [])
    if not series:
        return None
    labels = series[0][0]  # every engine reports the same CacheConfig (loggers.py log_metrics_info)
    blocks = _label_int(labels.get("num_gpu_blocks"))
    block_size = _label_int(labels.get("block_size"))
    reported = _label_int(labels.get("kv_cache_size_tokens"))
    source = "vllm:cache_config_info"
    if reported is not None and reported > 0:
        capacity: int | None = reported
        source += " kv_cache_size_tokens"
    else:
        capacity = blocks * block_size if blocks is not None and block_size is not None else None
    prefix = labels.get("enable_prefix_caching")
    return MeasuredKV(
        source=source,
        kv_capacity_tokens=capacity,
        num_gpu_blocks=blocks,
        block_size_tokens=block_size,
        engines=len({lb.get("engine", "") for lb, _ in series}),
        cache_dtype=labels.get("cache_dtype"),
        gpu_memory_utilization=_label_float(labels.get("gpu_memory_utilization")),
        enable_prefix_caching={"True": True, "False": False}.get(prefix) if prefix is not None else None,
        kv_cache_max_concurrency=_label_float(labels.get("kv_cache_max_concurrency")),
    )


def _tgi_info_kv(info: Any) -> MeasuredKV | None:
    """``max_batch_total_tokens`` of a TGI ``/info`` body (2.x and older routers); None when absent (3.x)."""
    if not isinstance(info, Mapping):
        return None
    value = info.get("max_batch_total_tokens")
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None
    return MeasuredKV(source="TGI /info max_batch_total_tokens", kv_capacity_tokens=value, engines=1)


def compare_kv(plan_tokens: int | None, measured: MeasuredKV | None) -> KVComparison:
    """Planned vs measured KV capacity.

    Args:
        plan_tokens: The plan's KV capacity of one engine, tokens (None when there is no plan).
        measured: What the server reported (:func:`fetch_measured_kv`), or None.

    Returns:
        A :class:`KVComparison`; ``error_frac = (plan − measured) / measured``, None where undefined.

    Example:
        >>> compare_kv(36_864, MeasuredKV(source="s", kv_capacity_tokens=32_768)).error_frac
        0.125
    """
    measured_tokens = measured.kv_capacity_tokens if measured is not None else None
    error = None
    if plan_tokens is not None and measured_tokens:
        error = (plan_tokens - measured_tokens) / measured_tokens
    return KVComparison(plan_tokens=plan_tokens, measured_tokens=measured_tokens, error_frac=error)


@dataclass(frozen=True)
class PrefixCacheStats:
    """A run's prefix-cache use, from the server's counters before and after it.

    Attributes:
        queries_tokens: Prompt tokens looked up in the prefix cache during the run (Δ queries).
        hits_tokens: Of those, tokens served from the cache (Δ hits).
        source: The counters read, e.g. ``"vllm:prefix_cache_queries/hits"``.
    """

    queries_tokens: float
    hits_tokens: float
    source: str

    @property
    def hit_rate(self) -> float | None:
        """``hits / queries`` (0–1); None when nothing was queried."""
        return self.hits_tokens / self.queries_tokens if self.queries_tokens > 0 else None


_COUNTER_SOURCES = {"vllm": "vllm:prefix_cache_queries/hits", "sglang": "sglang:prompt_tokens/cached_tokens"}


def prefix_cache_stats(before: ServerSample | None, after: ServerSample | None, kind: str) -> PrefixCacheStats | None:
    """The prefix-cache queries and hits between two scrapes (counters differenced; vLLM docs/design/metrics.md).

    Args:
        before: The scrape just before the run's measured requests.
        after: The scrape once they ended.
        kind: The server kind (names the counters in ``source``).

    Returns:
        The :class:`PrefixCacheStats`; None when either scrape lacks the counters, or a counter went down (the
        server restarted in between: the difference means nothing).

    Example:
        >>> a = ServerSample(0, prefix_cache_queries_total=350208, prefix_cache_hits_total=87296)
        >>> b = ServerSample(1, prefix_cache_queries_total=423936, prefix_cache_hits_total=148736)
        >>> round(prefix_cache_stats(a, b, "vllm").hit_rate, 4)
        0.8333
    """
    if before is None or after is None:
        return None
    pairs = [
        (getattr(before, f"prefix_cache_{name}_total"), getattr(after, f"prefix_cache_{name}_total"))
        for name in ("queries", "hits")
    ]
    if any(a is None or b is None or b < a for a, b in pairs):
        return None
    (q0, q1), (h0, h1) = pairs
    return PrefixCacheStats(q1 - q0, h1 - h0, _COUNTER_SOURCES.get(kind, kind))  # type: ignore[operator]


@dataclass(frozen=True)
class SpecDecodeStats:
    """A run's speculative decoding, from vLLM's counters before and after it (all counts are differences).

    Formulas as vLLM's own log line computes them (``SpecDecodingLogging.log`` in ``vllm/v1/spec_decode/metrics.py``,
    vLLM 0.24.0) and ``vllm bench serve`` stores them (``spec_decode_acceptance_rate`` in percent,
    ``spec_decode_acceptance_length``, ``vllm/benchmarks/serve.py``).

    Attributes:
        num_drafts: Drafts proposed during the run (one per request per decode step that speculated).
        num_draft_tokens: Draft tokens proposed (``num_drafts × num_speculative_tokens``).
        num_accepted_tokens: Draft tokens the target accepted (the bonus token is not counted).
        accepted_per_pos: Accepted tokens at draft position 0, 1, ... (``()`` when the server did not export them).
        source: The counters read, e.g. ``"vllm:spec_decode_*"`` or ``"file"``.
    """

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_pos: tuple[float, ...] = ()
    source: str = "vllm:spec_decode_*"

    @property
    def acceptance_rate(self) -> float | None:
        """``accepted / draft tokens`` (0–1; vLLM prints it ×100 as "Draft acceptance rate"); None without drafts."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens > 0 else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """``1 + accepted / drafts``: tokens emitted per target step per request, the bonus token included (vLLM's
        "Mean acceptance length"); None without drafts."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts > 0 else None

    @property
    def per_position_acceptance(self) -> tuple[float, ...]:
        """``accepted_per_pos[i] / drafts``: the share of drafts whose position i was accepted (vLLM's "Per-position
        acceptance rate"; position i is accepted only when 0..i−1 were, so the figures do not rise). ``()`` without
        drafts or per-position counters."""
        if self.num_drafts <= 0:
            return ()
        return tuple(n / self.num_drafts for n in self.accepted_per_pos)


def spec_decode_stats(before: ServerSample | None, after: ServerSample | None) -> SpecDecodeStats | None:
    """The speculative-decoding counters between two scrapes (differenced, as :func:`prefix_cache_stats` does).

    Args:
        before: The scrape just before the run's measured requests.
        after: The scrape once they ended.

    Returns:
        The :class:`SpecDecodeStats`; None when either scrape lacks the drafts/draft-tokens/accepted counters (the
        server does not speculate), or a counter went down (a restart in between). Per-position counts are kept
        only when both scrapes have the same number of positions.

    Example:
        >>> a = ServerSample(0, spec_decode_num_drafts_total=0.0, spec_decode_num_draft_tokens_total=0.0,
        ...                  spec_decode_num_accepted_tokens_total=0.0)
        >>> b = ServerSample(1, spec_decode_num_drafts_total=181.0, spec_decode_num_draft_tokens_total=543.0,
        ...                  spec_decode_num_accepted_tokens_total=333.0)
        >>> round(spec_decode_stats(a, b).mean_acceptance_length, 4)
        2.8398
    """
    if before is None or after is None:
        return None
    names = ("drafts", "draft_tokens", "accepted_tokens")
    pairs = [
        (getattr(before, f"spec_decode_num_{n}_total"), getattr(after, f"spec_decode_num_{n}_total")) for n in names
    ]
    if any(a is None or b is None or b < a for a, b in pairs):
        return None
    (d0, d1), (t0, t1), (a0, a1) = pairs
    pos0, pos1 = before.spec_decode_accepted_per_pos_total, after.spec_decode_accepted_per_pos_total
    per_pos: tuple[float, ...] = ()
    if pos0 is not None and pos1 is not None and len(pos0) == len(pos1):
        deltas = tuple(y - x for x, y in zip(pos0, pos1, strict=True))
        per_pos = deltas if min(deltas) >= 0 else ()
    return SpecDecodeStats(d1 - d0, t1 - t0, a1 - a0, per_pos)  # type: ignore[operator]


# --- network ------------------------------------------------------------------------------------------------------
def _client(endpoint: Endpoint, secrets: Mapping[str, Any] | None, timeout_s: float) -> httpx2.AsyncClient:
    key = api_key(endpoint, secrets)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), headers=headers)


def _body(response: httpx2.Response) -> Any:
    """The response's JSON body when it has one (so error messages show the server's message), else its text."""
    try:
        return response.json()
    except ValueError:
        return response.text


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _check_timeout(timeout_s: float) -> None:
    if not _positive(timeout_s):
        raise InvalidParameterError("timeout_s", timeout_s, "a number of seconds > 0")


async def fetch_measured_kv(
    endpoint: Endpoint, *, timeout_s: float = 5.0, secrets: Mapping[str, Any] | None = None
) -> MeasuredKV | None:
    """Ask a running server for its KV-cache capacity: vLLM/SGLang ``GET /metrics``, TGI ``GET /info``.

    Args:
        endpoint: The endpoint (its ``model`` picks nothing here: ``vllm:cache_config_info`` has no model label).
        timeout_s: Connect/read timeout, seconds.
        secrets: Optional mapping holding the API key (see :func:`planner.serving.endpoints.api_key`).

    Returns:
        The :class:`MeasuredKV`; None when the server answered but does not expose a capacity (TGI 3.x ``/info``, a
        ``/metrics`` without the metric) or the kind has none (``openai``, ``llamacpp``). When the server could not
        be asked (refused, timeout, HTTP error, a body that is not Prometheus text or JSON) a :class:`MeasuredKV`
        with ``error`` set and no figures. Never raises for endpoint failures or a missing API key.

    Raises:
        InvalidParameterError: ``timeout_s`` is not > 0.
    """
    _check_timeout(timeout_s)
    if endpoint.kind not in METRICS_KINDS:
        return None
    source = {"vllm": "vllm:cache_config_info", "sglang": "sglang:max_total_num_tokens"}.get(
        endpoint.kind, "TGI /info max_batch_total_tokens"
    )
    url = f"{endpoint.base_url}/info" if endpoint.kind == "tgi" else f"{endpoint.base_url}/metrics"
    try:
        async with _client(endpoint, secrets, timeout_s) as client:
            response = await client.get(url)
    except MissingAPIKeyError as exc:
        return MeasuredKV(source=source, error=one_line(exc))
    except httpx2.HTTPError as exc:
        return MeasuredKV(source=source, error=describe_error(exc, url))
    if response.status_code != 200:
        return MeasuredKV(source=source, error=status_error(url, response.status_code, _body(response)))
    if endpoint.kind == "tgi":
        try:
            return _tgi_info_kv(response.json())
        except ValueError:
            return MeasuredKV(source=source, error=one_line(f"{url}: not JSON: {response.text}", 200))
    try:
        return parse_cache_config(response.text, endpoint.kind)
    except MetricsParseError as exc:
        return MeasuredKV(source=source, error=one_line(f"{url}: {exc}"))


async def fetch_sample(
    endpoint: Endpoint, *, start: float, timeout_s: float = 5.0, secrets: Mapping[str, Any] | None = None
) -> ServerSample | None:
    """One scrape of ``endpoint``'s ``/metrics`` (``t_s`` seconds since ``start``, a ``time.perf_counter()``).

    Returns:
        The sample; None when the kind has no known names or the server could not be read (refused, HTTP error,
        not Prometheus text, a missing API key). Never raises for endpoint failures.
    """
    _check_timeout(timeout_s)
    if endpoint.kind not in METRICS_KINDS:
        return None
    try:
        async with _client(endpoint, secrets, timeout_s) as client:
            response = await client.get(f"{endpoint.base_url}/metrics")
        if response.status_code != 200:
            return None
        return parse_metrics(response.text, endpoint.kind, time.perf_counter() - start, model=endpoint.model)
    except (MissingAPIKeyError, httpx2.HTTPError, MetricsParseError):
        return None


async def reset_prefix_cache(
    endpoint: Endpoint, *, timeout_s: float = 10.0, secrets: Mapping[str, Any] | None = None
) -> str | None:
    """Empty the server's prefix cache: vLLM ``POST /reset_prefix_cache``, SGLang ``POST /flush_cache``.

    Returns:
        None when the server answered 2xx; otherwise one line saying why not (the kind has no such route, vLLM
        without ``VLLM_SERVER_DEV_MODE=1`` answers 404, refused, timeout). Never raises for endpoint failures.
    """
    _check_timeout(timeout_s)
    route = RESET_ROUTES.get(endpoint.kind)
    if route is None:
        return f"{endpoint.name}: {endpoint.kind} has no prefix-cache reset route (vLLM and SGLang have)"
    url = endpoint.base_url + route
    try:
        async with _client(endpoint, secrets, timeout_s) as client:
            response = await client.post(url)
    except MissingAPIKeyError as exc:
        return one_line(exc)
    except httpx2.HTTPError as exc:
        return describe_error(exc, url)
    if 200 <= response.status_code < 300:
        return None
    hint = " (vLLM serves it only with VLLM_SERVER_DEV_MODE=1)" if endpoint.kind == "vllm" else ""
    return status_error(url, response.status_code, _body(response)) + hint


async def scrape_metrics(
    endpoint: Endpoint,
    *,
    interval_s: float,
    stop: asyncio.Event,
    on_sample: Callable[[ServerSample], None],
    start: float,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> str | None:
    """Poll ``endpoint``'s ``/metrics`` every ``interval_s`` until ``stop`` is set; each sample goes to ``on_sample``.

    Meant to run as a task beside a load test. One ``httpx2.AsyncClient`` is used for the whole loop. Scrapes start
    on a fixed grid, ``interval_s`` apart from the first, so timing does not drift; a scrape that overruns its slot
    skips the grid points it missed.

    Args:
        endpoint: The endpoint; its ``kind`` selects the metric names and its ``model`` the ``model_name`` series.
        interval_s: Seconds between scrape starts, > 0.
        stop: Set it to end the loop (the wait between scrapes ends at once; a scrape in flight finishes first).
        on_sample: Called with each parsed :class:`ServerSample`, in order; exceptions it raises propagate.
        start: The ``time.perf_counter()`` origin of :attr:`ServerSample.t_s` (use the load test's own).
        timeout_s: Per-scrape connect/read timeout, seconds.
        secrets: Optional mapping holding the API key.

    Returns:
        None when ``stop`` ended the loop. Otherwise a one-line reason the endpoint has no usable ``/metrics``,
        returned at the first clear sign (kind without known metrics, missing API key, connection refused, HTTP
        401/403/404/405/501, a body that is not Prometheus text, or a first scrape with none of the kind's metrics)
        or after 3 consecutive transient failures (timeouts, other HTTP errors); polling stops then. Never raises
        for endpoint failures.

    Raises:
        InvalidParameterError: ``interval_s`` or ``timeout_s`` is not > 0.
    """
    if not _positive(interval_s):
        raise InvalidParameterError("interval_s", interval_s, "a number of seconds > 0")
    _check_timeout(timeout_s)
    if endpoint.kind not in METRICS_KINDS:
        return f"{endpoint.name}: no known /metrics names for kind {endpoint.kind!r} (known: vllm, sglang, tgi)"
    url = f"{endpoint.base_url}/metrics"
    try:
        client = _client(endpoint, secrets, timeout_s)
    except MissingAPIKeyError as exc:
        return one_line(exc)
    failures = 0
    scrapes = 0
    async with client:
        origin = time.perf_counter()
        while not stop.is_set():
            try:
                response = await client.get(url)
            except httpx2.ConnectError as exc:
                return describe_error(exc, url)
            except httpx2.HTTPError as exc:
                failures += 1
                if failures >= _MAX_FAILURES:
                    return f"{describe_error(exc, url)} ({failures} times in a row)"
            else:
                status = response.status_code
                if status in (401, 403, 404, 405, 501):
                    return status_error(url, status, _body(response))
                if status != 200:
                    failures += 1
                    if failures >= _MAX_FAILURES:
                        return status_error(url, status, _body(response)) + f" ({failures} times in a row)"
                else:
                    failures = 0
                    t_s = time.perf_counter() - start
                    try:
                        sample = parse_metrics(response.text, endpoint.kind, t_s, model=endpoint.model)
                    except MetricsParseError as exc:
                        return one_line(f"{url}: {exc}")
                    if scrapes == 0 and not sample.has_data:
                        return f"{url} has none of the {endpoint.kind} metrics this dashboard reads"
                    scrapes += 1
                    on_sample(sample)
            k = math.floor((time.perf_counter() - origin) / interval_s) + 1
            delay = origin + k * interval_s - time.perf_counter()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=max(delay, 0.0))
    return None
