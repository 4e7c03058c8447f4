"""Predicted against measured: the step-time model and simulator on every measurement at hand, per metric.

Measurements scored (``bench/data/``):

* ``h200_sweeps/``: ``vllm bench serve`` sweeps of a real vLLM 0.24.0 server on one H200 (dummy weights, prefix
  caching off, ``--max-model-len 8192 --max-num-seqs 256 --max-num-batched-tokens 8192``), concurrency 1–256, two
  input lengths, 128 output tokens, for several model shapes; made by ``bench/h200/sweep_campaign.py`` (how, and
  when: ``h200_sweeps/README.md``). None of these were used to set the default coefficients.
* ``shared/device/vllm/README.md`` §4 (the two figures the defaults were fitted to: in-sample, listed for the
  record).

For each run the workload is the run's own (``num_prompts``, ``max_concurrency``, mean input and output lengths,
as :func:`planner.predict.calibration.calibration_run` reads a result file), the deployment the server's flags.
Scored: median TPOT, median TTFT, median ITL and output throughput, as ``predicted / measured − 1``.

* **Uncalibrated**: the default coefficients.
* **Calibrated, leave one model out**: fit on every other model's runs, score on this model's (the coefficients
  describe the GPU and engine; the model enters through its shape).
* **Calibrated, other input length**: fit on this model's runs at one input length, score on the other length.

Usage::

    python bench/prediction_accuracy.py [--data bench/data/h200_sweeps] [--json OUT.json]

Prints one row per run and a summary per metric (median and worst |error|, dense models at concurrency 1–64
separately: the issue's targets are 15% uncalibrated and 7% calibrated for TPOT and output throughput there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.loadtest.results import import_runs  # noqa: E402
from planner.predict.calibration import SCORED, CalibrationRun, RunScore, calibration_run, fit, score  # noqa: E402
from planner.predict.shape import step_shape  # noqa: E402

#: served model name (the campaign's) -> catalog id
MODELS = {
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
    "llama-3.2-1b": "meta-llama/Llama-3.2-1B-Instruct",
}
MOE = {"qwen3-30b-a3b"}
SERVER = {"gpu": "h200-sxm-141gb", "max_model_len": 8192, "max_num_seqs": 256, "max_num_batched_tokens": 8192}


def load_runs(data: Path) -> list[tuple[str, int, CalibrationRun]]:
    """``(served model, input length asked, run)`` for every result file under ``data``."""
    out = []
    for name, model_id in MODELS.items():
        folder = data / name
        if not folder.is_dir():
            continue
        shape = step_shape(plan(Scenario(model=model_id, **SERVER), advise=False))
        for path in sorted(folder.glob("in*_c*.json")):
            (saved,) = import_runs(path.read_bytes(), name=path.name)
            asked = int(path.stem.split("_")[0][2:])
            out.append((name, asked, calibration_run(saved, shape, label=f"{name} {path.stem}")))
    return out


def _fmt(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:+6.1%}"


def _summary(title: str, scores: list[RunScore]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    print(f"\n{title} ({len(scores)} runs)")
    for key in SCORED:
        errs = [abs(s.errors[key]) for s in scores if s.errors.get(key) is not None]
        med = statistics.median(errs) if errs else None
        worst = max(errs) if errs else None
        out[key] = {"median_abs": med, "worst_abs": worst, "n": len(errs)}
        print(f"  {key:18} median {_fmt(med)}  worst {_fmt(worst)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "bench/data/h200_sweeps")
    ap.add_argument("--json", type=Path, help="write the per-run scores and the summary here")
    a = ap.parse_args()
    runs = load_runs(a.data)
    if not runs:
        print(f"no result files under {a.data}")
        return 1
    plain = dict(zip((r.label for _, _, r in runs), score([r for _, _, r in runs]), strict=True))
    by_model: dict[str, RunScore] = {}
    for model in sorted({m for m, _, _ in runs}):
        train = [r for m, _, r in runs if m != model]
        test = [r for m, _, r in runs if m == model]
        if train:
            coefficients = fit(train).coefficients
            by_model.update(zip((r.label for r in test), score(test, coefficients), strict=True))
    by_length: dict[str, RunScore] = {}
    for model in sorted({m for m, _, _ in runs}):
        lengths = sorted({n for m, n, _ in runs if m == model})
        for held in lengths:
            train = [r for m, n, r in runs if m == model and n != held]
            test = [r for m, n, r in runs if m == model and n == held]
            if train:
                coefficients = fit(train).coefficients
                by_length.update(zip((r.label for r in test), score(test, coefficients), strict=True))
    header = "  ".join(f"{k:>17}" for k in SCORED)
    print(f"{'run':28} {'':10} {header}")
    rows = []
    for model, asked, run in runs:
        for kind, table in (("default", plain), ("loo-model", by_model), ("other-len", by_length)):
            s = table.get(run.label)
            if s is None:
                continue
            cells = "  ".join(f"{_fmt(s.errors[k]):>17}" for k in SCORED)
            print(f"{run.label:28} {kind:10} {cells}")
            rows.append(
                {
                    "run": run.label,
                    "model": model,
                    "input_len": asked,
                    "kind": kind,
                    "max_concurrency": run.settings.max_concurrency,
                    "measured": s.measured,
                    "predicted": s.predicted,
                    "errors": s.errors,
                }
            )
    dense_low = {r.label for m, _, r in runs if m not in MOE and (r.settings.max_concurrency or 0) <= 64}
    summary = {
        "uncalibrated": _summary("uncalibrated, all runs", list(plain.values())),
        "uncalibrated_dense_c1_64": _summary(
            "uncalibrated, dense models, concurrency 1-64", [s for k, s in plain.items() if k in dense_low]
        ),
        "calibrated_leave_one_model_out": _summary("calibrated, leave one model out", list(by_model.values())),
        "calibrated_leave_one_model_out_dense_c1_64": _summary(
            "calibrated (leave one model out), dense models, concurrency 1-64",
            [s for k, s in by_model.items() if k in dense_low],
        ),
        "calibrated_other_input_length": _summary("calibrated on the other input length", list(by_length.values())),
        "calibrated_other_input_length_dense_c1_64": _summary(
            "calibrated (other input length), dense models, concurrency 1-64",
            [s for k, s in by_length.items() if k in dense_low],
        ),
    }
    if a.json:
        a.json.write_text(json.dumps({"runs": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
