"""The settings of a Load Test: what the page's widgets hold and a link restores, and the run they describe.

:class:`LoadSettings` is the one description of a load test (lengths in tokens, times in seconds, SLOs in
milliseconds), for the page, the CLI and the runner alike; :data:`DEFAULT` is what the page opens with. Each field
declares, once, its range, what a link or box may ask for, its link key, its ``bench`` flags and its widget
(:mod:`planner.fields`); the link codec (:mod:`planner.links.loadtest`), ``python -m planner bench``'s options and the
page's boxes are derived from that. A concurrency sweep's own parameters are :class:`SweepSettings` (the
``sweep`` field). The goodput SLO text ``ttft:500,tpot:50`` is vLLM's ``--goodput`` format, read by
:func:`parse_goodput` (per-request SLOs of the one SLO parser, :mod:`planner.metrics.slo`) and written by
:func:`format_goodput` (that module's writer).

Example:
    >>> parse_goodput("ttft:500 tpot:50")
    (('ttft', 500.0), ('tpot', 50.0))
    >>> LoadSettings(num_prompts=8, goodput_ms=(("ttft", 500.0),)).goodput_ms
    (('ttft', 500.0),)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.errors import BadValue, InvalidParameterError
from planner.fields import Choice, Flag, Number, Text, setting, validate
from planner.metrics.slo import GOODPUT_ACCEPTED, GOODPUT_METRICS, format_goodput, parse_slos
from planner.serving.endpoints import format_endpoint_names, parse_endpoint_names

__all__ = [
    "BATCHINGS",
    "DATASETS",
    "DEFAULT",
    "FILE_DATASETS",
    "INPUT_SIZINGS",
    "MAX_LEVEL",
    "MAX_PROMPTS",
    "MAX_RUNS",
    "MAX_TURNS",
    "MAX_WORKERS",
    "MODES",
    "SLO_NAMES",
    "TRACE_DATASETS",
    "LoadSettings",
    "SweepSettings",
    "format_goodput",
    "parse_goodput",
]

#: Most measured requests of one run a link or a box starts (the command line takes more).
MAX_PROMPTS = 10_000
#: Largest concurrency a sweep accepts.
MAX_LEVEL = 4096
#: Most requests in flight a link or a box asks for.
_MAX_CONCURRENCY_ENTRY = 1024
#: Longest prompt or shared prefix a link or a box asks for, tokens.
_MAX_INPUT_ENTRY = 131_072
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
SLO_NAMES = GOODPUT_METRICS
#: How synthetic prompts are sized to ``input_len`` tokens (see :class:`LoadSettings`).
INPUT_SIZINGS = ("tokenize", "token_ids", "words")
#: The argparse groups of ``bench``'s workload flags.
_PREFIX_GROUP = "prefix_repetition (as vllm bench serve)"
_TRACE_GROUP = "timed_trace / burstgpt"
_RAY_GROUP = "Ray workers (pip install -r requirements-ray.txt)"


def parse_goodput(text: str) -> tuple[tuple[str, float], ...]:
    """``"ttft:500,tpot:50"`` (commas or spaces) → ``(("ttft", 500.0), ("tpot", 50.0))``; "" → ().

    The text is read as per-request SLOs by the one SLO parser (:func:`planner.metrics.slo.parse_slos`) and kept as
    ``(name, limit_ms)`` pairs, vLLM's goodput form (its ``goodput`` result key holds ``{"ttft": 500}``).

    Args:
        text: SLOs as vLLM's ``--goodput`` takes them, ``name:ms`` pairs.

    Returns:
        ``((name, limit_ms), ...)`` in the order given.

    Raises:
        BadValue: a part is not ``ttft|tpot|e2el:<ms>`` with 0 < ms ≤ 3,600,000, or a name repeats; ``accepted``
            says what is accepted.
    """
    try:
        slos = parse_slos([text], per_request=True)
    except InvalidParameterError:
        raise BadValue(GOODPUT_ACCEPTED) from None
    return tuple((s.metric, s.limit_ms) for s in slos)


@dataclass(frozen=True)
class SweepSettings:
    """A concurrency sweep's own parameters: levels 1, 2, 4, … ``sweep_max``, each bounded in requests and time.

    The runner's :class:`~planner.loadtest.sweep.SweepSpec` is made from these and the load's
    (:func:`planner.loadtest.worker.plan_jobs`).

    Attributes:
        sweep_max: Highest concurrency of the sweep (its last level).
        sweep_stop: Stop at saturation (:func:`planner.loadtest.sweep.saturation`) instead of running every level.
        sweep_refine: After a sweep stops, run the level(s) between the last unsaturated level and the first
            saturated one (:func:`planner.loadtest.sweep.refine_levels`).
        prompts_per_level: Requests of every level; None = at least 4 per concurrency slot and at least the load's
            ``num_prompts`` (:meth:`~planner.loadtest.sweep.SweepSpec.num_prompts`).
        level_duration_s: Wall-time cap of each level when the load has none (``duration_s`` None), seconds.

    Raises:
        InvalidParameterError: a value is outside what is accepted.
    """

    sweep_max: int = setting(
        16,
        Number(
            low=1,
            high=MAX_LEVEL,
            integer=True,
            entry=(1, _MAX_CONCURRENCY_ENTRY),
            flags=("--sweep",),
            metavar="N",
            cli_default=None,
            help="concurrency sweep 1, 2, 4, ... N; a row per level",
            label="sweep up to concurrency",
        ),
    )
    sweep_stop: bool = setting(
        True,
        Flag(
            flags=("--no-sweep-stop",),
            negated=True,
            label="stop at saturation",
            help="stop a sweep at saturation, when output throughput gains < 10% over the best level so far while "
            "median TTFT or E2E latency rises ≥ 25% over the level before",
        ),
    )
    sweep_refine: bool = setting(
        False,
        Flag(
            flags=("--sweep-refine",),
            label="refine at the stop",
            help="add the level between the last growing level and the first saturated one",
        ),
    )
    prompts_per_level: int | None = setting(
        None,
        Number(
            low=1,
            integer=True,
            optional=True,
            entry=(1, MAX_PROMPTS),
            linked=False,
            flags=("--prompts-per-level",),
            help="sweep: requests per level (default: max(num-prompts, 4 x level))",
        ),
    )
    level_duration_s: float = setting(
        120.0,
        Number(
            low=0,
            low_open=True,
            finite=True,
            entry=(1, 3600),
            accepted="a finite number of seconds > 0",
            linked=False,
            flags=("--level-duration",),
            help="sweep: time cap per level when --duration is not given, s",
        ),
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class LoadSettings:
    """One load test: what the page's widgets hold, a link restores, the CLI's flags set and the runner runs.

    Lengths in tokens, times in seconds, SLOs in milliseconds. A run (:func:`planner.loadtest.runner.run_load`)
    reads the per-run fields; ``endpoints``, ``mode``, ``sweep`` and ``scrape_metrics`` say which runs to make
    (:func:`planner.loadtest.worker.plan_jobs`); a sweep level is these settings with its own ``max_concurrency``
    and ``num_prompts``. A run is ALWAYS bounded in requests: ``num_prompts`` caps it even when ``duration_s`` is
    given (it ends at whichever comes first). Each field's declaration (its range, what a link or box may ask for,
    its link key, ``bench`` flags and widget label) is in the field's metadata (:mod:`planner.fields`).

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
        seed: Seed of the arrival schedule and the sampled lengths, ≥ 0.
        dataset_name: One of :data:`DATASETS`.
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
        sweep: The concurrency sweep's parameters (used when ``mode`` is ``sweep``; the Performance page's
            concurrency axis reads ``sweep.sweep_max``).
        scrape_metrics: Poll the server's ``/metrics`` during runs.
        prompts: The prompts of the ``examples``, ``custom`` and ``sharegpt`` datasets (never put in a link).
        prefix_len: ``prefix_repetition``: tokens of each shared prefix (vLLM ``--prefix-repetition-prefix-len``).
        suffix_len: ``prefix_repetition``: tokens of each request's own suffix (``--prefix-repetition-suffix-len``).
        num_prefixes: ``prefix_repetition``: distinct prefixes; ``num_prompts // num_prefixes`` requests share each
            (``--prefix-repetition-num-prefixes``), so ``num_prompts`` must be at least this.
        num_turns: ``multi_turn``: turns per conversation (1–:data:`MAX_TURNS`); ``num_prompts`` requests make
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

    endpoints: tuple[str, ...] = setting(
        (), Text(key="ep", read=parse_endpoint_names, write=format_endpoint_names, label="Endpoints to load")
    )
    mode: str = setting(
        "run",
        Choice(
            choices=MODES,
            names=(("run", "one run per endpoint"), ("sweep", "concurrency sweep 1, 2, 4, …")),
            radio=True,
            label="Mode",
        ),
    )
    num_prompts: int = setting(
        32,
        Number(
            low=1,
            integer=True,
            entry=(1, MAX_PROMPTS),
            flags=("--num-prompts",),
            cli_default=100,
            help="measured requests",
        ),
    )
    max_concurrency: int | None = setting(
        8,
        Number(
            low=1,
            integer=True,
            optional=True,
            entry=(1, _MAX_CONCURRENCY_ENTRY),
            flags=("--max-concurrency", "--concurrency"),
            cli_default=None,
            help="most requests in flight (empty: no cap; a sweep sets it per level)",
        ),
    )
    request_rate: float = setting(
        float("inf"),
        Number(
            low=0,
            low_open=True,
            entry=(0, 10_000),
            typed_inf=True,
            accepted="requests/s > 0 (inf = burst)",
            flags=("--request-rate",),
            help="requests/s; inf (or empty) = every request released at once, a burst",
            label="request_rate (req/s)",
        ),
    )
    burstiness: float = setting(
        1.0,
        Number(
            low=0,
            low_open=True,
            entry=(0.01, 100),
            accepted="a gamma shape > 0 (1 = Poisson)",
            flags=("--burstiness",),
            help="gamma shape of the arrival gaps: 1 = Poisson, below 1 burstier",
        ),
    )
    num_warmups: int = setting(
        0,
        Number(
            low=0,
            integer=True,
            entry=(0, 100),
            flags=("--num-warmups",),
            help="requests before the measured ones, not counted",
        ),
    )
    duration_s: float | None = setting(
        300.0,
        Number(
            low=0,
            low_open=True,
            finite=True,
            optional=True,
            typed_none=False,
            entry=(1, 3600),
            accepted="seconds > 0, or None for no cap",
            key="duration",
            flags=("--duration",),
            cli_default=None,
            help="wall-time cap of a run (of each sweep level), seconds",
            label="duration cap (s)",
        ),
    )
    timeout_s: float = setting(
        60.0,
        Number(
            low=0,
            low_open=True,
            entry=(1, 600),
            accepted="seconds > 0",
            key="timeout",
            flags=("--timeout",),
            help="connect/read timeout of each request, seconds",
            label="timeout (s)",
        ),
    )
    seed: int = setting(
        0,
        Number(
            low=0,
            integer=True,
            entry=(0, 2**32 - 1),
            flags=("--seed",),
            help="seed of the arrival schedule and the sampled lengths",
        ),
    )
    dataset_name: str = setting(
        "random",
        Choice(
            choices=DATASETS,
            names=(
                ("random", "synthetic"),
                ("examples", "8 examples"),
                ("custom", "JSONL file"),
                ("prefix_repetition", "shared prefixes"),
                ("multi_turn", "multi-turn chats"),
                ("sharegpt", "ShareGPT file"),
                ("timed_trace", "trace: Mooncake JSONL"),
                ("burstgpt", "trace: BurstGPT CSV"),
            ),
            cli_choices=tuple(d for d in DATASETS if d != "examples"),
            flags=("--dataset-name",),
            cli_default=None,
            label="Prompts",
            help="random (synthetic text of input_len tokens, the default), prefix_repetition (vLLM's: num_prefixes "
            "shared prefixes, each with suffixes of its own), multi_turn (each turn sends the conversation so far and "
            "a new message), or a file: custom (JSONL prompts, the default with a path), sharegpt (JSON/JSONL), "
            "timed_trace (Mooncake-layout JSONL) or burstgpt (CSV), traces replayed at their timestamps",
        ),
    )
    input_len: int = setting(
        128,
        Number(
            low=1,
            integer=True,
            entry=(1, _MAX_INPUT_ENTRY),
            flags=("--input-len", "--random-input-len"),
            help="synthetic prompt length, text tokens (multi_turn: each turn's new message)",
        ),
    )
    output_len: int = setting(
        64,
        Number(
            low=1,
            integer=True,
            entry=(1, 32_768),
            flags=("--output-len", "--random-output-len", "--prefix-repetition-output-len"),
            cli_default=128,
            help="max_tokens of each request (traces: the trace's own)",
        ),
    )
    range_ratio: float = setting(
        0.0,
        Number(
            low=0,
            high=1,
            high_open=True,
            entry=(0, 0.99),
            flags=("--range-ratio", "--random-range-ratio"),
            help="lengths drawn from [L(1-r), L(1+r)]",
        ),
    )
    ignore_eos: bool = setting(
        False,
        Flag(
            flags=("--ignore-eos",),
            help="generate exactly --output-len tokens; sent to vLLM, SGLang and llama.cpp, not to TGI or openai",
        ),
    )
    input_sizing: str = setting(
        "tokenize",
        Choice(
            choices=INPUT_SIZINGS,
            names=(
                ("tokenize", "server tokenizer"),
                ("token_ids", "token ids (vLLM, SGLang)"),
                ("words", "one word per token (estimate)"),
            ),
            radio=True,
            flags=("--input-sizing",),
            label="input_len sizing",
            help="tokenize: the prompt text has exactly input_len tokens by the server's tokenizer route (the chat "
            "template adds its own few); token_ids: input_len token ids on /v1/completions, exact by construction "
            "(vLLM, SGLang; others fall back to tokenize); words: one word per token, no server call, an estimate",
        ),
    )
    goodput_ms: tuple[tuple[str, float], ...] = setting(
        (),
        Text(
            key="goodput",
            read=parse_goodput,
            write=format_goodput,
            flags=("--goodput",),
            nargs="+",
            metavar="KEY:MS",
            label="goodput SLOs",
            help="SLOs in ms as vLLM's --goodput, e.g. ttft:500 tpot:50",
        ),
    )
    sweep: SweepSettings = SweepSettings()
    scrape_metrics: bool = setting(
        True,
        Flag(
            flags=("--no-scrape-metrics",),
            negated=True,
            label="/metrics",
            help="poll the server's Prometheus /metrics during runs (running / waiting requests, KV-cache usage, the "
            "prefix-cache hit rate)",
        ),
    )
    prompts: tuple[str, ...] = setting(
        (),
        Text(
            linked=False,
            flags=("--prompt",),
            nargs="append",
            metavar="TEXT",
            help="use this prompt instead of synthetic text (repeat the flag)",
        ),
        repr=False,
    )
    prefix_len: int = setting(
        256,
        Number(
            low=0,
            integer=True,
            entry=(0, _MAX_INPUT_ENTRY),
            flags=("--prefix-repetition-prefix-len",),
            group=_PREFIX_GROUP,
            help="shared prefix tokens",
        ),
    )
    suffix_len: int = setting(
        256,
        Number(
            low=1,
            integer=True,
            entry=(1, _MAX_INPUT_ENTRY),
            flags=("--prefix-repetition-suffix-len",),
            group=_PREFIX_GROUP,
            help="each request's own suffix tokens",
        ),
    )
    num_prefixes: int = setting(
        10,
        Number(
            low=1,
            integer=True,
            entry=(1, 1000),
            flags=("--prefix-repetition-num-prefixes",),
            group=_PREFIX_GROUP,
            help="distinct prefixes",
        ),
    )
    num_turns: int = setting(
        4,
        Number(
            low=1,
            high=MAX_TURNS,
            integer=True,
            flags=("--num-turns",),
            group="multi_turn",
            help="turns per conversation",
        ),
    )
    think_time_s: float = setting(
        0.0,
        Number(
            low=0,
            finite=True,
            entry=(0, 600),
            accepted="seconds ≥ 0",
            flags=("--think-time",),
            group="multi_turn",
            label="think time (s)",
            help="seconds between an answer and the next turn",
        ),
    )
    time_scale: float = setting(
        1.0,
        Number(
            low=0,
            low_open=True,
            finite=True,
            entry=(0.0001, 1000),
            accepted="a factor > 0 (1 = as recorded)",
            flags=("--time-scale", "--timed-trace-sec-multiplier"),
            group=_TRACE_GROUP,
            help="arrival = timestamp × time_scale, seconds (vLLM --timed-trace-sec-multiplier): 1 = as recorded in "
            "seconds, 0.5 = twice as fast, 0.001 for millisecond timestamps (Mooncake's traces)",
        ),
    )
    trace_chunk_hash_size: int = setting(
        16,
        Number(
            low=1,
            integer=True,
            entry=(1, 65_536),
            flags=("--timed-trace-chunk-hash-size",),
            group=_TRACE_GROUP,
            label="chunk hash size",
            help="tokens per hash_ids block (512 for Mooncake's traces)",
        ),
    )
    flush_cache: bool = setting(
        False,
        Flag(
            flags=("--flush-cache",),
            label="flush cache",
            help="flush, prime, measure: empty the server's prefix cache (vLLM POST /reset_prefix_cache, which needs "
            "VLLM_SERVER_DEV_MODE=1; SGLang /flush_cache), then the warm-up requests prime it, then the measured run",
        ),
    )
    num_runs: int = setting(
        1,
        Number(
            low=1,
            high=MAX_RUNS,
            integer=True,
            flags=("--num-runs",),
            label="repeats",
            help="repeat the run K times: mean and 95% confidence interval of each headline metric",
        ),
    )
    num_workers: int | None = setting(
        None,
        Number(
            low=1,
            high=MAX_WORKERS,
            integer=True,
            optional=True,
            linked=False,
            flags=("--workers",),
            metavar="N",
            group=_RAY_GROUP,
            label="Ray workers",
            help="send the measured requests from N Ray workers, the concurrency cap and the rate split between them",
        ),
    )
    ray_address: str | None = setting(
        None,
        Text(
            linked=False,
            flags=("--ray-address",),
            metavar="ADDR",
            group=_RAY_GROUP,
            help="the workers' Ray cluster, e.g. ray://10.0.0.5:10001 (default: N local workers on a Ray started here)",
        ),
    )
    trace_rows: tuple[Any, ...] = setting((), Text(linked=False), repr=False)
    batching: str = setting(
        "continuous",
        Choice(
            choices=BATCHINGS,
            flags=("--batching",),
            help="continuous: each request as a concurrency slot frees (the server batches them); static: fixed "
            "batches of max_concurrency, the next only when the slowest has ended; compare: a static run, then a "
            "continuous one at the same concurrency, and the throughput ratio",
        ),
    )

    def __post_init__(self) -> None:
        for name in ("endpoints", "prompts", "trace_rows"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "goodput_ms", tuple(tuple(x) for x in self.goodput_ms))
        validate(self)
        if not isinstance(self.sweep, SweepSettings):
            raise InvalidParameterError("sweep", self.sweep, "a SweepSettings")
        if self.ray_address is not None and not (isinstance(self.ray_address, str) and self.ray_address.strip()):
            raise InvalidParameterError("ray_address", self.ray_address, "a Ray address, e.g. ray://10.0.0.5:10001")
        if self.dataset_name == "prefix_repetition" and self.num_prompts < self.num_prefixes:
            raise InvalidParameterError(
                "num_prompts", self.num_prompts, f"at least num_prefixes ({self.num_prefixes}) for prefix_repetition"
            )
        if any(not isinstance(p, str) or not p.strip() for p in self.prompts):
            raise InvalidParameterError("prompts", self.prompts, "non-empty strings")
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
