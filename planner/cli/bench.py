"""``python -m planner bench``: load-test one endpoint as ``vllm bench serve`` does (flags in its spelling).

The runs are planned by :func:`planner.loadtest.worker.plan_jobs` and run by :class:`planner.loadtest.worker.JobQueue`,
as on the Load Test page: the same requests, the same prompt sizing (the server's tokenizer route by default), the
same ``/metrics`` scraping, the same result files. Exit codes: 0, 1 when every request failed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from planner.cli import max_rate
from planner.cli.messages import error, file_path, not_valid, verdict
from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.loadtest.settings import BATCHINGS, DATASETS, INPUT_SIZINGS, TRACE_DATASETS, LoadSettings

if TYPE_CHECKING:
    from planner.loadtest.results import SavedRun
    from planner.loadtest.runner import LoadResult
    from planner.loadtest.sweep import SweepPoint
    from planner.loadtest.worker import Job

__all__ = ["add_parser", "run"]

PROG = "python -m planner bench"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` subcommand to ``sub``."""
    b = sub.add_parser(
        "bench",
        help="load-test one endpoint like vllm bench serve (TTFT/TPOT/ITL/E2EL, throughput)",
        description="Load-test one endpoint and report what vllm bench serve reports, under its key names. Flags are "
        "spelled as vllm bench serve spells them.",
    )
    b.add_argument("--endpoint", required=True, metavar="[NAME=]KIND:URL", help="e.g. vllm:http://127.0.0.1:8000")
    b.add_argument(
        "--concurrency",
        "--max-concurrency",
        dest="concurrency",
        type=int,
        help="most requests in flight (default: no cap)",
    )
    b.add_argument("--request-rate", type=float, default=float("inf"), help="requests/s (default: inf, a burst)")
    b.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the gaps (default: 1, Poisson)")
    b.add_argument("--num-prompts", type=int, default=100, help="measured requests (default: 100)")
    b.add_argument("--num-warmups", type=int, default=0, help="requests before the measured ones (default: 0)")
    b.add_argument(
        "--input-len",
        "--random-input-len",
        dest="input_len",
        type=int,
        default=128,
        help="synthetic prompt length, text tokens (multi_turn: each turn's new message) (default: 128)",
    )
    b.add_argument(
        "--input-sizing",
        choices=INPUT_SIZINGS,
        default="tokenize",
        help="tokenize: the server's tokenizer route (default); token_ids: token-id prompts on /v1/completions "
        "(vLLM, SGLang); words: one word per token, an estimate",
    )
    b.add_argument("--exact-input-len", action="store_true", help="(the default now: --input-sizing tokenize)")
    b.add_argument(
        "--output-len",
        "--random-output-len",
        "--prefix-repetition-output-len",
        dest="output_len",
        type=int,
        default=128,
        help="max_tokens of each request (default: 128)",
    )
    b.add_argument(
        "--range-ratio",
        "--random-range-ratio",
        dest="range_ratio",
        type=float,
        default=0.0,
        help="lengths from [L(1-r), L(1+r)] (default: 0)",
    )
    b.add_argument(
        "--ignore-eos",
        action="store_true",
        help="generate exactly --output-len tokens; sent to vLLM, SGLang and llama.cpp, not to TGI or openai",
    )
    b.add_argument("--prompt", action="append", default=[], help="use this prompt instead of synthetic text")
    b.add_argument("--seed", type=int, default=0, help="seed of the schedule and the lengths (default: 0)")
    b.add_argument("--duration", type=float, help="wall-time cap of the run, seconds (default: no cap)")
    b.add_argument("--timeout", type=float, default=60.0, help="connect/read timeout per request, s (default: 60)")
    b.add_argument(
        "--goodput", nargs="+", default=[], metavar="KEY:MS", help="SLOs, e.g. ttft:500 tpot:50 (default: none)"
    )
    b.add_argument(
        "--dataset-name",
        choices=[d for d in DATASETS if d != "examples"],
        help="random (default), prefix_repetition, multi_turn, or a --dataset-path file: custom (JSONL, the "
        "default with a path), sharegpt (JSON/JSONL), timed_trace (Mooncake-layout JSONL), burstgpt (CSV)",
    )
    b.add_argument(
        "--dataset-path", type=file_path, metavar="FILE", help='the dataset\'s file (custom: {"prompt": ...} per line)'
    )
    g = b.add_argument_group("prefix_repetition (as vllm bench serve)")
    g.add_argument("--prefix-repetition-prefix-len", type=int, default=256, help="shared prefix tokens (default: 256)")
    g.add_argument("--prefix-repetition-suffix-len", type=int, default=256, help="own suffix tokens (default: 256)")
    g.add_argument("--prefix-repetition-num-prefixes", type=int, default=10, help="distinct prefixes (default: 10)")
    g = b.add_argument_group("multi_turn")
    g.add_argument("--num-turns", type=int, default=4, help="turns per conversation (default: 4)")
    g.add_argument("--think-time", type=float, default=0.0, help="seconds between an answer and the next turn")
    g = b.add_argument_group("timed_trace / burstgpt")
    g.add_argument(
        "--time-scale",
        "--timed-trace-sec-multiplier",
        dest="time_scale",
        type=float,
        default=1.0,
        help="arrival = timestamp x this, s (default 1; 0.001 for millisecond traces such as Mooncake's)",
    )
    g.add_argument("--timed-trace-chunk-hash-size", type=int, default=16, help="tokens per hash_ids block (default 16)")
    b.add_argument(
        "--flush-cache",
        action="store_true",
        help="flush, prime, measure: empty the server's prefix cache (vLLM /reset_prefix_cache with "
        "VLLM_SERVER_DEV_MODE=1, SGLang /flush_cache), then the warmups prime it, then the measured run",
    )
    b.add_argument(
        "--batching",
        choices=BATCHINGS,
        default="continuous",
        help="continuous (default); static: fixed batches of --concurrency, the next when the slowest ends; "
        "compare: static then continuous on the same endpoint, with the throughput ratio",
    )
    b.add_argument("--num-runs", type=int, default=1, help="repeat the run K times: mean and 95%% CI (default: 1)")
    b.add_argument("--sweep", type=int, metavar="N", help="concurrency sweep 1, 2, 4, ... N; prints a row per level")
    b.add_argument(
        "--prompts-per-level", type=int, help="sweep: requests per level (default: max(num-prompts, 4 x level))"
    )
    b.add_argument("--level-duration", type=float, default=120.0, help="sweep: time cap per level, s (default: 120)")
    b.add_argument(
        "--no-sweep-stop",
        action="store_true",
        help="sweep: run every level (by default it stops when throughput gains < 10%% while TTFT or E2E rise >= 25%%)",
    )
    b.add_argument("--sweep-refine", action="store_true", help="sweep: add the level between the last two at the stop")
    b.add_argument("--no-scrape-metrics", action="store_true", help="do not poll the server's /metrics during runs")
    b.add_argument(
        "--save-result", type=file_path, metavar="FILE", help="write the vllm-keyed JSON (with per-request arrays) here"
    )
    b.add_argument("--json", action="store_true", help="print the vllm-keyed JSON object")
    g = b.add_argument_group("Ray workers (pip install -r requirements-ray.txt)")
    g.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="send the measured requests from N Ray workers (the concurrency cap and the rate split between them)",
    )
    g.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the workers' Ray cluster, e.g. ray://10.0.0.5:10001 (default: N local workers on a Ray started here)",
    )
    max_rate.add_arguments(b)


_BENCH_FLAGS = {
    "max_concurrency": "--max-concurrency/--concurrency",  # aliases: name both, as either may have been typed
    "num_prompts": "--num-prompts",
    "num_warmups": "--num-warmups",
    "duration_s": "--duration",
    "timeout_s": "--timeout",
    "goodput_ms": "--goodput",
    "prompts": "--prompt",
    "levels": "--sweep",
    "sweep_max": "--sweep",
    "level_duration_s": "--level-duration",
    "prefix_len": "--prefix-repetition-prefix-len",
    "suffix_len": "--prefix-repetition-suffix-len",
    "num_prefixes": "--prefix-repetition-num-prefixes",
    "think_time_s": "--think-time",
    "trace_chunk_hash_size": "--timed-trace-chunk-hash-size",
    "num_workers": "--workers",
    **max_rate.FLAGS,
}


def _batching_text(frame: object) -> str:
    """The static-vs-continuous lines of a ``--batching compare`` run (from
    :func:`planner.loadtest.results.batching_frame`)."""
    lines = ["{s:{c}^{n}}".format(s=" Static vs continuous batching ", n=50, c="=")]
    for row in frame.to_dict(orient="records"):  # type: ignore[attr-defined]

        def num(value: object, fmt: str) -> str:
            return "n/a" if value is None or value != value else fmt.format(value)

        lines.append(f"{'Concurrency / batch size:':<40} {row['max_concurrency']}")
        lines.append(f"{'Static output throughput (tok/s):':<40} {num(row['static_output_throughput'], '{:.2f}')}")
        lines.append(
            f"{'Continuous output throughput (tok/s):':<40} {num(row['continuous_output_throughput'], '{:.2f}')}"
        )
        lines.append(f"{'Continuous / static:':<40} {num(row['throughput_ratio'], '{:.2f}x')}")
    if len(lines) == 1:
        lines.append("n/a: a run failed")
    return "\n".join(lines)


def _bench_text(result: LoadResult) -> str:
    """The vLLM-style summary table (``vllm bench serve`` console output, plus P90 and sample counts)."""
    m = result.metrics
    spec = result.settings
    # With no successful request, duration and throughputs are undefined (vLLM would print 0.00): n/a.
    measured = m.completed > 0

    def row(label: str, value: object, fmt: str = "{:.2f}") -> str:
        shown = "n/a" if value is None else (fmt.format(value) if isinstance(value, float) else str(value))
        return f"{label:<40} {shown}"

    def rate(value: float | None) -> float | None:
        return value if measured else None

    lines = [
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        row("Successful requests:", m.completed),
        row("Failed requests:", m.failed),
        row("Maximum request concurrency:", spec.max_concurrency),
        *([row("Batching (client):", "static batches")] if spec.batching == "static" else []),
        row("Request rate configured (RPS):", spec.request_rate),
        row("Benchmark duration (s):", rate(m.duration_s)),
        row("Total input tokens:", m.total_input_tokens),
        row("Total generated tokens:", m.total_output_tokens),
        row("Output tokens counted by:", result.output_tokens_method),
        row("Request throughput (req/s):", rate(m.request_throughput)),
    ]
    if m.request_goodput is not None:
        lines.append(row("Request goodput (req/s):", rate(m.request_goodput)))
    lines += [
        row("Output token throughput (tok/s):", rate(m.output_throughput)),
        row("Total Token throughput (tok/s):", rate(m.total_token_throughput)),
    ]
    titles = {
        "ttft": ("Time to First Token", "TTFT"),
        "tpot": ("Time per Output Token (excl. 1st token)", "TPOT"),
        "itl": ("Inter-token Latency", "ITL"),
        "e2el": ("End-to-end Latency", "E2EL"),
    }
    for key, (title, short) in titles.items():
        d = getattr(m, key)
        lines.append("{s:{c}^{n}}".format(s=title, n=50, c="-"))
        lines.append(row(f"Samples ({short}):", 0 if d is None else d.count))
        for stat, label in (("mean", "Mean"), ("median", "Median"), ("std", "Std"), ("p90", "P90"), ("p99", "P99")):
            value = None if d is None else getattr(d, f"{stat}_s")
            lines.append(row(f"{label} {short} (ms):", None if value is None else value * 1000))
    first = result.ttft_first_chunk
    lines.append("{s:{c}^{n}}".format(s="TTFT to first chunk (vllm bench serve)", n=50, c="-"))
    for stat, label in (("mean", "Mean"), ("median", "Median"), ("p99", "P99")):
        value = None if first is None else getattr(first, f"{stat}_s")
        lines.append(row(f"{label} TTFT first chunk (ms):", None if value is None else value * 1000))
    if result.input_calibration is not None:
        lines.append(row("Input lengths:", result.input_calibration.label))
    cache = result.prefix_cache
    if cache is not None:
        rate_text = "n/a" if cache.hit_rate is None else f"{cache.hit_rate:.1%}"
        lines.append(
            row("Prefix cache hit rate:", f"{rate_text} ({cache.hits_tokens:,.0f} of {cache.queries_tokens:,.0f})")
        )
    spec = result.spec_decode
    if spec is not None:
        rate, length = spec.acceptance_rate, spec.mean_acceptance_length
        lines.append(row("Spec decode acceptance rate:", "n/a" if rate is None else f"{rate:.1%}"))
        lines.append(row("Spec decode mean accept length:", "n/a" if length is None else f"{length:.2f}"))
        per_pos = ", ".join(f"{a:.2f}" for a in spec.per_position_acceptance) or "n/a"
        lines.append(row("Spec decode accepted per position:", per_pos))
        lines.append(row("Spec decode drafts:", f"{spec.num_drafts:,.0f}"))
    share = result.reusable_prefix_share
    if share is not None and result.settings.dataset_name != "random":
        lines.append(row("Reusable prefix (workload):", f"{share:.1%}"))
    if result.settings.flush_cache:
        lines.append(row("Prefix cache flushed first:", "yes" if result.cache_flushed else "no"))
    check = result.input_check
    if check is not None and check.requested_tokens is not None:
        lines.append(row("Input tokens asked / server-counted:", f"{check.requested_tokens} / {check.measured_tokens}"))
    lines.append("=" * 50)
    for kind, count in m.failures_by_kind:
        lines.append(f"failed: {count} x {kind}")
    first_error = next((r for r in result.records if not r.ok), None)
    if first_error is not None:
        lines.append(f"  e.g. {first_error.error_kind}: {first_error.error}")
    if result.num_workers is not None:
        counts = ", ".join(str(n) for n in result.worker_requests)
        lines.append(f"Ray workers: {result.num_workers} (requests per worker: {counts})")
    for line in result.worker_errors:
        lines.append(f"  {line}")
    if result.stopped is not None:
        lines.append(f"stopped by {result.stopped}: {result.cancelled} cancelled in flight, {result.not_sent} not sent")
    return "\n".join(lines)


def _sweep_text(points: Sequence[SweepPoint], knee: int | None, stopped: str | None) -> str:
    """One row per level, then the knee."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.1f}"

    head = f"{'conc':>5} {'ok':>5} {'fail':>5} {'req/s':>8} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9}"
    lines = [head + f" {'TPOT p50':>9} {'E2EL p50':>9}  (latencies in ms)"]
    for p in points:
        # no successful request: throughputs are undefined, not 0
        req_s = f"{p.request_throughput:.2f}" if p.completed else "n/a"
        out_s = f"{p.output_throughput:.1f}" if p.completed else "n/a"
        lines.append(
            f"{p.concurrency:>5} {p.completed:>5} {p.failed:>5} {req_s:>8} "
            f"{out_s:>10} {ms(p.ttft_median_s):>9} {ms(p.ttft_p99_s):>9} "
            f"{ms(p.tpot_median_s):>9} {ms(p.e2el_median_s):>9}" + (f"  stopped by {p.stopped}" if p.stopped else "")
        )
    if knee is None:
        lines.append("knee: none found (Kneedle on concurrency -> output tok/s; needs 3+ levels and a bend)")
    else:
        lines.append(f"knee: concurrency {knee} (Kneedle on concurrency -> output tok/s)")
    if stopped:
        lines.append(f"sweep stopped by {stopped}")
    return "\n".join(lines)


def _levels_note(jobs: Sequence[Job], num_prompts: int) -> str | None:
    """One line naming the sweep levels that send another number of requests than ``--num-prompts`` (a level sends
    at least ``rounds`` per slot, :meth:`planner.loadtest.sweep.SweepSpec.num_prompts`); None when none does."""
    counts = {j.level: j.settings.num_prompts for j in jobs if j.level is not None}
    other = [(level, n) for level, n in counts.items() if n != num_prompts]
    if not other:
        return None
    rounds = next(j.sweep_spec.rounds for j in jobs if j.sweep_spec is not None)
    sizes = ", ".join(f"{n} at concurrency {level}" for level, n in other)
    return (
        f"a sweep level sends at least {rounds} requests per slot: {sizes}, not --num-prompts {num_prompts} "
        "(--prompts-per-level N sends N at every level)"
    )


def _level_count_noted(run: SavedRun, num_prompts: int, rounds: int) -> SavedRun:
    """``run`` (a sweep level's saved run) with a note when it sent another number of requests than ``--num-prompts``
    (``rounds``: the least requests per slot of a level)."""
    if run.num_prompts is None or run.num_prompts == num_prompts:
        return run
    note = f"{run.num_prompts} requests at concurrency {run.max_concurrency}, not --num-prompts {num_prompts}"
    return replace(run, notes=(*run.notes, f"{note} (a sweep level sends at least {rounds} per slot)"))


def _turns_text(frame: object) -> str:
    """TTFT by turn: one row per turn (``planner.loadtest.results.ttft_by_turn``)."""
    lines = [
        "{s:{c}^{n}}".format(s=" TTFT by turn ", n=50, c="-"),
        f"{'turn':>5} {'requests':>9} {'prompt tok':>11} {'TTFT p50':>9} {'TTFT p90':>9}  (ms)",
    ]
    for row in frame.itertuples():  # type: ignore[attr-defined]
        tokens = "n/a" if row.mean_input_tokens is None else f"{row.mean_input_tokens:,.0f}"
        lines.append(f"{row.turn:>5} {row.requests:>9} {tokens:>11} {row.median_ttft_ms:>9.1f} {row.p90_ttft_ms:>9.1f}")
    return "\n".join(lines)


def _confidence_text(frame: object) -> str:
    """Mean ± 95% interval of each headline metric over the repeats."""
    lines = ["{s:{c}^{n}}".format(s=" Repeats: mean and 95% interval ", n=50, c="=")]
    for row in frame.itertuples():  # type: ignore[attr-defined]
        half = (
            ""
            if row.ci95_half_width_pct is None or row.ci95_half_width_pct != row.ci95_half_width_pct
            else (f" ± {row.ci95_half_width_pct:.1f}%")
        )
        low = "n/a" if row.ci95_low != row.ci95_low else f"{row.ci95_low:.2f}"
        high = "n/a" if row.ci95_high != row.ci95_high else f"{row.ci95_high:.2f}"
        lines.append(f"{row.metric:<24} {row.mean:>10.2f}{half:<10} [{low}, {high}]  n={row.runs}")
    return "\n".join(lines)


def _accepted(text: str) -> str:
    """What a flag accepts, in CLI words: a flag that is left out is not "None"."""
    return text.replace("or None for no cap", "or leave it out for no cap")


def _read_dataset(path: str, name: str, limit: int, chunk: int) -> tuple[tuple[str, ...], tuple]:
    """``(prompts, trace rows)`` of the dataset file, read no further than ``limit`` rows (custom: whole)."""
    from planner.loadtest.datasets import read_sharegpt, read_trace
    from planner.loadtest.settings import MAX_PROMPTS
    from planner.loadtest.workload import MAX_DATASET_BYTES, parse_prompts_jsonl

    try:
        with open(path, "rb") as handle:
            if name in TRACE_DATASETS:
                return (), read_trace(handle, name, limit=limit, chunk_hash_size=chunk)
            if name == "sharegpt":
                return read_sharegpt(handle, limit=MAX_PROMPTS), ()
            return parse_prompts_jsonl(handle.read(MAX_DATASET_BYTES + 1)), ()
    except OSError as exc:
        raise InvalidParameterError("dataset_path", path, f"a readable {name} file ({exc.strerror})") from exc


def _settings(args: argparse.Namespace, typed_slo: dict[tuple[str, float], str]) -> tuple[LoadSettings, tuple, tuple]:
    """The :class:`~planner.loadtest.settings.LoadSettings` the flags describe, the prompts and the trace rows they
    give."""
    from planner.loadtest.sweep import sweep_levels

    slo: list[tuple[str, float]] = []
    for item in args.goodput:
        key, sep, value = item.partition(":")
        try:
            slo.append((key.strip().lower(), float(value)))
        except ValueError:
            sep = ""
        if not sep:
            raise InvalidParameterError("goodput_ms", item, "KEY:MS with KEY ttft, tpot or e2el, e.g. ttft:500")
        typed_slo.setdefault(slo[-1], item)
    if args.sweep is not None and args.concurrency is not None:
        raise InvalidParameterError(
            "max_concurrency", args.concurrency, "no --max-concurrency/--concurrency with --sweep"
        )
    if args.sweep is not None:
        try:
            sweep_levels(args.sweep)
        except InvalidParameterError as exc:  # named after the flag, not sweep_levels' argument
            raise InvalidParameterError("levels", args.sweep, exc.accepted) from exc
        if not (isinstance(args.level_duration, float) and 0 < args.level_duration < math.inf):
            raise InvalidParameterError("level_duration_s", args.level_duration, "a finite number of seconds > 0")
    name = args.dataset_name or ("custom" if args.dataset_path or args.prompt else "random")
    if (
        name in ("custom", "sharegpt", *TRACE_DATASETS)
        and not args.dataset_path
        and not (name == "custom" and args.prompt)
    ):
        raise InvalidParameterError("dataset_path", None, f"a {name} file (--dataset-path FILE)")
    rows: tuple = ()
    prompts = tuple(args.prompt)
    if args.dataset_path:
        read, rows = _read_dataset(
            args.dataset_path, name, args.num_prompts + args.num_warmups, args.timed_trace_chunk_hash_size
        )
        prompts += read
    duration = args.duration
    if args.sweep is not None:  # every level is capped in time
        duration = args.level_duration if duration is None else min(duration, args.level_duration)
    settings = LoadSettings(
        mode="sweep" if args.sweep is not None else "run",
        sweep_max=args.sweep or 1,
        num_prompts=args.num_prompts,
        max_concurrency=args.concurrency,
        request_rate=args.request_rate,
        burstiness=args.burstiness,
        seed=args.seed,
        num_warmups=args.num_warmups,
        duration_s=duration,
        timeout_s=args.timeout,
        dataset_name=name,
        input_len=args.input_len,
        output_len=args.output_len,
        range_ratio=args.range_ratio,
        ignore_eos=args.ignore_eos,
        input_sizing=args.input_sizing,
        goodput_ms=tuple(slo),
        scrape_metrics=not args.no_scrape_metrics,
        prefix_len=args.prefix_repetition_prefix_len,
        suffix_len=args.prefix_repetition_suffix_len,
        num_prefixes=args.prefix_repetition_num_prefixes,
        num_turns=args.num_turns,
        think_time_s=args.think_time,
        time_scale=args.time_scale,
        trace_chunk_hash_size=args.timed_trace_chunk_hash_size,
        flush_cache=args.flush_cache,
        num_runs=args.num_runs,
        sweep_stop=not args.no_sweep_stop,
        sweep_refine=args.sweep_refine,
        num_workers=args.workers if args.workers is not None or args.ray_address is None else 1,
        ray_address=args.ray_address,
        batching=args.batching,
    )
    return settings, prompts, rows


def run(args: argparse.Namespace) -> int:
    """Run ``bench``; returns the exit code (0, 1 when every request failed, 2 for bad input)."""
    import asyncio
    from datetime import datetime

    from planner.loadtest.confidence import repeat_summary
    from planner.loadtest.results import batching_frame, saved_run, to_vllm_file, ttft_by_turn
    from planner.loadtest.sweep import SweepPoint, find_knee
    from planner.loadtest.worker import JobQueue, plan_jobs
    from planner.serving.endpoints import parse_endpoint_flag

    started = datetime.now()
    typed_slo: dict[tuple[str, float], str] = {}  # parsed SLO -> the --goodput item it came from
    try:
        text = args.endpoint
        head = text.split(":", 1)[0]
        if "=" not in head:  # KIND:URL -> named after its kind
            text = f"{head.strip().lower()}={text}"
        try:
            endpoint = parse_endpoint_flag(text)
        except InvalidParameterError as exc:  # echo what was typed, not the NAME= this function added
            raise InvalidParameterError(exc.name, args.endpoint, exc.accepted) from exc
        settings, prompts, rows = _settings(args, typed_slo)
        if settings.num_workers is not None:  # say it before any request when Ray is missing
            from planner.loadtest.ray_workers import import_ray

            import_ray()
        if args.find_max_rate or args.find_max_concurrency:  # a search of runs instead of one run or a sweep
            if rows:
                raise InvalidParameterError(
                    "--dataset-name",
                    settings.dataset_name,
                    "a generated workload for a search (a trace sets its own rate)",
                )
            return max_rate.search(args, endpoint, settings, prompts, started)
        # the start time in labels and sweep ids, as on the page: two saved runs of one endpoint import side by side
        tag = started.strftime("%H:%M:%S")
        jobs = plan_jobs(
            [endpoint], settings, prompts, tag=tag, prompts_per_level=args.prompts_per_level, trace_rows=rows
        )
        levels_note = _levels_note(jobs, args.num_prompts) if args.prompts_per_level is None else None
        if levels_note is not None:  # before the first request: the run is not the size that was typed
            print(f"{PROG}: note: {levels_note}", file=sys.stderr)
        queue = JobQueue(jobs, started=started, scrape=settings.scrape_metrics)
        outcomes = asyncio.run(queue.run())
        failed_to_start = next((o.error for o in outcomes if o.error is not None), None)
        if failed_to_start is not None:
            raise PlannerError(failed_to_start.split(": ", 1)[-1])
    except InvalidParameterError as exc:
        if exc.name == "dataset" or exc.name.startswith(("dataset line", "dataset row")):
            where = exc.name.removeprefix("dataset").strip()
            shown = repr(exc.value) if len(repr(exc.value)) <= 80 else repr(exc.value)[:77] + "..."
            what = args.dataset_path + (f" {where}" if where else "")
            if isinstance(exc, MalformedTextError):  # its value is the problem ("not valid JSON (...)"), not a value
                return error(PROG, f"--dataset-path {what}: {exc.value}; expected {exc.accepted}")
            return error(PROG, f"--dataset-path {what}: {shown} is not valid: expected {exc.accepted}")
        flag = _BENCH_FLAGS.get(exc.name, "--" + exc.name.replace("_", "-"))
        value = exc.value
        if exc.name == "goodput_ms" and isinstance(value, tuple):  # the parsed pair: show the typed item
            value = typed_slo.get(value, value)
        return not_valid(PROG, flag, value, _accepted(exc.accepted))
    except PlannerError as exc:
        return error(PROG, exc)
    results = [o.result for o in outcomes if o.result is not None]
    # One writer for vLLM-keyed results (planner.loadtest.results), so the page re-imports what the CLI saves.
    runs = [
        saved_run(o.result, o.job.label, started=started, sweep=o.job.sweep, repeat=o.job.repeat)
        for o in outcomes
        if o.result
    ]
    if levels_note is not None:  # and in the result: each level that sent another count says so
        rounds = next(j.sweep_spec.rounds for j in jobs if j.sweep_spec is not None)
        runs = [_level_count_noted(r, args.num_prompts, rounds) for r in runs]
    if settings.mode == "sweep":
        # with --batching compare the table is the continuous sweep's; the static one goes into the ratios below
        points = sorted(
            (
                SweepPoint.of(o.job.level or 0, o.result)
                for o in outcomes
                if o.result is not None and o.result.settings.batching != "static"
            ),
            key=lambda p: p.concurrency,
        )
        knee = find_knee([(p.concurrency, p.output_throughput) for p in points])
        stopped = "cancelled" if any(r.stopped == "cancelled" for r in results) else None
        saturated = next(iter(queue.sweep_stops.values()), None)
        if stopped is None and saturated is not None:
            stopped = f"saturation: {saturated}"
        document: object = [to_vllm_file(r) for r in runs]
        levels = [to_vllm_file(r, per_request=False) for r in runs]
        summary = {"endpoint": endpoint.name, "knee_concurrency": knee, "stopped_at_saturation": saturated}
        summary["levels"] = levels
        if settings.batching == "compare":
            summary["comparison"] = batching_frame(runs).to_dict(orient="records")
        shown = json.dumps(summary, indent=2) if args.json else _sweep_text(points, knee, stopped)
        if levels_note is not None and not args.json:
            shown += f"\nnote: {levels_note}"
        if settings.batching == "compare" and not args.json:
            shown += "\n\n" + _batching_text(batching_frame(runs))
    elif settings.batching == "compare":  # static, then continuous: both tables and the ratio
        document = [to_vllm_file(r) for r in runs]
        frame = batching_frame(runs)
        if args.json:
            pair = {"runs": [to_vllm_file(r, per_request=False) for r in runs]}
            pair["comparison"] = frame.to_dict(orient="records")
            shown = json.dumps(pair, indent=2)
        else:
            shown = "\n\n".join([*(_bench_text(r) for r in results), _batching_text(frame)])
    elif len(runs) > 1:  # repeats: every run, then the mean and 95% interval of each headline metric
        document = [to_vllm_file(r) for r in runs]
        table = repeat_summary(runs)
        if args.json:
            confidence = table.drop(columns="group").to_dict(orient="records")
            repeats = [to_vllm_file(r, per_request=False) for r in runs]
            shown = json.dumps({"endpoint": endpoint.name, "confidence": confidence, "runs": repeats}, indent=2)
        else:
            shown = "\n\n".join([*(_bench_text(r) for r in results), _confidence_text(table)])
    else:
        document = to_vllm_file(runs[0])
        shown = json.dumps(to_vllm_file(runs[0], per_request=False), indent=2) if args.json else _bench_text(results[0])
        turns = ttft_by_turn(runs)
        if len(turns) and not args.json:
            shown += "\n" + _turns_text(turns)
    if args.save_result:
        try:
            with open(args.save_result, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
        except OSError as exc:
            return error(PROG, f"--save-result {args.save_result!r}: {exc.strerror}")
    print(shown)
    for outcome in outcomes:  # each note named after its run (a sweep's levels differ)
        for note in outcome.result.notes if outcome.result is not None else ():
            print(f"{PROG}: note: {outcome.job.label}: {note.removeprefix(endpoint.name + ': ')}", file=sys.stderr)
    return verdict(PROG, [rec for r in results for rec in r.records])
