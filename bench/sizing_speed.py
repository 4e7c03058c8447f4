"""How long the sizing search takes over the whole GPU catalog for one model (the issue's target: under 1 s).

Usage: ``python bench/sizing_speed.py [--repeat 3] [--models ...] [--slo-estimate pessimistic|point]``. For each
model, the issue's question (20 req/s of 2,048 + 300 tokens, p99 TTFT ≤ 1 s, p99 TPOT ≤ 50 ms, 20% headroom, every
catalog GPU, up to 8 GPUs a replica, checkpoint and FP8 weights, auto and FP8 KV cache, SLOs checked at
``--slo-estimate``, by default the settings' default: the pessimistic end of the predictor's error band) is answered
by :func:`planner.sizing.search.size` in a FRESH
Python process each time (``--repeat`` times: cold, as the first visitor of a page or a CLI call sees it; the model is
resolved from the catalog before the clock starts), and the script prints the best and the worst wall time, the
least CPU time (what the search costs without other processes on the cores), the configurations per verdict, the
simulations run, and the answer. Then, in this process, it times the Pareto view's
exploration (:func:`planner.sizing.pareto.pareto_points`, drawn after the answer on the page) and a warm repeat of the
search (its probes cached).

The machine's load average is printed first: this is a 2-core machine shared with other work, and figures taken
under load are not comparable with quiet ones.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = (
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen3-30B-A3B",
    "meta-llama/Llama-3.1-70B-Instruct",
)
_CHILD = """
import json, sys, time
from planner.catalog.hub import resolve_model
from planner.sizing.search import size
from planner.sizing.settings import SizingSettings
spec = resolve_model(sys.argv[1]).spec
t0, c0 = time.perf_counter(), time.process_time()
r = size(SizingSettings(model=sys.argv[1], slo_estimate=sys.argv[2]), spec=spec)
print(json.dumps({"s": time.perf_counter() - t0, "cpu": time.process_time() - c0, "probes": r.probes_run,
                  "counts": r.counts(),
                  "configs": len(r.options), "answer": r.answer}))
"""


def _cold(model: str, estimate: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, model, estimate],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--slo-estimate", default=None, help="pessimistic or point (default: the settings' default)")
    a = ap.parse_args()
    from planner.sizing.settings import DEFAULT

    estimate = a.slo_estimate or DEFAULT.slo_estimate
    print(f"SLOs checked at: {estimate}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"{'model':<36} {'best s':>7} {'worst s':>8} {'CPU s':>6} {'sims':>5} {'configs':>8}  verdicts")
    worst_all = worst_cpu = 0.0
    answers = {}
    for model in a.models:
        runs = [_cold(model, estimate) for _ in range(a.repeat)]
        times = [r["s"] for r in runs]
        cpu = min(r["cpu"] for r in runs)
        worst_all = max(worst_all, max(times))
        worst_cpu = max(worst_cpu, cpu)
        counts = ", ".join(f"{n} {k}" for k, n in runs[0]["counts"].items() if n)
        print(
            f"{model:<36} {min(times):7.2f} {max(times):8.2f} {cpu:6.2f} {runs[0]['probes']:5d} {runs[0]['configs']:8d}"
            f"  {counts}"
        )
        answers[model] = runs[0]["answer"]
    print(f"slowest cold search: {worst_all:.2f} s wall, {worst_cpu:.2f} s of CPU (target < 1 s)")
    for model, answer in answers.items():
        print(f"  {model}: {answer}")

    from planner.catalog.hub import resolve_model
    from planner.sizing.pareto import pareto_points
    from planner.sizing.search import size
    from planner.sizing.settings import SizingSettings

    model = a.models[0]
    spec = resolve_model(model).spec
    settings = SizingSettings(model=model, slo_estimate=estimate)
    result = size(settings, spec=spec)
    t0 = time.perf_counter()
    again = size(settings, spec=spec)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    points = pareto_points(result)
    explore = time.perf_counter() - t0
    print(
        f"{model}: warm repeat {warm:.2f} s ({again.probes_run} simulations, cached); Pareto view {explore:.2f} s for "
        f"{len(points)} points"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
