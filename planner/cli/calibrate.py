"""``python -m planner calibrate RUN.json [RUN.json ...] --out PROFILE.json``: fit the step-time coefficients to
measured runs of one deployment.

The runs are ``vllm bench serve --save-result`` files (or ``python -m planner bench --save-result``, or the Load
Test page's downloads): one JSON object, a list, or JSON Lines. The deployment they measured is given with
``plan``'s flags. Prints each run's median TPOT, median TTFT and output throughput, measured against predicted
with the default coefficients and with the fitted ones, then writes the profile ``predict --calibration`` reads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.capacity.plan import plan
from planner.cli.command import Command
from planner.cli.messages import error, file_path
from planner.cli.plan import add_scenario_arguments, scenario_from_args, usage_error
from planner.errors import InvalidParameterError, PlannerError
from planner.loadtest.results import MAX_IMPORT_BYTES, import_runs
from planner.predict.calibration import (
    CalibrationProfile,
    RunScore,
    calibration_run,
    fit,
    prefix_cache_refusal,
    score,
)
from planner.predict.shape import step_shape

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``calibrate`` subcommand's flags, added to ``p``."""
    p.add_argument("runs", nargs="+", type=file_path, metavar="RUN.json", help="vllm bench serve --save-result files")
    p.add_argument("--out", required=True, type=file_path, metavar="PROFILE.json", help="where to write the profile")
    add_scenario_arguments(p)


def _row(label: str, before: RunScore, after: RunScore) -> str:
    def cell(s: RunScore, key: str, scale: float, unit: str) -> str:
        value, err = s.predicted.get(key), s.errors.get(key)
        if value is None:
            return "n/a"
        return f"{value * scale:,.1f}{unit} ({err:+.0%})" if err is not None else f"{value * scale:,.1f}{unit}"

    m = before.measured
    measured = (
        f"{(m['median_tpot'] or 0) * 1e3:,.2f} ms / {(m['median_ttft'] or 0) * 1e3:,.1f} ms / "
        f"{m['output_throughput'] or 0:,.0f} tok/s"
    )
    return (
        f"{label}\n    measured   {measured}\n"
        f"    default    {cell(before, 'median_tpot', 1e3, ' ms')} / {cell(before, 'median_ttft', 1e3, ' ms')} / "
        f"{cell(before, 'output_throughput', 1, ' tok/s')}\n"
        f"    calibrated {cell(after, 'median_tpot', 1e3, ' ms')} / {cell(after, 'median_ttft', 1e3, ' ms')} / "
        f"{cell(after, 'output_throughput', 1, ' tok/s')}"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``calibrate``; returns the exit code (0, or 2 for bad input)."""
    prog = f"python -m planner {args.command}"
    try:
        scenario = scenario_from_args(args)
        result = plan(scenario, advise=False)
        shape = step_shape(result)
        runs = []
        for path in args.runs:
            try:
                size = Path(path).stat().st_size
                if size > MAX_IMPORT_BYTES:
                    raise InvalidParameterError("runs", path, f"a result file of at most {MAX_IMPORT_BYTES:,} bytes")
                data = Path(path).read_bytes()
            except OSError as exc:
                raise InvalidParameterError("runs", path, f"a readable result file ({exc.strerror})") from exc
            for saved in import_runs(data, name=path):
                label = f"{Path(path).name}: {saved.label}"
                refused = prefix_cache_refusal(saved)
                if refused is not None:
                    raise PlannerError(f"{label}: {refused}")
                runs.append(calibration_run(saved, shape, label=label))
        fitted = fit(runs)
        before = score(runs)
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    profile = CalibrationProfile.from_fit(fitted, runs, engine_version=result.scenario.engine_version)
    try:
        Path(args.out).write_text(profile.to_json())
    except OSError as exc:
        return error(prog, f"--out {args.out}: {exc.strerror}")
    print("median TPOT / median TTFT / output throughput, predicted (error against measured)")
    for run_, b, a in zip(runs, before, fitted.scores, strict=True):
        print(_row(run_.label, b, a))
    errors = ", ".join(f"{k.replace('_', ' ')} {v:.1%}" for k, v in profile.fit_error.items() if v is not None)
    print(f"fit error (median |error| over {len(runs)} run(s)): {errors}")
    print(f"wrote {args.out}")
    return 0


COMMAND = Command(
    "calibrate",
    help="fit the prediction's coefficients to measured runs (vllm bench serve --save-result files)",
    description="Fit the step-time model's coefficients to measured runs of one deployment, by least squares "
    "on their mean TPOT and TTFT, and write a calibration profile for predict --calibration.",
    add_arguments=add_arguments,
    run=run,
)
