"""Predicted against measured: the step-time model and simulator on every measurement at hand, per metric.

Measurements scored: ``bench/data/h200_sweeps/`` (``bench/h200_runs.py``): ``vllm bench serve`` sweeps of a real
vLLM 0.24.0 server on one H200 (dummy weights, prefix caching off, ``--max-model-len 8192 --max-num-seqs 256
--max-num-batched-tokens 8192``), concurrency 1–256, two input lengths, 128 output tokens, for three model shapes
(Llama-3.1-8B and Qwen2.5-32B dense, Qwen3-30B-A3B MoE), and Qwen3-30B-A3B's chat-route points; made by
``bench/h200/sweep_campaign.py`` (how, and when: ``h200_sweeps/README.md``). TTFTs that hold first-use work are left
out (``bench/h200_runs.py`` ``EXCLUDED_TTFT``).

For each run the workload is the run's own (``num_prompts``, ``max_concurrency``, mean input and output lengths, as
:func:`planner.predict.calibration.calibration_run` reads a result file), the deployment the server's flags. Scored:
median TPOT, median TTFT, median ITL and output throughput, as ``predicted / measured − 1``.

* **default**: the code's default coefficients. They were fitted to these runs (``bench/default_coefficients.py``):
  in-sample, listed for the record.
* **unseen model**: the defaults refitted by ``bench/default_coefficients.py`` without this model's runs, scored on
  them: what to expect for a model the defaults have not seen (for the MoE, its per-MoE-layer terms then rest on
  their starting values: no other model has routed experts).
* **other length**: calibrated (``fit``, from the defaults) on this model's runs at the other input length, scored
  on this one.

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

from bench.default_coefficients import fit_defaults  # noqa: E402
from bench.h200_runs import DATA, MOE, load_runs  # noqa: E402
from planner.predict.calibration import SCORED, RunScore, fit, score  # noqa: E402


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
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", type=Path, help="write the per-run scores and the summary here")
    a = ap.parse_args()
    runs = load_runs(a.data, chat=True)
    if not runs:
        print(f"no result files under {a.data}")
        return 1
    plain = dict(zip((r.run.label for r in runs), score([r.run for r in runs]), strict=True))
    unseen: dict[str, RunScore] = {}
    for model in sorted({r.model for r in runs}):
        test = [r.run for r in runs if r.model == model]
        coefficients = fit_defaults(exclude_model=model).coefficients
        unseen.update(zip((r.label for r in test), score(test, coefficients), strict=True))
    by_length: dict[str, RunScore] = {}
    for model in sorted({r.model for r in runs}):
        lengths = sorted({r.input_len for r in runs if r.model == model})
        for held in lengths:
            train = [r.run for r in runs if r.model == model and r.input_len != held]
            test = [r.run for r in runs if r.model == model and r.input_len == held]
            if train:
                coefficients = fit(train).coefficients
                by_length.update(zip((r.label for r in test), score(test, coefficients), strict=True))
    header = "  ".join(f"{k:>17}" for k in SCORED)
    print(f"{'run':32} {'':12} {header}")
    rows = []
    for r in runs:
        label = r.run.label
        for kind, table in (("default", plain), ("unseen model", unseen), ("other length", by_length)):
            s = table.get(label)
            if s is None:
                continue
            cells = "  ".join(f"{_fmt(s.errors[k]):>17}" for k in SCORED)
            print(f"{label:32} {kind:12} {cells}")
            rows.append(
                {
                    "run": label,
                    "model": r.model,
                    "route": r.route,
                    "input_len": r.input_len,
                    "kind": kind,
                    "max_concurrency": r.run.settings.max_concurrency,
                    "measured": s.measured,
                    "predicted": s.predicted,
                    "errors": s.errors,
                }
            )
    dense_low = {r.run.label for r in runs if r.model not in MOE and (r.run.settings.max_concurrency or 0) <= 64}
    low = {r.run.label for r in runs if (r.run.settings.max_concurrency or 0) <= 64}
    summary = {}
    for key, title, table in (
        ("default", "default coefficients (in-sample)", plain),
        ("unseen_model", "defaults refitted without the model scored (unseen model)", unseen),
        ("other_input_length", "calibrated on the model's other input length", by_length),
    ):
        summary[key] = _summary(f"{title}, all runs", list(table.values()))
        summary[f"{key}_c1_64"] = _summary(f"{title}, concurrency 1-64", [s for k, s in table.items() if k in low])
        summary[f"{key}_dense_c1_64"] = _summary(
            f"{title}, dense models, concurrency 1-64", [s for k, s in table.items() if k in dense_low]
        )
    if a.json:
        a.json.write_text(json.dumps({"runs": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
