"""Speculative decoding predicted against the measured H200 runs: TPOT, step time (median ITL) and tokens per step.

Runs (``bench/data/h200_sweeps/README.md``): Llama-3.1-8B on one H200, vLLM 0.24.0, 512 input / 128 output tokens,
``vllm bench serve`` at concurrency c:

* ``llama-3.1-8b-eagle3/``: an EAGLE-3 head (one decoder layer, 0.58 GiB as loaded), ``k = 3``, synthetic per-position
  acceptance 0.8/0.6/0.45;
* ``llama-3.1-8b-spec/``: the article's draft, Llama-3.2-1B, ``k = 5``, synthetic per-position 0.75/0.55/0.4/0.3/0.2;
* ``llama-3.1-8b/``: the same server without speculation (the "without" column).

vLLM's synthetic rates are per-position (accepted at position i / drafts: the counters measured them within 0.03),
so they go through :func:`planner.predict.speculative.conditional_rates`. The prediction is
:func:`planner.predict.speculative.speculative_estimate` at batch = concurrency and context = 512 + 128 / 2 tokens,
with the default step coefficients (fitted to runs without speculation only), and the continuous-batching simulator
(:func:`planner.predict.simulator.simulate` with ``speculative=``) over each run's own workload.

``DRAFT_MODEL_FORWARD_OVERHEAD_S`` (printed): vLLM 0.24.0 runs the ``draft_model`` method on the V1 model runner
without async scheduling (its start-up log says so), and its steps measure ~28 ms more than the mechanism predicts at
every concurrency, flat in the batch: a host cost per draft forward the step model does not hold. It is fitted here as
the mean residual step time per draft forward, and scored leave-one-concurrency-out on the draft-model runs; it is
NOT applied to EAGLE-3 (whose predictions use the mechanism alone), and the scores say how far each is off.

Usage: ``python bench/spec_prediction.py``.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.h200_runs import DATA, shape_of  # noqa: E402
from planner.loadtest.settings import LoadSettings  # noqa: E402
from planner.predict.simulator import simulate  # noqa: E402
from planner.predict.speculative import (  # noqa: E402
    SpecDecodeConfig,
    conditional_rates,
    layer_head_shape,
    speculative_estimate,
)
from planner.units import GIB  # noqa: E402

TARGET = "meta-llama/Llama-3.1-8B-Instruct"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
CONTEXT_TOKENS = 512 + 128 / 2
#: folder -> (method, per-position synthetic rates, concurrencies)
RUNS = {
    "llama-3.1-8b-eagle3": ("eagle3", (0.8, 0.6, 0.45), (1, 16, 64)),
    "llama-3.1-8b-spec": ("draft_model", (0.75, 0.55, 0.4, 0.3, 0.2), (1, 4, 16, 64, 256)),
}
#: the EAGLE-3 head's weights as vLLM loaded them (README: weights 15.58 GiB, the head 0.58)
EAGLE3_HEAD_BYTES = 0.58 * GIB


@dataclass(frozen=True)
class Point:
    folder: str
    concurrency: int
    measured_tpot_ms: float
    measured_itl_ms: float
    measured_length: float
    without_tpot_ms: float
    predicted_tpot_ms: float
    predicted_step_ms: float
    predicted_length: float
    predicted_without_ms: float
    k: int
    sim_tpot_ms: float
    sim_without_ms: float
    sim_fitted_ms: float | None


def _load(folder: str, c: int) -> dict:
    return json.loads(gzip.decompress((DATA / folder / f"in512_c{c}.json.gz").read_bytes()))


def points() -> list[Point]:
    target = shape_of(TARGET)
    out = []
    for folder, (method, per_pos, levels) in RUNS.items():
        head = method == "eagle3"
        draft = layer_head_shape(target, weight_bytes=EAGLE3_HEAD_BYTES) if head else shape_of(DRAFT)
        # the mechanism alone (no fitted host time per draft forward): what the residual below is measured against
        spec = SpecDecodeConfig(method, len(per_pos), conditional_rates(per_pos), draft, draft_forward_overhead_s=0.0)
        for c in levels:
            measured, without = _load(folder, c), _load("llama-3.1-8b", c)
            est = speculative_estimate(target, spec, batch_size=c, context_tokens=CONTEXT_TOKENS)
            # the simulator over the run's own workload (its num_prompts at concurrency c)
            work = LoadSettings(
                num_prompts=measured["num_prompts"], max_concurrency=c, input_len=512, output_len=128, duration_s=None
            )
            sim = simulate(target, work, speculative=spec).metrics.tpot.median_s * 1e3
            sim_without = simulate(target, work).metrics.tpot.median_s * 1e3
            fitted = None
            if method == "draft_model":  # with the fitted host time per draft forward (in-sample)
                with_fit = SpecDecodeConfig(method, len(per_pos), conditional_rates(per_pos), draft)
                fitted = simulate(target, work, speculative=with_fit).metrics.tpot.median_s * 1e3
            out.append(
                Point(
                    folder,
                    c,
                    measured["median_tpot_ms"],
                    measured["median_itl_ms"],
                    measured["spec_decode_acceptance_length"],
                    without["median_tpot_ms"],
                    est.tpot_s * 1e3,
                    est.step_s * 1e3,
                    est.tokens_per_step,
                    est.tpot_without_s * 1e3,
                    len(per_pos),
                    sim,
                    sim_without,
                    fitted,
                )
            )
    return out


def _err(pred: float, meas: float) -> str:
    return f"{(pred - meas) / meas:+.1%}"


def main() -> int:
    pts = points()
    print(
        f"{'run':24} {'c':>4} {'TPOT meas':>9} {'pred':>7} {'err':>7} {'no-spec meas':>12} {'pred':>6} {'err':>7}"
        f" {'len meas':>8} {'pred':>5}"
    )
    for p in pts:
        print(
            f"{p.folder:24} {p.concurrency:>4} {p.measured_tpot_ms:>9.2f} {p.predicted_tpot_ms:>7.2f}"
            f" {_err(p.predicted_tpot_ms, p.measured_tpot_ms):>7} {p.without_tpot_ms:>12.2f}"
            f" {p.predicted_without_ms:>6.2f} {_err(p.predicted_without_ms, p.without_tpot_ms):>7}"
            f" {p.measured_length:>8.2f} {p.predicted_length:>5.2f}"
        )
    print("\nsimulator (continuous batching, the run's own workload), median TPOT:")
    for p in pts:
        fit = ""
        if p.sim_fitted_ms is not None:
            fit = f"   fitted overhead (in-sample) {p.sim_fitted_ms:.2f} {_err(p.sim_fitted_ms, p.measured_tpot_ms)}"
        spec_err = _err(p.sim_tpot_ms, p.measured_tpot_ms)
        print(
            f"  {p.folder:24} c={p.concurrency:<4} spec {p.sim_tpot_ms:6.2f} {spec_err:>7}"
            f"   without {p.sim_without_ms:6.2f} {_err(p.sim_without_ms, p.without_tpot_ms):>7}{fit}"
        )
    # the draft-model path's host cost per draft forward, fitted leave-one-concurrency-out (module docstring)
    drafts = [p for p in pts if p.folder == "llama-3.1-8b-spec"]

    def residual(p: Point) -> float:  # measured step (TPOT × tokens per step) − predicted, per draft forward
        return (p.measured_tpot_ms * p.measured_length - p.predicted_step_ms) / p.k

    overhead_ms = statistics.fmean(residual(p) for p in drafts)
    print(f"\nDRAFT_MODEL_FORWARD_OVERHEAD_S = {overhead_ms / 1e3:.4f} (all draft-model points)")
    print("leave-one-concurrency-out, draft_model TPOT with the overhead fitted on the other points:")
    for p in drafts:
        fitted = statistics.fmean(residual(q) for q in drafts if q is not p)
        tpot = (p.predicted_step_ms + p.k * fitted) / p.predicted_length
        print(
            f"  c={p.concurrency:<4} fitted {fitted:.2f} ms/forward  TPOT pred {tpot:.2f} meas"
            f" {p.measured_tpot_ms:.2f}  {_err(tpot, p.measured_tpot_ms)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
