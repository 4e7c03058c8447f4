"""How much load one client process can drive, and what it adds per chunk: a client self-test (benchmark_clients.md
§10.9), for the openai SDK backend (``planner.serving.backends.openai_sdk``) and the lean aiohttp backend
(``planner.serving.backends.aiohttp_lean``), both through :func:`planner.serving.backends.stream_request`.

Server: ``bench/zero_delay_server.py`` in its own process(es): answers pre-encoded in the vLLM chunk shape with
``continuous_usage_stats`` (role chunk, token chunks of 1, 2, 1, 3, ... tokens, usage chunk, ``[DONE]``; one HTTP
chunk per SSE event). The timed server (``planner/demo/``) writes only a few thousand chunks/s at zero
delay, less than the lean client parses, so it would measure itself; this one uses ≤ 12 % of a core here.

Each level runs ``streams`` workers in one event loop on fresh clients (connection setup included), in two phases:

1. zero delay (64 tokens = 37 token chunks per answer, written at once), at least ``--min-requests`` requests:
   * chunks/s: token-bearing chunks received per second of wall time (falls when other processes take the cores);
   * CPU µs/chunk: the client's process CPU time (``time.process_time()``: user + system of this process only;
     the server runs in another) ÷ token chunks received. Per-request work (building the request, connecting,
     the role/usage/``[DONE]`` events) is spread over the chunks. This is the "added latency per chunk": the
     client time each chunk costs, which a zero-delay server on another core leaves as the only cost, and which
     unlike wall-clock figures does not grow when a shared machine is busy;
   * gap med / p99 µs: gaps between consecutive token chunks of one stream. The whole answer arrives at once, so a
     gap is the client's handling of one event (plus, at high concurrency, other streams served in between);
   * srv CPU: server CPU time as a share of one core (from /proc; n/a elsewhere);
2. paced (``--paced-tokens`` 16 = 10 chunks, one every ``--tick-ms`` 200 ms, so every stream stays open ~2 s),
   one request per worker:
   * open: the most streams whose response had started and not ended at the same moment (sweep over each
     record's ``[first byte, end]``): the streams held open at once;
   * ITL med / p99 ms: chunk gaps, truth = the tick; p99 above it = late chunks (client or machine busy);
   * TTFT max ms: longest time to first token; with zero server delay it is pure client-side waiting
     (connection storm, pool queue);
   * cli CPU: client CPU time ÷ wall time of the phase (the share of one core the client needed).
done/sent and err count both phases.

Targets (issue 5): 1,000 concurrent streams without errors; ≤ 50 µs added per chunk at 200 concurrent streams.

Measured on this machine (2026-11-29, 2 cores shared with other jobs at load ~3–4, Python 3.11.7, one server
process, default options; the columns printed, regrouped to fit here). ``openai``: openai 3.57.0 on httpx2 2.16.2
(an earlier run the same day); ``lean``: :mod:`planner.serving.backends.aiohttp_lean` on aiohttp 3.14.5; ``hand``: the
hand-rolled HTTP/1.1 client on asyncio streams that ``lean`` used before, run as ``--alt`` in the same run as ``lean``:

    zero-delay phase                                           | paced phase (200 ms ticks)
    path    streams  done/sent err chunks/s CPU µs/chunk gap med/p99 µs  srv | open ITL med/p99 ms  TTFT max  cli
    openai        1    401/401   0    2,955          317        200/454   2% |    1      200.4/n/a     204.2   1%
    openai       50    450/450   0    2,804          343        201/580   2% |   50    201.0/227.7     251.7  17%
    openai      200    600/600   0    2,877          340        199/483   1% |  100    205.6/426.8   2,693.6  39%
    openai      500  1000/1000   0    1,248          406      212/6,255   0% |  100    205.1/982.4  11,825.5  31%
    openai     1000  2000/2000   0    2,422          367        202/559   1% |  100    204.5/538.5  21,282.8  35%
    lean          1    401/401   0   19,725           42          12/41   5% |    1      200.6/n/a     202.9   0%
    lean         50    450/450   0    8,011           47         18/173   2% |   50    203.9/239.8     243.5   4%
    lean        200    600/600   0    9,940           42          12/89   3% |  200    210.0/386.3     370.4  14%
    lean        500  1000/1000   0   13,173           46          12/51   6% |  500    210.9/278.8     503.4  29%
    lean       1000  2000/2000   0   12,450           47          12/66   7% | 1000    243.6/417.1     886.0  41%
    hand          1    401/401   0   28,779           26          11/39   8% |    1      200.5/n/a     201.8   0%
    hand         50    450/450   0   19,069           30          11/94   5% |   50    201.5/206.5     250.0   3%
    hand        200    600/600   0   25,904           34          11/68  11% |  200    204.7/226.0     265.4  13%
    hand        500  1000/1000   0   30,437           32          11/40  16% |  500    212.6/270.8     385.3  24%
    hand       1000  2000/2000   0   25,925           31          11/27   8% | 1000    228.3/385.0   1,377.1  40%

    openai: 1,000 concurrent streams without errors: MISSED (100 streams open at once, 0 errors of 2000 requests)
    openai: ≤ 50 µs added per chunk at 200 streams: MISSED (339.8 µs client CPU per chunk; gap median 199 µs)
    lean: 1,000 concurrent streams without errors: MET (1,000 streams open at once, 0 errors of 2000 requests)
    lean: ≤ 50 µs added per chunk at 200 streams: MET (41.9 µs client CPU per chunk; gap median 12 µs)

Repeated, interleaved runs (both orders), CPU µs per chunk at 200 streams, lean (aiohttp) vs hand: 2,200 requests
per run (``--levels 200 --min-requests 2000``), 6 runs each: lean 34–39 (median 36), hand 28–35 (median 32); 600
requests per run (the default: 200 connections opened for 600 requests, so connection setup weighs more), 11 runs
each: lean 33–42 when the machine was not contended (gap median 11–12 µs) and 47–57 when it was (gap median 20–24
µs), hand 28–34 and 38–50. At 1,000 streams, 7 runs each: lean 41–52, hand 31–55, 0 errors in every run of both.
TTFT max of the paced phase at 1,000 streams (1,000 connects at once): lean 0.8–4.9 s, hand 0.5–2.7 s, lean's
higher in 5 of 7 paired runs (aiohttp spends more per new connection). aiohttp costs ~4–9 µs more per chunk than
the hand-rolled client and meets both targets, so it replaced it (a kept library over own code outside the core).
With ``trust_env=True`` aiohttp looked up proxies and read ``~/.netrc`` in a worker thread on every request, inside
the TTFT clock (+0.8–1.1 ms median first byte over 200 keep-alive requests); ``planner.serving.backends.aiohttp_lean``
reads the proxy variables once per host instead.

Reading it: the SDK path spends ~320–400 µs per chunk, most of it building a pydantic chunk object per event
(``openai._models.construct_type``, >50 % in cProfile); its ``httpx2`` pool (default 100 connections, 20 kept
alive) never opens more than 100 streams, and because the send time is stamped before the pool wait, the queue
shows up as TTFT (21 s at 1,000 streams against a server that answers at once). Raw ``httpx2`` streaming, tried
on the way, costs ~110 µs per chunk at 200 streams (pool scan per request, ``h11`` events per chunk). On the lean
path most of the remaining CPU is the project's own per-event work shared with the SDK path
(``planner.serving.streaming.normalize_payload``, ``StreamRecorder.payload``, ``SSEDecoder.feed``, ``json.loads``: ~60 %
in cProfile at 200 streams), not the HTTP client.

``--ray-workers 1 2 4`` measures instead the load runner itself (:func:`planner.loadtest.runner.run_load`, records
and metrics included) in one process and on 1, 2, 4 Ray workers (:mod:`planner.loadtest.ray_workers`): a closed loop
of ``--ray-streams`` (200) requests in flight, ``--ray-requests`` (2,000) zero-delay requests of ``--tokens`` tokens.
Columns: chunks/s (token chunks ÷ the run's duration), CPU µs/chunk (the workers' process CPU, each measured in the
worker over its send loop, ÷ chunks; in one process, this process's CPU over the whole run), chunk gap median/p99,
server CPU, start s (wall time outside the measured duration: discovery, and the workers' start), RSS MiB (this process
and all its descendants, Ray's daemons and workers included, read mid-run), driver CPU (this process's CPU over the
run). Measured 2026-12-02 on this 2-core machine shared with other jobs (load average ~3), two runs:

    workers  chunks/s      CPU µs/chunk  gap med/p99 µs   start s    RSS MiB      driver CPU
    in-proc  9,939–13,079  84–97         26–27/83–106     1.2        917–918      7.2 s
    1        7,549–7,727   83–92         26/124–129       5.9–6.2    1,132        1.9 s
    2        7,469–8,809   96–104        27–28/167–281    9.9–11.2   1,263–1,271  1.9 s
    4        8,244–8,677   106           26/2,667–3,519   19.6–21.0  1,673–1,688  2.0 s

    ray.init (local, no dashboard): 10.6–13.8 s, +777–778 MiB resident

On two cores the workers, the driver (≈1 ms CPU per request to receive the records), Ray's daemons and the other jobs
share the CPU, so more workers give no more chunks per second and 4 time-slice (p99 gap in ms); the per-chunk cost on
a worker is the one-process cost. On a cluster: the per-worker figures times the workers (README, "Beyond one client
machine").

Usage: ``python bench/client_capacity.py [--quick] [--levels 1 50 200 500 1000] [--min-requests 400]
[--tokens 64] [--paced-tokens 16] [--tick-ms 200] [--servers 1] [--paths openai lean] [--alt FILE]
[--ray-workers 1 2 4 [--ray-streams 200] [--ray-requests 2000]]``; exits 0.
``--quick`` runs levels 1, 200, 1000 only. ``--alt FILE`` adds path ``alt``: a module with ``make_client`` and
``stream_chat`` functions of an older lean path (e.g. ``git show <commit>:planner/fast_stream.py > /tmp/hand.py``
from before the backends existed), to compare it with the current one in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import importlib.util
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.zero_delay_server import ZeroDelayServers  # noqa: E402
from planner.serving.backends import make_client, stream_request  # noqa: E402
from planner.serving.endpoints import Endpoint  # noqa: E402
from planner.serving.requests import ChatRequest  # noqa: E402
from planner.serving.streaming import RequestRecord  # noqa: E402

PATHS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "openai": (
        functools.partial(make_client, backend="openai"),
        functools.partial(stream_request, backend="openai"),
    ),
    "lean": (
        functools.partial(make_client, backend="aiohttp"),
        functools.partial(stream_request, backend="aiohttp"),
    ),
}
TARGET_STREAMS = 1000
TARGET_LEVEL, TARGET_US = 200, 50.0


@dataclass(frozen=True)
class Level:
    """One level of one path: a zero-delay phase (CPU, rate, gaps) and a paced phase (streams held open)."""

    path: str
    streams: int
    done: int
    sent: int
    errors: int
    first_error: str | None
    chunks_per_s: float
    cpu_us_per_chunk: float | None
    gap_median_us: float | None
    gap_p99_us: float | None
    server_cpu_share: float | None
    open_max: int
    paced_itl_median_ms: float | None
    paced_itl_p99_ms: float | None
    paced_ttft_max_ms: float | None
    paced_client_cpu_share: float


def _max_overlap(intervals: Sequence[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


def _server_cpu_s(pids: Sequence[int]) -> float | None:
    """User + system CPU seconds of the server processes, from /proc (Linux); None elsewhere."""
    total = 0.0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return total


def _gaps(records: Sequence[RequestRecord]) -> list[float]:
    """Seconds between consecutive token chunks of each stream."""
    return [b.t_s - a.t_s for r in records for a, b in zip(r.chunks, r.chunks[1:], strict=False)]


def _p99(values: Sequence[float]) -> float | None:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 100 else None


async def _run(
    path: str, urls: Sequence[str], streams: int, per_stream: int, prompt: str, tokens: int
) -> tuple[list[RequestRecord], float, float]:
    """Closed loop: ``streams`` workers, each sending ``per_stream`` requests back to back, on fresh clients.

    Returns:
        The records, wall seconds and client CPU seconds (connection setup included).
    """
    make, stream = PATHS[path]
    endpoints = [Endpoint(f"zero{i}", "vllm", url, model="timed-model") for i, url in enumerate(urls)]
    pool = [make(ep, timeout_s=60) for ep in endpoints]
    request = ChatRequest(prompt, max_tokens=tokens)
    measured: list[RequestRecord] = []

    async def worker(i: int, n: int, out: list[RequestRecord]) -> None:
        ep, client = endpoints[i % len(endpoints)], pool[i % len(pool)]
        for _ in range(n):
            out.append(await stream(ep, request, timeout_s=60, client=client))

    try:
        gc.collect()
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(i, per_stream, measured) for i in range(streams)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        for client in pool:
            await client.close()
    return measured, wall, cpu


def _level(path: str, urls: Sequence[str], streams: int, per_stream: int, args: argparse.Namespace, pids) -> Level:
    srv0 = _server_cpu_s(pids)
    fast, wall, cpu = asyncio.run(_run(path, urls, streams, per_stream, f"cap [tokens={args.tokens}]", args.tokens))
    srv1 = _server_cpu_s(pids)
    paced_prompt = f"cap [tokens={args.paced_tokens}] [tick_ms={args.tick_ms}]"
    paced, paced_wall, paced_cpu = asyncio.run(_run(path, urls, streams, 1, paced_prompt, args.paced_tokens))
    records = fast + paced
    failed = [r for r in records if not r.ok]
    chunks = sum(len(r.chunks) for r in fast)
    gaps_us = [g * 1e6 for g in _gaps(fast)]
    paced_ms = [g * 1e3 for g in _gaps(paced)]
    ttfts = [r.first_token_s * 1e3 for r in paced if r.first_token_s is not None]
    spans = [(r.t_sent + r.first_byte_s, r.t_sent + r.end_s) for r in paced if r.ok]
    return Level(
        path=path,
        streams=streams,
        done=len(records) - len(failed),
        sent=len(records),
        errors=len(failed),
        first_error=f"{failed[0].error_kind}: {failed[0].error}" if failed else None,
        chunks_per_s=chunks / wall,
        cpu_us_per_chunk=cpu / chunks * 1e6 if chunks else None,
        gap_median_us=statistics.median(gaps_us) if gaps_us else None,
        gap_p99_us=_p99(gaps_us),
        server_cpu_share=(srv1 - srv0) / wall if srv0 is not None and srv1 is not None else None,
        open_max=_max_overlap(spans),
        paced_itl_median_ms=statistics.median(paced_ms) if paced_ms else None,
        paced_itl_p99_ms=_p99(paced_ms),
        paced_ttft_max_ms=max(ttfts) if ttfts else None,
        paced_client_cpu_share=paced_cpu / paced_wall,
    )


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _raise_fd_limit(streams: int) -> None:
    """Each stream holds a socket on both sides; lift the soft file limit to the hard one if it is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * streams + 256
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard == resource.RLIM_INFINITY else min(hard, need), hard))


def _load_alt(path: str) -> None:
    """Register the module file ``path`` (a lean path with ``make_client`` and ``stream_chat``) as path ``alt``."""
    spec = importlib.util.spec_from_file_location("bench_alt_path", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--alt: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    PATHS["alt"] = (module.make_client, module.stream_chat)


def _tree_rss_bytes() -> int | None:
    """Resident memory of this process and all its descendants (the embedded Ray's daemons and workers), bytes, from
    /proc; None elsewhere."""
    try:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    ppid = int(stat.rsplit(")", 1)[1].split()[1])
                    children.setdefault(ppid, []).append(int(entry))
        total, todo = 0, [os.getpid()]
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total
    except OSError:
        return None


def _ray_workers(args: argparse.Namespace, urls: Sequence[str], pids: Sequence[int]) -> None:
    """The load runner itself (:func:`planner.loadtest.runner.run_load`) in one process and on 1, 2, 4 ... Ray
    workers (:mod:`planner.loadtest.ray_workers`): the same closed loop of ``--ray-streams`` concurrent requests
    (the cap split between the workers), ``--ray-requests`` zero-delay requests of ``--tokens`` tokens each."""
    from planner.loadtest.ray_workers import send_on_ray, start_ray
    from planner.loadtest.runner import run_load
    from planner.loadtest.settings import LoadSettings

    rss0 = _tree_rss_bytes()
    t0 = time.perf_counter()
    start_ray(max(args.ray_workers))
    init_s = time.perf_counter() - t0
    rss1 = _tree_rss_bytes()
    grow = "n/a" if rss0 is None or rss1 is None else f"{(rss1 - rss0) / 2**20:,.0f} MiB"
    print(f"ray.init (local, no dashboard): {init_s:.1f} s, resident memory of this process tree +{grow}")
    print(
        f"{'workers':>8}{'streams':>8}{'done/sent':>11}{'chunks/s':>10}{'CPU µs/chunk':>13}{'gap med µs':>11}"
        f"{'gap p99 µs':>11}{'srv CPU':>8}{'start s':>8}{'RSS MiB':>9}{'driver CPU':>11}  per worker"
    )
    endpoint = Endpoint("zero", "vllm", urls[0], model="timed-model")
    for workers in [None, *args.ray_workers]:
        settings = LoadSettings(
            num_prompts=args.ray_requests,
            max_concurrency=args.ray_streams,
            dataset_name="custom",
            prompts=(f"cap [tokens={args.tokens}]",),
            output_len=args.tokens,
            scrape_metrics=False,
            duration_s=None,
            num_workers=workers,
        )
        peak: list[int] = []

        def progress(p: Any, peak: list[int] = peak) -> None:
            if not peak and p.completed + p.failed >= args.ray_requests // 2:  # mid-run: every worker is busy
                peak.append(_tree_rss_bytes() or 0)

        gc.collect()
        srv0 = _server_cpu_s(pids)
        cpu0, t1 = time.process_time(), time.perf_counter()
        result = asyncio.run(run_load(endpoint, settings, on_progress=progress, remote=send_on_ray))
        wall, cpu = time.perf_counter() - t1, time.process_time() - cpu0
        srv1 = _server_cpu_s(pids)
        chunks = sum(len(r.chunks) for r in result.records)
        client_cpu = sum(result.worker_cpu_s) if workers is not None else cpu
        gaps_us = [g * 1e6 for g in _gaps(result.records)]
        gap_med = statistics.median(gaps_us) if gaps_us else None
        done = sum(r.ok for r in result.records)
        srv = "n/a" if srv0 is None or srv1 is None else f"{100 * (srv1 - srv0) / result.duration_s:.0f}%"
        each = ", ".join(
            f"{n} req/{c:.1f} s CPU" for n, c in zip(result.worker_requests, result.worker_cpu_s, strict=False)
        )
        print(
            f"{'in-proc' if workers is None else workers:>8}{args.ray_streams:>8}"
            f"{f'{done}/{args.ray_requests}':>11}{_fmt(chunks / result.duration_s):>10}"
            f"{_fmt(client_cpu / chunks * 1e6 if chunks else None):>13}{_fmt(gap_med):>11}"
            f"{_fmt(_p99(gaps_us)):>11}{srv:>8}{wall - result.duration_s:>8.1f}"
            f"{_fmt(peak[0] / 2**20 if peak else None):>9}{f'{cpu:.1f} s':>11}  {each or '-'}",
            flush=True,
        )
        for line in result.worker_errors:
            print(f"        {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description="client capacity against a zero-delay streaming server")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 50, 200, 500, 1000], help="concurrent streams")
    parser.add_argument("--quick", action="store_true", help="levels 1 200 1000 only")
    parser.add_argument("--requests-per-stream", type=int, default=1, help="measured zero-delay requests per stream")
    parser.add_argument("--min-requests", type=int, default=400, help="measured zero-delay requests per level")
    parser.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument("--tick-ms", type=float, default=200.0, help="chunk interval of the paced phase, ms")
    parser.add_argument("--paced-tokens", type=int, default=16, help="output tokens per paced request")
    parser.add_argument("--servers", type=int, default=1, help="server processes (streams spread over them)")
    parser.add_argument("--paths", nargs="+", choices=[*sorted(PATHS), "alt"], default=["openai", "lean"])
    parser.add_argument(
        "--alt",
        metavar="FILE",
        help="an older lean path (make_client, stream_chat) to measure as path 'alt', e.g. the hand-rolled HTTP/1.1 "
        "client: git show <commit>:planner/fast_stream.py > /tmp/old.py",
    )
    parser.add_argument(
        "--ray-workers",
        type=int,
        nargs="+",
        metavar="N",
        help="instead: the load runner in one process and on N Ray workers (e.g. 1 2 4), needs requirements-ray.txt",
    )
    parser.add_argument("--ray-streams", type=int, default=200, help="--ray-workers: concurrency cap of the run")
    parser.add_argument("--ray-requests", type=int, default=2000, help="--ray-workers: requests per run")
    args = parser.parse_args()
    if args.ray_workers:
        _raise_fd_limit(args.ray_streams)
        with ZeroDelayServers(args.servers) as servers:
            _ray_workers(args, servers.urls, servers.pids)
        return 0
    if args.alt:
        _load_alt(args.alt)
        if "alt" not in args.paths:
            args.paths.append("alt")
    elif "alt" in args.paths:
        parser.error("--paths alt needs --alt FILE")
    levels = [1, 200, 1000] if args.quick else args.levels
    _raise_fd_limit(max(levels))
    print(f"zero-delay phase: chunks/s, CPU, gaps; paced phase (a chunk every {args.tick_ms:g} ms): open, ITL")
    print(
        f"{'path':<7}{'streams':>8}{'open':>6}{'done/sent':>11}{'err':>4}{'chunks/s':>9}{'CPU µs/chunk':>13}"
        f"{'gap med µs':>11}{'gap p99 µs':>11}{'srv CPU':>8}"
        f"{'ITL med ms':>11}{'ITL p99 ms':>11}{'TTFT max ms':>12}{'cli CPU':>8}"
    )
    results: list[Level] = []
    with ZeroDelayServers(args.servers) as servers:
        for path in args.paths:
            for streams in levels:
                n = max(args.requests_per_stream, math.ceil(args.min_requests / streams))
                lv = _level(path, servers.urls, streams, n, args, servers.pids)
                results.append(lv)
                srv = "n/a" if lv.server_cpu_share is None else f"{100 * lv.server_cpu_share:.0f}%"
                print(
                    f"{lv.path:<7}{lv.streams:>8}{lv.open_max:>6}{f'{lv.done}/{lv.sent}':>11}{lv.errors:>4}"
                    f"{_fmt(lv.chunks_per_s):>9}{_fmt(lv.cpu_us_per_chunk):>13}{_fmt(lv.gap_median_us):>11}"
                    f"{_fmt(lv.gap_p99_us):>11}{srv:>8}{_fmt(lv.paced_itl_median_ms, 1):>11}"
                    f"{_fmt(lv.paced_itl_p99_ms, 1):>11}{_fmt(lv.paced_ttft_max_ms, 1):>12}"
                    f"{f'{100 * lv.paced_client_cpu_share:.0f}%':>8}",
                    flush=True,
                )
                if lv.first_error:
                    print(f"        first error: {lv.first_error}")
    print()
    for path in args.paths:
        top = next((r for r in results if r.path == path and r.streams == TARGET_STREAMS), None)
        if top is None:
            print(f"{path}: {TARGET_STREAMS:,} concurrent streams without errors: not run")
        else:
            met = top.errors == 0 and top.open_max >= TARGET_STREAMS
            print(
                f"{path}: {TARGET_STREAMS:,} concurrent streams without errors: {'MET' if met else 'MISSED'} "
                f"({top.open_max:,} streams open at once, {top.errors} errors of {top.sent} requests)"
            )
        mid = next((r for r in results if r.path == path and r.streams == TARGET_LEVEL), None)
        if mid is None or mid.cpu_us_per_chunk is None:
            print(f"{path}: ≤ {TARGET_US:g} µs added per chunk at {TARGET_LEVEL} streams: not run")
        else:
            met = mid.cpu_us_per_chunk <= TARGET_US and mid.errors == 0
            print(
                f"{path}: ≤ {TARGET_US:g} µs added per chunk at {TARGET_LEVEL} streams: {'MET' if met else 'MISSED'} "
                f"({mid.cpu_us_per_chunk:,.1f} µs client CPU per chunk; gap median {_fmt(mid.gap_median_us)} µs)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
