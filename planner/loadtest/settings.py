"""The settings of a Load Test: what the page's widgets hold and a link restores, and the run they describe.

:class:`LoadSettings` is the one description of a load test (lengths in tokens, times in seconds, SLOs in
milliseconds), for the page, the CLI and the runner alike; :data:`DEFAULT` is what the page opens with. The goodput
SLO text ``ttft:500,tpot:50`` is vLLM's ``--goodput`` format, read by :func:`parse_goodput` and written by
:func:`format_goodput`. The URL codec
(:mod:`planner.links.loadtest`) only writes and reads these settings.

Example:
    >>> parse_goodput("ttft:500 tpot:50")
    (('ttft', 500.0), ('tpot', 50.0))
    >>> LoadSettings(num_prompts=8, goodput_ms=(("ttft", 500.0),)).goodput_ms
    (('ttft', 500.0),)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.errors import InvalidParameterError
from planner.links.rules import BadValue, format_value, parse_number

__all__ = [
    "BATCHINGS",
    "DATASETS",
    "DEFAULT",
    "FILE_DATASETS",
    "INPUT_SIZINGS",
    "MAX_PROMPTS",
    "MAX_RUNS",
    "MAX_TURNS",
    "MAX_WORKERS",
    "MODES",
    "SLO_NAMES",
    "TRACE_DATASETS",
    "LoadSettings",
    "format_goodput",
    "parse_goodput",
]

#: Most measured requests of one run.
MAX_PROMPTS = 10_000
#: Most repeats of a run (:attr:`LoadSettings.num_runs`).
MAX_RUNS = 20
#: Most Ray workers of one run (:attr:`LoadSettings.num_workers`).
MAX_WORKERS = 256
#: Most turns of a multi-turn conversation.
MAX_TURNS = 64
#: ``run``: one load per endpoint; ``sweep``: concurrency 1, 2, 4, … ``sweep_max``.
MODES = ("run", "sweep")
#: How requests are released: ``continuous`` (each as a concurrency slot frees, the server batches them as it likes);
#: ``static`` (fixed batches of ``max_concurrency``: a batch is sent together once its last request is due, the next
#: only when its slowest request has ended, as a server without iteration-level scheduling runs them; Orca, Yu et al.
#: OSDI 2022, §2); ``compare``: a static run, then a continuous one at the same concurrency, on each endpoint.
BATCHINGS = ("continuous", "static", "compare")
#: ``random``: synthetic prompts of ``input_len`` tokens; ``examples``: the built-in example prompts; ``custom``: an
#: uploaded JSONL file; ``prefix_repetition``: ``num_prefixes`` shared prefixes of ``prefix_len`` tokens, each with
#: distinct suffixes of ``suffix_len`` tokens (vLLM's dataset of that name); ``multi_turn``: conversations of
#: ``num_turns`` turns, each turn sending the history with the previous answer and a new user message of
#: ``input_len`` tokens; ``sharegpt``: a ShareGPT JSON/JSONL file (first human turn of each conversation);
#: ``timed_trace``: a trace of arrival timestamps and lengths replayed at its own times (Mooncake layout, vLLM's
#: ``timed_trace``); ``burstgpt``: a BurstGPT CSV trace replayed at its own times.
DATASETS = ("random", "examples", "custom", "prefix_repetition", "multi_turn", "sharegpt", "timed_trace", "burstgpt")
#: Datasets read from a file the user gives (never put in a link).
FILE_DATASETS = ("custom", "sharegpt", "timed_trace", "burstgpt")
#: Datasets that replay a trace's arrival times (``request_rate`` and ``burstiness`` do not apply).
TRACE_DATASETS = ("timed_trace", "burstgpt")
#: Metrics a goodput SLO can limit (vLLM's ``--goodput`` names).
SLO_NAMES = ("ttft", "tpot", "e2el")
#: Largest SLO limit, milliseconds (an hour).
_MAX_SLO_MS = 3_600_000


#: How synthetic prompts are sized to ``input_len`` tokens (see :class:`LoadSettings`).
INPUT_SIZINGS = ("tokenize", "token_ids", "words")


@dataclass(frozen=True)
class LoadSettings:
    """One load test: what the page's widgets hold, a link restores, the CLI's flags set and the runner runs.

    Lengths in tokens, times in seconds, SLOs in milliseconds. A run (:func:`planner.loadtest.runner.run_load`)
    reads the per-run fields; ``endpoints``, ``mode``, ``sweep_max`` and ``scrape_metrics`` say which runs to make
    (:func:`planner.loadtest.worker.plan_jobs`); a sweep level is these settings with its own ``max_concurrency``
    and ``num_prompts``. A run is ALWAYS bounded in requests: ``num_prompts`` caps it even when ``duration_s`` is
    given (it ends at whichever comes first).

    Attributes:
        endpoints: Names of the endpoints to load, run one after another with the same workload.
        mode: ``run`` or ``sweep``.
        num_prompts: Measured requests of a run (of each sweep level), ≥ 1.
        max_concurrency: Most requests in flight (closed loop); None = no cap.
        request_rate: Send rate of the schedule, requests/s > 0; ``inf`` = all at once (burst).
        burstiness: Gamma shape of the arrival gaps (> 0): 1 = Poisson, < 1 burstier, ``inf`` = constant gaps.
        num_warmups: Requests sent (under the concurrency cap) before the measured ones, not counted.
        duration_s: Wall-time cap of one run (of each sweep level), seconds; None = no time cap.
        timeout_s: Connect/read timeout of each request, seconds.
        seed: Seed of the arrival schedule and the sampled lengths.
        dataset_name: ``random`` (synthetic prompts of ``input_len`` tokens), ``examples`` or ``custom``
            (``prompts``, cycled).
        input_len: Prompt length of ``random`` prompts, tokens of the prompt text before any chat template (as
            ``vllm bench serve --random-input-len``).
        output_len: ``max_tokens`` of each request.
        range_ratio: Lengths drawn uniformly from the integers in [⌊L(1 − r)⌋, ⌈L(1 + r)⌉] (vLLM random
            dataset), in [0, 1).
        ignore_eos: Ask for exactly ``output_len`` tokens; sent where the engine reads it (vLLM, SGLang,
            llama.cpp), and the run says where it was not.
        input_sizing: How ``random`` prompts get ``input_len`` tokens: ``tokenize`` (text sized with the server's
            own tokenizer route, the default), ``token_ids`` (token ids on ``/v1/completions``, exact by
            construction; vLLM and SGLang, others fall back to ``tokenize``), ``words`` (one word per token, no
            server call: an estimate).
        goodput_ms: SLOs ``((name, limit_ms), ...)`` with names ``ttft``, ``tpot``, ``e2el``.
        sweep_max: Highest concurrency of a sweep.
        scrape_metrics: Poll the server's ``/metrics`` during runs.
        prompts: The prompts of the ``examples``, ``custom`` and ``sharegpt`` datasets (never put in a link).
        prefix_len: ``prefix_repetition``: tokens of each shared prefix (vLLM ``--prefix-repetition-prefix-len``).
        suffix_len: ``prefix_repetition``: tokens of each request's own suffix (``--prefix-repetition-suffix-len``).
        num_prefixes: ``prefix_repetition``: distinct prefixes; ``num_prompts // num_prefixes`` requests share each
            (``--prefix-repetition-num-prefixes``), so ``num_prompts`` must be at least this.
        num_turns: ``multi_turn``: turns per conversation (≥ 1); ``num_prompts`` requests make
            ⌈num_prompts / num_turns⌉ conversations, and ``max_concurrency`` caps the conversations in progress.
        think_time_s: ``multi_turn``: seconds between a turn's answer and the next turn's request (the user
            reading and typing), ≥ 0.
        time_scale: Trace datasets: each arrival is the trace's timestamp (relative to its first request) times
            this factor, seconds (vLLM ``--timed-trace-sec-multiplier``): 1 replays timestamps in seconds as recorded,
            0.5 twice as fast, 0.001 replays millisecond timestamps (Mooncake's) in real time. > 0.
        trace_chunk_hash_size: ``timed_trace``: tokens per ``hash_ids`` block (vLLM
            ``--timed-trace-chunk-hash-size``: 16 by default, 512 for Mooncake's traces).
        flush_cache: "Flush, prime, measure": reset the server's prefix cache before the run (vLLM ``POST
            /reset_prefix_cache``, which needs ``VLLM_SERVER_DEV_MODE=1``; SGLang ``POST /flush_cache``), then the
            ``num_warmups`` requests prime it, then the measured requests run.
        num_runs: Repeats of each run (1–:data:`MAX_RUNS`), for the mean and a confidence interval of each headline
            metric.
        sweep_stop: A sweep stops at saturation (:func:`planner.loadtest.sweep.saturation`) instead of running
            every level.
        sweep_refine: After a sweep stops, run the level(s) between the last unsaturated level and the first
            saturated one (:func:`planner.loadtest.sweep.refine_levels`).
        num_workers: Ray workers that send the measured requests between them (1–:data:`MAX_WORKERS`; the
            concurrency cap and the rate stay the run's, split between them); None = this process sends them
            (:func:`planner.loadtest.ray_workers.send_on_ray`).
        ray_address: The Ray cluster of the workers (``ray://HOST:10001`` or ``HOST:6379``); None = N local workers
            on a Ray started in this process. Never put in a link.
        trace_rows: The rows of a trace dataset (never put in a link).
        batching: One of :data:`BATCHINGS`; ``static`` batches are ``max_concurrency`` requests (all of them
            without a cap); ``compare`` makes a static and a continuous run (:func:`planner.loadtest.worker.plan_jobs`).

    Raises:
        InvalidParameterError: a value is outside what is accepted.
    """

    endpoints: tuple[str, ...] = ()
    mode: str = "run"
    num_prompts: int = 32
    max_concurrency: int | None = 8
    request_rate: float = float("inf")
    burstiness: float = 1.0
    num_warmups: int = 0
    duration_s: float | None = 300.0
    timeout_s: float = 60.0
    seed: int = 0
    dataset_name: str = "random"
    input_len: int = 128
    output_len: int = 64
    range_ratio: float = 0.0
    ignore_eos: bool = False
    input_sizing: str = "tokenize"
    goodput_ms: tuple[tuple[str, float], ...] = ()
    sweep_max: int = 16
    scrape_metrics: bool = True
    prompts: tuple[str, ...] = field(default=(), repr=False)
    prefix_len: int = 256
    suffix_len: int = 256
    num_prefixes: int = 10
    num_turns: int = 4
    think_time_s: float = 0.0
    time_scale: float = 1.0
    trace_chunk_hash_size: int = 16
    flush_cache: bool = False
    num_runs: int = 1
    sweep_stop: bool = True
    sweep_refine: bool = False
    num_workers: int | None = None
    ray_address: str | None = None
    trace_rows: tuple[Any, ...] = field(default=(), repr=False)
    batching: str = "continuous"

    def __post_init__(self) -> None:
        def integer(name: str, value: Any, low: int = 1) -> None:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidParameterError(name, value, f"an integer ≥ {low}")

        integer("num_prompts", self.num_prompts)
        integer("num_warmups", self.num_warmups, 0)
        integer("input_len", self.input_len)
        integer("output_len", self.output_len)
        integer("sweep_max", self.sweep_max)
        integer("prefix_len", self.prefix_len, 0)
        integer("suffix_len", self.suffix_len)
        integer("num_prefixes", self.num_prefixes)
        integer("num_turns", self.num_turns)
        integer("num_runs", self.num_runs)
        integer("trace_chunk_hash_size", self.trace_chunk_hash_size)
        if self.num_workers is not None:
            integer("num_workers", self.num_workers)
            if self.num_workers > MAX_WORKERS:
                raise InvalidParameterError("num_workers", self.num_workers, f"an integer in [1, {MAX_WORKERS}]")
        if self.ray_address is not None and not (isinstance(self.ray_address, str) and self.ray_address.strip()):
            raise InvalidParameterError("ray_address", self.ray_address, "a Ray address, e.g. ray://10.0.0.5:10001")
        if self.num_turns > MAX_TURNS:
            raise InvalidParameterError("num_turns", self.num_turns, f"an integer in [1, {MAX_TURNS}]")
        if self.num_runs > MAX_RUNS:
            raise InvalidParameterError("num_runs", self.num_runs, f"an integer in [1, {MAX_RUNS}]")
        if self.dataset_name == "prefix_repetition" and self.num_prompts < self.num_prefixes:
            raise InvalidParameterError(
                "num_prompts", self.num_prompts, f"at least num_prefixes ({self.num_prefixes}) for prefix_repetition"
            )
        if not (isinstance(self.think_time_s, int | float) and 0 <= self.think_time_s < math.inf):
            raise InvalidParameterError("think_time_s", self.think_time_s, "seconds ≥ 0")
        if not (isinstance(self.time_scale, int | float) and 0 < self.time_scale < math.inf):
            raise InvalidParameterError("time_scale", self.time_scale, "a factor > 0 (1 = as recorded)")
        if self.max_concurrency is not None:
            integer("max_concurrency", self.max_concurrency)
        if self.batching not in BATCHINGS:
            raise InvalidParameterError("batching", self.batching, " or ".join(BATCHINGS))
        if self.mode not in MODES:
            raise InvalidParameterError("mode", self.mode, " or ".join(MODES))
        if self.dataset_name not in DATASETS:
            raise InvalidParameterError("dataset_name", self.dataset_name, ", ".join(DATASETS))
        if self.input_sizing not in INPUT_SIZINGS:
            raise InvalidParameterError("input_sizing", self.input_sizing, ", ".join(INPUT_SIZINGS))
        if not (isinstance(self.request_rate, int | float) and self.request_rate > 0):
            raise InvalidParameterError("request_rate", self.request_rate, "requests/s > 0 (inf = burst)")
        if not (isinstance(self.burstiness, int | float) and self.burstiness > 0):
            raise InvalidParameterError("burstiness", self.burstiness, "a gamma shape > 0 (1 = Poisson)")
        if self.duration_s is not None and not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise InvalidParameterError("duration_s", self.duration_s, "seconds > 0, or None for no cap")
        if not (isinstance(self.range_ratio, int | float) and 0 <= self.range_ratio < 1):
            raise InvalidParameterError("range_ratio", self.range_ratio, "a number in [0, 1)")
        if not (isinstance(self.timeout_s, int | float) and self.timeout_s > 0):
            raise InvalidParameterError("timeout_s", self.timeout_s, "seconds > 0")
        object.__setattr__(self, "endpoints", tuple(self.endpoints))
        object.__setattr__(self, "prompts", tuple(self.prompts))
        object.__setattr__(self, "trace_rows", tuple(self.trace_rows))
        if any(not isinstance(p, str) or not p.strip() for p in self.prompts):
            raise InvalidParameterError("prompts", self.prompts, "non-empty strings")
        object.__setattr__(self, "goodput_ms", tuple(tuple(x) for x in self.goodput_ms))
        for name, value in self.goodput_ms:
            if name not in SLO_NAMES or not value > 0:
                raise InvalidParameterError("goodput_ms", (name, value), "ttft, tpot or e2el with a limit in ms > 0")

    @property
    def synthetic(self) -> bool:
        """Prompts are synthetic (``input_len`` tokens) rather than the ``prompts`` of a dataset."""
        return not self.prompts

    @property
    def conversations(self) -> int:
        """Conversations of a ``multi_turn`` run: ⌈num_prompts / num_turns⌉ (the last may be shorter); 0 otherwise."""
        return -(-self.num_prompts // self.num_turns) if self.dataset_name == "multi_turn" else 0


#: The settings of a page opened without a link.
DEFAULT = LoadSettings()


def parse_goodput(text: str) -> tuple[tuple[str, float], ...]:
    """``"ttft:500,tpot:50"`` (commas or spaces) → ``(("ttft", 500.0), ("tpot", 50.0))``; "" → ().

    Args:
        text: SLOs as vLLM's ``--goodput`` takes them, ``name:ms`` pairs.

    Returns:
        ``((name, limit_ms), ...)`` in the order given.

    Raises:
        BadValue: a part is not ``ttft|tpot|e2el:<ms>`` with 0 < ms ≤ 3,600,000, or a name repeats; ``accepted``
            says what is accepted.
    """
    accepted = f"name:ms pairs such as ttft:500,tpot:50 (names {', '.join(SLO_NAMES)}; 0 < ms ≤ {_MAX_SLO_MS})"
    out: dict[str, float] = {}
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if len(parts) > len(SLO_NAMES):
        raise BadValue(accepted)
    for part in parts:
        name, sep, value = part.partition(":")
        if not sep or name not in SLO_NAMES or name in out:
            raise BadValue(accepted)
        try:
            out[name] = float(parse_number(value, 0, _MAX_SLO_MS, low_open=True))  # type: ignore[arg-type]
        except BadValue:
            raise BadValue(accepted) from None
    return tuple(out.items())


def format_goodput(slos: Sequence[tuple[str, float]]) -> str:
    """The inverse of :func:`parse_goodput`: ``"ttft:500,tpot:50"``."""
    return ",".join(f"{name}:{format_value(float(ms))}" for name, ms in slos)
