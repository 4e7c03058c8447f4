"""The Fleet page's one call (and the CLI's): plan a deployment, build the workload's requests, simulate each routing
policy on the same fleet, and say what a reader must know.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from planner import display
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.catalog.model_spec import ModelSpec
from planner.deploy.files import TARGETS, deployment_files
from planner.deploy.manifests import Pool
from planner.fleet.settings import FleetSettings
from planner.fleet.simulation import FleetRun, simulate_fleet
from planner.fleet.workload import fleet_requests
from planner.loadtest.settings import LoadSettings
from planner.predict.api import DEFAULT_SOURCE, planned_shape
from planner.predict.calibration import CalibrationProfile
from planner.predict.shape import StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS

__all__ = ["FleetView", "fleet_view"]


@dataclass(frozen=True)
class FleetView:
    """Each routing policy's simulation of one fleet on one workload.

    Attributes:
        plan / shape: one replica's capacity plan and step shape.
        workload: the Load Test settings the requests were built from.
        fleet: replicas, policies, the router's refresh period.
        runs: one per policy, in ``fleet.routers``' order.
        calibration: where the step model's coefficients come from, in words.
        notes: what a reader of the figures must know.
        files: per deployment target (:data:`planner.deploy.files.TARGETS`), the files that run this fleet (the
            production-stack router set to the policy with the lowest p99 TTFT here).
    """

    plan: Plan
    shape: StepShape
    workload: LoadSettings
    fleet: FleetSettings
    runs: tuple[FleetRun, ...]
    calibration: str = DEFAULT_SOURCE
    notes: tuple[str, ...] = ()
    files: dict[str, dict[str, str]] = field(default_factory=dict, compare=False)

    @property
    def best(self) -> FleetRun | None:
        """The policy with the lowest p99 TTFT (ties: the higher prefix-cache hit rate)."""

        def key(run: FleetRun) -> tuple[float, float]:
            p99 = run.metrics.ttft.p99_s if run.metrics.ttft else None
            return (math.inf if p99 is None else p99, -(run.prefix_cache_hit_rate or 0.0))

        return min(self.runs, key=key, default=None)

    @property
    def answer(self) -> str:
        """The headline: the policy with the lowest p99 TTFT, with its hit rate and load imbalance."""
        best = self.best
        if best is None:
            return "No routing policy was simulated."
        p99 = best.metrics.ttft.p99_s if best.metrics.ttft else None
        return (
            f"{best.router} gives the lowest p99 TTFT on {self.fleet.replicas} replicas: {display.ms(p99, 0)}, "
            f"prefix-cache hit rate {display.percent(best.prefix_cache_hit_rate)}, load imbalance "
            f"{display.number(best.load_imbalance, 2)}."
        )

    def to_json(self) -> dict[str, Any]:
        """``{"model", "gpu", "tensor_parallel_size", "replicas", "num_requests", "policies": [...], "notes"}``, each
        policy :meth:`planner.fleet.simulation.FleetRun.to_json`."""
        return {
            "model": self.plan.model_id,
            "gpu": self.shape.gpu_id,
            "tensor_parallel_size": self.shape.tensor_parallel_size,
            "replicas": self.fleet.replicas,
            "num_requests": self.workload.num_prompts,
            "policies": [run.to_json() for run in self.runs],
            "notes": list(self.notes),
        }


def fleet_view(
    scenario: Scenario,
    workload: LoadSettings,
    fleet: FleetSettings,
    *,
    profile: CalibrationProfile | None = None,
    spec: ModelSpec | None = None,
    plan: Plan | None = None,
    ray_address: str | None = None,
) -> FleetView:
    """Simulate ``workload`` on ``fleet.replicas`` replicas of ``scenario`` behind each of ``fleet.routers``.

    Args:
        scenario: one replica's deployment (vLLM).
        workload: the Load Test workload (:func:`planner.fleet.workload.fleet_requests`: ``random``,
            ``prefix_repetition``, ``multi_turn``, traces with their rows).
        fleet: replicas, policies and the router's refresh period.
        profile: calibrated coefficients; None = the defaults.
        spec / plan: the model and the plan when the caller has them.
        ray_address: run the policies as Ray tasks on this cluster (``local``: a Ray started here); None = here.

    Returns:
        The view.

    Raises:
        InvalidParameterError: a deployment that does not fit or cannot be predicted, a workload of prompt text, a
            request longer than ``max_model_len``.
        RayUnavailableError: ``ray_address`` given and Ray missing or unreachable.
    """
    plan, shape = planned_shape(scenario, plan=plan, spec=spec)
    coefficients = profile.coefficients if profile else DEFAULT_COEFFICIENTS
    source = DEFAULT_SOURCE if profile is None else f"calibrated on {len(profile.runs)} run(s) ({profile.gpu})"
    requests = fleet_requests(workload)
    common = {
        "replicas": fleet.replicas,
        "router_refresh_s": fleet.router_refresh_s,
        "max_concurrency": workload.max_concurrency,
        "think_time_s": workload.think_time_s,
        "coefficients": coefficients,
        "slo_ms": dict(workload.goodput_ms),
    }
    jobs = [{**common, "router": router} for router in fleet.routers]
    if ray_address:
        from planner.fleet.on_ray import simulate_on_ray  # the load test's Ray module brings its HTTP clients

        runs = simulate_on_ray(shape, requests, jobs, address=ray_address)
    else:
        runs = tuple(simulate_fleet(shape, requests, **job) for job in jobs)
    notes = []
    if workload.dataset_name == "multi_turn":
        notes.append(
            "each turn sends the earlier answers back as the tokens the replica generated (the engine's best case: a "
            "server that re-tokenizes the answer's text can hit less)"
        )
    if any(r.preemptions for run in runs for r in run.replicas):
        notes.append("some replicas ran out of KV blocks and preempted requests (recomputed)")
    if fleet.router_refresh_s and set(fleet.routers) & {"kv_aware", "prefix_aware"}:
        notes.append(
            f"kv_aware and prefix_aware see the replicas as they were at the last refresh (every "
            f"{fleet.router_refresh_s:g} s)"
        )
    view = FleetView(plan, shape, workload, fleet, runs, source, tuple(notes))
    router = view.best.router if view.best is not None else "round_robin"
    files = {t: deployment_files(Pool(plan, fleet.replicas), t, router=router) for t in TARGETS}
    return FleetView(plan, shape, workload, fleet, runs, source, tuple(notes), files)
