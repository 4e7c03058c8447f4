"""The Load Test engine's jobs from the page settings (:func:`~planner.loadtest.worker.plan_jobs`).

Runs one after another with /metrics scraped alongside are in tests/integration/loadtest/test_worker.py.
"""

from __future__ import annotations

import asyncio
import heapq
from datetime import datetime

import pytest

from planner.errors import PlannerError
from planner.loadtest import worker
from planner.loadtest.runner import LoadResult
from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.sweep import SweepPoint
from planner.loadtest.worker import plan_jobs
from planner.metrics.benchmark import compute_benchmark_metrics
from planner.serving.endpoints import Endpoint
from planner.serving.streaming import RequestRecord, TokenChunk


def _ep(name: str, kind: str = "vllm", url: str = "http://127.0.0.1:9", key_env: str | None = None) -> Endpoint:
    return Endpoint(name=name, kind=kind, base_url=url, api_key_env=key_env)


def test_sweep_jobs_per_endpoint_in_level_order():
    jobs = plan_jobs(
        [_ep("a"), _ep("b")],
        LoadSettings(mode="sweep", sweep=SweepSettings(sweep_max=6), num_prompts=4),
        tag="12:00:00",
    )
    assert [(j.endpoint.name, j.settings.max_concurrency) for j in jobs] == [
        ("a", 1),
        ("a", 2),
        ("a", 4),
        ("a", 6),
        ("b", 1),
        ("b", 2),
        ("b", 4),
        ("b", 6),
    ]
    assert jobs[0].label == "a · c=1 · 12:00:00"
    assert {j.sweep for j in jobs} == {"a sweep · 12:00:00", "b sweep · 12:00:00"}
    # every level is bounded in requests and time (SweepSpec: at least 4 requests per slot)
    assert [j.settings.num_prompts for j in jobs[:4]] == [4, 8, 16, 24]
    assert all(j.settings.duration_s == 300.0 for j in jobs)


def test_single_run_plans_the_same_load_for_every_kind():
    # one policy: the settings are the same for every endpoint; what TGI does not read is left out of its request
    # body by build_request (asserted on the bytes in tests/integration/test_wire.py) and named in the result
    jobs = plan_jobs([_ep("v"), _ep("t", kind="tgi")], LoadSettings(ignore_eos=True, max_concurrency=None))
    assert [j.settings.ignore_eos for j in jobs] == [True, True]
    assert jobs[0].label == "v · c=∞"
    assert all(j.settings.input_sizing == "tokenize" for j in jobs)


def test_prompt_datasets_need_prompts():
    with pytest.raises(PlannerError, match="custom dataset has no prompts"):
        plan_jobs([_ep("a")], LoadSettings(dataset_name="custom"))
    (job,) = plan_jobs([_ep("a")], LoadSettings(dataset_name="examples"), ("p1", "p2"))
    assert job.settings.prompts == ("p1", "p2") and not job.settings.synthetic


# --- a sweep against a scripted server (no socket, no clock) ----------------------------------------------------------
#: The scripted server: 8 slots (vLLM's --max-num-seqs 8); every request answers 4 tokens, the first 100 ms after it
#: is admitted, then one every 20 ms, so a request holds its slot 160 ms; requests beyond 8 wait for a slot in order.
SLOTS, TTFT_S, ITL_S, TOKENS = 8, 0.100, 0.020, 4


def _scripted_run(endpoint: Endpoint, settings: LoadSettings) -> LoadResult:
    """What a closed-loop run of ``settings.num_prompts`` requests at ``settings.max_concurrency`` measures against
    the scripted server: each client sends its next request the moment its previous answer ends."""
    clients = [0.0] * settings.max_concurrency  # when each client sends next
    slots = [0.0] * SLOTS  # when each slot is free
    records = []
    for _ in range(settings.num_prompts):
        sent = heapq.heappop(clients)
        admitted = max(sent, heapq.heappop(slots))
        first = admitted + TTFT_S - sent
        chunks = tuple(TokenChunk(first + k * ITL_S, f"t{k + 1} ", 1, "content") for k in range(TOKENS))
        end = chunks[-1].t_s
        records.append(
            RequestRecord(
                endpoint.name, ok=True, t_sent=sent, first_byte_s=admitted - sent, first_chunk_s=first,
                first_token_s=first, last_token_s=end, end_s=end, chunks=chunks, output_tokens=TOKENS,
                output_tokens_source="usage", prompt_tokens=12,
            )
        )  # fmt: skip
        heapq.heappush(slots, sent + end)
        heapq.heappush(clients, sent + end)
    duration = max(r.t_sent + r.end_s for r in records)
    metrics = compute_benchmark_metrics(records, [12] * len(records), duration)
    return LoadResult(endpoint.name, settings, tuple(records), (12,) * len(records), metrics, duration)


def test_a_sweep_against_a_server_saturated_at_8_stops_within_one_level(monkeypatch):
    """Throughput grows to concurrency 8 and is flat after it (8 × 4 tokens / 160 ms = 200 tokens/s), while from
    concurrency 16 on every request waits a whole answer for a slot (median TTFT 100 → 260 ms). A sweep to 64 stops at
    16, one level past the saturation point, and the refinement adds √(8 × 16) = 11.3 → 11; 32 and 64 never run.
    (The same sweep against the demo server with --max-num-seqs 8, on the wall clock: bench/sweep_saturation.py.)"""

    async def run_load(endpoint, settings, **_):
        return _scripted_run(endpoint, settings)

    async def no_kv(*_, **__):
        return None

    monkeypatch.setattr(worker, "run_load", run_load)
    monkeypatch.setattr(worker, "fetch_measured_kv", no_kv)
    sweep = SweepSettings(sweep_max=64, sweep_refine=True)
    settings = LoadSettings(mode="sweep", sweep=sweep, prompts=("p",), dataset_name="custom")
    messages = []
    jobs = plan_jobs([_ep("t")], settings, settings.prompts)
    queue = worker.JobQueue(jobs, started=datetime(2026, 12, 1), scrape=False, emit=lambda *m: messages.append(m))
    outcomes = asyncio.run(queue.run())
    assert [o.job.level for o in outcomes] == [1, 2, 4, 8, 16, 11]
    points = {o.job.level: SweepPoint.of(o.job.level, o.result) for o in outcomes}
    # 4 × 4 tokens / 160 ms = 100 tokens/s at 4; 200 at 8 and at 16 (no higher than at 8)
    assert [points[c].output_throughput for c in (4, 8, 16)] == pytest.approx([100.0, 200.0, 200.0])
    assert points[16].output_throughput < 1.1 * points[8].output_throughput
    assert points[8].output_throughput > 1.6 * points[4].output_throughput
    assert (points[8].ttft_median_s, points[16].ttft_median_s) == (pytest.approx(0.100), pytest.approx(0.260))
    (stopped,) = [m for m in messages if m[0] == "sweep_stopped"]
    assert stopped[2].startswith("concurrency 16:") and "median TTFT rose" in stopped[2]
    assert len(stopped[3]) == 2  # the levels 32 and 64, skipped
