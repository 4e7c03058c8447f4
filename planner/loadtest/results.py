"""Load-test runs kept for comparison: measured here or imported from a ``vllm bench serve --save-result`` file.

A :class:`SavedRun` is what the Load Test page keeps in the session, overlays on its charts, and writes out:

* :func:`to_vllm_file` writes the run as ``vllm bench serve --save-result`` does (``vllm/benchmarks/serve.py``
  ``main``, v0.24: ``result_json``): run settings (``date``, ``backend``, ``model_id``, ``num_prompts``,
  ``request_rate``, ``burstiness``, ``max_concurrency``), the aggregates under vLLM's key names, and the
  per-request arrays ``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``latencies``, ``start_times`` and
  ``errors`` (seconds, as vLLM writes them). Our own fields carry a ``planner_`` prefix, so vLLM's reader and
  ours both ignore what they do not know.
* :func:`import_runs` reads such files back: one JSON object, or JSON Lines of them (``--append-result``), plain or
  gzip-compressed (``.json.gz``).
* :func:`requests_frame` is the per-request table (CSV export); :func:`runs_frame` the side-by-side metric table.
"""

from __future__ import annotations

import math
import statistics
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pandas as pd

from planner.errors import InvalidParameterError, MalformedTextError
from planner.loadtest.runner import LoadResult
from planner.metrics.benchmark import METRIC_NAMES, BenchmarkMetrics, Distribution
from planner.metrics.latency import compute_metrics, percentile, percentiles, tpot_s
from planner.parsing import MAX_COUNT, finite_number, json_lines, json_value
from planner.serving.server_metrics import PrefixCacheStats, SpecDecodeStats
from planner.units import MS_PER_S

__all__ = [
    "MAX_IMPORT_BYTES",
    "RequestRow",
    "SavedRun",
    "batching_frame",
    "failure_summary",
    "group_sweeps",
    "import_runs",
    "prefix_cache_frame",
    "requests_frame",
    "runs_frame",
    "same_model",
    "saved_run",
    "spec_decode_frame",
    "to_vllm_file",
    "ttft_by_turn",
]

#: Largest file :func:`import_runs` reads, bytes (a 10,000-request vLLM result with ITL arrays is ~20 MB).
MAX_IMPORT_BYTES = 64 * 2**20
_MAX_RUNS = 200


@dataclass(frozen=True)
class RequestRow:
    """One request of a run. Seconds; None where undefined or not recorded.

    Attributes:
        start_s: Send time relative to the run's start.
        ok: The request succeeded.
        input_tokens: Prompt tokens (server count when reported, else the estimate).
        output_tokens: Generated tokens.
        ttft_s: First token − sent.
        e2el_s: Last token − sent.
        tpot_s: (E2EL − TTFT) / (output_tokens − 1).
        itls_s: Gaps between token-bearing chunks.
        error: One-line error of a failed request; "" when ok.
        turn: Turn within its conversation, from 0 (multi-turn runs); None otherwise.
    """

    start_s: float | None
    ok: bool
    input_tokens: int | None
    output_tokens: int | None
    ttft_s: float | None
    e2el_s: float | None
    tpot_s: float | None
    itls_s: tuple[float, ...] = ()
    error: str = ""
    turn: int | None = None


@dataclass(frozen=True)
class SavedRun:
    """A finished run, measured here or imported.

    Attributes:
        label: Unique display name within a session (e.g. ``"llama · c=8 · 14:02:11"``).
        endpoint: Endpoint name (imported: the file's ``label`` or ``model_id``).
        source: ``"measured"`` or ``"imported"``.
        metrics: The aggregates.
        model: Served model id; None when unknown.
        date: When the run started, ``YYYYMMDD-HHMMSS`` as vLLM writes it; None when unknown.
        num_prompts: Requests asked for; None when unknown.
        max_concurrency: Concurrency cap; None = none / unknown.
        request_rate: Send rate, req/s (``inf`` = burst); None when unknown.
        burstiness: Gamma shape of the arrivals; None when unknown.
        sweep: Id grouping the levels of one sweep; None for a single run.
        requests: Per-request rows (empty when a file had no arrays).
        ttft_first_chunk: TTFT as ``vllm bench serve`` measures it (first chunk with ``choices``, vLLM's role chunk
            included); ``metrics.ttft`` is the project's (first token-bearing chunk). None when unknown.
        input_tokens_method: How input lengths were set: ``token_ids``, ``server_tokenize``, ``words`` (an
            estimate) or ``dataset``; None when unknown.
        input_sizing: The sizing in words for a page (e.g. ``"exact (server /tokenize)"``); None when unknown.
        output_tokens_method: How output tokens were counted, one of
            :data:`planner.metrics.latency.OUTPUT_TOKENS_METHODS` (``usage``, ``tokenizer``, ``chunks (estimate)``,
            ...); None when unknown.
        requested_input_tokens: Input tokens asked for (chat template included when known); None when unknown.
        measured_input_tokens: Input tokens the server counted (``usage.prompt_tokens``); None when unknown.
        notes: Lines a reader of the figures must know (fields not sent, input lengths off what was asked).
        stopped: ``"cancelled"`` or ``"duration"`` when the run ended before all its requests; None otherwise.
        dataset_name: The workload (``random``, ``prefix_repetition``, ``multi_turn``, ...); None when unknown.
        prefix_cache: The server's prefix-cache queries and hits over the run; None when not read.
        reusable_prefix_share: The most of the prompt tokens a prefix cache could serve on this workload
            (:attr:`planner.loadtest.runner.LoadResult.reusable_prefix_share`); None when unknown.
        cache_flushed: The server's prefix cache was emptied before the warmups ("flush, prime, measure").
        repeat: Id shared by the repeats of one run (``num_runs`` > 1); None otherwise.
        num_workers: Ray workers that sent the measured requests; None = one process (or unknown).
        worker_requests: Measured requests that ended per Ray worker, in worker order; () otherwise.
        spec_decode: The server's speculative-decoding counters over the run (acceptance rate, mean acceptance
            length, per position); None when the server did not speculate or was not read. Files keep them under
            ``vllm bench serve``'s keys (``spec_decode_num_drafts``, ``spec_decode_draft_tokens``,
            ``spec_decode_accepted_tokens``) plus ``planner_spec_decode_accepted_per_pos``.
        batching: ``continuous`` or ``static`` (:data:`planner.loadtest.settings.BATCHINGS`); None when unknown
            (a file from elsewhere).
    """

    label: str
    endpoint: str
    source: str
    metrics: BenchmarkMetrics
    model: str | None = None
    date: str | None = None
    num_prompts: int | None = None
    max_concurrency: int | None = None
    request_rate: float | None = None
    burstiness: float | None = None
    sweep: str | None = None
    requests: tuple[RequestRow, ...] = ()
    ttft_first_chunk: Distribution | None = None
    input_tokens_method: str | None = None
    input_sizing: str | None = None
    output_tokens_method: str | None = None
    requested_input_tokens: int | None = None
    measured_input_tokens: int | None = None
    notes: tuple[str, ...] = ()
    stopped: str | None = None
    dataset_name: str | None = None
    prefix_cache: PrefixCacheStats | None = None
    reusable_prefix_share: float | None = None
    cache_flushed: bool = False
    repeat: str | None = None
    num_workers: int | None = None
    worker_requests: tuple[int, ...] = ()
    spec_decode: SpecDecodeStats | None = None
    batching: str | None = None

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """The server's prefix-cache hit rate over the run (0–1); None when not read."""
        return None if self.prefix_cache is None else self.prefix_cache.hit_rate


def saved_run(
    result: LoadResult, label: str, *, started: datetime, sweep: str | None = None, repeat: str | None = None
) -> SavedRun:
    """A :class:`SavedRun` of a measured :class:`~planner.loadtest.runner.LoadResult` (``started``: local start
    time; ``repeat``: the id of its group of repeats)."""
    rows = []
    first_sent = min((r.t_sent for r in result.records), default=0.0)
    turns = result.turns or (None,) * len(result.records)
    for record, input_tokens, turn in zip(result.records, result.input_tokens, turns, strict=True):
        m = compute_metrics(record)
        rows.append(
            RequestRow(
                start_s=record.t_sent - first_sent,
                ok=record.ok,
                input_tokens=input_tokens,
                output_tokens=m.output_tokens if record.ok else None,
                ttft_s=m.ttft_s,
                e2el_s=m.e2e_s,
                tpot_s=m.tpot_s,
                itls_s=m.itl_chunk_s,
                error="" if record.ok else (record.error or record.error_kind or "failed"),
                turn=turn,
            )
        )
    model = next((r.model for r in result.records if r.model), None)
    spec = result.settings
    check = result.input_check
    return SavedRun(
        label=label,
        endpoint=result.endpoint,
        source="measured",
        metrics=result.metrics,
        model=model,
        date=started.strftime("%Y%m%d-%H%M%S"),
        num_prompts=spec.num_prompts,
        max_concurrency=spec.max_concurrency,
        request_rate=spec.request_rate,
        burstiness=spec.burstiness,
        sweep=sweep,
        requests=tuple(rows),
        ttft_first_chunk=result.ttft_first_chunk,
        input_tokens_method=None if check is None else check.input_tokens_method,
        input_sizing=None if result.input_calibration is None else result.input_calibration.label,
        output_tokens_method=result.output_tokens_method,
        requested_input_tokens=None if check is None else check.requested_tokens,
        measured_input_tokens=None if check is None else check.measured_tokens,
        notes=result.notes,
        stopped=result.stopped,
        dataset_name=spec.dataset_name,
        prefix_cache=result.prefix_cache,
        reusable_prefix_share=result.reusable_prefix_share,
        cache_flushed=result.cache_flushed,
        repeat=repeat,
        num_workers=result.num_workers,
        worker_requests=result.worker_requests,
        spec_decode=result.spec_decode,
        batching=spec.batching,
    )


_STATS = ("mean", "median", "std", "p90", "p99")


def _json_number(value: float | None) -> float | str | None:
    # vLLM writes float("inf") as the non-standard token Infinity; strict JSON readers reject it, so "inf".
    if value is not None and math.isinf(value):
        return "inf"
    return value


def to_vllm_file(run: SavedRun, *, per_request: bool = True) -> dict[str, Any]:
    """The run as a ``vllm bench serve --save-result`` JSON object (see the module docstring).

    Besides vLLM's keys: ``{mean,median,std,p90,p99}_ttft_first_chunk_ms`` (vLLM's own TTFT definition, the role
    chunk counted), ``failures_by_kind``, ``input_tokens_method``, ``output_tokens_method``, and ``planner_``-prefixed
    fields (input sizing, requested and measured input tokens, notes, ...). ``per_request=False`` leaves out the
    arrays, and so does a run without per-request rows (a prediction, or a file imported without them): empty arrays
    would read back as "no sample" and lose the run's TPOT and ITL.
    """
    out: dict[str, Any] = {
        "date": run.date,
        "backend": "openai-chat",
        "label": run.endpoint,
        "model_id": run.model,
        "num_prompts": run.num_prompts,
        "request_rate": _json_number(run.request_rate),
        "burstiness": _json_number(run.burstiness),
        "max_concurrency": run.max_concurrency,
    }
    out.update(run.metrics.to_vllm_json())
    for stat in _STATS:
        value = None if run.ttft_first_chunk is None else getattr(run.ttft_first_chunk, f"{stat}_s")
        out[f"{stat}_ttft_first_chunk_ms"] = None if value is None else value * MS_PER_S
    out["failures_by_kind"] = dict(run.metrics.failures_by_kind)
    out["input_tokens_method"] = run.input_tokens_method
    out["output_tokens_method"] = run.output_tokens_method
    out["planner_input_sizing"] = run.input_sizing
    out["planner_requested_input_tokens"] = run.requested_input_tokens
    out["planner_measured_input_tokens"] = run.measured_input_tokens
    out["planner_notes"] = list(run.notes)
    out["planner_stopped"] = run.stopped
    out["planner_dataset_name"] = run.dataset_name
    cache = run.prefix_cache
    out["planner_prefix_cache_hit_rate"] = run.prefix_cache_hit_rate
    out["planner_prefix_cache_queries"] = None if cache is None else cache.queries_tokens
    out["planner_prefix_cache_hits"] = None if cache is None else cache.hits_tokens
    out["planner_prefix_cache_source"] = None if cache is None else cache.source
    out["planner_reusable_prefix_share"] = run.reusable_prefix_share
    out["planner_cache_flushed"] = run.cache_flushed
    out["planner_repeat"] = run.repeat
    out["planner_num_workers"] = run.num_workers
    out["planner_worker_requests"] = list(run.worker_requests)
    out.update(_spec_json(run.spec_decode))
    out["planner_batching"] = run.batching
    if run.metrics.slo_ms:
        out["goodput"] = dict(run.metrics.slo_ms)
    out.update(
        {
            "planner_endpoint": run.endpoint,
            "planner_label": run.label,
            "planner_source": run.source,
            "planner_sweep": run.sweep,
        }
    )
    if not per_request or not run.requests:
        return out
    rows = run.requests
    out.update(
        {
            "input_lens": [r.input_tokens for r in rows],
            "output_lens": [r.output_tokens or 0 if r.ok else 0 for r in rows],
            "ttfts": [r.ttft_s or 0.0 for r in rows],
            "itls": [list(r.itls_s) for r in rows],
            "latencies": [r.e2el_s or 0.0 for r in rows],
            "start_times": [r.start_s for r in rows],
            "errors": [r.error for r in rows],
        }
    )
    if any(r.turn is not None for r in rows):
        out["planner_turns"] = [r.turn for r in rows]
    return out


def _opt_float(data: dict[str, Any], key: str, where: str) -> float | None:
    """An optional number of a result: None when missing, null or NaN (no measurement); ``"inf"`` (vLLM writes a
    burst's request rate so) and Infinity are infinite.

    Raises:
        InvalidParameterError: anything else (a string, a list, an integer beyond a float's range), naming ``where``
            and the key: read as "no value", it would vanish without a word.
    """
    value = data.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, float) and math.isinf(value):
        return value
    number = finite_number(value)
    if number is None:
        raise InvalidParameterError(f"{where}: {key}", value, "a number, inf or null")
    return number


def _notes(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(n[:300] for n in value if isinstance(n, str))[:10]


def _opt_int(data: dict[str, Any], key: str, where: str) -> int | None:
    """An optional count of a result (requests, tokens, workers): None when missing or null.

    Raises:
        InvalidParameterError: anything but a whole number from 0 to :data:`~planner.parsing.MAX_COUNT` (``4.0`` is
            4), naming ``where`` and the key.
    """
    value = data.get(key)
    if value is None:
        return None
    number = finite_number(value)
    if number is None or not number.is_integer() or not 0 <= number <= MAX_COUNT:
        raise InvalidParameterError(f"{where}: {key}", value, f"a whole number from 0 to {MAX_COUNT:,}, or null")
    return int(number)


def _count(value: Any) -> int | None:
    """A per-request count (tokens, a turn): a whole number from 0 to MAX_COUNT, else None (no value)."""
    number = finite_number(value)
    return int(number) if number is not None and number.is_integer() and 0 <= number <= MAX_COUNT else None


def _rows_from_arrays(data: dict[str, Any], where: str) -> tuple[RequestRow, ...]:
    """The per-request rows of a result: none when it has no arrays; an entry that is not a number (a count, a finite
    time) is a missing value of that request, as vLLM writes a failed request's.

    Raises:
        InvalidParameterError: the arrays differ in length, so no entry can be matched to its request.
    """
    arrays = {k: data.get(k) for k in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "errors")}
    if not all(isinstance(v, list) for v in arrays.values()):
        return ()
    n = len(arrays["ttfts"])
    if any(len(v) != n for v in arrays.values()):
        lengths = ", ".join(f"{k} {len(v)}" for k, v in arrays.items())
        raise InvalidParameterError(where, lengths, "per-request arrays of one length (one entry per request)")
    starts = data.get("start_times")
    starts = starts if isinstance(starts, list) and len(starts) == n else [None] * n
    turns = data.get("planner_turns")
    turns = turns if isinstance(turns, list) and len(turns) == n else [None] * n
    rows = []
    for i in range(n):
        error = arrays["errors"][i]
        ok = not error
        out_len = _count(arrays["output_lens"][i])
        ttft = finite_number(arrays["ttfts"][i]) if ok else None
        e2el = finite_number(arrays["latencies"][i]) if ok else None
        tpot = None
        if ttft is not None and e2el is not None and out_len is not None:
            tpot = tpot_s(ttft, e2el, out_len)
        itls = arrays["itls"][i] if isinstance(arrays["itls"][i], list) else []
        start = finite_number(starts[i])
        rows.append(
            RequestRow(
                start_s=start,
                ok=ok,
                input_tokens=_count(arrays["input_lens"][i]),
                output_tokens=out_len if ok else None,
                ttft_s=ttft,
                e2el_s=e2el,
                tpot_s=tpot,
                itls_s=tuple(x for x in map(finite_number, itls) if x is not None),
                error=str(error)[:500] if error else "",
                turn=_count(turns[i]),
            )
        )
    if rows and all(r.start_s is not None for r in rows):
        first = min(r.start_s for r in rows if r.start_s is not None)
        rows = [replace(r, start_s=r.start_s - first) for r in rows if r.start_s is not None]
    return tuple(rows)


def _spec_json(spec: SpecDecodeStats | None) -> dict[str, Any]:
    """``vllm bench serve``'s spec-decode keys (``vllm/benchmarks/serve.py``: the rate in percent) and ours."""
    if spec is None:
        return {}
    rate = spec.acceptance_rate
    return {
        "spec_decode_acceptance_rate": None if rate is None else rate * 100,
        "spec_decode_acceptance_length": spec.mean_acceptance_length,
        "spec_decode_num_drafts": spec.num_drafts,
        "spec_decode_draft_tokens": spec.num_draft_tokens,
        "spec_decode_accepted_tokens": spec.num_accepted_tokens,
        "planner_spec_decode_accepted_per_pos": list(spec.accepted_per_pos),
    }


def _spec_from_json(data: dict[str, Any], where: str) -> SpecDecodeStats | None:
    """The counters of a file (ours or ``vllm bench serve``'s); None when it has none."""
    keys = ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    counts = [_opt_float(data, k, where) for k in keys]
    if any(c is None or not math.isfinite(c) or c < 0 for c in counts):
        return None
    raw = data.get("planner_spec_decode_accepted_per_pos")
    per_pos: tuple[float, ...] = ()
    if isinstance(raw, list) and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in raw):
        per_pos = tuple(float(v) for v in raw)
    drafts, draft_tokens, accepted = counts
    return SpecDecodeStats(drafts, draft_tokens, accepted, per_pos, source="file")  # type: ignore[arg-type]


def _run_from_object(data: Any, index: int, name: str) -> SavedRun:
    where = f"{name} result {index + 1}"
    if not isinstance(data, dict):
        raise InvalidParameterError(where, type(data).__name__, "a JSON object from vllm bench serve --save-result")
    try:
        metrics = BenchmarkMetrics.from_vllm_json(data)
    except InvalidParameterError as exc:
        raise InvalidParameterError(where, exc.name, f"a vllm bench serve result with a valid {exc.name!r}") from exc
    endpoint = next(
        (str(data[k])[:80] for k in ("planner_endpoint", "label", "model_id", "backend") if data.get(k)), name
    )
    label = str(data.get("planner_label") or f"{endpoint} · {data.get('date') or name}")[:120]
    sweep = data.get("planner_sweep")
    first_chunk = None
    # a latency that is not finite is no measurement (n/a), as in BenchmarkMetrics.from_vllm_json
    ms = {stat: finite_number(_opt_float(data, f"{stat}_ttft_first_chunk_ms", where)) for stat in _STATS}
    if ms["mean"] is not None:
        first_chunk = Distribution(
            count=metrics.ttft.count if metrics.ttft is not None else None,
            mean_s=ms["mean"] / MS_PER_S,
            **{f"{stat}_s": None if ms[stat] is None else ms[stat] / MS_PER_S for stat in _STATS[1:]},
        )
    method = data.get("input_tokens_method")
    out_method = data.get("output_tokens_method")
    queries = _opt_float(data, "planner_prefix_cache_queries", where)
    hits = _opt_float(data, "planner_prefix_cache_hits", where)
    cache = None
    if queries is not None and hits is not None:
        source = str(data.get("planner_prefix_cache_source") or "file")[:80]
        cache = PrefixCacheStats(queries, hits, source)
    return SavedRun(
        label=label,
        endpoint=endpoint,
        source="imported",  # even our own export: a file's numbers were not measured in this session
        metrics=metrics,
        model=str(data["model_id"])[:200] if data.get("model_id") else None,
        date=str(data["date"])[:40] if data.get("date") else None,
        num_prompts=_opt_int(data, "num_prompts", where),
        max_concurrency=_opt_int(data, "max_concurrency", where),
        request_rate=_opt_float(data, "request_rate", where),
        burstiness=_opt_float(data, "burstiness", where),
        sweep=str(sweep)[:80] if sweep else None,
        requests=_rows_from_arrays(data, where),
        ttft_first_chunk=first_chunk,
        input_tokens_method=str(method)[:80] if method else None,
        input_sizing=str(data["planner_input_sizing"])[:80] if data.get("planner_input_sizing") else None,
        output_tokens_method=str(out_method)[:80] if out_method else None,
        requested_input_tokens=_opt_int(data, "planner_requested_input_tokens", where),
        measured_input_tokens=_opt_int(data, "planner_measured_input_tokens", where),
        notes=_notes(data.get("planner_notes")),
        stopped=data.get("planner_stopped") if data.get("planner_stopped") in ("cancelled", "duration") else None,
        dataset_name=str(data["planner_dataset_name"])[:40] if data.get("planner_dataset_name") else None,
        prefix_cache=cache,
        reusable_prefix_share=_opt_float(data, "planner_reusable_prefix_share", where),
        cache_flushed=data.get("planner_cache_flushed") is True,
        repeat=str(data["planner_repeat"])[:80] if data.get("planner_repeat") else None,
        num_workers=_opt_int(data, "planner_num_workers", where),
        worker_requests=_worker_requests(data.get("planner_worker_requests")),
        spec_decode=_spec_from_json(data, where),
        batching=data["planner_batching"] if data.get("planner_batching") in ("continuous", "static") else None,
    )


def _worker_requests(value: Any) -> tuple[int, ...]:
    """``planner_worker_requests``: a list of counts ≥ 0, else ()."""
    if not isinstance(value, list) or len(value) > 1024:
        return ()
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value):
        return ()
    return tuple(value)


def import_runs(data: bytes | str, name: str = "file") -> tuple[SavedRun, ...]:
    """Runs from a ``--save-result`` file: one JSON object, a JSON list of them, or JSON Lines; plain or gzip.

    Args:
        data: The file's content (at most :data:`MAX_IMPORT_BYTES`, also once decompressed).
        name: File name, used in error messages and as a fallback label.

    Returns:
        The runs, in file order.

    Raises:
        InvalidParameterError: not UTF-8 JSON, too large, a broken gzip stream, more than 200 runs, or an object
            without vLLM's ``duration`` / ``completed`` keys (the message names the file and the result).
    """
    if isinstance(data, bytes) and data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, name)
    if len(data) > MAX_IMPORT_BYTES:
        raise InvalidParameterError(name, f"{len(data):,} bytes", f"a file of at most {MAX_IMPORT_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise InvalidParameterError(name, "binary data", "a UTF-8 JSON file from vllm bench serve") from None
    accepted = "JSON or JSON Lines from vllm bench serve --save-result"
    try:
        parsed: Any = json_value(text, name=name, accepted=accepted)
        objects = parsed if isinstance(parsed, list) else [parsed]
    except MalformedTextError as exc:
        if "not valid JSON" not in exc.value:  # nested too deeply: reading it line by line fails the same way
            raise
        objects = [
            json_value(line, name=name, accepted=accepted, line=n) for n, line in json_lines(text) if line.strip()
        ]
    if not objects or len(objects) > _MAX_RUNS:
        raise InvalidParameterError(name, f"{len(objects)} results", f"1 to {_MAX_RUNS} results")
    if isinstance(objects[0], dict) and {"coefficients", "gpu"} <= objects[0].keys():
        raise InvalidParameterError(
            name,
            "a calibration profile",
            "a vllm bench serve result file (a profile goes under Calibration, or predict --calibration)",
        )
    return tuple(_run_from_object(obj, i, name) for i, obj in enumerate(objects))


#: The first two bytes of a gzip stream (RFC 1952 §2.3.1).
_GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(data: bytes, name: str) -> bytes:
    """A gzip file's content, read no further than one byte past :data:`MAX_IMPORT_BYTES` (so a small file that
    inflates to gigabytes is refused, not inflated)."""
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(data, MAX_IMPORT_BYTES + 1)
    except zlib.error:
        raise InvalidParameterError(name, "a broken gzip stream", "a gzip file written whole") from None
    if len(out) <= MAX_IMPORT_BYTES and not inflater.eof:
        raise InvalidParameterError(name, "a cut-off gzip stream", "a gzip file written whole")
    return out


def group_sweeps(runs: Sequence[SavedRun]) -> list[SavedRun]:
    """Imported runs of one workload at several concurrencies, made one sweep.

    ``vllm bench serve`` writes one file per run and no sweep id, so a sweep made with it (one run per
    ``--max-concurrency``) arrives as separate runs. Runs without a sweep id that were imported, have a concurrency
    cap and a burst schedule (``request_rate`` inf or unknown), and share the model and the mean input and output
    tokens per request (to the token) become the sweep ``"<model> · <in>/<out> tokens"`` when they cover two or more
    concurrencies. Every other run is returned as it was, in order.
    """

    def key(run: SavedRun) -> tuple[str, int, int] | None:
        m = run.metrics
        burst = run.request_rate is None or math.isinf(run.request_rate)
        if run.sweep is not None or run.source != "imported" or run.max_concurrency is None or not burst:
            return None
        if not m.completed:
            return None
        return (
            run.model or run.endpoint,
            round(m.total_input_tokens / m.completed),
            round(m.total_output_tokens / m.completed),
        )

    groups: dict[tuple[str, int, int], set[int]] = {}
    for run in runs:
        k = key(run)
        if k is not None:
            groups.setdefault(k, set()).add(run.max_concurrency or 0)
    out = []
    for run in runs:
        k = key(run)
        if k is not None and len(groups[k]) >= 2:
            run = replace(run, sweep=f"{k[0]} · {k[1]}/{k[2]} tokens")
        out.append(run)
    return out


def failure_summary(run: SavedRun) -> str | None:
    """One line on a run's failed requests: how many and the most common error; None when none failed."""
    errors = Counter(r.error for r in run.requests if not r.ok and r.error)
    if not run.metrics.failed:
        return None
    line = f"{run.metrics.failed:,} of {run.metrics.completed + run.metrics.failed:,} requests failed"
    if errors:
        error, count = errors.most_common(1)[0]
        line += f"; most common ({count:,}): {error}"
    return line


def same_model(a: str, b: str) -> bool:
    """Whether two model names mean the same checkpoint: equal ignoring case, or the same last path part
    (``meta-llama/Llama-3.1-8B-Instruct`` is served as ``Llama-3.1-8B-Instruct`` or by its full id)."""
    return a.lower() == b.lower() or a.rsplit("/", 1)[-1].lower() == b.rsplit("/", 1)[-1].lower()


def requests_frame(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """Per-request rows of ``runs`` (CSV export): run label, endpoint, index and every :class:`RequestRow` field
    except the ITL list (its count and median are given instead). Times in seconds."""
    rows = []
    for run in runs:
        for i, r in enumerate(run.requests):
            rows.append(
                {
                    "run": run.label,
                    "endpoint": run.endpoint,
                    "request": i,
                    "start_s": r.start_s,
                    "ok": r.ok,
                    "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens,
                    "ttft_s": r.ttft_s,
                    "tpot_s": r.tpot_s,
                    "e2el_s": r.e2el_s,
                    "itl_count": len(r.itls_s),
                    "itl_median_s": percentile(r.itls_s, 50) if r.itls_s else None,
                    "turn": r.turn,
                    "error": r.error,
                }
            )
    return pd.DataFrame(rows)


def runs_frame(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """One row per run with vLLM's key names (latencies in ms) and the sample count of every distribution;
    None where a value is missing (shown as n/a)."""
    rows = []
    for run in runs:
        m = run.metrics
        row: dict[str, Any] = {
            "run": run.label,
            "endpoint": run.endpoint,
            "source": run.source,
            "max_concurrency": run.max_concurrency,
            "request_rate": run.request_rate,
            "completed": m.completed,
            "failed": m.failed,
            "stopped": run.stopped,
            # with no completed request there is no throughput to speak of (vLLM writes 0): n/a, never 0
            "duration": m.duration_s if m.completed else None,
            "request_throughput": m.request_throughput if m.completed else None,
            "output_throughput": m.output_throughput if m.completed else None,
            # usage, tokenizer, or one per chunk (an estimate): what total_output_tokens and TPOT rest on
            "output_tokens_method": run.output_tokens_method,
            "total_token_throughput": m.total_token_throughput if m.completed else None,
            "request_goodput": m.request_goodput,
            # input tokens asked for (chat template included) against the server's usage.prompt_tokens
            "input_tokens_method": run.input_tokens_method,
            "requested_input_tokens": run.requested_input_tokens,
            "total_input_tokens": m.total_input_tokens,
            "dataset_name": run.dataset_name,
            # the server's counters over the run; the workload's most a cache could serve beside it
            "prefix_cache_hit_rate": run.prefix_cache_hit_rate,
            "reusable_prefix_share": run.reusable_prefix_share,
        }
        vllm = m.to_vllm_json()
        for name in METRIC_NAMES:
            dist = getattr(m, name)
            for stat in ("mean", "median", "p90", "p99"):
                row[f"{stat}_{name}_ms"] = vllm[f"{stat}_{name}_ms"]
            row[f"{name}_samples"] = None if dist is None else dist.count
            if name == "ttft":
                first = run.ttft_first_chunk
                row["median_ttft_first_chunk_ms"] = (
                    None if first is None or first.median_s is None else first.median_s * MS_PER_S
                )
        rows.append(row)
    frame = pd.DataFrame(rows)
    # counts stay whole numbers with gaps (pandas would make a column with a None float: "12.0")
    whole = ("max_concurrency", "completed", "failed", "requested_input_tokens", "total_input_tokens")
    counts = [c for c in frame.columns if c.endswith("_samples") or c in whole]
    return frame.astype({c: "Int64" for c in counts}) if len(frame) else frame


def ttft_by_turn(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """TTFT split by conversation turn, per run (multi-turn runs only): ``run``, ``turn`` (from 1), ``requests``
    (completed), ``median_ttft_ms``, ``p90_ttft_ms``, ``mean_input_tokens`` (the conversation so far, as the
    server counted it). Percentiles as :mod:`planner.metrics.benchmark` computes them
    (:func:`planner.metrics.latency.percentiles`); empty when no run has turns."""
    rows = []
    for run in runs:
        by_turn: dict[int, list[RequestRow]] = {}
        for r in run.requests:
            if r.turn is not None and r.ok and r.ttft_s is not None:
                by_turn.setdefault(r.turn, []).append(r)
        for turn in sorted(by_turn):
            group = by_turn[turn]
            p50, p90 = percentiles([r.ttft_s * MS_PER_S for r in group], (50, 90))
            inputs = [r.input_tokens for r in group if r.input_tokens is not None]
            rows.append(
                {
                    "run": run.label,
                    "turn": turn + 1,
                    "requests": len(group),
                    "median_ttft_ms": p50,
                    "p90_ttft_ms": p90,
                    "mean_input_tokens": statistics.fmean(inputs) if inputs else None,
                }
            )
    columns = ["run", "turn", "requests", "median_ttft_ms", "p90_ttft_ms", "mean_input_tokens"]
    return pd.DataFrame(rows, columns=columns)


def prefix_cache_frame(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """One row per run that read the server's prefix-cache counters or whose workload shares prefixes: ``run``,
    ``dataset_name``, ``prefix_cache_hit_rate`` (the server's, 0–1), ``prefix_cache_hits`` and
    ``prefix_cache_queries`` (tokens), ``reusable_prefix_share`` (the most a cache could serve on this workload,
    0–1), ``cache_flushed``, ``median_ttft_ms``; None where unknown. Empty when no run has any of it."""
    rows = []
    for run in runs:
        cache = run.prefix_cache
        if cache is None and run.reusable_prefix_share is None:
            continue
        ttft = run.metrics.ttft
        rows.append(
            {
                "run": run.label,
                "dataset_name": run.dataset_name,
                "prefix_cache_hit_rate": run.prefix_cache_hit_rate,
                "prefix_cache_hits": None if cache is None else cache.hits_tokens,
                "prefix_cache_queries": None if cache is None else cache.queries_tokens,
                "reusable_prefix_share": run.reusable_prefix_share,
                "cache_flushed": run.cache_flushed,
                "median_ttft_ms": None if ttft is None or ttft.median_s is None else ttft.median_s * MS_PER_S,
            }
        )
    columns = [
        "run",
        "dataset_name",
        "prefix_cache_hit_rate",
        "prefix_cache_hits",
        "prefix_cache_queries",
        "reusable_prefix_share",
        "cache_flushed",
        "median_ttft_ms",
    ]
    return pd.DataFrame(rows, columns=columns)


def spec_decode_frame(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """One row per run that read the server's speculative-decoding counters: ``run``, ``acceptance_rate`` (0–1,
    accepted / draft tokens), ``mean_acceptance_length`` (1 + accepted / drafts), ``per_position_acceptance`` (text,
    e.g. ``"0.79, 0.59, 0.46"``), ``num_drafts``, ``median_tpot_ms``, ``output_throughput`` (tok/s); None where
    unknown. Formulas: :class:`planner.serving.server_metrics.SpecDecodeStats`. Empty when no run has them."""
    rows = []
    for run in runs:
        spec = run.spec_decode
        if spec is None:
            continue
        tpot = run.metrics.tpot
        rows.append(
            {
                "run": run.label,
                "acceptance_rate": spec.acceptance_rate,
                "mean_acceptance_length": spec.mean_acceptance_length,
                "per_position_acceptance": ", ".join(f"{a:.2f}" for a in spec.per_position_acceptance) or None,
                "num_drafts": spec.num_drafts,
                "median_tpot_ms": None if tpot is None or tpot.median_s is None else tpot.median_s * MS_PER_S,
                "output_throughput": run.metrics.output_throughput,
            }
        )
    columns = [
        "run",
        "acceptance_rate",
        "mean_acceptance_length",
        "per_position_acceptance",
        "num_drafts",
        "median_tpot_ms",
        "output_throughput",
    ]
    return pd.DataFrame(rows, columns=columns)


def batching_frame(runs: Sequence[SavedRun]) -> pd.DataFrame:
    """Static against continuous batching: one row per (endpoint, concurrency) that has both a ``static`` and a
    ``continuous`` run (the last of each): ``endpoint``, ``max_concurrency``, ``static_output_throughput`` and
    ``continuous_output_throughput`` (tok/s), ``throughput_ratio`` (continuous / static; the source article claims
    2–5×), ``static_median_e2el_ms``, ``continuous_median_e2el_ms``. None where a figure is unknown. Empty when no
    pair exists."""
    latest: dict[tuple[str, int | None, str], SavedRun] = {}
    for run in runs:
        if run.batching in ("static", "continuous"):
            latest[(run.endpoint, run.max_concurrency, run.batching)] = run
    rows = []
    for (endpoint, cap, kind), static in latest.items():
        continuous = latest.get((endpoint, cap, "continuous"))
        if kind != "static" or continuous is None:
            continue
        s_tp, c_tp = static.metrics.output_throughput, continuous.metrics.output_throughput
        rows.append(
            {
                "endpoint": endpoint,
                "max_concurrency": cap,
                "static_output_throughput": s_tp if static.metrics.completed else None,
                "continuous_output_throughput": c_tp if continuous.metrics.completed else None,
                "throughput_ratio": c_tp / s_tp
                if static.metrics.completed and continuous.metrics.completed and s_tp
                else None,
                "static_median_e2el_ms": _median_ms(static.metrics.e2el),
                "continuous_median_e2el_ms": _median_ms(continuous.metrics.e2el),
            }
        )
    columns = [
        "endpoint",
        "max_concurrency",
        "static_output_throughput",
        "continuous_output_throughput",
        "throughput_ratio",
        "static_median_e2el_ms",
        "continuous_median_e2el_ms",
    ]
    return pd.DataFrame(rows, columns=columns)


def _median_ms(d: Distribution | None) -> float | None:
    return None if d is None or d.median_s is None else d.median_s * MS_PER_S
