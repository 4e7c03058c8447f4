"""The load runner's measured requests sent by two Ray workers on a local Ray (127.0.0.1), against the recording
timed server (:mod:`planner.demo`): the same requests cross the wire and come back as the same records,
token counts and metrics as a single-process run of the same seeded workload; a killed worker is reported and its
requests counted as failed while the other goes on; a stop ends every worker.

One Ray session for the module (2 logical CPUs, no dashboard), shut down after it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-ray.txt)")

from planner.loadtest.ray_workers import NAMESPACE, send_on_ray  # noqa: E402
from planner.loadtest.runner import LoadResult, run_load  # noqa: E402
from planner.loadtest.settings import LoadSettings  # noqa: E402
from planner.serving.endpoints import Endpoint  # noqa: E402
from planner.serving.streaming import RequestRecord  # noqa: E402
from tests.servers.timed_sse import TimedServer  # noqa: E402

GENERATION = "/v1/chat/completions"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A Ray of 2 logical CPUs on this machine (one per worker), no dashboard, shut down after the module."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def fast_server() -> Iterator[TimedServer]:
    with TimedServer(flags=("--ttft-ms", "5", "--itl-ms", "1")) as server:
        yield server


@pytest.fixture(scope="module")
def slow_server() -> Iterator[TimedServer]:
    """Answers take ~0.3 s (8 tokens: 100 ms to the first, 30 ms apart), so a worker has requests left mid-run."""
    with TimedServer(flags=("--ttft-ms", "100", "--itl-ms", "30")) as server:
        yield server


def _bodies(server: TimedServer) -> list[dict]:
    return [json.loads(r["body"]) for r in server.recorded() if r["path"] == GENERATION]


def _key(body: dict) -> str:
    return json.dumps(body, sort_keys=True)


def _run(server: TimedServer, settings: LoadSettings, **kwargs) -> LoadResult:
    return asyncio.run(run_load(Endpoint("t", "vllm", server.url), settings, remote=send_on_ray, **kwargs))


SEEDED = LoadSettings(
    num_prompts=16,
    max_concurrency=4,
    request_rate=200.0,  # Poisson arrivals, seeded: the schedule is the run's, split between the workers
    seed=11,
    input_len=10,
    output_len=6,
    range_ratio=0.5,  # output lengths 3..9, drawn per request
    ignore_eos=True,
    input_sizing="words",
    scrape_metrics=False,
)


def test_two_workers_send_the_same_requests_and_give_the_same_records_and_metrics(local_ray, fast_server):
    fast_server.clear_recorded()
    single = _run(fast_server, SEEDED)
    single_bodies = _bodies(fast_server)
    fast_server.clear_recorded()
    merged = _run(fast_server, replace(SEEDED, num_workers=2))
    merged_bodies = _bodies(fast_server)

    # the same 16 requests crossed the wire (order aside: two clients interleave)
    assert len(single_bodies) == len(merged_bodies) == 16
    assert Counter(map(_key, single_bodies)) == Counter(map(_key, merged_bodies))
    # cap 4 over 2 workers = 2 + 2, requests dealt by slot: 8 each
    assert (single.num_workers, single.worker_requests) == (None, ())
    assert (merged.num_workers, merged.worker_requests, merged.worker_errors) == (2, (8, 8), ())
    # the same records, request by request (the runner keeps schedule order)
    assert len(single.records) == len(merged.records) == 16
    for a, b in zip(single.records, merged.records, strict=True):
        assert (a.ok, a.output_tokens, a.prompt_tokens, a.text, len(a.chunks)) == (
            b.ok,
            b.output_tokens,
            b.prompt_tokens,
            b.text,
            len(b.chunks),
        )
    assert single.input_tokens == merged.input_tokens
    # golden token counts: every request got the max_tokens it sent (ignore_eos), the server counted each prompt
    asked_out = sum(b["max_tokens"] for b in single_bodies)
    for result in (single, merged):
        m = result.metrics
        assert (m.completed, m.failed) == (16, 0)
        assert m.total_output_tokens == asked_out
        assert m.total_input_tokens == sum(r.prompt_tokens for r in result.records)
        # the definitions: throughput = completed (tokens) / the run's wall time; one TTFT sample per request
        assert m.request_throughput == pytest.approx(16 / result.duration_s, rel=1e-9)
        assert m.output_throughput == pytest.approx(asked_out / result.duration_s, rel=1e-9)
        assert m.ttft is not None and m.ttft.count == 16 and m.e2el is not None and m.e2el.count == 16
        assert result.not_sent == 0 and result.cancelled == 0 and result.stopped is None
    # the workers' records are on the driver's clock: every send lies inside the run
    assert merged.start_s is not None
    for record in merged.records:
        assert merged.start_s - 0.05 <= record.t_sent <= merged.start_s + merged.duration_s
    # the summed in-flight count never exceeds the global cap and ends at 0
    assert max(n for _, n in merged.in_flight) <= 4 and merged.in_flight[-1][1] == 0


def _kill_worker(k: int) -> None:
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == NAMESPACE]
    (name,) = [n for n in names if n.endswith(f"-{k}")]
    ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)


SLOW = LoadSettings(
    num_prompts=12,
    max_concurrency=2,  # 1 + 1: each worker sends its 6 requests one after another (~2 s)
    input_len=4,
    output_len=8,
    ignore_eos=True,
    input_sizing="words",
    scrape_metrics=False,
    num_workers=2,
)


def test_a_killed_worker_is_reported_its_requests_fail_and_the_other_goes_on(local_ray, slow_server):
    killed: list[RequestRecord] = []

    def on_record(record: RequestRecord) -> None:
        if not killed:
            killed.append(record)
            _kill_worker(1)

    result = _run(slow_server, SLOW, on_record=on_record)
    assert killed, "no record arrived before the end"
    # worker 0 owns the even requests (slot j mod 2 = 0), worker 1 the odd ones
    assert len(result.records) == 12 and result.num_workers == 2
    assert all(r.ok for r in result.records[0::2])
    lost = [r for r in result.records[1::2] if not r.ok]
    assert 1 <= len(lost) <= 6
    assert all(r.error_kind == "worker" and r.error.startswith("load worker 1 died: ") for r in lost)
    assert result.metrics.failed == len(lost) and dict(result.metrics.failures_by_kind) == {"worker": len(lost)}
    assert result.worker_requests == (6, 6)
    (line,) = result.worker_errors
    assert line.startswith(f"load worker 1 died: {len(lost)} of its 6 requests counted as failed (")
    assert any(note.startswith("t: load worker 1 died") for note in result.notes)
    assert result.not_sent == 0  # every request is a record: ok, failed, or lost with its worker


def test_a_stop_ends_every_worker(local_ray, slow_server):
    slow_server.clear_recorded()
    stop: list[asyncio.Event] = []

    async def go() -> LoadResult:
        stop.append(asyncio.Event())

        def on_record(record: RequestRecord) -> None:
            stop[0].set()

        return await run_load(
            Endpoint("t", "vllm", slow_server.url), SLOW, on_record=on_record, stop=stop[0], remote=send_on_ray
        )

    result = asyncio.run(go())
    assert result.stopped == "cancelled" and result.worker_errors == ()  # both workers returned their shares
    assert len(result.records) < 12
    assert len(result.records) + result.cancelled + result.not_sent == 12
    # nothing more reaches the server once the run has returned
    sent = len(_bodies(slow_server))
    assert sent <= len(result.records) + result.cancelled
    time.sleep(0.5)
    assert len(_bodies(slow_server)) == sent


def test_the_cli_runs_on_workers_and_saves_their_counts(local_ray, fast_server, tmp_path, capsys):
    from planner.cli.main import main

    out = tmp_path / "run.json"
    argv = ["bench", "--endpoint", f"vllm:{fast_server.url}", "--num-prompts", "6", "--concurrency", "2"]
    argv += ["--output-len", "4", "--input-sizing", "words", "--no-scrape-metrics", "--workers", "2"]
    assert main([*argv, "--save-result", str(out)]) == 0
    assert "Ray workers: 2 (requests per worker: 3, 3)" in capsys.readouterr().out
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert (saved["planner_num_workers"], saved["planner_worker_requests"], saved["completed"]) == (2, [3, 3], 6)
