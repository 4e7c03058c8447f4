"""A sweep against the demo server saturated at 8 (``--max-num-seqs 8``), on the wall clock: the levels it ran, where
it stopped and why, and each level's throughput and median TTFT.

The test of this behaviour runs on a scripted server with no clock (tests/unit/loadtest/test_worker.py: levels 1, 2,
4, 8, 16 and the refinement 11; 32 and 64 never run). On a busy machine the real sweep can stop a level early or late,
which is why the wall-clock version is a figure here and not an assertion (it once failed under load as a test).

Usage: ``python bench/sweep_saturation.py``; exits 0. Expected: ``levels 1, 2, 4, 8, 16, 11``.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.loadtest.settings import LoadSettings, SweepSettings  # noqa: E402
from planner.loadtest.sweep import SweepPoint  # noqa: E402
from planner.loadtest.worker import JobQueue, plan_jobs  # noqa: E402
from planner.serving.endpoints import Endpoint  # noqa: E402
from tests.servers.timed_sse import TimedServer  # noqa: E402


def main() -> int:
    settings = LoadSettings(
        mode="sweep",
        sweep=SweepSettings(sweep_max=64, sweep_refine=True),
        prompts=("sat [ttft_ms=100] [itl_ms=20] [tokens=8]",),  # long enough that a busy client barely shows
        dataset_name="custom",
        output_len=8,
    )
    messages: list[tuple] = []
    with TimedServer(max_num_seqs=8) as server:
        jobs = plan_jobs([Endpoint("t", "vllm", server.url)], settings, settings.prompts)
        queue = JobQueue(jobs, started=datetime.now(), scrape=False, emit=lambda *m: messages.append(m))
        outcomes = asyncio.run(queue.run())
    print("levels " + ", ".join(str(o.job.level) for o in outcomes) + "   (expected: 1, 2, 4, 8, 16, 11)")
    for kind, *payload in messages:
        if kind == "sweep_stopped":
            print(f"stopped: {payload[1]}")
    print(f"{'concurrency':>11} {'output tok/s':>13} {'median TTFT ms':>15}")
    for o in outcomes:
        p = SweepPoint.of(o.job.level, o.result)
        ttft = "n/a" if p.ttft_median_s is None else f"{p.ttft_median_s * 1000:.1f}"
        print(f"{p.concurrency:>11} {p.output_throughput:>13.1f} {ttft:>15}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
