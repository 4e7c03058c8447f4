"""``python -m planner bench ... --find-max-rate --slo ttft_p99_ms=500`` (or ``--find-max-concurrency``): the highest
request rate (or concurrency) the endpoint serves within percentile SLOs, by a search over short bounded runs
(:func:`planner.loadtest.max_rate.find_max_rate`), printed step by step, then the answer.

``bench`` parses the endpoint and the workload flags and hands them here. ``--save-result`` writes every step as a
``vllm bench serve`` result (a JSON list, as a sweep's), which ``python -m planner calibrate`` reads to recalibrate
the predictor; ``--json`` prints ``{"variable", "value", "answer", "stopped", "slos", "steps": [...]}`` with each
step's level, verdict and ``vllm bench serve`` keys.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from planner import fields
from planner.errors import InvalidParameterError
from planner.loadtest.max_rate import MaxRateSpec, MaxRateStep, find_max_rate
from planner.loadtest.results import saved_run, to_vllm_file
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint

__all__ = ["add_arguments", "flag_of", "search"]

PROG = "python -m planner bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The search's flags, added to ``bench``'s: the two that choose it, then :class:`MaxRateSpec`'s own."""
    g = parser.add_argument_group("maximum rate under SLOs (as vllm bench sweep serve_sla)")
    g.add_argument(
        "--find-max-rate", action="store_true", help="search the highest --request-rate that meets every --slo"
    )
    g.add_argument(
        "--find-max-concurrency", action="store_true", help="search the highest --max-concurrency that meets them"
    )
    fields.add_arguments(g, MaxRateSpec)


def flag_of(name: str) -> str | None:
    """The flag of the search's field ``name``, as a message names it; None when the search has no such field."""
    if name == "step_duration_s":
        return "--duration"  # a step is capped by the run's --duration
    if name == "slo" or any(d.name == name for d in fields.declared(MaxRateSpec)):
        return fields.flag_of(MaxRateSpec, "slos" if name == "slo" else name)
    return None


def _line(step: MaxRateStep, spec: MaxRateSpec) -> str:
    level = (
        "burst"
        if math.isinf(step.level)
        else (f"{step.level:.3g} req/s" if spec.variable == "request_rate" else f"c={int(step.level)}")
    )
    return f"step {step.index}: {level:>14}  {step.throughput:8.3g} req/s measured  {step.why}"


def search(
    args: argparse.Namespace, endpoint: Endpoint, settings: LoadSettings, prompts: Sequence[str], started: datetime
) -> int:
    """Run the search ``args`` asks for on ``endpoint`` with ``settings``' workload; returns the exit code (0; 1
    when no step finished).

    Raises:
        InvalidParameterError: a search flag outside what is accepted (``bench`` names the flag).
    """
    if args.find_max_rate and args.find_max_concurrency:
        raise InvalidParameterError("find_max_concurrency", True, "one of --find-max-rate and --find-max-concurrency")
    if settings.mode == "sweep":
        raise InvalidParameterError("sweep", settings.sweep.sweep_max, "no --sweep with a maximum-rate search")
    if not args.slos:
        raise InvalidParameterError("slo", None, "at least one --slo, e.g. --slo ttft_p99_ms=500")
    spec = fields.from_args(
        MaxRateSpec,
        args,
        base=replace(settings, prompts=tuple(prompts) if settings.dataset_name != "random" else ()),
        slos=parse_slos(args.slos),  # each --slo item parsed on its own, so an error names the bad one
        variable="max_concurrency" if args.find_max_concurrency else "request_rate",
        step_duration_s=settings.duration_s if settings.duration_s is not None else 120.0,
    )
    tag = started.strftime("%H:%M:%S")

    def show(step: MaxRateStep) -> None:
        if not args.json:
            print(_line(step, spec), flush=True)

    result = asyncio.run(find_max_rate(endpoint, spec, on_step=show, started=started, tag=tag))
    runs = [
        saved_run(s.result, s.label, started=started, sweep=f"{endpoint.name} max-rate · {tag}") for s in result.steps
    ]
    if args.save_result:
        try:
            with open(args.save_result, "w", encoding="utf-8") as handle:
                json.dump([to_vllm_file(r) for r in runs], handle, indent=2)
        except OSError as exc:
            print(f"{PROG}: error: --save-result {args.save_result!r}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.json:
        steps = []
        for step, run in zip(result.steps, runs, strict=True):
            steps.append(
                {
                    "step": step.index,
                    "level": None if math.isinf(step.level) else step.level,
                    "burst": math.isinf(step.level),
                    "meets_slo": step.met,
                    "why": step.why,
                    **to_vllm_file(run, per_request=False),
                }
            )
        print(
            json.dumps(
                {
                    "variable": spec.variable,
                    "value": result.value if result.value is None or math.isfinite(result.value) else None,
                    "answer": result.answer,
                    "stopped": result.stopped,
                    "slos": [s.text for s in spec.slos],
                    "steps": steps,
                },
                indent=2,
            )
        )
    else:
        print(result.answer)
    return 0 if result.steps else 1
