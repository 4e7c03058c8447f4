"""The routing policies a fleet can run behind, and how each picks a replica for a request.

The policies are those of the routers platform teams run in front of vLLM replicas: the vLLM production-stack router's
``roundrobin``, ``kvaware`` and ``prefixaware`` routing logics (``vllm-project/production-stack`` ``helm/values.yaml``
``routerSpec.routingLogic``) and the llm-d inference scheduler's scorers (queue / load, KV-cache utilisation, prefix
cache; ``llm-d/llm-d-inference-scheduler``):

* ``round_robin``: the ``k``-th request routed goes to replica ``k mod N``;
* ``least_loaded``: the replica with the fewest requests in flight (routed and not yet answered: the router's own
  count, exact);
* ``kv_aware``: the replica with the lowest KV-cache usage (blocks in use / blocks) as the router last saw it, then
  the fewest in flight;
* ``prefix_aware``: the replica whose cache holds the longest prefix of the request's prompt (in whole blocks) as the
  router last saw it, then the fewest in flight.

Ties go to the lowest replica index. The router's view of usage and caches is refreshed every ``router_refresh_s``
(0: it sees them as they are): :mod:`planner.fleet.prefix_cache` keeps what a stale view needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.errors import InvalidParameterError

__all__ = ["ROUTERS", "choose"]

#: The routing policies, in the order the CLI and the page list them.
ROUTERS: tuple[str, ...] = ("round_robin", "least_loaded", "kv_aware", "prefix_aware")


def choose(
    router: str,
    *,
    routed: int,
    in_flight: Sequence[int],
    kv_usage: Sequence[float] = (),
    prefix_blocks: Sequence[int] = (),
) -> int:
    """The replica ``router`` sends the next request to (module docstring).

    Args:
        router: one of :data:`ROUTERS`.
        routed: requests routed before this one (round robin's counter).
        in_flight: per replica, requests routed and not yet answered.
        kv_usage: per replica, KV-cache usage in the router's view (``kv_aware``).
        prefix_blocks: per replica, leading blocks of the prompt its cache holds in the router's view
            (``prefix_aware``).

    Returns:
        The replica's index.

    Raises:
        InvalidParameterError: an unknown router, or no replica.

    Example:
        >>> choose("prefix_aware", routed=5, in_flight=[0, 3], prefix_blocks=[1, 4])
        1
    """
    n = len(in_flight)
    if n == 0:
        raise InvalidParameterError("replicas", 0, "at least 1 replica")
    if router == "round_robin":
        return routed % n
    if router == "least_loaded":
        return min(range(n), key=lambda r: (in_flight[r], r))
    if router == "kv_aware":
        return min(range(n), key=lambda r: (kv_usage[r], in_flight[r], r))
    if router == "prefix_aware":
        return min(range(n), key=lambda r: (-prefix_blocks[r], in_flight[r], r))
    raise InvalidParameterError("router", router, ", ".join(ROUTERS))
