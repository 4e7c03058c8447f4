"""Predicted against measured, leave-one-model-out, by architecture class and by load, and the error band's coverage.

Measurements scored: every run of ``bench/h200_runs.py`` (``vllm bench serve`` against a real vLLM 0.24.0 on one
H200, dummy weights, prefix caching off): eleven models of five architecture classes (dense Llama-3.1-8B,
Llama-3.2-3B, Qwen3-14B and Qwen2.5-32B; MoE Qwen3-30B-A3B, Mixtral-8x7B and Qwen3-Coder-30B-A3B-FP8; MLA MoE
DeepSeek-V2-Lite; FP8 dense Llama-3.3-70B and Qwen3-8B; sliding-window Gemma-2-9B), closed loop at concurrency 1-256
and open loop (Poisson and gamma arrivals), 512-3,072 input tokens. How they were made:
``bench/data/h200_sweeps/README.md`` and ``bench/data/h200_mechanisms/README.md``.

For each model the default coefficients are refitted without it (``bench/default_coefficients.py``
``fit_defaults(exclude_model=...)``) and its runs are predicted with them (**uncalibrated**: what a user gets for a
model the defaults never saw). Then, from those coefficients, the model is calibrated on its own closed-loop runs at
concurrency ≤ 8 (what ``python -m planner calibrate`` does with a user's first runs) and scored on its runs at
concurrency ≥ 32 and its open-loop runs (**calibrated**).

Scored per run: median TPOT, output throughput, median TTFT, p99 TTFT and p99 TPOT, as ``predicted / measured − 1``.
Summaries: median and worst |error| overall, by class and by load band (``planner.predict.band.load_band``).

**The error band** (:mod:`planner.predict.band`): for each model, the band is rebuilt from the *other* models'
uncalibrated errors only and checked on this model's runs: the share of measured values inside the band and the
band's median width (high / low − 1). ``--write-band`` writes the band of all models' errors to
``planner/predict/data/error_band.json``, the table the product ships.

Usage::

    python bench/prediction_accuracy.py [--json OUT.json] [--write-band]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.default_coefficients import fit_defaults  # noqa: E402
from bench.h200_runs import H200Run, load_runs  # noqa: E402
from planner.predict.band import BAND_FILE, BAND_METRICS, ErrorBand, Sample, load_band  # noqa: E402
from planner.predict.calibration import fit, score  # noqa: E402

#: The metrics the summaries show (keys of ``planner.predict.calibration.SCORED``).
SHOWN = ("median_tpot", "output_throughput", "median_ttft", "p99_ttft", "p99_tpot")


def _fmt(x: float | None) -> str:
    return "   n/a" if x is None else f"{x:6.1%}"


def _samples(runs: Iterable[H200Run], errors: dict[str, dict[str, float | None]]) -> list[Sample]:
    out = []
    for r in runs:
        for metric, err in errors[r.run.label].items():
            if err is not None and metric in BAND_METRICS:
                out.append(Sample(r.model, r.klass, load_band(r.run.settings), metric, 1.0 / (1.0 + err)))
    return out


def _summary(title: str, rows: list[tuple[H200Run, dict[str, float | None]]]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    cells = []
    for metric in SHOWN:
        errs = [abs(e[metric]) for _, e in rows if e.get(metric) is not None]
        med = statistics.median(errs) if errs else None
        worst = max(errs) if errs else None
        out[metric] = {"median_abs": med, "worst_abs": worst, "n": len(errs)}
        cells.append(f"{metric} {_fmt(med)}/{_fmt(worst)}")
    print(f"  {title:34} ({len(rows):3d} runs)  " + "  ".join(cells))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, help="write the per-run scores and the summaries here")
    ap.add_argument("--write-band", action="store_true", help=f"write the band of every model's errors to {BAND_FILE}")
    a = ap.parse_args()
    runs = load_runs(chat=True)
    models = sorted({r.model for r in runs})
    unseen: dict[str, dict[str, float | None]] = {}
    calibrated: dict[str, dict[str, float | None]] = {}
    predicted: dict[str, dict[str, float | None]] = {}
    for model in models:
        mine = [r for r in runs if r.model == model]
        coefficients = fit_defaults(exclude_model=model).coefficients
        for r, s in zip(mine, score([r.run for r in mine], coefficients), strict=True):
            unseen[r.run.label] = s.errors
            predicted[r.run.label] = s.predicted
        first = [r for r in mine if not r.open_loop and (r.run.settings.max_concurrency or 0) <= 8]
        later = [r for r in mine if r.open_loop or (r.run.settings.max_concurrency or 0) >= 32]
        if first and later:
            own = fit([r.run for r in first], base=coefficients).coefficients
            for r, s in zip(later, score([r.run for r in later], own), strict=True):
                calibrated[r.run.label] = s.errors

    print("run                                  class      load   " + "  ".join(f"{m:>17}" for m in SHOWN))
    for r in runs:
        e = unseen[r.run.label]
        band = load_band(r.run.settings)
        print(f"{r.run.label:36} {r.klass:10} {band:6} " + "  ".join(f"{_fmt(e.get(m)):>17}" for m in SHOWN))

    summary: dict[str, object] = {}
    print("\nUncalibrated, each model predicted by defaults fitted without it (median / worst |error|):")
    both = [(r, unseen[r.run.label]) for r in runs]
    summary["uncalibrated"] = _summary("all", both)
    for klass in sorted({r.klass for r in runs}):
        summary[f"uncalibrated_{klass}"] = _summary(f"class {klass}", [x for x in both if x[0].klass == klass])
    for band in ("c1", "c2-16", "c32-64", "c128-256", "open"):
        rows = [x for x in both if load_band(x[0].run.settings) == band]
        if rows:
            summary[f"uncalibrated_{band}"] = _summary(f"load {band}", rows)
    print("\nCalibrated on the model's closed-loop runs at concurrency <= 8, scored at >= 32 and open loop:")
    cal = [(r, calibrated[r.run.label]) for r in runs if r.run.label in calibrated]
    summary["calibrated"] = _summary("all", cal)
    summary["calibrated_closed_c32_256"] = _summary("closed loop, c 32-256", [x for x in cal if not x[0].open_loop])
    summary["calibrated_open"] = _summary("open loop", [x for x in cal if x[0].open_loop])
    for klass in sorted({r.klass for r, _ in cal}):
        summary[f"calibrated_{klass}"] = _summary(f"class {klass}", [x for x in cal if x[0].klass == klass])

    print("\nError band, leave-one-model-out (band from the other models' errors, checked on this one's runs):")
    inside = total = 0
    widths: list[float] = []
    per_metric: dict[str, list[int]] = {}
    for model in models:
        band = ErrorBand.from_samples(_samples([r for r in runs if r.model != model], unseen))
        for s in _samples([r for r in runs if r.model == model], unseen):
            low, high = band.ratios(s.metric, s.klass, s.load)
            ok = low <= s.measured_over_predicted <= high
            inside += ok
            total += 1
            widths.append(high / low - 1.0)
            per_metric.setdefault(s.metric, [0, 0])
            per_metric[s.metric][0] += ok
            per_metric[s.metric][1] += 1
    coverage = inside / total if total else None
    width = statistics.median(widths) if widths else None
    print(f"  measured value inside the band: {inside} of {total} ({_fmt(coverage)}), median width {_fmt(width)}")
    for metric, (k, n) in sorted(per_metric.items()):
        print(f"    {metric:18} {k:3d} of {n:3d} ({k / n:.0%})")
    summary["band"] = {"inside": inside, "total": total, "coverage": coverage, "median_width": width}

    if a.write_band:
        band = ErrorBand.from_samples(_samples(runs, unseen))
        source = "vLLM 0.24.0, one H200, eleven models (bench/prediction_accuracy.py --write-band)"
        BAND_FILE.write_text(band.to_json(source=source, measured_coverage=coverage) + "\n")
        print(f"\nwrote {BAND_FILE.relative_to(ROOT)}")
    if a.json:
        rows = [
            {
                "run": r.run.label,
                "model": r.model,
                "class": r.klass,
                "load": load_band(r.run.settings),
                "measured": {k: r.run.measured.get(k) for k in SHOWN},
                "predicted": predicted[r.run.label],
                "uncalibrated_errors": unseen[r.run.label],
                "calibrated_errors": calibrated.get(r.run.label),
            }
            for r in runs
        ]
        a.json.write_text(json.dumps({"runs": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
