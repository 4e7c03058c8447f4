"""A fleet of replicas: N replicas of a planned deployment behind a router, on one event clock; prefill/decode
disaggregation; the Fleet page's view and figures.

* :mod:`planner.fleet.workload`: the load test's workloads (its generators and schedule) as the fleet's requests.
* :mod:`planner.fleet.prefix_cache`: one replica's prefix cache (chained block hashes, held and free blocks, LRU
  eviction, a router's stale view).
* :mod:`planner.fleet.replica`: a replica: the simulator's engine with its prefix cache.
* :mod:`planner.fleet.clock`: the event loop that steps many replicas on one clock.
* :mod:`planner.fleet.client`: ``vllm bench serve``'s client over a fleet (release times, a concurrency cap,
  conversations).
* :mod:`planner.fleet.routers`: the routing policies.
* :mod:`planner.fleet.simulation`: :func:`~planner.fleet.simulation.simulate_fleet`, results per policy and replica.
* :mod:`planner.fleet.disaggregation`: prefill and decode pools joined by a KV transfer, the xPyD rate match.
* :mod:`planner.fleet.settings`: the fleet's settings (declared once) and the Fleet page's workload.
* :mod:`planner.fleet.on_ray`: the simulations as Ray tasks.
* :mod:`planner.fleet.view` and :mod:`planner.fleet.charts`: the Fleet page's one call, its table and figures.

May import :mod:`planner.predict`, :mod:`planner.capacity`, :mod:`planner.catalog`, :mod:`planner.metrics`,
:mod:`planner.loadtest` (generators, schedule, settings, datasets; its Ray module only in :mod:`planner.fleet.on_ray`),
:mod:`planner.deploy` and the ground floor (:mod:`planner.errors`, :mod:`planner.values`, :mod:`planner.fields`,
:mod:`planner.display`, :mod:`planner.units`); never :mod:`planner.sizing`, :mod:`planner.links`, the views,
streamlit or the pages. Floor 7 of docs/architecture.md.
"""
