"""Reproduce the step-time model's default coefficients (``planner/predict/step_time.py``) from their sources.

1. ``bench/data/measured/h200_ceilings.json`` (a copy of ``shared/reference/measured/h200_ceilings.json``): 10 bare
   CUDA-graph decode steps of a Llama-3.1-8B-shaped model on one H200, batch 1–256 × KV length 1k–32k. A
   least-squares fit of relative errors on the weight-read, KV-read and decode-matmul terms (no per-step overhead in
   a bare step) gives ``weight_read_efficiency``, ``kv_read_efficiency`` and ``decode_matmul_fraction``; its square
   bf16 matmuls (742 of the datasheet's 989 TFLOPS) give ``prefill_efficiency``.
2. ``shared/device/vllm/README.md`` §4, a vLLM 0.24.0 server on that H200 (Llama-3.1-8B, 529-token prompts, 128
   output tokens): TPOT 4.80 ms at concurrency 1 and 5.3 ms at 16, TTFT 32 ms at 1. The per-step overhead is the
   first TPOT less the bare step at batch 1; the per-sequence overhead the second less the bare step at batch 16,
   over 15 more sequences; the request overhead the TTFT less one prefill step of the prompt.

Usage: ``python bench/default_coefficients.py``; prints each fitted value beside the default in the code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.predict.shape import step_shape  # noqa: E402
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, step_features, step_time_s  # noqa: E402

#: shared/device/vllm/README.md §4
README_TPOT_C1_S, README_TPOT_C16_S, README_TTFT_C1_S, PROMPT_TOKENS, OUTPUT_TOKENS = 4.80e-3, 5.3e-3, 32e-3, 529, 128


def main() -> int:
    ceilings = json.loads((ROOT / "bench/data/measured/h200_ceilings.json").read_text())
    scenario = Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", max_model_len=32768)
    shape = step_shape(plan(scenario, advise=False))
    rows, measured = [], []
    for s in ceilings["decode_steps"]:
        f = step_features(
            shape, n_decode=np.array([float(s["batch"])]), decode_ctx=np.array([[s["batch"] * s["kv_len"]]])
        )
        rows.append(f[0, [2, 3, 4]])
        measured.append(s["step_s"])
    a, y = np.array(rows), np.array(measured)
    x, *_ = np.linalg.lstsq(a / y[:, None], np.ones(len(y)), rcond=None)
    fitted = {
        "weight_read_efficiency": 1 / x[0],
        "kv_read_efficiency": 1 / x[1],
        "decode_matmul_fraction": x[2],
        "prefill_efficiency": ceilings["bf16_matmul_tflops"] / 989.4,
    }
    bare = StepCoefficients(step_overhead_s=0.0, seq_overhead_s=0.0, **fitted)
    mean_ctx = PROMPT_TOKENS + OUTPUT_TOKENS / 2
    step_1 = step_time_s(shape, bare, n_decode=1, decode_ctx=mean_ctx)
    step_16 = step_time_s(shape, bare, n_decode=16, decode_ctx=16 * mean_ctx)
    fitted["step_overhead_s"] = README_TPOT_C1_S - step_1
    fitted["seq_overhead_s"] = (README_TPOT_C16_S - step_16 - fitted["step_overhead_s"]) / 15
    prefill = step_time_s(
        shape, bare, n_decode=0, decode_ctx=0, prefill_tokens=PROMPT_TOKENS, prefill_attn=PROMPT_TOKENS**2 / 2
    )
    fitted["request_overhead_s"] = README_TTFT_C1_S - prefill - fitted["step_overhead_s"]
    for name, value in fitted.items():
        print(f"{name:24} fitted {value:.4g}   default {getattr(DEFAULT_COEFFICIENTS, name):.4g}")
    worst = max(
        abs(step_time_s(shape, bare, n_decode=s["batch"], decode_ctx=s["batch"] * s["kv_len"]) / s["step_s"] - 1)
        for s in ceilings["decode_steps"]
    )
    print(f"worst |error| on the 10 decode steps: {worst:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
