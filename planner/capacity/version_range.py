"""A scenario's figures over the vLLM versions still in use, for when the user does not know their version.

Most people planning a deployment do not know which vLLM release will serve it, and the releases account for
memory differently (:data:`planner.capacity.engines.vllm.VERSION_PROFILES`): the same Llama-3.1-8B on an H100 has
4.76 GiB of activation in v0.11 and 1.89 GiB in v0.19 (logs 32 and 38). With no ``engine_version`` the plan gives
the newest version's figures and, beside them, the range over the first release of every profile from
:data:`OLDEST_IN_USE` on, with the version that sets each end.
"""

from __future__ import annotations

from dataclasses import replace

from planner.capacity.engines.vllm import NEWEST_VERSION, VERSION_PROFILES, plan_vllm
from planner.capacity.result import VersionFigures, VersionRange
from planner.capacity.scenario import Scenario
from planner.catalog.gpus import GPU
from planner.catalog.model_spec import ModelSpec

__all__ = ["OLDEST_IN_USE", "version_range", "versions_in_use"]

#: The oldest release the range covers: v0.10.0 (July 2025), the first with the V1 engine's hybrid KV-cache
#: manager; the V0 engine was removed in the releases after it, and older releases are planned only on request.
OLDEST_IN_USE = (0, 10, 0)


def versions_in_use() -> tuple[str, ...]:
    """The versions the range plans: the first release of each profile from :data:`OLDEST_IN_USE`, and the newest."""
    firsts = [f"{p.name}.0" for p in VERSION_PROFILES if p.arch == "v1" and p.since >= OLDEST_IN_USE]
    return tuple(dict.fromkeys([*firsts, NEWEST_VERSION]))


def version_range(scenario: Scenario, spec: ModelSpec, gpu: GPU | None = None) -> VersionRange | None:
    """Plan ``scenario`` under every version of :func:`versions_in_use`.

    Args:
        scenario: a vLLM scenario without ``engine_version``.
        spec: its model.
        gpu: a GPU to use instead of the scenario's.

    Returns:
        The range, ends ordered by KV memory per GPU (ties: the newer version); ``None`` for other engines, a set
        version, or a configuration vLLM refuses whatever its version.

    Raises:
        PlannerError: as :func:`planner.capacity.engines.vllm.plan_vllm`.
    """
    if scenario.engine != "vllm" or scenario.engine_version not in (None, "", "latest"):
        return None
    plans = [plan_vllm(replace(scenario, engine_version=v), spec, gpu) for v in versions_in_use()]
    if all(p.refused for p in plans):
        return None
    figures = tuple(
        VersionFigures(
            p.scenario.engine_version or NEWEST_VERSION,
            p.per_gpu.kv_cache_bytes,
            p.kv_cache_tokens,
            p.max_concurrency,
            p.fits,
        )
        for p in plans
    )
    order = range(len(plans))
    low = min(order, key=lambda i: (figures[i].kv_cache_bytes, -i))
    high = max(order, key=lambda i: (figures[i].kv_cache_bytes, i))
    return VersionRange(figures, figures[low], figures[high], plans[low].pool, plans[high].pool)
