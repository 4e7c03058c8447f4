"""The one load runner: a run of :class:`~planner.loadtest.settings.LoadSettings` against one endpoint, measured as
``vllm bench serve`` measures it (vllm-project/vllm ``vllm/benchmarks/serve.py``, v0.24).

* :func:`arrival_times` is the precomputed send schedule, exactly as vLLM builds it.
* :func:`prepare_workload` sizes the prompts once per run: synthetic text sized with the server's tokenizer route
  (the default), token ids on ``/v1/completions`` (exact by construction, vLLM and SGLang), one word per token (an
  estimate), or the dataset's prompts cycled.
* :func:`run_load` sends the requests through ONE reused client of the load backend
  (:data:`planner.serving.backends.LOAD_BACKEND`, retries off) and returns a :class:`LoadResult` with every record,
  the :class:`~planner.metrics.benchmark.BenchmarkMetrics`, the in-flight count over time, and how the input lengths
  came out against what was asked (:class:`InputCheck`).
* TTFT: ``metrics.ttft`` is the project's (first token-bearing chunk); :attr:`LoadResult.ttft_first_chunk` is
  ``vllm bench serve``'s (first chunk with ``choices``, vLLM's role chunk included).
* Output tokens: the server's count from the stream; where a stream carried none, the server's tokenizer route
  counts the answer once the run is over (:func:`planner.serving.discovery.recount_output_tokens`, as ``vllm bench
  serve`` uses its tokenizer), else one per chunk, an estimate the run says it is
  (:attr:`LoadResult.output_tokens_method`, :attr:`LoadResult.notes`).

Page, CLI and tests all run loads through :func:`run_load` (the page and the CLI through
:mod:`planner.loadtest.worker`, which adds ``/metrics`` scraping), so a policy lives here once: fields an engine does
not read are not sent and the run names them (:attr:`LoadResult.not_sent_fields`), input lengths are checked
against the server's own counts, every run is bounded in requests and optionally in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner.errors import InvalidParameterError
from planner.loadtest.generators import GENERATED, plan_requests, render_segments, reusable_prefix_tokens
from planner.loadtest.schedule import Schedule, arrival_times, draw_lengths, token_range
from planner.loadtest.settings import LoadSettings
from planner.loadtest.workload import (
    InputCalibration,
    calibrate_prompts,
    chat_template_tokens,
    synthetic_text,
    token_id_prompts,
)
from planner.metrics.benchmark import BenchmarkMetrics, Distribution, compute_benchmark_metrics
from planner.metrics.latency import output_tokens_method, output_tokens_warning
from planner.serving.backends import LOAD_BACKEND, make_client, stream_request
from planner.serving.discovery import EndpointInfo, discover, recount_output_tokens
from planner.serving.endpoints import Endpoint
from planner.serving.requests import TOKEN_ID_KINDS, ChatRequest, build_request
from planner.serving.server_metrics import (
    METRICS_KINDS,
    PrefixCacheStats,
    SpecDecodeStats,
    fetch_sample,
    prefix_cache_stats,
    reset_prefix_cache,
    spec_decode_stats,
)
from planner.serving.streaming import RequestRecord

__all__ = [
    "INPUT_TOLERANCE",
    "MAX_TEMPLATE_TOKENS",
    "InputCheck",
    "LoadProgress",
    "LoadResult",
    "RemoteSender",
    "SentShare",
    "Workload",
    "arrival_times",
    "build_requests",
    "build_schedule",
    "check_inputs",
    "draw_lengths",
    "estimate_tokens",
    "prepare_workload",
    "run_load",
    "send_share",
    "token_range",
]

#: Largest relative gap between the input tokens asked for and those the server counted before a run warns (2%).
INPUT_TOLERANCE = 0.02
#: Most tokens a chat template is taken to add to a one-message prompt when the server cannot say: the templates
#: of the catalog's models add 8 (Gemma 3, measured on llama.cpp in the tests) to about 30 (Llama 3.1 Instruct's
#: default system header with its "Cutting Knowledge Date"; Qwen2.5's default system prompt); a larger gap between
#: what was asked and what the server counted is a mis-sized prompt, not a template.
MAX_TEMPLATE_TOKENS = 64


def estimate_tokens(text: str) -> int:
    """Documented estimate of a prompt's tokens: one per whitespace-separated word (words ≈ tokens).

    Close for the synthetic prompts on word-level tokenizers (common single-token words); general English prose runs
    ~1.3 tokens per word with Llama/Qwen tokenizers, and a byte-level tokenizer counts ~5 per word, so it is only a
    fallback: the server's ``usage.prompt_tokens`` replaces it whenever the server reports one.
    """
    return len(text.split())


@dataclass(frozen=True)
class Workload:
    """The prompts of one run, sized once before it starts.

    Attributes:
        texts: Prompt text per request (the measured ones, then the warmups); a label for token-id prompts.
        token_ids: Token ids per request when the prompts are ids (completions route); None otherwise.
        tokens: Input tokens per request: the prompt text's tokens as the server's tokenizer counted them, or the
            target where it did not count; None per request for dataset prompts.
        targets: Input tokens asked for per request (drawn from ``input_len`` and ``range_ratio``); None per
            request for dataset prompts.
        calibration: How synthetic prompts were sized; None for dataset prompts.
        note: Why the sizing asked for was not the one used (e.g. token ids on a kind that takes none); None.
        output_lens: ``max_tokens`` per request where the workload sets them (generated workloads, traces); None =
            drawn from ``output_len`` and ``range_ratio``.
        arrival_s: Release time per measured request (generated workloads; None for a later turn of a
            conversation); None = :func:`arrival_times`.
        conversation: Conversation id per measured request (``multi_turn``); None = no conversations.
        turn: Turn per measured request, from 0 (``multi_turn``).
        reusable_tokens: Tokens at the start of each measured prompt that repeat an earlier prompt's start
            (:func:`planner.loadtest.generators.reusable_prefix_tokens`); None when not known.
    """

    texts: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...] | None = None
    tokens: tuple[int | None, ...] = ()
    targets: tuple[int | None, ...] = ()
    calibration: InputCalibration | None = None
    note: str | None = None
    output_lens: tuple[int, ...] | None = None
    arrival_s: tuple[float | None, ...] | None = None
    conversation: tuple[int | None, ...] | None = None
    turn: tuple[int, ...] | None = None
    reusable_tokens: tuple[int, ...] | None = None


async def prepare_workload(
    endpoint: Endpoint,
    info: EndpointInfo,
    settings: LoadSettings,
    *,
    secrets: Mapping[str, Any] | None = None,
) -> Workload:
    """The prompts of the measured requests and the warmups (in that order), sized as ``settings.input_sizing`` says.

    ``tokenize``: synthetic text sized by the server's tokenizer route (:func:`planner.loadtest.workload.
    calibrate_prompts`: one calibration, then at most 64 tokenizer calls, so a big run starts within a second or
    so). ``token_ids``: :func:`planner.loadtest.workload.token_id_prompts` where the kind takes token ids (vLLM,
    SGLang), else as ``tokenize``. ``words``: one word per token, no server call. Dataset prompts are cycled.
    The chat template's tokens are measured once (:func:`planner.loadtest.workload.chat_template_tokens`) for the
    input check.
    """
    count = settings.num_prompts + settings.num_warmups
    if settings.dataset_name in GENERATED:
        return await _generated_workload(endpoint, info, settings, secrets=secrets)
    if settings.prompts:
        texts = tuple(settings.prompts[i % len(settings.prompts)] for i in range(count))
        note = "the dataset's prompts are sent as they are: input_sizing applies to synthetic prompts only"
        note = note if settings.input_sizing != "tokenize" else None
        return Workload(texts, tokens=(None,) * count, targets=(None,) * count, note=note)
    draws = draw_lengths(settings, settings.num_prompts, 0) + draw_lengths(
        settings, settings.num_warmups, settings.num_prompts
    )
    targets = [(n_in, offset) for n_in, _, offset in draws]
    timeout_s = min(settings.timeout_s, 10.0)
    note = None
    if settings.input_sizing == "token_ids":
        if endpoint.kind in TOKEN_ID_KINDS:
            built = await token_id_prompts(endpoint, info, targets, timeout_s=timeout_s, secrets=secrets)
            if built is not None:
                ids, calibration = built
                labels = tuple(f"<{len(p)} token ids>" for p in ids)
                return Workload(labels, ids, tuple(len(p) for p in ids), tuple(n for n, _ in targets), calibration)
            note = "token-id prompts need the server's /tokenize, which gave no ids: sized as text instead"
        else:
            note = f"{endpoint.kind} takes no token-id prompts (vLLM and SGLang do): sized as text instead"
    if settings.input_sizing == "words":
        texts = tuple(synthetic_text(n, offset) for n, offset in targets)
        asked = tuple(n for n, _ in targets)
        return Workload(texts, tokens=asked, targets=asked, calibration=InputCalibration("estimate", count))
    texts, tokens, calibration = await calibrate_prompts(endpoint, info, targets, timeout_s=timeout_s, secrets=secrets)
    if calibration.method != "estimate":
        template = await chat_template_tokens(endpoint, info, timeout_s=timeout_s, secrets=secrets)
        calibration = InputCalibration(
            calibration.method,
            calibration.total,
            calibration.counted,
            calibration.exact,
            calibration.overhead_tokens,
            template,
        )
    return Workload(texts, tokens=tokens, targets=tuple(n for n, _ in targets), calibration=calibration, note=note)


async def _generated_workload(
    endpoint: Endpoint, info: EndpointInfo, settings: LoadSettings, *, secrets: Mapping[str, Any] | None
) -> Workload:
    """The prompts of a generated workload (:mod:`planner.loadtest.generators`): measured, then warmups."""
    measured = plan_requests(settings)
    planned = measured + plan_requests(settings, warmups=True)
    note = None
    ids = settings.input_sizing == "token_ids"
    if ids and settings.dataset_name == "multi_turn":
        ids, note = False, "a conversation goes over the chat route, which takes text: sized as text instead"
    elif ids and endpoint.kind not in TOKEN_ID_KINDS:
        ids, note = False, f"{endpoint.kind} takes no token-id prompts (vLLM and SGLang do): sized as text instead"
    rendered = await render_segments(
        endpoint,
        info,
        planned,
        seed=settings.seed,
        token_ids=ids,
        sizing=settings.input_sizing,
        timeout_s=min(settings.timeout_s, 10.0),
        secrets=secrets,
    )
    if ids and rendered.token_ids is None:
        note = "token-id prompts need the server's /tokenize, which gave no ids: sized as text instead"
    token_ids = None
    if rendered.token_ids is not None:
        token_ids = tuple(rendered.prompt_ids(r.segments) or () for r in planned)
    texts = tuple(rendered.prompt(r.segments) for r in planned)
    if token_ids is not None:
        texts = tuple(f"<{len(p)} token ids>" for p in token_ids)
    targets: tuple[int | None, ...] = tuple(r.tokens for r in planned)
    if settings.dataset_name == "multi_turn":  # the server counts the whole conversation, not the new message
        targets = (None,) * len(planned)
    method = {"token_ids": "token_ids", "calibrated": "segments", "estimate": "estimate"}[rendered.method]
    calibration = InputCalibration(method, len(planned), template_tokens=0 if token_ids is not None else None)
    conversations = tuple(r.conversation for r in measured)
    return Workload(
        texts,
        token_ids,
        tokens=targets,
        targets=targets,
        calibration=calibration,
        note=note,
        output_lens=tuple(r.output_len for r in planned),
        arrival_s=tuple(r.arrival_s for r in measured),
        conversation=conversations if any(c is not None for c in conversations) else None,
        turn=tuple(r.turn for r in measured),
        reusable_tokens=reusable_prefix_tokens(measured),
    )


def build_schedule(settings: LoadSettings, workload: Workload) -> Schedule:
    """The run's :class:`~planner.loadtest.schedule.Schedule`, made once from its prepared ``workload``: the
    measured requests with their release times (the workload's, else :func:`arrival_times`) and conversation
    grouping, and the warmups."""
    n = settings.num_prompts
    requests = tuple(build_requests(settings, workload))
    arrivals = workload.arrival_s if workload.arrival_s is not None else arrival_times(settings)
    return Schedule(
        requests=requests,
        arrival_s=tuple(arrivals[:n]),
        conversation=workload.conversation if workload.conversation is not None else (None,) * n,
        turn=workload.turn if workload.turn is not None else (0,) * n,
        think_time_s=settings.think_time_s,
        warmups=tuple(build_requests(settings, workload, warmups=True)),
    )


def build_requests(settings: LoadSettings, workload: Workload, *, warmups: bool = False) -> list[ChatRequest]:
    """The measured requests (or, with ``warmups``, the warmups) of a run over its prepared ``workload``.

    Output lengths are drawn (seeded) from :func:`token_range` of ``output_len``, as the input lengths were.
    """
    n = settings.num_prompts
    span = range(n, n + settings.num_warmups) if warmups else range(n)
    draws = draw_lengths(settings, settings.num_warmups, n) if warmups else draw_lengths(settings, n, 0)
    out: list[ChatRequest] = []
    for i, (_, n_out, _) in zip(span, draws, strict=True):
        if workload.output_lens is not None:
            n_out = workload.output_lens[i]
        ids = workload.token_ids[i] if workload.token_ids is not None else None
        text = workload.texts[i]
        out.append(ChatRequest(text, max_tokens=n_out, ignore_eos=settings.ignore_eos, prompt_token_ids=ids))
    return out


@dataclass(frozen=True)
class InputCheck:
    """Input tokens asked for against those the server counted, over a run's completed requests.

    Attributes:
        input_tokens_method: ``token_ids`` (exact by construction), ``server_tokenize`` (text sized with the
            server's tokenizer route), ``words`` (one word per token: an estimate) or ``dataset`` (prompts given).
        requested_tokens: Σ over the requests of the tokens asked for plus the chat template's (when known); None
            for dataset prompts.
        measured_tokens: Σ of the server's ``usage.prompt_tokens`` over the requests that report it; where none
            does (llama-cpp-python streams carry no usage), Σ of the server's tokenizer-route counts of the prompts
            plus the chat template's; None when neither exists.
        measured_by: ``usage``, ``tokenizer`` or None: where ``measured_tokens`` comes from.
        template_tokens: Tokens the chat template adds per request (measured by the server's tokenizer, or inferred
            as the smallest gap between measured and asked when it cannot say); None when unknown.
        warning: One line naming both figures when they differ by more than :data:`INPUT_TOLERANCE`, or when the
            lengths are estimates, or when the server gave no count at all; None when they agree.
    """

    input_tokens_method: str
    requested_tokens: int | None
    measured_tokens: int | None
    measured_by: str | None = None
    template_tokens: int | None = None
    warning: str | None = None


def check_inputs(
    workload: Workload,
    records: Sequence[RequestRecord],
    indices: Sequence[int],
    *,
    endpoint: str,
    sizing: str = "tokenize",
) -> InputCheck:
    """Compare the input tokens asked for with the server's ``usage.prompt_tokens`` (see :class:`InputCheck`).

    Args:
        workload: The run's prepared prompts.
        records: Finished measured records.
        indices: Each record's request index into ``workload``.
        endpoint: Endpoint name for the warning.
        sizing: The ``input_sizing`` asked for (``words`` by choice is said apart from a missing tokenizer route).
    """
    calibration = workload.calibration
    method = "dataset" if calibration is None else calibration.input_tokens_method
    done = [(i, r) for i, r in zip(indices, records, strict=True) if r.ok]  # failures are reported on their own
    asked = [workload.targets[i] for i, _ in done]
    reported = [(workload.targets[i], r.prompt_tokens) for i, r in done if r.prompt_tokens is not None]
    measured_total = sum(m for _, m in reported) if reported else None
    if method == "dataset" or not done or any(a is None for a in asked):
        return InputCheck(method, None, measured_total, "usage" if reported else None)
    problems = []
    counted = [workload.tokens[i] or 0 for i, _ in done]
    if method == "server_tokenize" and abs(sum(counted) - sum(asked)) > INPUT_TOLERANCE * sum(asked):
        problems.append(
            f"the server's tokenizer route could not size the prompts: it counted {sum(counted):,} tokens for "
            f"{sum(asked):,} asked"
        )
    template = calibration.template_tokens if calibration is not None else None
    if template is None and reported and method != "words":
        # The chat template adds the same few tokens to every prompt; a larger gap is not a template.
        smallest = min(m - a for a, m in reported)
        template = smallest if 0 <= smallest <= MAX_TEMPLATE_TOKENS else None
    if reported:
        measured_by = "usage"
        requested = sum(a for a, _ in reported) + (template or 0) * len(reported)
        with_template = f"with the chat template's {template} each" if template else "the chat template not included"
    elif method != "words":  # no usage in the stream: the tokenizer route's counts are the measurement
        measured_by, measured_total, requested = "tokenizer", sum(counted), sum(asked)
        with_template = "the prompt text only"
        problems.append(
            "the server reported no usage.prompt_tokens: input tokens are its tokenizer's counts of the "
            "prompt text, without the chat template"
        )
    else:
        measured_by, requested, with_template = None, sum(asked), "the chat template not included"
        problems.append("the server reported no usage.prompt_tokens")
    if measured_total is not None and requested and abs(measured_total - requested) > INPUT_TOLERANCE * requested:
        gap = measured_total / requested - 1
        who = "the server counted" if measured_by == "usage" else "its tokenizer counted"
        problems.insert(
            0, f"asked for {requested:,} input tokens ({with_template}), {who} {measured_total:,} ({gap:+.1%})"
        )
    if method == "words":
        why = ": the server has no tokenizer route" if sizing != "words" else ""
        problems.append(f"input lengths are estimates (one word per token){why}")
    warning = f"{endpoint}: " + "; ".join(problems) if problems else None
    return InputCheck(method, requested, measured_total, measured_by, template, warning)


@dataclass(frozen=True)
class LoadProgress:
    """Live counters of a run, passed to ``on_progress`` after every finished request.

    Attributes:
        elapsed_s: Seconds since the measured run started.
        total: Measured requests asked for (``num_prompts``), for a progress bar.
        sent: Measured requests handed to the client so far.
        completed: Successful requests so far.
        failed: Failed requests so far.
        in_flight: Requests in flight now.
        start_s: Absolute ``time.perf_counter()`` of the measured start (records' ``t_sent`` use the same clock).
    """

    elapsed_s: float
    total: int
    sent: int
    completed: int
    failed: int
    in_flight: int
    start_s: float = 0.0

    @property
    def fraction(self) -> float:
        """Finished share of ``total``, in [0, 1]."""
        return min(1.0, (self.completed + self.failed) / self.total) if self.total else 0.0


@dataclass(frozen=True)
class LoadResult:
    """Everything a load run produced.

    Attributes:
        endpoint: Endpoint name.
        settings: The load that was asked for.
        records: Records of the measured requests that finished (warmups and cancelled ones excluded).
        input_tokens: Input tokens per record (server ``prompt_tokens`` when reported, else the tokens asked for,
            else the word estimate).
        metrics: Aggregates over ``records`` and ``duration_s``.
        duration_s: Wall time from the first measured send until the last request ended or was cancelled.
        in_flight: ``(seconds since start, requests in flight)`` after every change.
        warmup_records: Records of the warmup requests.
        cancelled: Requests cancelled in flight (duration cap or the ``stop`` event).
        not_sent: Requests never sent (not released, or still waiting for a concurrency slot) when the run stopped.
        stopped: ``"duration"`` when the cap ended the run, ``"cancelled"`` when cancelled; None otherwise.
        start_s: Absolute ``time.perf_counter()`` of the measured start (for
            :func:`planner.metrics.timeseries.timeseries`); None when unknown.
        input_calibration: How synthetic prompts were sized; None for dataset prompts.
        input_check: Input tokens asked for against those the server counted.
        not_sent_fields: Request fields the endpoint's engine does not read, so they were not sent (e.g.
            ``("ignore_eos",)`` on TGI).
        sizing_note: Why the prompts were not sized as ``input_sizing`` asked (:attr:`Workload.note`); None.
        turns: Turn of each record within its conversation, from 0 (``multi_turn``); None per record elsewhere.
        reusable_tokens: Tokens at the start of each record's prompt that repeat an earlier prompt's start: for a
            later turn, the conversation so far as the server counted it (the previous turn's prompt and answer
            tokens); elsewhere :attr:`Workload.reusable_tokens`. None per record where unknown.
        prefix_cache: The server's prefix-cache queries and hits over the measured requests (counters scraped just
            before and after them, :func:`planner.serving.server_metrics.prefix_cache_stats`); None where the
            server exports none, or ``scrape_metrics`` is off.
        cache_reset: ``flush_cache``: None when the server emptied its prefix cache before the warmups, else one
            line saying why it did not; None too when not asked (see :attr:`cache_flushed`).
        cache_flushed: The server's prefix cache was emptied before the warmups.
        num_workers: Ray workers that sent the measured requests (``settings.num_workers``, at most
            ``max_concurrency``); None = this process sent them.
        worker_requests: Measured requests that ended per Ray worker (ok or failed), in worker order; ().
        worker_errors: One line per Ray worker that died (its unfinished requests are failed records saying so).
        worker_cpu_s: CPU seconds each Ray worker's process spent sending (user + system), for the workers that
            returned their share; () in one process.
        spec_decode: The server's speculative-decoding counters over the measured requests (drafts, draft and
            accepted tokens, accepted per position; :func:`planner.serving.server_metrics.spec_decode_stats`); None
            where the server does not speculate or exports no counters, or ``scrape_metrics`` is off.
    """

    endpoint: str
    settings: LoadSettings
    records: tuple[RequestRecord, ...]
    input_tokens: tuple[int, ...]
    metrics: BenchmarkMetrics
    duration_s: float
    in_flight: tuple[tuple[float, int], ...] = ()
    warmup_records: tuple[RequestRecord, ...] = ()
    cancelled: int = 0
    not_sent: int = 0
    stopped: str | None = None
    start_s: float | None = None
    input_calibration: InputCalibration | None = None
    input_check: InputCheck | None = None
    not_sent_fields: tuple[str, ...] = ()
    sizing_note: str | None = None
    turns: tuple[int | None, ...] = ()
    reusable_tokens: tuple[int | None, ...] = ()
    prefix_cache: PrefixCacheStats | None = None
    cache_reset: str | None = None
    cache_flushed: bool = False
    num_workers: int | None = None
    worker_requests: tuple[int, ...] = ()
    worker_errors: tuple[str, ...] = ()
    worker_cpu_s: tuple[float, ...] = ()
    spec_decode: SpecDecodeStats | None = None

    @property
    def reusable_prefix_share(self) -> float | None:
        """Σ reusable tokens / Σ input tokens over the records where both are known: the most of the prompt tokens
        a prefix cache could have served (before block rounding); None when unknown."""
        pairs = [(r, n) for r, n in zip(self.reusable_tokens, self.input_tokens, strict=False) if r is not None]
        total = sum(n for _, n in pairs)
        return sum(min(r, n) for r, n in pairs) / total if pairs and total else None

    @property
    def max_in_flight(self) -> int:
        """Largest number of requests in flight at once."""
        return max((n for _, n in self.in_flight), default=0)

    @property
    def ttft_first_chunk(self) -> Distribution | None:
        """TTFT as ``vllm bench serve`` measures it: first chunk with ``choices`` (vLLM's role chunk included) − sent.

        One sample per completed request (the requests that give ``metrics.ttft`` its samples); seconds; None
        without a sample. ``metrics.ttft`` is the project's TTFT (first token-bearing chunk).
        """
        ok = {id(r) for r in _completed(self.records)}
        return Distribution.of([r.first_chunk_s for r in self.records if id(r) in ok and r.first_chunk_s is not None])

    @property
    def output_tokens_method(self) -> str | None:
        """How the completed requests' output tokens were counted, one of
        :data:`planner.metrics.latency.OUTPUT_TOKENS_METHODS` (``tokenizer`` when the streams carried no usage and the
        server's tokenizer route counted the answers after the run); None without a completed request."""
        return output_tokens_method(self.records)

    @property
    def notes(self) -> tuple[str, ...]:
        """One line per thing a reader of the figures must know: unsent fields, input-length warnings, output tokens
        counted one per chunk."""
        out = []
        if self.not_sent_fields:
            fields = ", ".join(self.not_sent_fields)
            out.append(f"{self.endpoint}: {fields} not sent: this endpoint's engine does not read it")
        if self.sizing_note:
            out.append(f"{self.endpoint}: {self.sizing_note}")
        if self.input_check is not None and self.input_check.warning:
            out.append(self.input_check.warning)
        if (estimate := output_tokens_warning(self.endpoint, self.records)) is not None:
            out.append(estimate)
        if self.cache_reset:
            out.append(f"{self.endpoint}: the prefix cache was not flushed: {self.cache_reset}")
        out += [f"{self.endpoint}: {line}" for line in self.worker_errors]
        return tuple(out)


def _completed(records: tuple[RequestRecord, ...] | list[RequestRecord]) -> list[RequestRecord]:
    # The same test as compute_benchmark_metrics: ok with a first and a last token.
    return [r for r in records if r.ok and r.first_token_s is not None and r.last_token_s is not None]


@dataclass
class _Counters:
    """A sender's live counts, owned by its event loop."""

    total: int
    start: float = field(default_factory=time.perf_counter)
    in_flight: int = 0
    sent: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)

    def progress(self) -> LoadProgress:
        elapsed = time.perf_counter() - self.start
        return LoadProgress(elapsed, self.total, self.sent, self.completed, self.failed, self.in_flight, self.start)


@dataclass(frozen=True)
class SentShare:
    """What the sender of a run's measured requests did: this process over the whole schedule
    (:func:`send_share`), one Ray worker over its share, or the Ray workers merged
    (:mod:`planner.loadtest.ray_workers`).

    Attributes:
        finished: ``(request index, record)`` of every measured request that ended (ok or failed), records' times on
            this process's ``time.perf_counter()`` clock.
        sent_text: ``(request index, whole prompt)`` of the later turns of conversations (the conversation so far).
        in_flight: ``(seconds since start_s, requests in flight)`` after every change.
        sent: Measured requests handed to the client.
        cancelled: Requests cancelled in flight (duration cap or stop).
        stopped: ``"duration"``, ``"cancelled"`` or None, as :attr:`LoadResult.stopped`.
        start_s: ``time.perf_counter()`` of the measured start.
        duration_s: Seconds from ``start_s`` until every request ended or was cancelled.
        num_workers: Ray workers that sent the requests; None = this process.
        worker_requests: Measured requests that ended per worker (ok or failed, a dead worker's unfinished ones
            counted as failed), in worker order; () in this process.
        worker_errors: One line per worker that died or could not start.
        cpu_s: CPU seconds (``time.process_time()``: user + system) the sending process spent from ``start_s`` to
            the end; per worker in ``worker_cpu_s`` once merged (0.0 there).
        worker_cpu_s: CPU seconds per Ray worker that returned its share, in worker order; () in this process.
    """

    finished: tuple[tuple[int, RequestRecord], ...]
    sent_text: tuple[tuple[int, str], ...]
    in_flight: tuple[tuple[float, int], ...]
    sent: int
    cancelled: int
    stopped: str | None
    start_s: float
    duration_s: float
    num_workers: int | None = None
    worker_requests: tuple[int, ...] = ()
    worker_errors: tuple[str, ...] = ()
    cpu_s: float = 0.0
    worker_cpu_s: tuple[float, ...] = ()


#: What sends a run's measured requests from other processes (:func:`run_load`'s ``remote``), e.g.
#: :func:`planner.loadtest.ray_workers.send_on_ray`: called as ``remote(endpoint, info, settings, schedule, *,
#: secrets, stop, on_record, on_progress, on_in_flight)`` with :func:`send_share`'s callbacks (called in this event
#: loop), it returns one merged :class:`SentShare`.
RemoteSender = Callable[..., Awaitable[SentShare]]


async def _stream(
    endpoint: Endpoint,
    request: ChatRequest,
    settings: LoadSettings,
    info: EndpointInfo,
    client: Any,
    secrets: Mapping[str, Any] | None,
) -> RequestRecord:
    """One request of a run (measured or warmup) through the load backend's reused client: the one request path."""
    return await stream_request(
        endpoint,
        request,
        backend=LOAD_BACKEND,
        timeout_s=settings.timeout_s,
        info=info,
        secrets=secrets,
        client=client,
    )


async def send_share(
    endpoint: Endpoint,
    info: EndpointInfo,
    settings: LoadSettings,
    schedule: Schedule,
    threads: Sequence[Sequence[int]],
    *,
    client: Any,
    max_concurrency: int | None,
    start_s: float,
    secrets: Mapping[str, Any] | None = None,
    stop: asyncio.Event | None = None,
    on_record: Callable[[int, RequestRecord], None] | None = None,
    on_progress: Callable[[LoadProgress], None] | None = None,
    on_in_flight: Callable[[float, int], None] | None = None,
) -> SentShare:
    """Send the measured requests of ``threads`` (groups of :meth:`Schedule.threads`, in release order) from
    ``start_s`` on, each group released at its first request's arrival time and waiting for one of
    ``max_concurrency`` slots in arrival order (see :func:`run_load`). The one send loop: :func:`run_load` runs it
    over the whole schedule, each Ray worker (:mod:`planner.loadtest.ray_workers`) over its share.

    Args:
        endpoint: The endpoint.
        info: What discovery found (model, context limit).
        settings: The run's load (``timeout_s``, ``duration_s``, counted from ``start_s``).
        schedule: The run's schedule.
        threads: The request groups this sender sends.
        client: The load backend's client (:func:`planner.serving.backends.make_client`), closed by the caller.
        max_concurrency: This sender's cap on requests (conversations) in flight; None = no cap.
        start_s: ``time.perf_counter()`` of the measured start (may lie ahead: the sender waits for it).
        secrets: Optional mapping holding the API key.
        stop: When set, the sender stops as at the duration cap.
        on_record: Called with ``(request index, record)`` of every finished measured request.
        on_progress: Called after every finished measured request with this sender's counts.
        on_in_flight: Called with ``(seconds since start_s, requests in flight)`` on every change.

    Returns:
        The :class:`SentShare`; request failures are records with ``ok=False``, never raised.
    """
    stop = stop or asyncio.Event()
    sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    counts = _Counters(sum(len(t) for t in threads), start=start_s)
    finished: dict[int, RequestRecord] = {}
    sent_text: dict[int, str] = {}  # a later turn's whole prompt (the conversation so far), for estimates
    tasks: list[asyncio.Task[None]] = []

    def sample() -> None:
        point = (time.perf_counter() - counts.start, counts.in_flight)
        counts.samples.append(point)
        if on_in_flight is not None:
            on_in_flight(*point)

    async def _send(index: int, request: ChatRequest) -> RequestRecord | None:
        counts.in_flight += 1
        counts.sent += 1
        sample()
        try:
            record = await _stream(endpoint, request, settings, info, client, secrets)
        except asyncio.CancelledError:
            counts.cancelled += 1
            return None
        finally:
            counts.in_flight -= 1
            sample()
        if record.ok:
            counts.completed += 1
        else:
            counts.failed += 1
        finished[index] = record
        if on_record is not None:
            on_record(index, record)
        if on_progress is not None:
            on_progress(counts.progress())
        return record

    async def thread(indices: Sequence[int]) -> None:
        # One request, or one conversation's turns; the dispatcher took its concurrency slot, given back here.
        history: list[tuple[str, str]] = []
        try:
            for i in indices:
                request = schedule.requests[i]
                if schedule.turn[i] > 0:
                    if schedule.think_time_s:
                        await asyncio.sleep(schedule.think_time_s)
                    request = replace(request, history=tuple(history))
                    sent_text[i] = request.text
                record = await _send(i, request)
                if record is None:
                    return
                if not record.ok:
                    return  # a conversation cannot go on without its answer
                history += [("user", schedule.requests[i].prompt), ("assistant", record.text)]
        finally:
            if sem is not None:
                sem.release()

    async def dispatch_static() -> None:
        # fixed batches: sent together once the batch's last request is due, the next when all have ended
        groups = list(threads)
        size = max_concurrency or len(groups) or 1
        for first in range(0, len(groups), size):
            batch = groups[first : first + size]
            due = max((schedule.arrival_s[ix[0]] or 0.0) for ix in batch)
            delay = counts.start + due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            started = []
            for indices in batch:
                if sem is not None:
                    await sem.acquire()
                started.append(asyncio.create_task(thread(indices)))
            tasks.extend(started)
            await asyncio.gather(*started)

    async def dispatch() -> None:
        if settings.batching == "static":
            await dispatch_static()
            return
        for indices in threads:
            t = schedule.arrival_s[indices[0]] or 0.0
            delay = counts.start + t - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            # Take the slot before creating the task: requests wait for a slot in arrival order, as in vLLM,
            # but 100,000 queued requests are not 100,000 parked tasks (which slowed the loop and the stop).
            if sem is not None:
                await sem.acquire()
            tasks.append(asyncio.create_task(thread(indices)))
        await asyncio.gather(*tasks)

    counts.samples.append((0.0, 0))
    if on_in_flight is not None:
        on_in_flight(0.0, 0)
    cpu_start_s = time.process_time()
    stopped = "cancelled" if stop.is_set() else None
    if stopped is None:
        main = asyncio.create_task(dispatch())
        stopper = asyncio.create_task(stop.wait())
        cap_s = None if settings.duration_s is None else max(0.0, start_s + settings.duration_s - time.perf_counter())
        done, _ = await asyncio.wait({main, stopper}, timeout=cap_s, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if main not in done:
            stopped = "cancelled" if stopper in done else "duration"
            main.cancel()
            for task in tasks:
                task.cancel()
        await asyncio.gather(main, stopper, *tasks, return_exceptions=True)
    return SentShare(
        finished=tuple(sorted(finished.items(), key=lambda item: item[0])),
        sent_text=tuple(sent_text.items()),
        in_flight=tuple(counts.samples),
        sent=counts.sent,
        cancelled=counts.cancelled,
        stopped=stopped,
        start_s=start_s,
        duration_s=time.perf_counter() - start_s,
        cpu_s=time.process_time() - cpu_start_s,
    )


async def run_load(
    endpoint: Endpoint,
    settings: LoadSettings,
    *,
    on_progress: Callable[[LoadProgress], None] | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    on_in_flight: Callable[[float, int], None] | None = None,
    secrets: Mapping[str, Any] | None = None,
    stop: asyncio.Event | None = None,
    remote: RemoteSender | None = None,
) -> LoadResult:
    """Send ``settings``' load to ``endpoint`` and measure it like ``vllm bench serve``.

    The endpoint is discovered once (model, context limit) and the prompts sized once (:func:`prepare_workload`)
    into the run's :class:`~planner.loadtest.schedule.Schedule` (:func:`build_schedule`). With ``flush_cache`` the
    server's prefix cache is emptied first. Warmups go next (concurrently, capped by ``max_concurrency``); then the
    measured requests are released at their arrival times, each waiting for a concurrency slot in arrival order
    (:func:`send_share`). A conversation takes one slot from its first turn's release until its last answer, and
    sends its turns one after another, each with the conversation so far (the answers as received),
    ``think_time_s`` after the previous answer; a failed turn ends its conversation (its later turns are not sent).
    Duration = wall time from the first measured release until every request has ended. With ``scrape_metrics``,
    the server's ``/metrics`` is read just before the first measured release and after the last request, for the
    run's prefix-cache hit rate and speculative-decoding acceptance. Answers whose stream carried no token count are
    then counted with the server's tokenizer route. With ``batching="static"`` the requests go in
    fixed batches of ``max_concurrency`` (all at once without a cap): a batch is released once its last request is
    due, the next only when every request of the batch has ended (``compare`` runs as continuous here:
    :func:`planner.loadtest.worker.plan_jobs` splits it into two runs; with Ray workers each batches its share).

    With ``settings.num_workers`` the measured requests are sent by ``remote`` instead of this process (the caller
    passes :func:`planner.loadtest.ray_workers.send_on_ray`, which splits the same schedule between that many Ray
    workers running the same send loop, and the records are merged here); discovery, sizing, warmups and the metrics
    stay here, so every figure keeps its definition. The sender is passed in rather than imported so that the runner
    knows nothing of Ray and the Ray module, which builds on the runner's send loop, stays above it.

    Args:
        endpoint: The endpoint.
        settings: The load (its per-run fields; ``endpoints`` and ``mode`` are the caller's).
        on_progress: Called in the event loop after every finished measured request.
        on_record: Called in the event loop with every finished measured record (before ``on_progress``).
        on_in_flight: Called in the event loop with ``(seconds since start, requests in flight)`` on every change.
        secrets: Optional mapping holding the API key.
        stop: When set, the run stops as at the duration cap (the warm-up phase too).
        remote: What sends the measured requests when ``settings.num_workers`` is set (a :data:`RemoteSender`,
            e.g. :func:`planner.loadtest.ray_workers.send_on_ray`); unused otherwise.

    Returns:
        The :class:`LoadResult`. Request failures are records with ``ok=False``; they never raise.

    Raises:
        MissingAPIKeyError: the endpoint's API-key variable is not set.
        RayUnavailableError: ``num_workers`` is set and Ray is not installed or its cluster cannot be reached.
        InvalidParameterError: ``num_workers`` is set and no ``remote`` sender is given.

    Example:
        >>> result = asyncio.run(run_load(ep, LoadSettings(num_prompts=10, max_concurrency=2)))  # doctest: +SKIP
    """
    if settings.num_workers is not None and remote is None:
        raise InvalidParameterError(
            "num_workers", settings.num_workers, "a remote sender passed to run_load (ray_workers.send_on_ray)"
        )
    stop = stop or asyncio.Event()
    info = await discover(endpoint, settings.timeout_s, secrets=secrets)
    client = make_client(endpoint, backend=LOAD_BACKEND, timeout_s=settings.timeout_s, secrets=secrets)
    sem = asyncio.Semaphore(settings.max_concurrency) if settings.max_concurrency else None
    workload = Workload(())
    schedule = Schedule((), (), (), ())
    share = SentShare((), (), (), 0, 0, None, time.perf_counter(), 0.0)
    warm: list[RequestRecord | None] = []
    reset_error: str | None = None
    counters = settings.scrape_metrics and endpoint.kind in METRICS_KINDS
    before = after = None

    async def warmup(request: ChatRequest) -> RequestRecord | None:
        async with sem if sem is not None else contextlib.nullcontext():
            try:
                return await _stream(endpoint, request, settings, info, client, secrets)
            except asyncio.CancelledError:
                return None

    def recorded(_: int, record: RequestRecord) -> None:
        if on_record is not None:
            on_record(record)

    try:
        workload = await prepare_workload(endpoint, info, settings, secrets=secrets)
        schedule = build_schedule(settings, workload)
        if settings.flush_cache:
            reset_error = await reset_prefix_cache(endpoint, timeout_s=min(settings.timeout_s, 10.0), secrets=secrets)
        warm = await _until_stopped(asyncio.gather(*(warmup(r) for r in schedule.warmups)), stop)
        if counters:
            before = await fetch_sample(endpoint, start=time.perf_counter(), timeout_s=5.0, secrets=secrets)
        callbacks = {"on_record": recorded, "on_progress": on_progress, "on_in_flight": on_in_flight}
        if settings.num_workers is None:
            share = await send_share(
                endpoint,
                info,
                settings,
                schedule,
                schedule.threads(),
                client=client,
                max_concurrency=settings.max_concurrency,
                start_s=time.perf_counter(),
                secrets=secrets,
                stop=stop,
                **callbacks,
            )
        else:
            assert remote is not None  # checked on entry
            share = await remote(endpoint, info, settings, schedule, secrets=secrets, stop=stop, **callbacks)
        if counters and before is not None:
            after = await fetch_sample(endpoint, start=share.start_s, timeout_s=5.0, secrets=secrets)
    finally:
        await client.close()
    # Streams without usage: the server's tokenizer counts their answers, now that no measured request is in flight.
    indices = [i for i, _ in share.finished]
    recounted = await recount_output_tokens(
        endpoint, info, [r for _, r in share.finished], timeout_s=min(settings.timeout_s, 10.0), secrets=secrets
    )
    share = replace(share, finished=tuple(zip(indices, recounted, strict=True)))
    extra = {
        "prefix_cache": prefix_cache_stats(before, after, endpoint.kind),
        "cache_reset": reset_error,
        "cache_flushed": settings.flush_cache and reset_error is None,
        "spec_decode": spec_decode_stats(before, after),
    }
    return _result(endpoint, settings, workload, schedule, share, warm, extra)


async def _until_stopped(work: Any, stop: asyncio.Event) -> list[Any]:
    """The results of ``work`` (an awaitable of a list), or [] when ``stop`` is set first (``work`` is cancelled)."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if not task.done():
        task.cancel()
    result = (await asyncio.gather(task, stopper, return_exceptions=True))[0]
    return result if isinstance(result, list) else []


def _reusable(
    schedule: Schedule,
    workload: Workload,
    index: int,
    inputs: Mapping[int, int],
    finished: Mapping[int, RequestRecord],
    turns: Mapping[tuple[int | None, int], int],
) -> int | None:
    """Reusable prefix tokens of request ``index``: a later turn reuses the previous turn's prompt and answer (the
    server's counts, else the run's estimates); other requests, what the workload planned. ``turns`` maps
    ``(conversation, turn)`` to the request index."""
    if schedule.turn[index] > 0:
        prev = turns.get((schedule.conversation[index], schedule.turn[index] - 1))
        record = finished.get(prev) if prev is not None else None
        if record is None or prev not in inputs or record.output_tokens is None:
            return None
        return inputs[prev] + record.output_tokens
    return workload.reusable_tokens[index] if workload.reusable_tokens is not None else None


def _result(
    endpoint: Endpoint,
    settings: LoadSettings,
    workload: Workload,
    schedule: Schedule,
    share: SentShare,
    warm: list[RequestRecord | None],
    extra: Mapping[str, Any],
) -> LoadResult:
    finished = dict(share.finished)
    sent_text = dict(share.sent_text)
    duration = share.duration_s
    records: list[RequestRecord] = []
    indices: list[int] = []
    inputs: list[int] = []
    for index in sorted(finished):
        record = finished[index]
        records.append(record)
        indices.append(index)
        asked = workload.tokens[index] if index < len(workload.tokens) else None
        text = sent_text.get(index, schedule.requests[index].text)
        fallback = asked if asked is not None else estimate_tokens(text)
        inputs.append(record.prompt_tokens if record.prompt_tokens is not None else fallback)
    metrics = compute_benchmark_metrics(records, inputs, max(duration, 1e-9), slo_ms=dict(settings.goodput_ms))
    requests = schedule.requests
    dropped = build_request(endpoint.kind, requests[0], model=None).dropped if requests else ()
    conversations = schedule.has_conversations
    by_turn = {(c, t): i for i, (c, t) in enumerate(zip(schedule.conversation, schedule.turn, strict=True))}
    counted = dict(zip(indices, inputs, strict=True))
    return LoadResult(
        endpoint=endpoint.name,
        settings=settings,
        records=tuple(records),
        input_tokens=tuple(inputs),
        metrics=metrics,
        duration_s=duration,
        in_flight=share.in_flight,
        warmup_records=tuple(r for r in warm if r is not None),
        cancelled=share.cancelled,
        not_sent=settings.num_prompts - share.sent,
        stopped=share.stopped,
        start_s=share.start_s,
        input_calibration=workload.calibration,
        input_check=check_inputs(workload, records, indices, endpoint=endpoint.name, sizing=settings.input_sizing),
        not_sent_fields=dropped,
        sizing_note=workload.note,
        turns=tuple(schedule.turn[i] if conversations else None for i in indices),
        reusable_tokens=tuple(_reusable(schedule, workload, i, counted, finished, by_turn) for i in indices),
        num_workers=share.num_workers,
        worker_requests=share.worker_requests,
        worker_errors=share.worker_errors,
        worker_cpu_s=share.worker_cpu_s,
        **extra,
    )
