"""A fleet of N identical replicas behind a router, simulated on one event clock (:func:`simulate_fleet`).

The client is the load test's (``vllm bench serve``'s): requests leave at their release times, at most
``max_concurrency`` requests (conversations) in flight, a conversation's next turn ``think_time_s`` after the previous
turn's last token reached the client. A request goes to the replica the router picks when it is sent
(:mod:`planner.fleet.routers`), whose API server, scheduler and step model are :func:`planner.predict.simulator.
simulate`'s, with a prefix cache of its own (:mod:`planner.fleet.replica`): a prefix it holds is not prefilled again,
so the hits, and the prefill they save, depend on the routing. The router's view of the replicas' KV usage and caches
is refreshed every ``router_refresh_s`` seconds (0: always current); its count of requests in flight is its own.

Results go through the same aggregation as a single run (:func:`planner.metrics.benchmark.metrics_from_samples`): the
fleet's, each replica's, and:

* **prefix-cache hit rate** = Σ prompt tokens found in a replica's cache at admission / Σ prompt tokens (vLLM's
  ``prefix_cache_hits / prefix_cache_queries``, counted once per request);
* **load imbalance** = the most requests one replica served / the mean per replica (1 = even).

The simulation's CPU time (``time.process_time``) is reported with it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.errors import InvalidParameterError
from planner.fleet.client import Client
from planner.fleet.clock import EventLoop
from planner.fleet.prefix_cache import BlockHasher
from planner.fleet.replica import Replica
from planner.fleet.routers import ROUTERS, choose
from planner.fleet.workload import FleetRequest
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.shape import StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

__all__ = ["MAX_REPLICAS", "FleetRun", "ReplicaStats", "simulate_fleet"]

#: Most replicas of one simulated fleet.
MAX_REPLICAS = 1024


@dataclass(frozen=True)
class ReplicaStats:
    """One replica's share of a fleet run.

    Attributes:
        index: its place in the fleet (0-based).
        requests: requests it served.
        prompt_tokens: their prompt tokens.
        hit_tokens: of those, the ones found in its prefix cache at admission.
        metrics: its requests' aggregates (None when it served none); throughputs over the fleet's duration.
        preemptions: requests it preempted (each time).
        peak_kv_blocks / num_gpu_blocks: most KV blocks in use at once, and its pool.
        evictions: cached blocks it evicted.
    """

    index: int
    requests: int
    prompt_tokens: int
    hit_tokens: int
    metrics: BenchmarkMetrics | None
    preemptions: int
    peak_kv_blocks: int
    num_gpu_blocks: int
    evictions: int

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """``hit_tokens / prompt_tokens``; None when it served nothing."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else None


@dataclass(frozen=True)
class FleetRun:
    """One routing policy's fleet simulation (module docstring).

    Attributes:
        router: the policy.
        router_refresh_s: how often its view of the replicas was refreshed, seconds (0 = always current).
        metrics: the fleet's aggregates (``vllm bench serve``'s figures over every request).
        replicas: each replica's share.
        ttft_s / e2e_s: per request (send order), seconds.
        replica_of: per request, the replica that served it.
        input_tokens / hit_tokens: per request, prompt tokens and those found in its replica's cache.
        cpu_s: CPU time of the simulation, seconds.
    """

    router: str
    router_refresh_s: float
    metrics: BenchmarkMetrics
    replicas: tuple[ReplicaStats, ...]
    ttft_s: np.ndarray = field(repr=False)
    e2e_s: np.ndarray = field(repr=False)
    replica_of: np.ndarray = field(repr=False)
    input_tokens: np.ndarray = field(repr=False)
    hit_tokens: np.ndarray = field(repr=False)
    cpu_s: float = 0.0

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Σ hit tokens / Σ prompt tokens over every request; None without prompt tokens."""
        total = int(self.input_tokens.sum())
        return int(self.hit_tokens.sum()) / total if total else None

    @property
    def replica_requests(self) -> tuple[int, ...]:
        """Requests each replica served."""
        return tuple(r.requests for r in self.replicas)

    @property
    def load_imbalance(self) -> float:
        """Most requests one replica served / the mean per replica (1 = even)."""
        counts = self.replica_requests
        mean = sum(counts) / len(counts)
        return max(counts) / mean if mean else 1.0

    def to_json(self) -> dict[str, Any]:
        """The policy under the CLI's ``--json`` keys (``vllm bench serve``'s names for its metrics, ms)."""
        m = self.metrics

        def ms(dist: Any, stat: str) -> float | None:
            value = None if dist is None else getattr(dist, stat)
            return None if value is None else value * 1e3

        return {
            "router": self.router,
            "router_refresh_s": self.router_refresh_s,
            "median_ttft_ms": ms(m.ttft, "median_s"),
            "p99_ttft_ms": ms(m.ttft, "p99_s"),
            "median_tpot_ms": ms(m.tpot, "median_s"),
            "p99_tpot_ms": ms(m.tpot, "p99_s"),
            "request_throughput": m.request_throughput,
            "output_throughput": m.output_throughput,
            "prefix_cache_hit_rate": self.prefix_cache_hit_rate,
            "load_imbalance": self.load_imbalance,
            "replica_requests": list(self.replica_requests),
            "replica_prefix_cache_hit_rates": [r.prefix_cache_hit_rate for r in self.replicas],
            "replica_preemptions": [r.preemptions for r in self.replicas],
            "simulation_cpu_s": self.cpu_s,
        }


def _check(replicas: int, router: str, router_refresh_s: float) -> None:
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= MAX_REPLICAS:
        raise InvalidParameterError("replicas", replicas, f"an integer from 1 to {MAX_REPLICAS:,}")
    if router not in ROUTERS:
        raise InvalidParameterError("router", router, ", ".join(ROUTERS))
    if not (isinstance(router_refresh_s, int | float) and 0 <= router_refresh_s < math.inf):
        raise InvalidParameterError("router_refresh_s", router_refresh_s, "seconds ≥ 0 (0 = always current)")


def simulate_fleet(
    shape: StepShape,
    requests: Sequence[FleetRequest],
    *,
    replicas: int,
    router: str,
    router_refresh_s: float = 0.0,
    max_concurrency: int | None = None,
    think_time_s: float = 0.0,
    coefficients: StepCoefficients | np.ndarray = DEFAULT_COEFFICIENTS,
    slo_ms: Mapping[str, float] | None = None,
) -> FleetRun:
    """Simulate ``requests`` on ``replicas`` replicas of ``shape`` behind ``router`` (module docstring).

    Args:
        shape: one replica's deployment (:func:`planner.predict.shape.step_shape`).
        requests: the workload (:func:`planner.fleet.workload.fleet_requests`), in send order.
        replicas: how many (1 to :data:`MAX_REPLICAS`).
        router: one of :data:`planner.fleet.routers.ROUTERS`.
        router_refresh_s: seconds between refreshes of the router's view of KV usage and caches (0 = current).
        max_concurrency: most requests (conversations) in flight; None = no cap.
        think_time_s: seconds between a turn's last token and the next turn of its conversation.
        coefficients: the step model's coefficients.
        slo_ms: goodput SLOs (``vllm bench serve --goodput``), ms by metric; None = no goodput.

    Returns:
        The run.

    Raises:
        InvalidParameterError: a bad count, router or refresh time; no request; a request longer than
            ``max_model_len`` or than one replica's KV cache.
    """
    _check(replicas, router, router_refresh_s)
    if not requests:
        raise InvalidParameterError("requests", 0, "at least one request")
    started = time.process_time()
    hasher = BlockHasher(shape.block_size)
    placed: list[tuple[int, int]] = [(-1, -1)] * len(requests)
    done_at: list[list[float]] = [[] for _ in range(replicas)]  # per replica: when its answers reach the client
    in_flight = [0] * replicas
    stale = router_refresh_s > 0 and router in ("kv_aware", "prefix_aware")

    def on_finish(k: int, j: int) -> None:
        i = fleet[k].request_of[j]
        at_client = fleet[k].engine.finish_s(j)
        heapq.heappush(done_at[k], at_client)
        client.finished(i, at_client)

    fleet = [
        Replica(k, shape, coefficients, hasher=hasher, track_view=stale, on_finish=on_finish) for k in range(replicas)
    ]
    loop = EventLoop([r.engine for r in fleet], reactive=lambda: client.reactive())
    routed = 0
    view = {"next_s": 0.0, "kv": [0.0] * replicas}

    def send(i: int, t: float) -> None:
        nonlocal routed
        for k in range(replicas):  # answers that reached the client by now are no longer in flight
            heap = done_at[k]
            while heap and heap[0] <= t + 1e-12:
                heapq.heappop(heap)
                in_flight[k] -= 1
        request = requests[i]
        prefix: list[int] = []
        if router == "prefix_aware":
            blocks = fleet[0].prompt_blocks(request)
            if stale and t >= view["next_s"]:
                _refresh(t)
            prefix = [r.cache.view_match(blocks) for r in fleet]
        kv: Sequence[float] = ()
        if router == "kv_aware":
            if stale and t >= view["next_s"]:
                _refresh(t)
            kv = view["kv"] if stale else [r.engine.kv_usage for r in fleet]
        k = choose(router, routed=routed, in_flight=in_flight, kv_usage=kv, prefix_blocks=prefix)
        routed += 1
        in_flight[k] += 1
        placed[i] = (k, fleet[k].submit(i, request, t))
        loop.touched(k)

    def _refresh(t: float) -> None:
        tick = math.floor(t / router_refresh_s) * router_refresh_s
        for r in fleet:
            r.cache.refresh_view(tick)
        view["kv"] = [r.engine.kv_usage for r in fleet]
        view["next_s"] = tick + router_refresh_s

    client = Client(requests, loop, send, max_concurrency=max_concurrency, think_time_s=think_time_s)
    client.start()
    loop.run()
    return _result(router, router_refresh_s, fleet, placed, requests, slo_ms, time.process_time() - started)


def _result(
    router: str,
    refresh_s: float,
    fleet: Sequence[Replica],
    placed: Sequence[tuple[int, int]],
    requests: Sequence[FleetRequest],
    slo_ms: Mapping[str, float] | None,
    cpu_s: float,
) -> FleetRun:
    ttfts = [r.engine.ttft_s() for r in fleet]
    e2es = [r.engine.e2e_s() for r in fleet]
    n = len(requests)
    ttft, e2e = np.empty(n), np.empty(n)
    replica_of = np.empty(n, dtype=np.int64)
    hits = np.zeros(n, dtype=np.int64)
    inputs = np.array([r.prompt_tokens for r in requests], dtype=np.int64)
    outputs = np.array([r.output_len for r in requests], dtype=np.int64)
    sent = np.empty(n)
    for i, (k, j) in enumerate(placed):
        ttft[i], e2e[i], replica_of[i] = ttfts[k][j], e2es[k][j], k
        hits[i] = fleet[k].hit_tokens[j] or 0
        sent[i] = fleet[k].engine.finish_s(j) - e2e[i]
    duration = max(float(np.max(sent + e2e)), 1e-9)
    itls = [r.engine.itl_s() for r in fleet]
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=outputs.tolist(),
        input_tokens=inputs.tolist(),
        itl_s=np.concatenate(itls) if itls else np.zeros(0),
        duration_s=duration,
        slo_ms=dict(slo_ms or {}),
    )
    stats = []
    for k, r in enumerate(fleet):
        mine = replica_of == k
        m = None
        if mine.any():
            m = metrics_from_samples(
                ttft_s=ttft[mine].tolist(),
                e2e_s=e2e[mine].tolist(),
                output_tokens=outputs[mine].tolist(),
                input_tokens=inputs[mine].tolist(),
                itl_s=itls[k],
                duration_s=duration,
                slo_ms=dict(slo_ms or {}),
            )
        stats.append(
            ReplicaStats(
                index=k,
                requests=int(mine.sum()),
                prompt_tokens=int(inputs[mine].sum()),
                hit_tokens=int(hits[mine].sum()),
                metrics=m,
                preemptions=r.engine.preemptions,
                peak_kv_blocks=r.engine.peak_kv_blocks,
                num_gpu_blocks=r.engine.shape.num_gpu_blocks,
                evictions=r.cache.evictions,
            )
        )
    return FleetRun(router, refresh_s, metrics, tuple(stats), ttft, e2e, replica_of, inputs, hits, cpu_s)
