"""Fleet simulations: each routing policy on a multi-turn workload over 4 replicas, and how long a 16-replica fleet
over 10,000 requests takes to simulate.

Usage: ``python bench/fleet_speed.py [--requests 10000] [--replicas 16] [--repeat 1]``. The deployment is
Llama-3.1-8B on one H200 per replica (``--max-model-len 8192``), the default coefficients.

1. **Policies** (4 replicas): 800 requests of conversations of 4 turns (256-token messages, 64-token answers), 64
   conversations in flight (16 a replica), as ``python -m planner fleet ... --dataset-name multi_turn`` runs them:
   each policy's prefix-cache hit rate, p50/p99 TTFT, load imbalance, and ``prefix_aware`` with its view of the
   caches refreshed only every 1 s and 10 s.
2. **Speed** (``--replicas`` replicas, ``--requests`` requests, each a policy run): open loop at 20 req/s a replica
   (512 + 128 tokens, Poisson), closed loop at 32 in flight a replica, and conversations (as above, 32 a replica);
   the CPU time of this process (``time.process_time``, which other load on the machine does not inflate), best of
   ``--repeat``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.capacity.scenario import Scenario
from planner.fleet.routers import ROUTERS
from planner.fleet.simulation import simulate_fleet
from planner.fleet.workload import fleet_requests
from planner.loadtest.settings import LoadSettings
from planner.predict.api import planned_shape


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--replicas", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    _, shape = planned_shape(
        Scenario(engine="vllm", model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200", max_model_len=8192)
    )

    chat = LoadSettings(
        dataset_name="multi_turn", num_prompts=800, num_turns=4, input_len=256, output_len=64, max_concurrency=64
    )
    requests = fleet_requests(chat)
    print("4 replicas, 800 requests of 4-turn conversations (256 + 64 tokens a turn), 64 in flight")
    print(f"{'router':<26} {'hit rate':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'imbalance':>9} {'CPU s':>6}")
    cases = [(r, 0.0) for r in ROUTERS] + [("prefix_aware", 1.0), ("prefix_aware", 10.0)]
    for router, refresh in cases:
        run = simulate_fleet(shape, requests, replicas=4, router=router, router_refresh_s=refresh, max_concurrency=64)
        name = router + (f" (view every {refresh:g} s)" if refresh else "")
        print(
            f"{name:<26} {run.prefix_cache_hit_rate:>8.1%} {run.metrics.ttft.median_s * 1e3:>9,.1f} "
            f"{run.metrics.ttft.p99_s * 1e3:>9,.1f} {run.load_imbalance:>9.2f} {run.cpu_s:>6.2f}"
        )

    n, k = a.requests, a.replicas
    workloads = {
        f"open loop {20 * k} req/s": (
            LoadSettings(num_prompts=n, input_len=512, output_len=128, request_rate=20.0 * k, max_concurrency=None),
            None,
        ),
        f"closed loop {32 * k} in flight": (
            LoadSettings(num_prompts=n, input_len=512, output_len=128, max_concurrency=32 * k),
            32 * k,
        ),
        f"conversations, {32 * k} in flight": (replace(chat, num_prompts=n, max_concurrency=32 * k), 32 * k),
    }
    print(f"\n{k} replicas, {n:,} requests: CPU seconds of one simulation (best of {a.repeat})")
    print(f"{'workload':<32} {'router':<14} {'CPU s':>7} {'hit rate':>8} {'TTFT p99 ms':>11}")
    for label, (settings, cap) in workloads.items():
        fleet = fleet_requests(settings)
        for router in ("round_robin", "prefix_aware"):
            runs = [
                simulate_fleet(shape, fleet, replicas=k, router=router, max_concurrency=cap) for _ in range(a.repeat)
            ]
            best = min(runs, key=lambda r: r.cpu_s)
            print(
                f"{label:<32} {router:<14} {best.cpu_s:>7.2f} {best.prefix_cache_hit_rate:>8.1%} "
                f"{best.metrics.ttft.p99_s * 1e3:>11,.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
