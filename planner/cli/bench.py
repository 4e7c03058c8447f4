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
from typing import TYPE_CHECKING

from planner.cli import max_rate
from planner.cli.messages import error, not_valid
from planner.errors import InvalidParameterError, PlannerError
from planner.loadtest.settings import INPUT_SIZINGS, LoadSettings

if TYPE_CHECKING:
    from planner.loadtest.runner import LoadResult
    from planner.loadtest.sweep import SweepPoint
    from planner.serving.streaming import RequestRecord

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
    b.add_argument("--input-len", type=int, default=128, help="synthetic prompt length, text tokens (default: 128)")
    b.add_argument(
        "--input-sizing",
        choices=INPUT_SIZINGS,
        default="tokenize",
        help="tokenize: the server's tokenizer route (default); token_ids: token-id prompts on /v1/completions "
        "(vLLM, SGLang); words: one word per token, an estimate",
    )
    b.add_argument("--exact-input-len", action="store_true", help="(the default now: --input-sizing tokenize)")
    b.add_argument("--output-len", type=int, default=128, help="max_tokens of each request (default: 128)")
    b.add_argument("--range-ratio", type=float, default=0.0, help="lengths from [L(1-r), L(1+r)] (default: 0)")
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
    b.add_argument("--dataset-path", metavar="FILE.jsonl", help='prompts file: {"prompt": ...} per line (vLLM custom)')
    b.add_argument("--sweep", type=int, metavar="N", help="concurrency sweep 1, 2, 4, ... N; prints a row per level")
    b.add_argument(
        "--prompts-per-level", type=int, help="sweep: requests per level (default: max(num-prompts, 4 x level))"
    )
    b.add_argument("--level-duration", type=float, default=120.0, help="sweep: time cap per level, s (default: 120)")
    b.add_argument("--no-scrape-metrics", action="store_true", help="do not poll the server's /metrics during runs")
    b.add_argument("--save-result", metavar="FILE", help="write the vllm-keyed JSON (with per-request arrays) here")
    b.add_argument("--json", action="store_true", help="print the vllm-keyed JSON object")
    max_rate.add_arguments(b)


_BENCH_FLAGS = {
    "max_concurrency": "--concurrency",
    "num_prompts": "--num-prompts",
    "num_warmups": "--num-warmups",
    "duration_s": "--duration",
    "timeout_s": "--timeout",
    "goodput_ms": "--goodput",
    "prompts": "--prompt",
    "levels": "--sweep",
    "sweep_max": "--sweep",
    "level_duration_s": "--level-duration",
    **max_rate.FLAGS,
}


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
        row("Request rate configured (RPS):", spec.request_rate),
        row("Benchmark duration (s):", rate(m.duration_s)),
        row("Total input tokens:", m.total_input_tokens),
        row("Total generated tokens:", m.total_output_tokens),
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
    check = result.input_check
    if check is not None and check.requested_tokens is not None:
        lines.append(row("Input tokens asked / server-counted:", f"{check.requested_tokens} / {check.measured_tokens}"))
    lines.append("=" * 50)
    for kind, count in m.failures_by_kind:
        lines.append(f"failed: {count} x {kind}")
    first_error = next((r for r in result.records if not r.ok), None)
    if first_error is not None:
        lines.append(f"  e.g. {first_error.error_kind}: {first_error.error}")
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


def _all_failed(records: Sequence[RequestRecord]) -> str | None:
    """When requests were sent and none succeeded: "all N requests failed; most common: KIND (M of N): MESSAGE"
    (MESSAGE from the first request of that kind); else None."""
    from collections import Counter

    if not records or any(r.ok for r in records):
        return None
    kinds = Counter(r.error_kind or "error" for r in records)
    kind, count = kinds.most_common(1)[0]
    example = next(r.error for r in records if (r.error_kind or "error") == kind)
    n = len(records)
    what = f"all {n} request{'s' if n != 1 else ''} failed"
    return f"{what}; most common: {kind} ({count} of {n})" + (f": {example}" if example else "")


def _accepted(text: str) -> str:
    """What a flag accepts, in CLI words: a flag that is left out is not "None"."""
    return text.replace("or None for no cap", "or leave it out for no cap")


def _read_dataset(path: str) -> tuple[str, ...]:
    from planner.loadtest.workload import MAX_DATASET_BYTES, parse_prompts_jsonl

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_DATASET_BYTES + 1)
    except OSError as exc:
        raise InvalidParameterError("dataset_path", path, f"a readable JSONL file ({exc.strerror})") from exc
    return parse_prompts_jsonl(data)


def _settings(args: argparse.Namespace, typed_slo: dict[tuple[str, float], str]) -> tuple[LoadSettings, tuple]:
    """The :class:`~planner.loadtest.settings.LoadSettings` the flags describe, and the prompts they give."""
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
        raise InvalidParameterError("max_concurrency", args.concurrency, "no --concurrency with --sweep")
    if args.sweep is not None:
        try:
            sweep_levels(args.sweep)
        except InvalidParameterError as exc:  # named after the flag, not sweep_levels' argument
            raise InvalidParameterError("levels", args.sweep, exc.accepted) from exc
        if not (isinstance(args.level_duration, float) and 0 < args.level_duration < math.inf):
            raise InvalidParameterError("level_duration_s", args.level_duration, "a finite number of seconds > 0")
    prompts = tuple(args.prompt) + (_read_dataset(args.dataset_path) if args.dataset_path else ())
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
        dataset_name="custom" if prompts else "random",
        input_len=args.input_len,
        output_len=args.output_len,
        range_ratio=args.range_ratio,
        ignore_eos=args.ignore_eos,
        input_sizing=args.input_sizing,
        goodput_ms=tuple(slo),
        scrape_metrics=not args.no_scrape_metrics,
    )
    return settings, prompts


def run(args: argparse.Namespace) -> int:
    """Run ``bench``; returns the exit code (0, 1 when every request failed, 2 for bad input)."""
    import asyncio
    from datetime import datetime

    from planner.loadtest.results import saved_run, to_vllm_file
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
        settings, prompts = _settings(args, typed_slo)
        if args.find_max_rate or args.find_max_concurrency:  # a search of runs instead of one run or a sweep
            return max_rate.search(args, endpoint, settings, prompts, started)
        # the start time in labels and sweep ids, as on the page: two saved runs of one endpoint import side by side
        tag = started.strftime("%H:%M:%S")
        jobs = plan_jobs([endpoint], settings, prompts, tag=tag, prompts_per_level=args.prompts_per_level)
        queue = JobQueue(jobs, started=started, scrape=settings.scrape_metrics)
        outcomes = asyncio.run(queue.run())
        failed_to_start = next((o.error for o in outcomes if o.error is not None), None)
        if failed_to_start is not None:
            raise PlannerError(failed_to_start.split(": ", 1)[-1])
    except InvalidParameterError as exc:
        if exc.name == "dataset" or exc.name.startswith("dataset line"):
            where = exc.name.removeprefix("dataset").strip()
            shown = repr(exc.value) if len(repr(exc.value)) <= 80 else repr(exc.value)[:77] + "..."
            what = args.dataset_path + (f" {where}" if where else "")
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
    runs = [saved_run(o.result, o.job.label, started=started, sweep=o.job.sweep) for o in outcomes if o.result]
    if settings.mode == "sweep":
        points = [SweepPoint.of(o.job.level or 0, o.result) for o in outcomes if o.result is not None]
        knee = find_knee([(p.concurrency, p.output_throughput) for p in points])
        stopped = "cancelled" if any(r.stopped == "cancelled" for r in results) else None
        document: object = [to_vllm_file(r) for r in runs]
        levels = [to_vllm_file(r, per_request=False) for r in runs]
        summary = {"endpoint": endpoint.name, "knee_concurrency": knee, "levels": levels}
        shown = json.dumps(summary, indent=2) if args.json else _sweep_text(points, knee, stopped)
    else:
        document = to_vllm_file(runs[0])
        shown = json.dumps(to_vllm_file(runs[0], per_request=False), indent=2) if args.json else _bench_text(results[0])
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
    failure = _all_failed([rec for r in results for rec in r.records])
    if failure is not None:
        sys.stdout.flush()  # the results first, then the verdict as the last stderr line
        print(f"{PROG}: error: {failure}", file=sys.stderr)
        return 1
    return 0
