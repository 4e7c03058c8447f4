"""Prefill/decode disaggregation: a prefill pool and a decode pool joined by a KV-cache transfer, on one event clock.

As vLLM serves it with a KV connector (``--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'``,
``vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py``, v0.24) behind a P/D-aware router (llm-d, the
production-stack router's ``disaggregated_prefill``):

1. The router sends a request to a **prefill instance** (``router``: the fleet's policies, ``prefix_aware`` by
   default: its prefix cache saves prefill) as a request of one output token: it queues, is prefilled (chunked, batched
   with other prefills) and its KV stays there.
2. The prefill's answer reaches the router (the API server's way out), which sends the request to a **decode instance**
   (the one with the fewest requests in flight); the decode instance pulls the prompt's KV:
   **transfer time = the prompt's KV bytes / the link's bandwidth + a fixed latency** (:class:`KvTransfer`).
3. The decode instance holds the transferred KV in its own pool (blocks counted as the capacity plan's, so its KV
   capacity bounds how many transferred requests it holds), computes the prompt's last token (NIXL transfers all but
   it, as a prefix-cache hit would leave it) and samples the first output token, then decodes.

TTFT is measured at the client from its send to the decode instance's first token; TPOT and ITL from the decode
instance's steps; throughput over the run. Each pool runs :mod:`planner.predict.simulator`'s engine with its own
deployment (GPU, TP), so the two pools may be different GPUs.

**The link** (:func:`kv_transfer`): two pools of the same GPU on one NVSwitch node (every GPU reaches every other)
move KV over the GPU's scale-up link (:func:`planner.predict.shape.link_bytes_per_s`, from the catalog's
interconnect: NVLink 4 450 GB/s per direction on an H100/H200, NVLink 5 900 GB/s on a B200); otherwise over the
network, one RDMA NIC per GPU (:data:`NIC_BYTES_PER_S`: 400 Gb/s, the ConnectX-7 per GPU of NVIDIA's DGX H100/H200
datasheet), bounded by the GPU's PCIe link to its host (:func:`planner.predict.shape.host_link_bytes_per_s`: PCIe Gen5
x16 64 GB/s, Gen4 32 GB/s per direction, PCI-SIG). Each TP rank of the prefill instance sends its own share of the KV
(its heads) at once, ``min(TP_prefill, TP_decode)`` pairs in parallel. The fixed latency (:data:`DEFAULT_LATENCY_S`)
is an assumption: the connector's per-request notification and the router's extra hop; no public measurement was found.
Both are overridable.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.catalog.gpus import GPU
from planner.errors import InvalidParameterError
from planner.fleet.client import Client
from planner.fleet.clock import EventLoop
from planner.fleet.prefix_cache import BlockHasher
from planner.fleet.replica import Replica
from planner.fleet.routers import ROUTERS, choose
from planner.fleet.workload import FleetRequest
from planner.metrics.benchmark import BenchmarkMetrics, metrics_from_samples
from planner.predict.shape import StepShape, host_link_bytes_per_s, link_bytes_per_s
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients
from planner.units import GB

__all__ = [
    "DEFAULT_LATENCY_S",
    "NIC_BYTES_PER_S",
    "DisaggregatedRun",
    "KvTransfer",
    "kv_bytes",
    "kv_transfer",
    "rate_match",
    "simulate_disaggregated",
]

#: One RDMA NIC per GPU, per direction: 400 Gb/s (NVIDIA DGX H100/H200 datasheet: 8× ConnectX-7, 400 Gb/s each).
NIC_BYTES_PER_S = 400e9 / 8
#: Fixed time of one request's KV transfer besides its bytes, seconds: an assumption (module docstring).
DEFAULT_LATENCY_S = 1e-3
#: Links on which every GPU of a node reaches every other at the scale-up link's bandwidth.
_ALL_TO_ALL = ("nvswitch",)


@dataclass(frozen=True)
class KvTransfer:
    """How a prompt's KV moves from a prefill instance to a decode instance.

    Attributes:
        bandwidth_bytes_per_s: per GPU pair, per direction, bytes/s.
        latency_s: fixed time per request, seconds.
        pairs: GPU pairs sending at once (``min(TP_prefill, TP_decode)``).
        link: the link in words (``"NVLink 4 within a node"``, ``"network (RDMA NIC)"``, ``"given"``).
    """

    bandwidth_bytes_per_s: float
    latency_s: float = DEFAULT_LATENCY_S
    pairs: int = 1
    link: str = "given"

    def __post_init__(self) -> None:
        if not (self.bandwidth_bytes_per_s > 0 and math.isfinite(self.bandwidth_bytes_per_s)):
            raise InvalidParameterError("kv_transfer_bandwidth", self.bandwidth_bytes_per_s, "bytes/s > 0")
        if not (self.latency_s >= 0 and math.isfinite(self.latency_s)):
            raise InvalidParameterError("kv_transfer_latency", self.latency_s, "seconds ≥ 0")
        if self.pairs < 1:
            raise InvalidParameterError("pairs", self.pairs, "an integer ≥ 1")

    def seconds(self, kv_bytes_total: float) -> float:
        """Transfer time of ``kv_bytes_total`` bytes (all ranks' shares): bytes / (pairs · bandwidth) + latency.

        Example:
            >>> KvTransfer(50e9, latency_s=0.001).seconds(131_072 * 1_000)   # 1,000 tokens of Llama-3.1-8B KV
            0.00362144
        """
        return kv_bytes_total / (self.pairs * self.bandwidth_bytes_per_s) + self.latency_s


def kv_bytes(shape: StepShape, tokens: int) -> float:
    """KV bytes of ``tokens`` prompt tokens over all TP ranks of ``shape`` (each rank's share: per attention group, its
    layers × bytes per token per layer × the tokens it keeps, a sliding window at most its window)."""
    per_rank = sum(
        g.num_layers * g.kv_bytes_per_token_layer * min(tokens, g.window_tokens or tokens) for g in shape.groups
    )
    return per_rank * shape.tensor_parallel_size


def kv_transfer(
    prefill_gpu: GPU,
    prefill_tp: int,
    prefill_replicas: int,
    decode_gpu: GPU,
    decode_tp: int,
    decode_replicas: int,
    *,
    bandwidth_gb_per_s: float | None = None,
    latency_ms: float | None = None,
) -> KvTransfer:
    """The link between the pools (module docstring): the scale-up link when both pools are one GPU model and fit in
    one NVSwitch node, else the network (the smaller of an RDMA NIC and each GPU's PCIe link).

    Args:
        prefill_gpu / decode_gpu: the pools' GPUs.
        prefill_tp / decode_tp: their tensor parallel sizes.
        prefill_replicas / decode_replicas: their instances.
        bandwidth_gb_per_s: a bandwidth to use instead, GB/s per GPU pair (10**9 bytes/s).
        latency_ms: a fixed latency to use instead of :data:`DEFAULT_LATENCY_S`, ms.

    Raises:
        InvalidParameterError: a bandwidth or latency that is not a positive (non-negative) number.
    """
    pairs = max(1, min(prefill_tp, decode_tp))
    latency = DEFAULT_LATENCY_S if latency_ms is None else latency_ms / 1e3
    if bandwidth_gb_per_s is not None:
        return KvTransfer(bandwidth_gb_per_s * GB, latency, pairs, "given")
    gpus = prefill_tp * prefill_replicas + decode_tp * decode_replicas
    node = prefill_gpu.gpus_per_node or 8
    if prefill_gpu.id == decode_gpu.id and prefill_gpu.link in _ALL_TO_ALL and gpus <= node:
        name = (prefill_gpu.interconnect or "scale-up link").split("(")[0].split("+")[0].strip()
        return KvTransfer(link_bytes_per_s(prefill_gpu), latency, pairs, f"{name}, within one node")
    bandwidth = min(NIC_BYTES_PER_S, host_link_bytes_per_s(prefill_gpu), host_link_bytes_per_s(decode_gpu))
    return KvTransfer(bandwidth, latency, pairs, "network (an RDMA NIC per GPU)")


def rate_match(rate: float, prefill_rate: float, decode_rate: float) -> tuple[int, int]:
    """The fewest prefill and decode instances for ``rate`` req/s when one prefill instance sustains
    ``prefill_rate`` and one decode instance ``decode_rate`` (each within its share of the SLOs): ``(⌈rate /
    prefill_rate⌉, ⌈rate / decode_rate⌉)``, the xPyD ratio that matches the pools' rates.

    Raises:
        InvalidParameterError: a rate that is not > 0.

    Example:
        >>> rate_match(24.0, prefill_rate=10.0, decode_rate=4.0)
        (3, 6)
    """
    for name, value in (("rate", rate), ("prefill_rate", prefill_rate), ("decode_rate", decode_rate)):
        if not (value > 0 and math.isfinite(value)):
            raise InvalidParameterError(name, value, "requests/s > 0")
    return math.ceil(rate / prefill_rate - 1e-9), math.ceil(rate / decode_rate - 1e-9)


@dataclass(frozen=True)
class DisaggregatedRun:
    """A prefill/decode pair of pools simulated on a workload (module docstring).

    Attributes:
        metrics: the client's figures over every request (``vllm bench serve``'s).
        ttft_s / e2e_s: per request, seconds.
        transfer_s: per request, its KV transfer, seconds.
        prefill_requests / decode_requests: requests each instance of each pool served.
        prefix_cache_hit_rate: prompt tokens found in the prefill instances' caches / prompt tokens.
        transfer: the link.
        prefill_preemptions / decode_preemptions: preemptions in each pool.
        decode_peak_kv_blocks / decode_num_gpu_blocks: most KV blocks one decode instance held at once, and its pool.
        cpu_s: CPU time of the simulation, seconds.
    """

    metrics: BenchmarkMetrics
    ttft_s: np.ndarray = field(repr=False)
    e2e_s: np.ndarray = field(repr=False)
    transfer_s: np.ndarray = field(repr=False)
    prefill_requests: tuple[int, ...] = ()
    decode_requests: tuple[int, ...] = ()
    prefix_cache_hit_rate: float | None = None
    transfer: KvTransfer | None = None
    prefill_preemptions: int = 0
    decode_preemptions: int = 0
    decode_peak_kv_blocks: int = 0
    decode_num_gpu_blocks: int = 0
    cpu_s: float = 0.0

    @property
    def kv_transfer_ms(self) -> float | None:
        """Mean KV transfer time, ms; None without requests."""
        return float(self.transfer_s.mean()) * 1e3 if self.transfer_s.size else None


def simulate_disaggregated(
    prefill: StepShape,
    prefill_replicas: int,
    decode: StepShape,
    decode_replicas: int,
    requests: Sequence[FleetRequest],
    *,
    transfer: KvTransfer,
    router: str = "prefix_aware",
    max_concurrency: int | None = None,
    think_time_s: float = 0.0,
    coefficients: StepCoefficients | np.ndarray = DEFAULT_COEFFICIENTS,
    slo_ms: Mapping[str, float] | None = None,
) -> DisaggregatedRun:
    """Simulate ``requests`` on ``prefill_replicas`` prefill and ``decode_replicas`` decode instances (module
    docstring).

    Args:
        prefill / decode: each pool's deployment (:func:`planner.predict.shape.step_shape`).
        prefill_replicas / decode_replicas: instances in each pool (≥ 1).
        requests: the workload (:func:`planner.fleet.workload.fleet_requests`).
        transfer: the link between the pools (:func:`kv_transfer`).
        router: how the prefill instance is picked (:data:`planner.fleet.routers.ROUTERS`); decode instances are
            picked by fewest requests in flight.
        max_concurrency / think_time_s: the client (:class:`planner.fleet.client.Client`).
        coefficients: the step model's coefficients (both pools).
        slo_ms: goodput SLOs, ms by metric.

    Returns:
        The run.

    Raises:
        InvalidParameterError: a pool of no instance, an unknown router, no request, a request longer than an
            instance's ``max_model_len`` or KV cache.
    """
    for name, count in (("prefill_replicas", prefill_replicas), ("decode_replicas", decode_replicas)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidParameterError(name, count, "an integer ≥ 1")
    if router not in ROUTERS:
        raise InvalidParameterError("router", router, ", ".join(ROUTERS))
    if not requests:
        raise InvalidParameterError("requests", 0, "at least one request")
    started = time.process_time()
    n = len(requests)
    sent = np.zeros(n)
    placed: list[tuple[int, int]] = [(-1, -1)] * n
    transfer_s = np.zeros(n)
    flight = {"p": [0] * prefill_replicas, "d": [0] * decode_replicas}
    done_at: dict[str, list[list[float]]] = {
        "p": [[] for _ in range(prefill_replicas)],
        "d": [[] for _ in range(decode_replicas)],
    }

    def settle(pool: str, t: float) -> None:
        for k, heap in enumerate(done_at[pool]):
            while heap and heap[0] <= t + 1e-12:
                heapq.heappop(heap)
                flight[pool][k] -= 1

    def prefill_done(k: int, j: int) -> None:
        i = pre[k].request_of[j]
        at_router = pre[k].engine.finish_s(j)
        heapq.heappush(done_at["p"][k], at_router)
        transfer_s[i] = transfer.seconds(kv_bytes(prefill, requests[i].prompt_tokens))
        loop.at(at_router + transfer_s[i], lambda t, i=i: to_decode(i, t))

    def decode_done(k: int, j: int) -> None:
        i = dec[k].request_of[j]
        at_client = dec[k].engine.finish_s(j)
        heapq.heappush(done_at["d"][k], at_client)
        client.finished(i, at_client)

    hasher = BlockHasher(prefill.block_size)
    pre = [
        Replica(k, prefill, coefficients, hasher=hasher, track_view=False, on_finish=prefill_done)
        for k in range(prefill_replicas)
    ]
    dec = [
        Replica(k, decode, coefficients, hasher=BlockHasher(decode.block_size), track_view=False, on_finish=decode_done)
        for k in range(decode_replicas)
    ]
    engines = [r.engine for r in (*pre, *dec)]
    lag = transfer.latency_s + min(e.response_overhead_s for e in engines)
    loop = EventLoop(engines, reactive=lambda: True, lag_s=lag)
    routed = 0

    def send(i: int, t: float) -> None:
        nonlocal routed
        settle("p", t)
        sent[i] = t
        blocks = pre[0].prompt_blocks(requests[i]) if router == "prefix_aware" else []
        k = choose(
            router,
            routed=routed,
            in_flight=flight["p"],
            kv_usage=[r.engine.kv_usage for r in pre],
            prefix_blocks=[r.cache.match(blocks) for r in pre] if blocks else [0] * prefill_replicas,
        )
        routed += 1
        flight["p"][k] += 1
        pre[k].submit(i, requests[i], t, output_len=1)
        loop.touched(k)

    def to_decode(i: int, t: float) -> None:
        settle("d", t)
        k = choose("least_loaded", routed=0, in_flight=flight["d"])
        flight["d"][k] += 1
        placed[i] = (k, dec[k].submit(i, requests[i], t, remote=requests[i].prompt_tokens - 1))
        loop.touched(prefill_replicas + k)

    client = Client(requests, loop, send, max_concurrency=max_concurrency, think_time_s=think_time_s)
    client.start()
    loop.run()

    ttft, e2e = np.empty(n), np.empty(n)
    for i, (k, j) in enumerate(placed):
        ttft[i] = dec[k].engine.first_token_s(j) - sent[i]
        e2e[i] = dec[k].engine.finish_s(j) - sent[i]
    inputs = [r.prompt_tokens for r in requests]
    hits = sum(h or 0 for r in pre for h in r.hit_tokens)
    metrics = metrics_from_samples(
        ttft_s=ttft.tolist(),
        e2e_s=e2e.tolist(),
        output_tokens=[r.output_len for r in requests],
        input_tokens=inputs,
        itl_s=np.concatenate([r.engine.itl_s() for r in dec]),
        duration_s=max(float(np.max(sent + e2e)), 1e-9),
        slo_ms=dict(slo_ms or {}),
    )
    return DisaggregatedRun(
        metrics=metrics,
        ttft_s=ttft,
        e2e_s=e2e,
        transfer_s=transfer_s,
        prefill_requests=tuple(len(r.request_of) for r in pre),
        decode_requests=tuple(len(r.request_of) for r in dec),
        prefix_cache_hit_rate=hits / sum(inputs) if sum(inputs) else None,
        transfer=transfer,
        prefill_preemptions=sum(r.engine.preemptions for r in pre),
        decode_preemptions=sum(r.engine.preemptions for r in dec),
        decode_peak_kv_blocks=max(r.engine.peak_kv_blocks for r in dec),
        decode_num_gpu_blocks=decode.num_gpu_blocks,
        cpu_s=time.process_time() - started,
    )
