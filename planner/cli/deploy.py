"""``python -m planner deploy``: the files a platform engineer applies for a planned deployment
(:mod:`planner.deploy`): Kubernetes manifests, the vLLM production-stack Helm values or llm-d's values.

The deployment flags are ``plan``'s (``vllm serve`` spelling); ``--replicas N``, ``--target {kubernetes,
production-stack,llm-d}``, ``--out DIR`` (made if missing), ``--router`` (production-stack's routing logic) and
``--hpa-max-replicas M`` (kubernetes: an autoscaler on vLLM's queue, ``vllm:num_requests_waiting``). Prints the files
written (``--json``: ``{"files": [...]}``). Exit codes: 0, or 2 for bad input or a plan that does not fit.
"""

from __future__ import annotations

import argparse
import json

from planner.cli.command import Command
from planner.cli.plan import add_scenario_arguments, scenario_from_args, usage_error
from planner.errors import InvalidParameterError, PlannerError

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``deploy`` subcommand's flags, added to ``p``."""
    from planner.deploy.files import TARGETS
    from planner.fleet.routers import ROUTERS

    add_scenario_arguments(p)
    p.add_argument("--replicas", type=int, default=1, help="replicas of the deployment (default: 1)")
    p.add_argument(
        "--target", choices=TARGETS, default="kubernetes", help="what the files are for (default: kubernetes)"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write the files into (made if missing)")
    p.add_argument(
        "--router", choices=ROUTERS, default="round_robin", help="production-stack: the router's routing logic"
    )
    p.add_argument(
        "--hpa-max-replicas", type=int, metavar="M", help="kubernetes: an autoscaler on vLLM's queue, up to M replicas"
    )
    p.add_argument("--json", action="store_true", help='print {"files": [...]}')


def run(args: argparse.Namespace) -> int:
    """Run ``deploy``; returns the exit code (0, or 2 for bad input or a plan that does not fit)."""
    from planner.capacity.plan import plan
    from planner.deploy.files import deployment_files, write_files
    from planner.deploy.manifests import Pool

    try:
        scenario = scenario_from_args(args)
        if args.hpa_max_replicas is not None and not args.replicas <= args.hpa_max_replicas <= 10_000:
            raise InvalidParameterError(
                "hpa_max_replicas", args.hpa_max_replicas, f"an integer from --replicas ({args.replicas}) to 10,000"
            )
        if not 1 <= args.replicas <= 10_000:
            raise InvalidParameterError("replicas", args.replicas, "an integer from 1 to 10,000")
        result = plan(scenario, advise=False)
        if not result.fits:
            where = f"{result.model_id} on {result.num_gpus}x {result.gpu_name}"
            raise PlannerError(f"{where} does not fit: {result.reason}")
        files = deployment_files(
            Pool(result, args.replicas), args.target, router=args.router, hpa_max_replicas=args.hpa_max_replicas
        )
        written = write_files(files, args.out)
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    if args.json:
        print(json.dumps({"files": [str(p) for p in written]}, indent=2))
    else:
        print("\n".join(f"wrote {p}" for p in written))
    return 0


COMMAND = Command(
    "deploy",
    help="write the Kubernetes manifests, production-stack or llm-d Helm values of a planned deployment",
    description="Plan a vLLM deployment (plan's flags) and write what runs --replicas of it: Kubernetes manifests "
    "(Deployment with the vllm serve command, GPU requests, /health probes, Service, optional HPA), the vLLM "
    "production-stack chart's values or the llm-d-modelservice chart's values.",
    add_arguments=add_arguments,
    run=run,
)
