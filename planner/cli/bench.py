"""``python -m planner bench``: load-test one endpoint as ``vllm bench serve`` does (flags in its spelling).

The workload flags are :class:`~planner.loadtest.settings.LoadSettings`' own declarations (and
:class:`~planner.loadtest.settings.SweepSettings`', :class:`~planner.loadtest.max_rate.MaxRateSpec`'s), added by
:func:`planner.fields.add_arguments`. The runs are planned by :func:`planner.loadtest.worker.plan_jobs` and run by
:class:`planner.loadtest.worker.JobQueue`, as on the Load Test page: the same requests, the same prompt sizing (the
server's tokenizer route by default), the same ``/metrics`` scraping, the same result files; the console tables are
:mod:`planner.cli.bench_text`'s. Exit codes: 0, 1 when every request failed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from planner import fields
from planner.cli import max_rate
from planner.cli.bench_text import batching_text, bench_text, confidence_text, sweep_text, turns_text
from planner.cli.command import Command
from planner.cli.messages import error, file_path, not_valid, verdict
from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.loadtest.settings import TRACE_DATASETS, LoadSettings

if TYPE_CHECKING:
    from planner.loadtest.results import SavedRun
    from planner.loadtest.worker import Job, JobOutcome
    from planner.serving.endpoints import Endpoint

__all__ = ["COMMAND", "add_arguments", "run"]

PROG = "python -m planner bench"


def add_arguments(b: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand's flags, added to ``b``."""
    b.add_argument("--endpoint", required=True, metavar="[NAME=]KIND:URL", help="e.g. vllm:http://127.0.0.1:8000")
    fields.add_arguments(b, LoadSettings)
    b.add_argument("--exact-input-len", action="store_true", help="(the default now: --input-sizing tokenize)")
    b.add_argument(
        "--dataset-path", type=file_path, metavar="FILE", help='the dataset\'s file (custom: {"prompt": ...} per line)'
    )
    b.add_argument(
        "--save-result", type=file_path, metavar="FILE", help="write the vllm-keyed JSON (with per-request arrays) here"
    )
    b.add_argument("--json", action="store_true", help="print the vllm-keyed JSON object")
    max_rate.add_arguments(b)


@dataclass(frozen=True)
class _Request:
    """What the command line asks for, read and checked: the endpoint, the settings, and the prompts and trace rows
    of a dataset file (or ``--prompt``)."""

    endpoint: Endpoint
    settings: LoadSettings
    prompts: tuple[str, ...]
    rows: tuple[Any, ...]


def _flag(name: str) -> str:
    """The flag(s) an error about the field ``name`` names."""
    return max_rate.flag_of(name) or fields.flag_of(LoadSettings, name)


def _accepted(text: str) -> str:
    """What a flag accepts, in CLI words: a flag that is left out is not "None"."""
    return text.replace("or None for no cap", "or leave it out for no cap")


def _endpoint(text: str) -> Endpoint:
    """The ``--endpoint`` (``KIND:URL`` is named after its kind).

    Raises:
        InvalidParameterError: not ``[NAME=]KIND:URL``, echoing what was typed (not the ``NAME=`` added to it).
    """
    from planner.serving.endpoints import parse_endpoint_flag

    head = text.split(":", 1)[0]
    named = text if "=" in head else f"{head.strip().lower()}={text}"
    try:
        return parse_endpoint_flag(named)
    except InvalidParameterError as exc:
        raise InvalidParameterError(exc.name, text, exc.accepted) from exc


def _goodput(items: Sequence[str], typed: dict[tuple[str, float], str]) -> tuple[tuple[str, float], ...]:
    """``--goodput KEY:MS ...`` as ``((key, ms), ...)``; ``typed`` gets the item each pair came from.

    Raises:
        InvalidParameterError: an item that is not ``KEY:MS`` with a number.
    """
    slos: list[tuple[str, float]] = []
    for item in items:
        key, sep, value = item.partition(":")
        try:
            slos.append((key.strip().lower(), float(value)))
        except ValueError:
            sep = ""
        if not sep:
            raise InvalidParameterError("goodput_ms", item, "KEY:MS with KEY ttft, tpot or e2el, e.g. ttft:500")
        typed.setdefault(slos[-1], item)
    return tuple(slos)


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


def _dataset(args: argparse.Namespace) -> tuple[str, tuple[str, ...], tuple]:
    """``(dataset name, prompts, trace rows)``: ``--dataset-name`` (else ``custom`` with a file or ``--prompt``,
    else ``random``), the ``--prompt`` texts and the ``--dataset-path`` file's.

    Raises:
        InvalidParameterError: a file dataset without its file, or a file that cannot be read.
    """
    name = args.dataset_name or ("custom" if args.dataset_path or args.prompts else "random")
    if (
        name in ("custom", "sharegpt", *TRACE_DATASETS)
        and not args.dataset_path
        and not (name == "custom" and args.prompts)
    ):
        raise InvalidParameterError("dataset_path", None, f"a {name} file (--dataset-path FILE)")
    prompts, rows = tuple(args.prompts), ()
    if args.dataset_path:
        limit = args.num_prompts + args.num_warmups
        read, rows = _read_dataset(args.dataset_path, name, limit, args.trace_chunk_hash_size)
        prompts += read
    return name, prompts, rows


def _settings(args: argparse.Namespace, typed_slo: dict[tuple[str, float], str]) -> tuple[LoadSettings, tuple, tuple]:
    """The :class:`~planner.loadtest.settings.LoadSettings` the flags describe, the prompts and the trace rows they
    give; ``typed_slo`` gets the ``--goodput`` item of each parsed SLO.

    Raises:
        InvalidParameterError: a flag outside what is accepted, naming its field (:func:`_flag` names the flag).
    """
    goodput = _goodput(args.goodput_ms, typed_slo)
    sweep = args.sweep_max is not None
    if sweep and args.max_concurrency is not None:
        raise InvalidParameterError(
            "max_concurrency", args.max_concurrency, "no --max-concurrency/--concurrency with --sweep"
        )
    name, prompts, rows = _dataset(args)
    duration = args.duration_s
    if sweep:  # every level is capped in time
        level = args.level_duration_s
        duration = level if duration is None else min(duration, level)
    settings = fields.from_args(
        LoadSettings,
        args,
        mode="sweep" if sweep else "run",
        sweep_max=args.sweep_max if sweep else 1,
        duration_s=duration,
        dataset_name=name,
        goodput_ms=goodput,
        prompts=(),  # given to the runs with the dataset's (plan_jobs)
        num_workers=args.num_workers if args.num_workers is not None or args.ray_address is None else 1,
    )
    return settings, prompts, rows


def _read_request(args: argparse.Namespace, typed_slo: dict[tuple[str, float], str]) -> _Request:
    """The endpoint, settings, prompts and rows the command line asks for; Ray imported when workers are asked for,
    so a missing Ray is said before any request.

    Raises:
        PlannerError: bad input (an :class:`InvalidParameterError` naming its field), or Ray missing.
    """
    endpoint = _endpoint(args.endpoint)
    settings, prompts, rows = _settings(args, typed_slo)
    if settings.num_workers is not None:
        from planner.loadtest.ray_workers import import_ray

        import_ray()
    return _Request(endpoint, settings, prompts, rows)


def _refused(args: argparse.Namespace, exc: InvalidParameterError, typed_slo: dict[tuple[str, float], str]) -> int:
    """The one error line of refused input: the dataset file and where in it, or the flag, its value and what it
    accepts; returns 2."""
    if exc.name == "dataset" or exc.name.startswith(("dataset line", "dataset row")):
        where = exc.name.removeprefix("dataset").strip()
        what = args.dataset_path + (f" {where}" if where else "")
        if isinstance(exc, MalformedTextError):  # its value is the problem ("not valid JSON (...)"), not a value
            return error(PROG, f"--dataset-path {what}: {exc.value}; expected {exc.accepted}")
        shown = repr(exc.value) if len(repr(exc.value)) <= 80 else repr(exc.value)[:77] + "..."
        return error(PROG, f"--dataset-path {what}: {shown} is not valid: expected {exc.accepted}")
    value = exc.value
    if exc.name == "goodput_ms" and isinstance(value, tuple):  # the parsed pair: show the typed item
        value = typed_slo.get(value, value)
    return not_valid(PROG, _flag(exc.name), value, _accepted(exc.accepted))


@dataclass(frozen=True)
class _Runs:
    """The runs made: their jobs, outcomes and saved runs, and how the sweeps ended."""

    jobs: tuple[Job, ...]
    outcomes: tuple[JobOutcome, ...]
    saved: tuple[SavedRun, ...]
    sweep_stops: dict[str, str]
    levels_note: str | None


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


def _run_jobs(request: _Request, started: datetime) -> _Runs:
    """Plan and run the jobs (a run, its repeats, or a sweep's levels), as the page does.

    Raises:
        PlannerError: a run could not start (its first line says why).
    """
    import asyncio

    from planner.loadtest.results import saved_run
    from planner.loadtest.worker import JobQueue, plan_jobs

    settings = request.settings
    # the start time in labels and sweep ids, as on the page: two saved runs of one endpoint import side by side
    tag = started.strftime("%H:%M:%S")
    jobs = plan_jobs([request.endpoint], settings, request.prompts, tag=tag, trace_rows=request.rows)
    note = _levels_note(jobs, settings.num_prompts) if settings.sweep.prompts_per_level is None else None
    if note is not None:  # before the first request: the run is not the size that was typed
        print(f"{PROG}: note: {note}", file=sys.stderr)
    queue = JobQueue(jobs, started=started, scrape=settings.scrape_metrics)
    outcomes = tuple(asyncio.run(queue.run()))
    failed_to_start = next((o.error for o in outcomes if o.error is not None), None)
    if failed_to_start is not None:
        raise PlannerError(failed_to_start.split(": ", 1)[-1])
    # one writer for vLLM-keyed results (planner.loadtest.results), so the page re-imports what the CLI saves
    saved = [
        saved_run(o.result, o.job.label, started=started, sweep=o.job.sweep, repeat=o.job.repeat)
        for o in outcomes
        if o.result
    ]
    if note is not None:  # and in the result: each level that sent another count says so
        rounds = next(j.sweep_spec.rounds for j in jobs if j.sweep_spec is not None)
        saved = [_level_count_noted(r, settings.num_prompts, rounds) for r in saved]
    return _Runs(jobs, outcomes, tuple(saved), dict(queue.sweep_stops), note)


@dataclass(frozen=True)
class _Report:
    """What the command prints and what ``--save-result`` writes."""

    shown: str
    document: object


def _sweep_report(args: argparse.Namespace, endpoint: Endpoint, settings: LoadSettings, runs: _Runs) -> _Report:
    """A sweep: a row per level and the knee (with ``--batching compare`` the continuous sweep's, then the ratios)."""
    from planner.loadtest.results import batching_frame, to_vllm_file
    from planner.loadtest.sweep import SweepPoint, find_knee

    results = [o.result for o in runs.outcomes if o.result is not None]
    points = sorted(
        (
            SweepPoint.of(o.job.level or 0, o.result)
            for o in runs.outcomes
            if o.result and o.result.settings.batching != "static"
        ),
        key=lambda p: p.concurrency,
    )
    knee = find_knee([(p.concurrency, p.output_throughput) for p in points])
    saturated = next(iter(runs.sweep_stops.values()), None)
    stopped = "cancelled" if any(r.stopped == "cancelled" for r in results) else None
    if stopped is None and saturated is not None:
        stopped = f"saturation: {saturated}"
    document = [to_vllm_file(r) for r in runs.saved]
    if args.json:
        summary: dict[str, object] = {"endpoint": endpoint.name, "knee_concurrency": knee}
        summary |= {
            "stopped_at_saturation": saturated,
            "levels": [to_vllm_file(r, per_request=False) for r in runs.saved],
        }
        if settings.batching == "compare":
            summary["comparison"] = batching_frame(list(runs.saved)).to_dict(orient="records")
        return _Report(json.dumps(summary, indent=2), document)
    shown = sweep_text(points, knee, stopped)
    if runs.levels_note is not None:
        shown += f"\nnote: {runs.levels_note}"
    if settings.batching == "compare":
        shown += "\n\n" + batching_text(batching_frame(list(runs.saved)))
    return _Report(shown, document)


def _compare_report(args: argparse.Namespace, runs: _Runs) -> _Report:
    """``--batching compare``: the static run, the continuous one, and the throughput ratio."""
    from planner.loadtest.results import batching_frame, to_vllm_file

    frame = batching_frame(list(runs.saved))
    document = [to_vllm_file(r) for r in runs.saved]
    if args.json:
        pair = {"runs": [to_vllm_file(r, per_request=False) for r in runs.saved]}
        return _Report(json.dumps(pair | {"comparison": frame.to_dict(orient="records")}, indent=2), document)
    tables = [bench_text(o.result) for o in runs.outcomes if o.result is not None]
    return _Report("\n\n".join([*tables, batching_text(frame)]), document)


def _repeats_report(args: argparse.Namespace, endpoint: Endpoint, runs: _Runs) -> _Report:
    """``--num-runs K``: every run, then the mean and 95% interval of each headline metric."""
    from planner.loadtest.confidence import repeat_summary
    from planner.loadtest.results import to_vllm_file

    table = repeat_summary(list(runs.saved))
    document = [to_vllm_file(r) for r in runs.saved]
    if args.json:
        confidence = table.drop(columns="group").to_dict(orient="records")
        repeats = [to_vllm_file(r, per_request=False) for r in runs.saved]
        return _Report(
            json.dumps({"endpoint": endpoint.name, "confidence": confidence, "runs": repeats}, indent=2), document
        )
    tables = [bench_text(o.result) for o in runs.outcomes if o.result is not None]
    return _Report("\n\n".join([*tables, confidence_text(table)]), document)


def _single_report(args: argparse.Namespace, runs: _Runs) -> _Report:
    """One run: vLLM's table (and TTFT by turn for a multi-turn workload) or its JSON."""
    from planner.loadtest.results import to_vllm_file, ttft_by_turn

    (saved,) = runs.saved
    if args.json:
        return _Report(json.dumps(to_vllm_file(saved, per_request=False), indent=2), to_vllm_file(saved))
    result = next(o.result for o in runs.outcomes if o.result is not None)
    shown = bench_text(result)
    turns = ttft_by_turn([saved])
    if len(turns):
        shown += "\n" + turns_text(turns)
    return _Report(shown, to_vllm_file(saved))


def _report(args: argparse.Namespace, request: _Request, runs: _Runs) -> _Report:
    """The report of the runs, by what was asked: a sweep, a static-vs-continuous pair, repeats, or one run."""
    settings = request.settings
    if settings.mode == "sweep":
        return _sweep_report(args, request.endpoint, settings, runs)
    if settings.batching == "compare":
        return _compare_report(args, runs)
    if len(runs.saved) > 1:
        return _repeats_report(args, request.endpoint, runs)
    return _single_report(args, runs)


def _save(path: str, document: object) -> None:
    """Write ``document`` as JSON to ``--save-result``.

    Raises:
        OSError: the file cannot be written.
    """
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)


def _print_notes(endpoint: Endpoint, outcomes: Sequence[JobOutcome]) -> None:
    """Each run's notes on stderr, named after its run (a sweep's levels differ)."""
    for outcome in outcomes:
        for note in outcome.result.notes if outcome.result is not None else ():
            print(f"{PROG}: note: {outcome.job.label}: {note.removeprefix(endpoint.name + ': ')}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run ``bench``; returns the exit code (0, 1 when every request failed, 2 for bad input)."""
    started = datetime.now()
    typed_slo: dict[tuple[str, float], str] = {}  # parsed SLO -> the --goodput item it came from
    try:
        request = _read_request(args, typed_slo)
        if args.find_max_rate or args.find_max_concurrency:  # a search of runs instead of one run or a sweep
            if request.rows:
                accepted = "a generated workload for a search (a trace sets its own rate)"
                raise InvalidParameterError("dataset_name", request.settings.dataset_name, accepted)
            return max_rate.search(args, request.endpoint, request.settings, request.prompts, started)
        runs = _run_jobs(request, started)
    except InvalidParameterError as exc:
        return _refused(args, exc, typed_slo)
    except PlannerError as exc:
        return error(PROG, exc)
    report = _report(args, request, runs)
    if args.save_result:
        try:
            _save(args.save_result, report.document)
        except OSError as exc:
            return error(PROG, f"--save-result {args.save_result!r}: {exc.strerror}")
    print(report.shown)
    _print_notes(request.endpoint, runs.outcomes)
    return verdict(PROG, [rec for o in runs.outcomes if o.result is not None for rec in o.result.records])


COMMAND = Command(
    "bench",
    help="load-test one endpoint like vllm bench serve (TTFT/TPOT/ITL/E2EL, throughput)",
    description="Load-test one endpoint and report what vllm bench serve reports, under its key names. Flags are "
    "spelled as vllm bench serve spells them.",
    add_arguments=add_arguments,
    run=run,
)
