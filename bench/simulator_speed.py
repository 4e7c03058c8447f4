"""How long the continuous-batching simulator takes for 10,000 requests (the issue's target: under 1 s).

Usage: ``python bench/simulator_speed.py [--requests 10000] [--repeat 3]``. For each workload (Llama-3.1-8B on an
H200, 512 prompt / 128 output tokens): closed loop at concurrency 16, 64 and 256, and open loop at 20 and 60
requests/s (Poisson), it prints the best wall time and the best CPU time (this process's, which other load on the
machine does not inflate) of ``--repeat`` runs, the engine steps simulated and the simulated duration, with the
machine's load average before each workload (a shared machine: a figure taken under load is not comparable). Another
CPU gives other figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.loadtest.settings import LoadSettings
from planner.predict.shape import step_shape
from planner.predict.simulator import simulate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    scenario = Scenario(
        model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", max_model_len=8192, max_num_seqs=256
    )
    shape = step_shape(plan(scenario, advise=False))
    workloads = [("concurrency", c) for c in (16, 64, 256)] + [("rate", r) for r in (20.0, 60.0)]
    print(f"{'workload':>18} {'wall s':>8} {'CPU s':>8} {'steps':>8} {'simulated s':>12} {'load':>6}")
    worst = 0.0
    for kind, value in workloads:
        settings = LoadSettings(
            num_prompts=a.requests,
            max_concurrency=int(value) if kind == "concurrency" else None,
            request_rate=float(value) if kind == "rate" else float("inf"),
            input_len=512,
            output_len=128,
            duration_s=None,
        )
        load = os.getloadavg()[0]
        best = cpu = float("inf")
        for _ in range(a.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            run = simulate(shape, settings)
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        worst = max(worst, cpu)
        label = f"c={int(value)}" if kind == "concurrency" else f"{value:g} req/s"
        print(f"{label:>18} {best:8.3f} {cpu:8.3f} {run.num_steps:8,} {run.metrics.duration_s:12.1f} {load:6.2f}")
    print(f"slowest: {worst:.3f} s of CPU for {a.requests:,} requests (target < 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
