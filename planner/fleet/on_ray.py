"""Fleet simulations on Ray: each routing policy's simulation a Ray task, on a cluster or a local Ray.

A fleet's replicas share one event clock, so one simulation stays in one process; what spreads is the simulations:
each policy of a comparison (and each what-if a caller hands over) runs as its own task, as the load test spreads its
requests (:mod:`planner.loadtest.ray_workers`, whose :func:`~planner.loadtest.ray_workers.start_ray` connects once per
process and ships this package to a cluster). Ray is optional (``requirements-ray.txt``); without it
:class:`~planner.errors.RayUnavailableError` says how to install it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.fleet.simulation import FleetRun, simulate_fleet
from planner.fleet.workload import FleetRequest
from planner.loadtest.ray_workers import start_ray
from planner.predict.shape import StepShape

__all__ = ["LOCAL", "simulate_on_ray"]

#: The ``ray_address`` that starts a local Ray in this process instead of joining a cluster.
LOCAL = "local"


def _one(shape: StepShape, requests: Sequence[FleetRequest], kwargs: Mapping[str, Any]) -> FleetRun:
    return simulate_fleet(shape, requests, **kwargs)


def simulate_on_ray(
    shape: StepShape,
    requests: Sequence[FleetRequest],
    jobs: Sequence[Mapping[str, Any]],
    *,
    address: str,
) -> tuple[FleetRun, ...]:
    """:func:`~planner.fleet.simulation.simulate_fleet` of ``shape`` and ``requests`` once per ``jobs`` entry (its
    keyword arguments: ``replicas``, ``router``, ...), each a Ray task, in ``jobs``' order.

    Args:
        shape / requests: what every job simulates.
        jobs: each simulation's keyword arguments.
        address: the Ray cluster (``ray://HOST:10001``, ``HOST:6379``) or :data:`LOCAL`.

    Raises:
        RayUnavailableError: Ray is not installed or the cluster cannot be reached.
        InvalidParameterError: from a simulation.
    """
    ray = start_ray(len(jobs), None if address == LOCAL else address)
    task = ray.remote(num_cpus=1)(_one)
    shape_ref, requests_ref = ray.put(shape), ray.put(tuple(requests))
    return tuple(ray.get([task.remote(shape_ref, requests_ref, dict(job)) for job in jobs]))
