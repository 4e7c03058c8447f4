"""The measured maximum-rate search next to the predicted answer, without a GPU: the same search
(:func:`planner.loadtest.max_rate.find_max_rate`) run twice on one deployment,

* **predicted**: each step simulated (:func:`planner.predict.simulator.simulate`, the step-time model with the default
  coefficients) instead of sent;
* **measured**: each step sent by the one load runner to ``python -m planner demo-server --model ... --gpu ...``,
  which plays that deployment in real time with the same engine model (:class:`planner.predict.simulator.
  OnlineScheduler`);

and :func:`planner.sizing.search.size`'s per-replica capacity for the same configuration. Agreement says the search,
the client, the server's real-time stepping and the sizing's probes measure the same thing; the model's own accuracy
against real vLLM is ``bench/prediction_accuracy.py``'s. Where a GPU can be had, point ``--endpoint`` at a real vLLM
serving the same deployment instead of the demo server.

Usage: ``python bench/max_rate_vs_predicted.py [--endpoint vllm:http://HOST:PORT]`` (default: Llama-3.1-8B-Instruct,
FP8 weights, on an L4, 256 + 32 tokens, p99 TTFT ≤ 1 s and p99 TPOT ≤ 100 ms; about 2.5 minutes, most of it the
measured search's 20-second runs).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.catalog.hub import resolve_model  # noqa: E402
from planner.loadtest.max_rate import MaxRateSpec, find_max_rate  # noqa: E402
from planner.loadtest.runner import LoadResult  # noqa: E402
from planner.loadtest.settings import LoadSettings  # noqa: E402
from planner.loadtest.worker import Job, JobOutcome  # noqa: E402
from planner.metrics.slo import parse_slos  # noqa: E402
from planner.predict.shape import step_shape  # noqa: E402
from planner.predict.simulator import simulate  # noqa: E402
from planner.serving.endpoints import Endpoint, parse_endpoint_flag  # noqa: E402
from planner.sizing.search import size  # noqa: E402
from planner.sizing.settings import SizingSettings  # noqa: E402

MODEL, GPU, QUANT, MAX_LEN = "meta-llama/Llama-3.1-8B-Instruct", "l4", "fp8", 2048
SLOS = ("ttft_p99_ms=1000", "tpot_p99_ms=100")
WORKLOAD = LoadSettings(
    num_prompts=40, input_len=256, output_len=32, ignore_eos=True, input_sizing="token_ids", scrape_metrics=False
)


def _print(name: str, result: object, seconds: float) -> None:
    print(f"{name}: {result.answer}  [{seconds:.0f} s]")  # type: ignore[attr-defined]
    for s in result.steps:  # type: ignore[attr-defined]
        level = "burst" if s.level == float("inf") else f"{s.level:.3g} req/s"
        print(f"  step {s.index}: {level:>12}  {s.why}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--endpoint", help="KIND:URL of a server playing the deployment (default: start the demo server)")
    a = ap.parse_args()
    spec = MaxRateSpec(WORKLOAD, parse_slos(SLOS), probe_s=20.0)
    model = resolve_model(MODEL).spec
    shape = step_shape(plan(Scenario(model=MODEL, gpu=GPU, quantization=QUANT, max_model_len=MAX_LEN), spec=model))

    async def simulated(job: Job) -> JobOutcome:
        run = simulate(shape, job.settings)
        return JobOutcome(job, LoadResult(job.endpoint.name, job.settings, (), (), run.metrics, run.metrics.duration_s))

    t0 = time.perf_counter()
    predicted = asyncio.run(
        find_max_rate(Endpoint(name="predicted", kind="vllm", base_url="http://127.0.0.1:9"), spec, run_step=simulated)
    )
    _print("predicted", predicted, time.perf_counter() - t0)

    sizing = size(
        SizingSettings(
            model=MODEL,
            target_rate=predicted.value or 1.0,
            input_len=WORKLOAD.input_len,
            output_len=WORKLOAD.output_len,
            slos=spec.slos,
            gpus=(GPU,),
            prices=((GPU, 1.0),),
            max_gpus=1,
            quantizations=(QUANT,),
            kv_cache_dtypes=("auto",),
            headroom=0.0,
            max_model_len=MAX_LEN,
        )
    )
    best = sizing.best
    if best is not None:
        print(
            f"sizing: {best.replicas} replica(s) for {predicted.value:.3g} req/s; per-replica capacity "
            f"≥ {best.replica_rate:.3g} req/s, below {best.replica_rate_limit:.3g}"
        )

    server = None
    text = a.endpoint
    try:
        if text is None:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "planner",
                    "demo-server",
                    "--port",
                    "0",
                    "--model",
                    MODEL,
                    "--gpu",
                    GPU,
                    "--quantization",
                    QUANT,
                    "--max-model-len",
                    str(MAX_LEN),
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            assert server.stdout is not None
            port = re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline())
            if port is None:
                raise SystemExit("the demo server did not start")
            text = f"vllm:http://127.0.0.1:{port.group(1)}"
        endpoint = parse_endpoint_flag("measured=" + text)
        t0 = time.perf_counter()
        measured = asyncio.run(find_max_rate(endpoint, spec))
        _print("measured", measured, time.perf_counter() - t0)
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    if predicted.value and measured.value:
        print(f"measured / predicted − 1: {measured.value / predicted.value - 1:+.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
