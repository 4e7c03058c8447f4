"""Send the same prompt to several endpoints at once and compare their latency.

:func:`run_compare` is the async core (endpoints concurrently, repeats sequential per endpoint). :class:`CompareRun`
runs it on a background thread with its own event loop and exposes a thread-safe :meth:`CompareRun.snapshot`, so
a UI (e.g. a Streamlit fragment polling every 0.5 s) shows the answers as they stream without parsing anything on
its own thread. :func:`metrics_frame`, :func:`summary_frame`, :func:`notes`, :func:`to_csv` and :func:`to_json` build
the tables and what a reader must know.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from planner.errors import InvalidParameterError, PlannerError
from planner.metrics.latency import (
    LatencyMetrics,
    Summary,
    compute_metrics,
    output_tokens_method,
    output_tokens_warning,
    summarize,
)
from planner.serving.backends import make_client, stream_request
from planner.serving.discovery import EndpointInfo, count_prompt_tokens, discover, recount_output_tokens
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest
from planner.serving.streaming import RequestRecord, StreamRecorder, StreamUpdate
from planner.serving.worker_process import ProcessRun, WorkerProcess
from planner.units import MS_PER_S

__all__ = [
    "CompareResult",
    "CompareRun",
    "CompareSnapshot",
    "EndpointProgress",
    "metrics_frame",
    "notes",
    "run_compare",
    "summary_frame",
    "to_csv",
    "to_json",
]


@dataclass(frozen=True)
class CompareResult:
    """Everything a compare run produced.

    Attributes:
        request: The request that was sent.
        infos: Discovery result per endpoint, in endpoint order.
        records: Every request record, grouped by endpoint in endpoint order, repeats in order.
        cancelled: The run was cancelled before all requests finished.
    """

    request: ChatRequest
    infos: tuple[EndpointInfo, ...]
    records: tuple[RequestRecord, ...]
    cancelled: bool = False

    def for_endpoint(self, name: str) -> tuple[RequestRecord, ...]:
        """The records of endpoint ``name``."""
        return tuple(r for r in self.records if r.endpoint == name)

    def metrics(self) -> tuple[LatencyMetrics, ...]:
        """:func:`~planner.metrics.latency.compute_metrics` of every record."""
        return tuple(compute_metrics(r) for r in self.records)


def _check(endpoints: Sequence[Endpoint], repeat: int, timeout_s: float) -> None:
    if not endpoints:
        raise InvalidParameterError("endpoints", list(endpoints), "at least one endpoint")
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise InvalidParameterError("endpoints", names, "endpoints with unique names")
    if not isinstance(repeat, int) or repeat < 1:
        raise InvalidParameterError("repeat", repeat, "an integer ≥ 1")
    if not timeout_s > 0:
        raise InvalidParameterError("timeout_s", timeout_s, "a number of seconds > 0")


async def run_compare(
    endpoints: Sequence[Endpoint],
    request: ChatRequest,
    *,
    repeat: int = 1,
    timeout_s: float = 60.0,
    on_event: Callable[[StreamUpdate], None] | None = None,
    secrets: Mapping[str, Any] | None = None,
) -> CompareResult:
    """Send ``request`` to every endpoint concurrently, ``repeat`` times in a row per endpoint.

    Each endpoint is discovered first (model when not given, context limit); requests then go through one
    reused client per endpoint. Failures never raise: they are records with ``ok=False``, also for an endpoint
    that cannot be prepared (its API-key variable not set: ``error_kind`` ``setup``, the others still run). Once
    every stream has ended, answers whose stream carried no token count are counted with the endpoint's tokenizer
    route (:func:`~planner.serving.discovery.recount_output_tokens`).

    Args:
        endpoints: Endpoints with unique names.
        request: The prompt and sampling parameters.
        repeat: Requests per endpoint, sent one after the other (≥ 1).
        timeout_s: Connect/read timeout of each request and discovery call, seconds.
        on_event: Called in the event loop for every streamed chunk and request end.
        secrets: Optional mapping holding API keys.

    Returns:
        The :class:`CompareResult`.

    Raises:
        InvalidParameterError: no endpoint, duplicate names, ``repeat`` < 1 or ``timeout_s`` ≤ 0.
    """
    _check(endpoints, repeat, timeout_s)

    async def prepare(endpoint: Endpoint) -> tuple[EndpointInfo, int | None, Any]:
        info = await discover(endpoint, timeout_s, secrets=secrets)
        # Counted once per endpoint by the server itself, so the context check before sending is exact.
        prompt_tokens = await count_prompt_tokens(
            endpoint, info, request.messages(), timeout_s=timeout_s, secrets=secrets
        )
        client = make_client(endpoint, timeout_s=timeout_s, secrets=secrets)
        opener = getattr(client, "_get_async_client", None)  # huggingface_hub opens its session lazily
        if opener is not None:
            await opener()
        return info, prompt_tokens, client

    async def prepare_or_refuse(endpoint: Endpoint) -> tuple[EndpointInfo, int | None, Any] | PlannerError:
        # A problem of one endpoint (its API-key variable not set) is that endpoint's, as in the Load Test: its
        # requests fail with the one line, the others run.
        try:
            return await prepare(endpoint)
        except PlannerError as exc:
            return exc

    # Every client is built before any request is sent: building one (an SSL context, ~30 ms of blocking work)
    # while another endpoint's request is in flight would stall the shared event loop and inflate its TTFT.
    try:
        prepared = await asyncio.gather(*(prepare_or_refuse(e) for e in endpoints))
    except asyncio.CancelledError:
        # cancelled during discovery: each endpoint still gets its "cancelled" record, as a cancelled stream does
        for endpoint in endpoints:
            _never_sent(endpoint, "cancelled", "cancelled before it was sent", on_event)
        raise

    async def one(endpoint: Endpoint, ready: tuple[EndpointInfo, int | None, Any] | PlannerError):
        if isinstance(ready, PlannerError):
            info = EndpointInfo(endpoint.name, endpoint.kind, healthy=False, error=str(ready))
            return info, [_never_sent(endpoint, "setup", str(ready), on_event) for _ in range(repeat)]
        info, prompt_tokens, client = ready
        records: list[RequestRecord] = []
        try:
            for _ in range(repeat):
                records.append(
                    await stream_request(
                        endpoint,
                        request,
                        timeout_s=timeout_s,
                        on_event=on_event,
                        info=info,
                        prompt_tokens=prompt_tokens,
                        secrets=secrets,
                        client=client,
                    )
                )
        finally:
            await client.close()
        return info, records

    results = await asyncio.gather(*(one(e, p) for e, p in zip(endpoints, prepared, strict=True)))
    # Answers whose stream carried no token count: the server's tokenizer counts them, now that no stream is timed.
    counted = await asyncio.gather(
        *(
            recount_output_tokens(e, info, records, timeout_s=timeout_s, secrets=secrets)
            for e, (info, records) in zip(endpoints, results, strict=True)
        )
    )
    return CompareResult(
        request=request,
        infos=tuple(info for info, _ in results),
        records=tuple(r for records in counted for r in records),
    )


def _never_sent(
    endpoint: Endpoint, kind: str, message: str, on_event: Callable[[StreamUpdate], None] | None
) -> RequestRecord:
    """The failed record of a request that was never sent (``kind`` one of the record's error kinds), reported to
    ``on_event`` as a finished stream is."""
    recorder = StreamRecorder(endpoint.name)
    recorder.fail(kind, message)
    record = recorder.record()
    if on_event is not None:
        on_event(StreamUpdate(endpoint.name, "end", 0.0, record=record))
    return record


# --- background run for UIs ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EndpointProgress:
    """Live state of one endpoint in a :class:`CompareRun`.

    Attributes:
        endpoint: Endpoint name.
        text: Answer text of the current (or last) request so far.
        reasoning_text: Reasoning text of the current request so far.
        token_times_s: Arrival times of the current request's token-bearing chunks, seconds after it was sent.
        tokens: Tokens of the current request so far (chunks of unknown size count 1 while streaming; the
            record's ``output_tokens`` once it has finished).
        records: Finished requests so far.
        done: Every request of this endpoint has finished.
        error: Error of the last finished request; None when it succeeded or none finished yet.
    """

    endpoint: str
    text: str = ""
    reasoning_text: str = ""
    token_times_s: tuple[float, ...] = ()
    tokens: int = 0
    records: tuple[RequestRecord, ...] = ()
    done: bool = False
    error: str | None = None


@dataclass(frozen=True)
class CompareSnapshot:
    """A consistent copy of a :class:`CompareRun`'s state.

    Attributes:
        endpoints: Progress per endpoint, in endpoint order.
        done: The run has finished (normally, cancelled or with an error).
        cancelled: :meth:`CompareRun.cancel` was called.
        error: One-line reason the run itself failed (e.g. a missing API key); None otherwise.
        result: The final result once done; None before.
    """

    endpoints: tuple[EndpointProgress, ...]
    done: bool = False
    cancelled: bool = False
    error: str | None = None
    result: CompareResult | None = field(default=None, repr=False)


class CompareRun(ProcessRun):
    """Run :func:`run_compare` in a worker process; poll :meth:`snapshot`, stop with :meth:`cancel`.

    The streams are read in ``python -m planner.compare.worker`` (:mod:`planner.serving.worker_process` says why: on a
    thread of the Streamlit process, page renders held the GIL and a 12-token answer arrived in one burst); every
    chunk comes back as a :class:`~planner.serving.streaming.StreamUpdate`. A cancelled run keeps what finished.

    Args:
        endpoints: Endpoints with unique names.
        request: The prompt and sampling parameters.
        repeat: Requests per endpoint.
        timeout_s: Timeout of each request, seconds.
        secrets: Optional mapping holding API keys (sent to the worker over its stdin).

    Raises:
        InvalidParameterError: as :func:`run_compare`, checked before the worker starts.

    Example:
        >>> run = CompareRun(endpoints, ChatRequest("Hi")).start()  # doctest: +SKIP
        >>> run.snapshot().endpoints[0].text  # doctest: +SKIP
    """

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        request: ChatRequest,
        *,
        repeat: int = 1,
        timeout_s: float = 60.0,
        secrets: Mapping[str, Any] | None = None,
    ) -> None:
        _check(endpoints, repeat, timeout_s)
        self._endpoints = tuple(endpoints)
        self._request = request
        self._repeat = repeat
        self._lock = threading.Lock()
        self._error: str | None = None
        self._result: CompareResult | None = None
        self._state: dict[str, dict[str, Any]] = {e.name: self._fresh() for e in self._endpoints}
        payload = (self._endpoints, request, repeat, timeout_s, dict(secrets) if secrets is not None else None)
        self._worker = WorkerProcess(
            "planner.compare.worker", payload, apply=self._apply, on_error=self._on_error, name="live-compare"
        )

    @staticmethod
    def _fresh() -> dict[str, Any]:
        return {"text": [], "reasoning": [], "times": [], "tokens": 0, "records": [], "error": None, "new": True}

    def _on_error(self, line: str) -> None:
        with self._lock:
            self._error = self._error or line

    def _apply(self, kind: str, payload: tuple[Any, ...]) -> None:
        if kind == "event":
            self._on_event(payload[0])
        elif kind == "result":
            with self._lock:
                self._result = payload[0]
                for name, st in self._state.items():  # the final counts (a tokenizer's) replace the streamed ones
                    records = self._result.for_endpoint(name)
                    if len(records) == len(st["records"]):
                        st["records"] = list(records)
                        if records and records[-1].output_tokens is not None:
                            st["tokens"] = records[-1].output_tokens
        elif kind == "fatal":
            self._on_error(payload[0])

    def _on_event(self, update: StreamUpdate) -> None:
        with self._lock:
            st = self._state[update.endpoint]
            if st["new"]:
                st.update(text=[], reasoning=[], times=[], tokens=0, new=False)
            if update.kind == "end":
                st["records"].append(update.record)
                st["error"] = update.record.error if update.record is not None else None
                if update.record is not None and update.record.output_tokens is not None:
                    st["tokens"] = update.record.output_tokens  # the final count replaces the live estimate
                st["new"] = True
                return
            (st["reasoning"] if update.kind == "reasoning" else st["text"]).append(update.text)
            st["times"].append(update.t_s)
            st["tokens"] += 1 if update.n_tokens is None else update.n_tokens

    def _partial(self) -> CompareResult:
        """What a cancelled (or broken-off) run returns: the records that finished."""
        records = tuple(r for e in self._endpoints for r in self._state[e.name]["records"])
        return CompareResult(request=self._request, infos=(), records=records, cancelled=True)

    def snapshot(self) -> CompareSnapshot:
        """A frozen, consistent copy of the current state (thread-safe, cheap). Polling keeps the run alive."""
        self._worker.poll()
        done = self._worker.done
        with self._lock:
            result = self._result
            if done and result is None and self._error is None:
                result = self._partial()
            progress = tuple(
                EndpointProgress(
                    endpoint=e.name,
                    text="".join(self._state[e.name]["text"]),
                    reasoning_text="".join(self._state[e.name]["reasoning"]),
                    token_times_s=tuple(self._state[e.name]["times"]),
                    tokens=self._state[e.name]["tokens"],
                    records=tuple(self._state[e.name]["records"]),
                    done=done or len(self._state[e.name]["records"]) >= self._repeat,
                    error=self._state[e.name]["error"],
                )
                for e in self._endpoints
            )
        return CompareSnapshot(
            endpoints=progress, done=done, cancelled=self._worker.cancelled, error=self._error, result=result
        )


# --- tables and export -----------------------------------------------------------------------------------------------


def _ms(value: float | None) -> float | None:
    return None if value is None else value * MS_PER_S


def metrics_frame(result: CompareResult) -> pd.DataFrame:
    """One row per request: endpoint, repeat index, ok, error, TTFT/TPOT/E2E and mean ITL in ms, tokens, tok/s.

    Columns ``*_ms`` are milliseconds; missing values are NaN (None before conversion). ``itl_token_ms_mean`` is
    the mean of the request's per-token ITL samples.
    """
    rows = []
    seen: dict[str, int] = {}
    for record, m in zip(result.records, result.metrics(), strict=True):
        index = seen.get(record.endpoint, 0)
        seen[record.endpoint] = index + 1
        itl = summarize(m.itl_token_s)
        rows.append(
            {
                "endpoint": record.endpoint,
                "repeat": index,
                "ok": record.ok,
                "error_kind": record.error_kind,
                "error": record.error,
                "ttft_ms": _ms(m.ttft_s),
                "tpot_ms": _ms(m.tpot_s),
                "itl_token_ms_mean": _ms(itl.mean) if itl else None,
                "e2e_ms": _ms(m.e2e_s),
                "output_tokens": m.output_tokens if record.ok else record.output_tokens,
                "output_tokens_source": record.output_tokens_source,
                "output_tokens_per_s": m.output_tokens_per_s,
                "prompt_tokens": record.prompt_tokens,
                "finish_reason": record.finish_reason,
                "partial": record.partial,
            }
        )
    return pd.DataFrame(rows)


def summary_frame(result: CompareResult) -> pd.DataFrame:
    """One row per endpoint: requests, failures, median TTFT/TPOT/ITL (per token, pooled)/E2E in ms, median output
    tokens and how they were counted (``output_tokens_method``, :data:`planner.metrics.latency.OUTPUT_TOKENS_METHODS`;
    :func:`notes` says so when it is one per chunk)."""
    rows = []
    metrics = result.metrics()
    names = list(dict.fromkeys(r.endpoint for r in result.records))
    for name in names:
        ms = [m for m in metrics if m.endpoint == name]
        ok = [m for m in ms if m.ok]

        def med(values: list[float | None]) -> float | None:
            s = summarize(values)
            return None if s is None else s.median * MS_PER_S

        itl: Summary | None = summarize(x for m in ok for x in m.itl_token_s)
        tokens = summarize(float(m.output_tokens) for m in ok if m.output_tokens is not None)
        records = result.for_endpoint(name)
        rows.append(
            {
                "endpoint": name,
                "requests": len(ms),
                "failed": len(ms) - len(ok),
                "ttft_ms": med([m.ttft_s for m in ok]),
                "tpot_ms": med([m.tpot_s for m in ok]),
                "itl_ms": None if itl is None else itl.median * MS_PER_S,
                "itl_p99_ms": None if itl is None else itl.p99 * MS_PER_S,
                "e2e_ms": med([m.e2e_s for m in ok]),
                "output_tokens": None if tokens is None else tokens.median,
                "output_tokens_method": output_tokens_method(records),
            }
        )
    return pd.DataFrame(rows)


def notes(result: CompareResult) -> tuple[str, ...]:
    """One line per endpoint whose output tokens are estimates, one per chunk
    (:func:`planner.metrics.latency.output_tokens_warning`)."""
    names = dict.fromkeys(r.endpoint for r in result.records)
    lines = (output_tokens_warning(name, result.for_endpoint(name)) for name in names)
    return tuple(line for line in lines if line is not None)


def to_csv(result: CompareResult) -> str:
    """:func:`metrics_frame` as CSV text (no API key is ever part of a result)."""
    return metrics_frame(result).to_csv(index=False)


def to_json(result: CompareResult) -> str:
    """The whole result (request, discovery, records with chunk timelines, the :func:`summary_frame` rows and the
    :func:`notes`) as a JSON document."""
    payload = {
        "request": asdict(result.request),
        "cancelled": result.cancelled,
        "endpoints": [asdict(i) for i in result.infos],
        "records": [asdict(r) for r in result.records],
        "metrics": [asdict(m) for m in result.metrics()],
        "summary": json.loads(summary_frame(result).to_json(orient="records")),
        "notes": list(notes(result)),
    }
    return json.dumps(payload, indent=2)
