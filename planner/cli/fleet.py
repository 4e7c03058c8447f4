"""``python -m planner fleet``: N replicas of a planned deployment behind a router, each routing policy simulated on
the same workload (:func:`planner.fleet.view.fleet_view`).

The deployment flags are ``plan``'s (``vllm serve`` spelling), the workload flags ``bench``'s (``vllm bench serve``
spelling: ``--dataset-name random|prefix_repetition|multi_turn|timed_trace|burstgpt``, ``--num-turns``,
``--think-time``, ``--prefix-repetition-*``, ``--dataset-path`` for a trace), the fleet's ``--replicas``, ``--router``
(repeat it; default: all four policies) and ``--router-refresh-s``. ``--json`` prints ``{"policies": [{"router",
"median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "output_throughput", "prefix_cache_hit_rate", "replica_requests",
...}, ...]}``. ``--ray-address`` runs each policy's simulation as a Ray task on that cluster (``local``: a Ray started
here). Exit codes: 0, or 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from planner.cli.command import Command
from planner.cli.messages import file_path
from planner.cli.plan import add_scenario_arguments, scenario_from_args, usage_error
from planner.cli.predict import add_workload_arguments, read_profile, workload_from_args
from planner.errors import InvalidParameterError, PlannerError

if TYPE_CHECKING:
    from planner.fleet.view import FleetView
    from planner.loadtest.settings import LoadSettings

__all__ = ["COMMAND", "add_arguments", "run"]


#: The workload's dataset flags, as ``bench`` declares them (:class:`~planner.loadtest.settings.LoadSettings`).
_DATASET_FIELDS = (
    "dataset_name",
    "prefix_len",
    "suffix_len",
    "num_prefixes",
    "num_turns",
    "think_time_s",
    "time_scale",
    "trace_chunk_hash_size",
    "ray_address",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``fleet`` subcommand's flags, added to ``p``."""
    from planner import fields
    from planner.fleet.settings import FleetSettings
    from planner.loadtest.settings import LoadSettings

    add_scenario_arguments(p)
    add_workload_arguments(p)
    g = p.add_argument_group("workload datasets (vllm bench serve flags)")
    fields.add_arguments(g, LoadSettings, _DATASET_FIELDS)
    g.add_argument("--dataset-path", type=file_path, metavar="FILE", help="a timed_trace (JSONL) or burstgpt (CSV)")
    fields.add_arguments(p.add_argument_group("fleet"), FleetSettings)
    p.add_argument("--json", action="store_true", help="print one JSON object with a row per policy")


def _workload(args: argparse.Namespace) -> LoadSettings:
    from dataclasses import replace

    from planner.loadtest.datasets import read_trace
    from planner.loadtest.settings import TRACE_DATASETS

    if args.dataset_name is None:
        args = argparse.Namespace(**{**vars(args), "dataset_name": "random"})
    base = workload_from_args(args)
    rows: tuple = ()
    if base.dataset_name in TRACE_DATASETS:
        if not args.dataset_path:
            raise InvalidParameterError("dataset_path", None, f"a {base.dataset_name} file (--dataset-path FILE)")
        try:
            with open(args.dataset_path, "rb") as handle:
                rows = read_trace(
                    handle, base.dataset_name, limit=base.num_prompts, chunk_hash_size=base.trace_chunk_hash_size
                )
        except OSError as exc:
            raise InvalidParameterError(
                "dataset_path", args.dataset_path, f"a readable {base.dataset_name} file ({exc.strerror})"
            ) from exc
    return replace(base, trace_rows=rows, num_prompts=min(base.num_prompts, len(rows)) if rows else base.num_prompts)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def _text(v: FleetView) -> str:
    lines = [
        f"{v.plan.model_id} on {v.fleet.replicas} replica(s) of {v.plan.num_gpus}x {v.plan.gpu_name}: "
        f"{v.workload.num_prompts} requests ({v.workload.dataset_name})",
        f"{'router':<14} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'out tok/s':>10} {'hit rate':>9} "
        f"{'imbalance':>9}  requests per replica",
    ]
    for run in v.runs:
        j = run.to_json()
        hit = "n/a" if j["prefix_cache_hit_rate"] is None else f"{j['prefix_cache_hit_rate']:.1%}"
        lines.append(
            f"{j['router']:<14} {_ms(j['median_ttft_ms']):>9} {_ms(j['p99_ttft_ms']):>9} "
            f"{_ms(j['median_tpot_ms']):>9} {j['output_throughput']:>10,.0f} {hit:>9} {j['load_imbalance']:>9.2f}  "
            + " ".join(str(n) for n in j["replica_requests"])
        )
    cpu = sum(run.cpu_s for run in v.runs)
    lines.append(f"(ms; simulated in {cpu:.2f} s of CPU; coefficients: {v.calibration})")
    lines += [f"note: {note}" for note in v.notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``fleet``; returns the exit code (0, or 2 for bad input or a deployment that does not fit)."""
    from planner import fields
    from planner.fleet.settings import FleetSettings
    from planner.fleet.view import fleet_view

    try:
        scenario = scenario_from_args(args)
        workload = _workload(args)
        try:
            fleet = fields.from_args(FleetSettings, args)
        except InvalidParameterError as exc:  # a field's name -> its flag
            raise InvalidParameterError(fields.flag_of(FleetSettings, exc.name), exc.value, exc.accepted) from exc
        view = fleet_view(
            scenario, workload, fleet, profile=read_profile(args.calibration), ray_address=workload.ray_address
        )
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    print(json.dumps(view.to_json(), indent=2) if args.json else _text(view))
    return 0


COMMAND = Command(
    "fleet",
    help="N replicas behind a router: each routing policy simulated on one workload (prefix-cache hits, load)",
    description="Simulate --replicas replicas of a planned vLLM deployment behind each --router policy "
    "(round_robin, least_loaded, kv_aware, prefix_aware), on one event clock, each replica with its own prefix "
    "cache; the workload is the load test's (shared prefixes, conversations, traces). --ray-address runs each "
    "policy's simulation as a Ray task on that cluster ('local': a Ray started here).",
    add_arguments=add_arguments,
    run=run,
)
