"""Fit the step-time model's default coefficients (``planner/predict/step_time.py``) from their sources.

The measurements (all of one H200 and vLLM 0.24.0):

1. ``bench/data/measured/h200_ceilings.json`` (a copy of ``shared/reference/measured/h200_ceilings.json``): 10 bare
   CUDA-graph decode steps of a Llama-3.1-8B-shaped model, batch 1–256 × KV length 1k–32k (no host overhead in a
   bare step: its ``step`` and ``seq`` columns are zero). They pin the KV-read and decode-matmul terms, which the
   server runs (contexts under 2.2k tokens) barely see.
2. ``bench/data/h200_sweeps/`` (``bench/h200_runs.py``): ``vllm bench serve`` sweeps of three model shapes (Llama-3.1-8B
   dense, Qwen2.5-32B dense, Qwen3-30B-A3B MoE), concurrency 1–256, 512 and 2048 input tokens, and Qwen3-30B-A3B's
   chat-route points; each run gives its mean TPOT, mean TTFT (where kept) and median ITL.
3. ``shared/device/vllm/README.md`` §4: Llama-3.1-8B on the chat route (529-token prompts), concurrency 1: TPOT
   4.80 ms, TTFT 32 ms (the only dense step past the CUDA-graph size measured at low load).

The fit is :func:`planner.predict.calibration.fit` over 2 and 3 with the steps of 1 beside them, started from
``START`` and pulled towards it only weakly (``PRIOR_WEIGHT``), with Huber weights (the 256-stream runs, where the
API server and client run out of CPU, count less). Every coefficient is then printed beside the code's default.
``bench/prediction_accuracy.py --loo`` refits this without each model in turn and scores the model left out: the
figure to quote for a model the defaults have not seen.

Usage: ``python bench/default_coefficients.py [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.h200_runs import MODELS, load_runs, shape_of  # noqa: E402
from planner.loadtest.settings import LoadSettings  # noqa: E402
from planner.predict.calibration import CalibrationRun, Fit, fit  # noqa: E402
from planner.predict.step_time import DEFAULT_COEFFICIENTS, TERMS, StepCoefficients, step_features  # noqa: E402

#: shared/device/vllm/README.md §4 (chat route, Llama-3.1-8B, concurrency 1)
README_TPOT_C1_S, README_TTFT_C1_S, PROMPT_TOKENS, OUTPUT_TOKENS = 4.80e-3, 32e-3, 529, 128
#: the same README, concurrency 16
README_TPOT_C16_S = 5.3e-3
#: Where the fit starts and what it is pulled towards: the datasheet-fraction terms from the bare decode steps and
#: square matmuls of h200_ceilings.json (as the defaults were before the server sweeps), overheads of the order
#: of a few kernel launches.
START = StepCoefficients(
    step_overhead_s=0.25e-3,
    seq_overhead_s=4e-6,
    layer_overhead_s=10e-6,
    moe_layer_overhead_s=20e-6,
    fp8_layer_overhead_s=12e-6,  # 4 more kernels a layer (step_time.py) at ~3 µs each
    mla_layer_overhead_s=15e-6,  # 5 more kernels a layer at ~3 µs each
    weight_read_efficiency=0.8,
    kv_read_efficiency=0.95,
    decode_matmul_fraction=0.74,
    prefill_efficiency=0.75,
    eager_layer_s=0.5e-3,
    eager_moe_layer_s=0.5e-3,
    request_overhead_s=2.50e-3,
)
PRIOR_WEIGHT = 0.01
#: Models whose decode steps with more than one sequence read the experts of an uneven routing the defaults do not
#: model (DeepSeek-V2-Lite and Qwen3-Coder-30B-A3B-FP8 with dummy weights: their logged decode steps fit a routing
#: exponent of ~0.35, bench/data/h200_mechanisms/README.md): only their concurrency-1 runs, where a step reads one
#: token's experts whatever the routing, go into the fit (all of their runs are still scored).
ROUTED_UNEVENLY = frozenset({"deepseek-v2-lite", "qwen3-coder-30b-a3b-fp8"})


def bare_steps() -> list[tuple[np.ndarray, float]]:
    """The bare decode steps of h200_ceilings.json as ``(features, seconds)`` (host columns zeroed)."""
    ceilings = json.loads((ROOT / "bench/data/measured/h200_ceilings.json").read_text())
    shape = shape_of(MODELS["llama-3.1-8b"])
    out = []
    for s in ceilings["decode_steps"]:
        f = step_features(
            shape, n_decode=np.array([float(s["batch"])]), decode_ctx=np.array([[s["batch"] * s["kv_len"]]])
        )[0]
        f[TERMS.index("step")] = f[TERMS.index("seq")] = 0.0
        out.append((f, s["step_s"]))
    return out


def readme_runs() -> list[CalibrationRun]:
    """The chat-route figures of shared/device/vllm/README.md §4 as runs: concurrency 1 (TPOT 4.80 ms, TTFT 32 ms)
    and 16 (TPOT 5.3 ms; its request count is not given: 64 here, four waves). Their prefill steps (529 tokens) run
    without a CUDA graph, so they pin the dense launch term beside the MoE chat points."""
    out = []
    for c, n, measured in ((1, 8, {"mean_tpot": README_TPOT_C1_S, "mean_ttft": README_TTFT_C1_S}),
                           (16, 64, {"mean_tpot": README_TPOT_C16_S})):  # fmt: skip
        settings = LoadSettings(
            num_prompts=n, max_concurrency=c, input_len=PROMPT_TOKENS, output_len=OUTPUT_TOKENS, duration_s=None
        )
        out.append(CalibrationRun(f"shared README chat c{c}", shape_of(MODELS["llama-3.1-8b"]), settings, measured))
    return out


def fit_defaults(exclude_model: str | None = None) -> Fit:
    """The fit of the module docstring, without ``exclude_model``'s runs (a served name of ``MODELS``)."""
    runs = [
        r.run
        for r in load_runs(chat=True)
        if r.model != exclude_model and (r.model not in ROUTED_UNEVENLY or r.run.settings.max_concurrency == 1)
    ]
    if exclude_model != "llama-3.1-8b":
        runs.extend(readme_runs())
    steps = bare_steps() if exclude_model != "llama-3.1-8b" else []
    # the frontend figures were read off the servers' own logs (planner/predict/step_time.py): not fitted
    return fit(
        runs,
        base=START,
        prior_weight=PRIOR_WEIGHT,
        rounds=4,
        steps=steps,
        fit_request_overhead=False,
        fit_routing=False,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, help="write the fitted coefficients here")
    a = ap.parse_args()
    result = fit_defaults()
    fitted = result.coefficients
    for name, value in asdict(fitted).items():
        print(f"{name:24} fitted {value:.4g}   default {getattr(DEFAULT_COEFFICIENTS, name):.4g}")
    for metric in ("median_tpot", "median_itl", "output_throughput", "median_ttft"):
        err = result.median_abs_error(metric)
        print(f"fit error, median |{metric}|: {'n/a' if err is None else f'{err:.1%}'}")
    if a.json:
        a.json.write_text(json.dumps(asdict(fitted), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
