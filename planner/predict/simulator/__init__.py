"""A simulator of vLLM V1's continuous batching (and of static batching), driven by the step-time model.

The workload is the load test's own (:class:`~planner.loadtest.settings.LoadSettings`: the send schedule and the
lengths of :mod:`planner.loadtest.schedule`, the client's concurrency cap), so a predicted run and a measured one
see the same requests; the result goes through the same aggregation
(:func:`planner.metrics.benchmark.metrics_from_samples`) and so has every ``vllm bench serve`` key.

Split by concern, as vLLM's ``vllm/v1/core/sched/`` splits its scheduler:

* :mod:`~planner.predict.simulator.run`: :func:`simulate`, the one entry: checks the workload, builds the engine and
  runs the batching mode's policy (:data:`POLICIES`).
* :mod:`~planner.predict.simulator.interface`: :class:`SchedulingPolicy`, what every batching mode implements.
* :mod:`~planner.predict.simulator.continuous`: vLLM V1's scheduler, first come first served (chunked prefill,
  ``max_num_seqs``, KV-block admission, preemption, asynchronous scheduling, speculative decoding).
* :mod:`~planner.predict.simulator.cohort`: the decoding requests held as totals, so a decode step costs the same
  whatever the batch (the event-driven core of the continuous policy).
* :mod:`~planner.predict.simulator.static`: static batching, for comparison (Orca's baseline).
* :mod:`~planner.predict.simulator.online`: :class:`OnlineScheduler`, the continuous policy stepping in real time
  (the demo server plays a planned deployment with it).
* :mod:`~planner.predict.simulator.replica`: :class:`ReplicaEngine`, the continuous policy as one replica of a fleet
  (requests submitted by a router, steps up to a time a shared event clock sets; :mod:`planner.fleet`).
* :mod:`~planner.predict.simulator.blocks`: the KV-block pool (blocks per request, sliding windows, free, peak).
* :mod:`~planner.predict.simulator.client`: the client and the API server (sends, concurrency slots, the way in
  and out).
* :mod:`~planner.predict.simulator.requests`: the per-request state and times.
* :mod:`~planner.predict.simulator.cost` and :mod:`~planner.predict.simulator.steps`: a step's seconds from plain
  numbers, and the log of steps (ends, and each step's row of terms rebuilt in bulk at the end).
* :mod:`~planner.predict.simulator.engine`: the parts of one engine every policy works on, and the hooks
  (:class:`EngineHooks`) through which a prefix cache kept outside it (the fleet's) hears of each request.
* :mod:`~planner.predict.simulator.result`: :class:`SimulatedRun` and its assembly (TTFT, E2E, ITL, the metrics,
  the per-request step terms the calibration fits).

Imports go one way: ``run`` → policies (``continuous`` → ``cohort``; ``static``) → ``engine`` → ``blocks``,
``client``, ``requests``, ``cost``, ``steps``; ``result`` reads an engine; ``online`` and ``replica`` wrap
``continuous``. 10,000
requests take well under a second of CPU in every workload of ``bench/simulator_speed.py``.
"""

from planner.predict.simulator.engine import EngineHooks
from planner.predict.simulator.interface import SchedulingPolicy
from planner.predict.simulator.online import OnlineScheduler
from planner.predict.simulator.replica import ReplicaEngine
from planner.predict.simulator.result import SimulatedRun
from planner.predict.simulator.run import MODES, POLICIES, simulate

__all__ = [
    "MODES",
    "POLICIES",
    "EngineHooks",
    "OnlineScheduler",
    "ReplicaEngine",
    "SchedulingPolicy",
    "SimulatedRun",
    "simulate",
]
