"""The load runner's measured requests sent by N Ray worker actors: one schedule, one set of metrics.

:func:`planner.loadtest.runner.run_load` makes the run's schedule once (discovery, prompt sizing, warmups, the
arrival times) and, with ``settings.num_workers``, hands its measured requests to its ``remote`` sender,
:func:`send_on_ray` (passed in by the caller, :mod:`planner.loadtest.worker`):

* :func:`split_threads` deals the schedule's request groups (a request, or a whole conversation) round-robin to the
  workers and splits the concurrency cap so the workers' caps sum to the run's (worker ``k`` gets
  ``⌊C/N⌋ + (k < C mod N)``; a group goes to the worker owning slot ``j mod C``, so each worker's share of the
  requests matches its share of the cap). Arrival times are the run's: a rate is global, not per worker.
* Every worker (:class:`LoadWorker`, a Ray async actor: the same asyncio code, one event loop per worker process)
  runs :func:`planner.loadtest.runner.send_share`, the one send loop, from a common start time (wall clock, read
  on each worker's own ``perf_counter``), through its own client of the load backend, and returns the same
  per-request records.
* The driver polls the workers every :data:`POLL_S` for records and in-flight counts (live progress), forwards a
  stop to all of them (cancel), puts every record's ``t_sent`` on its own clock, and merges them into one
  :class:`~planner.loadtest.runner.SentShare` that ``run_load`` turns into one result with the metrics code of a
  single-process run. A worker that dies is reported (:attr:`LoadResult.worker_errors`); its requests not yet
  received are failed records of kind ``worker`` with the reason, and the other workers go on.

Ray is optional (``requirements-ray.txt``); without it :func:`send_on_ray` raises
:class:`~planner.errors.RayUnavailableError` with the install line. With no ``ray_address`` the workers run on a
Ray started in this process (``ray.init``, no dashboard, one logical CPU per worker at least), kept for the
process's later runs; with one, on that cluster, with this package shipped to it (``runtime_env`` ``py_modules``;
the cluster's Python needs ``requirements.txt``).

Imports :mod:`planner.loadtest.runner` (its send loop) and the serving package, and is imported by nothing below
it: :mod:`planner.loadtest.worker` hands :func:`send_on_ray` to ``run_load`` as its ``remote`` sender. Ray only
inside functions.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from planner.errors import RayUnavailableError
from planner.loadtest.runner import LoadProgress, SentShare, send_share
from planner.loadtest.schedule import Schedule
from planner.loadtest.settings import LoadSettings
from planner.serving.backends import LOAD_BACKEND, make_client
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint, api_key
from planner.serving.streaming import RequestRecord, one_line

__all__ = [
    "INSTALL_HINT",
    "NAMESPACE",
    "POLL_S",
    "RAY_VERSION",
    "START_LEAD_S",
    "LoadWorker",
    "configured_address",
    "import_ray",
    "send_on_ray",
    "split_threads",
    "start_ray",
]

#: The Ray release the project is tested with (``requirements-ray.txt``).
RAY_VERSION = "2.60.0"
#: One line for a machine without Ray.
INSTALL_HINT = f"Ray workers need Ray: pip install -r requirements-ray.txt (ray=={RAY_VERSION})"
#: Ray namespace of the workers; each is named ``load-<run id>-<k>`` (so a test or an operator can find one).
NAMESPACE = "planner-load"
#: Seconds between two polls of the workers for records and in-flight counts (the live view's refresh).
POLL_S = 0.25
#: Seconds between handing the workers their shares and the common start: every worker has its share by then (a
#: call to a started actor takes milliseconds on one machine, tens on a cluster).
START_LEAD_S = 0.5
#: Seconds to wait for the workers' processes to start before giving up (a cluster without free CPUs).
READY_TIMEOUT_S = 120.0


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        RayUnavailableError: Ray is not installed (the message is :data:`INSTALL_HINT`).
    """
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(INSTALL_HINT) from exc
    return ray


def configured_address(address: str | None = None) -> str | None:
    """The Ray cluster to use: ``address``, else Ray's own ``RAY_ADDRESS`` variable, else None (local workers)."""
    return address or os.environ.get("RAY_ADDRESS") or None


def start_ray(num_workers: int, address: str | None = None) -> Any:
    """Connect to Ray once per process and return the module: a running session is kept as it is; else the cluster
    at :func:`configured_address` with this package shipped to its workers, or a local Ray (``num_cpus`` =
    max(workers, this machine's cores), no dashboard) when none is configured.

    Raises:
        RayUnavailableError: Ray is not installed, or the cluster cannot be reached.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    address = configured_address(address)
    if address is not None:
        _check_reachable(address)
    try:
        if address is None:
            ray.init(
                num_cpus=max(num_workers, os.cpu_count() or 1),
                include_dashboard=False,
                logging_level="warning",
                log_to_driver=False,
            )
        else:
            package = str(Path(__file__).resolve().parents[1])
            ray.init(address=address, runtime_env={"py_modules": [package]}, logging_level="warning")
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad address
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise RayUnavailableError(f"could not start {where}: {one_line(exc, 200)}") from exc
    return ray


def _check_reachable(address: str) -> None:
    """Fail at once on a ``HOST:PORT`` (or ``ray://HOST:PORT``) nothing answers on: Ray itself retries a missing
    cluster for a minute or more. Other forms (``auto``) are left to Ray.

    Raises:
        RayUnavailableError: the address does not accept a TCP connection within 5 s.
    """
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5.0).close()
    except OSError as exc:
        raise RayUnavailableError(f"the Ray cluster at {address} cannot be reached: {one_line(exc, 120)}") from exc


def split_threads(
    threads: Sequence[Sequence[int]], num_workers: int, max_concurrency: int | None
) -> list[tuple[int | None, list[Sequence[int]]]]:
    """``(concurrency cap, request groups)`` per worker: the run's cap split so the caps sum to it, the groups
    dealt round-robin in release order, weighted by the caps.

    Uses ``min(num_workers, max_concurrency, len(threads))`` workers (at least one): a worker needs a slot and a
    request. With cap ``C`` over ``N`` workers, worker ``k`` gets ``⌊C/N⌋ + (1 if k < C mod N)`` and group ``j``
    goes to worker ``(j mod C) mod N``; without a cap, to worker ``j mod N``.

    Example:
        >>> split_threads([[0], [1], [2], [3], [4]], 2, 3)
        [(2, [[0], [2], [3]]), (1, [[1], [4]])]
    """
    n = max(1, min(num_workers, max_concurrency or num_workers, len(threads)))
    if max_concurrency:
        caps: list[int | None] = [max_concurrency // n + (k < max_concurrency % n) for k in range(n)]
    else:
        caps = [None] * n
    shares: list[list[Sequence[int]]] = [[] for _ in range(n)]
    for j, group in enumerate(threads):
        shares[(j % max_concurrency) % n if max_concurrency else j % n].append(group)
    return list(zip(caps, shares, strict=True))


class LoadWorker:
    """One worker's body, made a Ray async actor by :func:`send_on_ray` (``ray.remote(LoadWorker)``): it sends its
    share with :func:`~planner.loadtest.runner.send_share` and answers polls and a stop while it runs."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self._records: list[tuple[int, RequestRecord]] = []
        self._points: list[tuple[float, int]] = []
        self._sent = 0
        self._start_s: float | None = None
        self._drained: set[int] = set()

    async def ready(self) -> tuple[str, int]:
        """``(host name, process id)`` once the actor is up."""
        return socket.gethostname(), os.getpid()

    async def run(
        self,
        endpoint: Endpoint,
        info: EndpointInfo,
        settings: LoadSettings,
        schedule: Schedule,
        threads: Sequence[Sequence[int]],
        max_concurrency: int | None,
        start_wall_s: float,
        secrets: Mapping[str, Any] | None,
    ) -> SentShare:
        """Send ``threads`` from the wall-clock time ``start_wall_s`` (``time.time()``) with a cap of
        ``max_concurrency``; the share's times are on this process's ``perf_counter``, its ``finished`` only the
        records no poll has taken (each record crosses to the driver once)."""
        self._start_s = time.perf_counter() + (start_wall_s - time.time())
        client = make_client(endpoint, backend=LOAD_BACKEND, timeout_s=settings.timeout_s, secrets=secrets)

        def sent(t_s: float, n: int) -> None:
            self._points.append((t_s, n))

        try:
            share = await send_share(
                endpoint,
                info,
                settings,
                schedule,
                threads,
                client=client,
                max_concurrency=max_concurrency,
                start_s=self._start_s,
                secrets=secrets,
                stop=self._stop,
                on_record=lambda i, r: self._records.append((i, r)),
                on_progress=lambda p: setattr(self, "_sent", p.sent),
                on_in_flight=sent,
            )
        finally:
            await client.close()
        return replace(share, finished=tuple((i, r) for i, r in share.finished if i not in self._drained))

    async def drain(self) -> tuple[float | None, list[tuple[int, RequestRecord]], list[tuple[float, int]], int]:
        """What happened since the last poll: ``(start perf_counter, records, in-flight points, sent so far)``."""
        records, points = self._records, self._points
        self._records, self._points = [], []
        self._drained.update(i for i, _ in records)
        return self._start_s, records, points, self._sent

    async def cancel(self) -> None:
        """Stop sending: the run returns what finished, as at a duration cap."""
        self._stop.set()


class _Merge:
    """The driver's view of the workers: records on its clock, in-flight levels, who died."""

    def __init__(
        self, endpoint: Endpoint, schedule: Schedule, shares: Sequence[Sequence[Sequence[int]]], start_s: float
    ):
        self.endpoint = endpoint
        self.schedule = schedule
        self.start_s = start_s
        self.indices = [[i for group in share for i in group] for share in shares]
        self.records: list[dict[int, RequestRecord]] = [{} for _ in shares]
        self.points: list[list[tuple[float, int]]] = [[(0.0, 0)] for _ in shares]
        self.sent = [0] * len(shares)
        self.shift_s: list[float | None] = [None] * len(shares)
        self.final: list[SentShare | None] = [None] * len(shares)
        self.died: dict[int, str] = {}
        self.died_s: dict[int, float] = {}

    def take(
        self, k: int, start_s: float | None, records: Sequence[tuple[int, RequestRecord]]
    ) -> list[tuple[int, RequestRecord]]:
        """Keep worker ``k``'s ``(index, record)`` pairs (its clock moved to the driver's); the ones new here."""
        if start_s is not None:
            self.shift_s[k] = self.start_s - start_s
        shift = self.shift_s[k] or 0.0
        new = []
        for index, record in records:
            if index not in self.records[k]:
                moved = replace(record, t_sent=record.t_sent + shift)
                self.records[k][index] = moved
                new.append((index, moved))
        return new

    def level(self) -> int:
        return sum(points[-1][1] for points in self.points)

    def died_now(self, k: int, reason: str) -> list[tuple[int, RequestRecord]]:
        """Worker ``k`` is dead: its requests not received become failed records saying why."""
        if k in self.died:
            return []
        self.died[k] = reason
        self.died_s[k] = time.perf_counter() - self.start_s
        self.points[k].append((self.died_s[k], 0))
        failed = []
        for index in self.indices[k]:
            if index not in self.records[k]:
                t_sent = self.start_s + (self.schedule.arrival_s[index] or 0.0)
                record = RequestRecord(
                    self.endpoint.name,
                    ok=False,
                    error=f"load worker {k} died: {reason}",
                    error_kind="worker",
                    t_sent=t_sent,
                )
                self.records[k][index] = record
                failed.append((index, record))
        return failed

    def in_flight(self) -> tuple[tuple[float, int], ...]:
        """Σ over the workers of their in-flight counts, after every change (time-ordered)."""
        events = sorted((t, k, n) for k, points in enumerate(self.points) for t, n in points)
        levels = [0] * len(self.points)
        out = []
        for t, k, n in events:
            levels[k] = n
            out.append((max(t, 0.0), sum(levels)))
        return tuple(out)


async def send_on_ray(
    endpoint: Endpoint,
    info: EndpointInfo,
    settings: LoadSettings,
    schedule: Schedule,
    *,
    secrets: Mapping[str, Any] | None = None,
    stop: asyncio.Event | None = None,
    on_record: Callable[[int, RequestRecord], None] | None = None,
    on_progress: Callable[[LoadProgress], None] | None = None,
    on_in_flight: Callable[[float, int], None] | None = None,
) -> SentShare:
    """Send ``schedule``'s measured requests from ``settings.num_workers`` Ray workers and merge what they did (see
    the module docstring); the arguments and the callbacks are :func:`planner.loadtest.runner.send_share`'s, the
    callbacks called in this event loop every :data:`POLL_S` with the workers' news (progress over all of them).

    Returns:
        One :class:`~planner.loadtest.runner.SentShare`: every worker's records on this process's clock (a dead
        worker's missing ones failed, kind ``worker``), the summed in-flight count, ``num_workers`` and
        ``worker_requests`` set, one line per dead worker in ``worker_errors``.

    Raises:
        RayUnavailableError: Ray is not installed, the cluster cannot be reached, or the workers did not start
            within :data:`READY_TIMEOUT_S`.
    """
    stop = stop or asyncio.Event()
    ray = start_ray(settings.num_workers or 1, settings.ray_address)
    from ray.exceptions import RayError

    if endpoint.api_key_env:  # the workers may run where this machine's environment is not: hand them the key
        secrets = {endpoint.api_key_env: api_key(endpoint, secrets)}
    split = split_threads(schedule.threads(), settings.num_workers or 1, settings.max_concurrency)
    run_id = uuid.uuid4().hex[:8]
    actor = ray.remote(num_cpus=1)(LoadWorker)
    workers = [
        actor.options(name=f"load-{run_id}-{k}", namespace=NAMESPACE, scheduling_strategy="SPREAD").remote()
        for k in range(len(split))
    ]
    try:
        try:
            await asyncio.wait_for(asyncio.gather(*(w.ready.remote() for w in workers)), READY_TIMEOUT_S)
        except (TimeoutError, RayError) as exc:
            free = ray.available_resources().get("CPU", 0)
            raise RayUnavailableError(
                f"{len(workers)} Ray load workers did not start ({free:g} CPUs free, one each): {one_line(exc, 150)}"
            ) from exc
        start_s = time.perf_counter() + START_LEAD_S
        start_wall_s = time.time() + START_LEAD_S
        merge = _Merge(endpoint, schedule, [share for _, share in split], start_s)
        runs = {
            asyncio.ensure_future(
                w.run.remote(endpoint, info, settings, schedule, share, cap, start_wall_s, secrets)
            ): k
            for k, (w, (cap, share)) in enumerate(zip(workers, split, strict=True))
        }
        total = settings.num_prompts

        def tell(records: Sequence[tuple[int, RequestRecord]]) -> None:
            for index, record in records:
                if on_record is not None:
                    on_record(index, record)
            if on_in_flight is not None:
                on_in_flight(time.perf_counter() - start_s, merge.level())
            if records and on_progress is not None:
                done = [r for got in merge.records for r in got.values()]
                ok = sum(r.ok for r in done)
                elapsed = time.perf_counter() - start_s
                sent = sum(merge.sent)
                progress = LoadProgress(elapsed, total, sent, ok, len(done) - ok, merge.level(), start_s)
                on_progress(progress)

        async def poll(k: int) -> None:
            try:
                worker_start, records, points, sent = await workers[k].drain.remote()
            except RayError as exc:
                tell(merge.died_now(k, one_line(exc, 200)))
                return
            merge.points[k] += [(t, n) for t, n in points]
            merge.sent[k] = max(merge.sent[k], sent)
            tell(merge.take(k, worker_start, records))

        pending = set(runs)
        cancelled = False
        stopper = asyncio.ensure_future(stop.wait())
        while pending:
            waits = pending | ({stopper} if not cancelled else set())  # a set stop would end every wait at once
            done, pending = await asyncio.wait(waits, timeout=POLL_S, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopper)
            if stop.is_set() and not cancelled:
                cancelled = True
                for k, w in enumerate(workers):
                    if k not in merge.died:
                        w.cancel.remote()
            for task in done - {stopper}:
                k = runs[task]
                try:
                    share = task.result()
                except RayError as exc:
                    tell(merge.died_now(k, one_line(exc, 200)))
                    continue
                merge.final[k] = share
                merge.shift_s[k] = start_s - share.start_s
                merge.points[k] = list(share.in_flight)
                merge.sent[k] = share.sent
                tell(merge.take(k, share.start_s, share.finished))
            await asyncio.gather(*(poll(k) for k in runs.values() if merge.final[k] is None and k not in merge.died))
        stopper.cancel()
        return _merged(merge, settings, start_s)
    finally:
        for w in workers:
            ray.kill(w)


def _merged(merge: _Merge, settings: LoadSettings, start_s: float) -> SentShare:
    """The workers' shares as one (see :func:`send_on_ray`)."""
    finished = sorted(((i, r) for got in merge.records for i, r in got.items()), key=lambda item: item[0])
    # The run ends when its last worker ended (not at the poll that noticed it).
    ends = [s.duration_s for s in merge.final if s is not None] + list(merge.died_s.values())
    shares = [s for s in merge.final if s is not None]
    stops = {s.stopped for s in shares}
    stopped = "cancelled" if "cancelled" in stops else "duration" if "duration" in stops else None
    errors = []
    for k, reason in sorted(merge.died.items()):
        lost = sum(1 for r in merge.records[k].values() if r.error_kind == "worker")
        errors.append(
            f"load worker {k} died: {lost} of its {len(merge.indices[k])} requests counted as failed ({reason})"
        )
    # A dead worker's requests count as sent (and failed): a record, a cancel or "not sent" for every request.
    sent = sum(s.sent for s in shares) + sum(len(merge.indices[k]) for k in merge.died)
    return SentShare(
        finished=tuple(finished),
        sent_text=tuple(item for s in shares for item in s.sent_text),
        in_flight=merge.in_flight(),
        sent=sent,
        cancelled=sum(s.cancelled for s in shares),
        stopped=stopped,
        start_s=start_s,
        duration_s=max(ends, default=time.perf_counter() - start_s),
        num_workers=len(merge.indices),
        worker_requests=tuple(len(got) for got in merge.records),
        worker_errors=tuple(errors),
        worker_cpu_s=tuple(s.cpu_s for s in shares),
    )
