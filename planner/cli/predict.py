"""``python -m planner predict``: predicted TTFT, TPOT, ITL and throughput of a planned vLLM deployment under a load.

The deployment flags are ``plan``'s (``vllm serve`` spelling), the workload flags ``bench``'s (``vllm bench serve``
spelling); ``--json`` prints the keys a ``vllm bench serve --save-result`` file has (``median_ttft_ms``,
``median_tpot_ms``, ``median_itl_ms``, ``p99_ttft_ms``, ``request_throughput``, ``output_throughput``, …) plus the
simulation's own (``planner_preemptions``, ``planner_peak_kv_blocks``, …). ``--sweep N`` predicts concurrency
1, 2, 4, … N instead, one row per level.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from planner.cli.messages import error
from planner.cli.plan import add_scenario_arguments, scenario_from_args, usage_error
from planner.errors import InvalidParameterError, PlannerError
from planner.links.rules import BadValue
from planner.loadtest.results import to_vllm_file
from planner.loadtest.settings import LoadSettings, parse_goodput
from planner.loadtest.sweep import sweep_levels
from planner.predict.api import Prediction, predict, predicted_run
from planner.predict.calibration import CalibrationProfile, load_profile
from planner.predict.curves import PredictedCurve, predict_curve

__all__ = ["MAX_REQUESTS", "add_parser", "run"]

#: Most requests one prediction simulates (about 10 s of simulation on one core).
MAX_REQUESTS = 100_000


def add_workload_arguments(p: argparse.ArgumentParser) -> None:
    """The workload flags of a prediction, spelled and defaulted as ``bench``'s."""
    w = p.add_argument_group("workload (vllm bench serve flags)")
    w.add_argument("--input-len", type=int, default=128, help="prompt tokens per request (default: 128)")
    w.add_argument("--output-len", type=int, default=128, help="output tokens per request (default: 128)")
    w.add_argument("--range-ratio", type=float, default=0.0, help="lengths from [L(1-r), L(1+r)] (default: 0)")
    w.add_argument("--max-concurrency", "--concurrency", dest="concurrency", type=int, help="most requests in flight")
    w.add_argument("--request-rate", type=float, default=math.inf, help="requests/s (default: inf, a burst)")
    w.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the gaps (default: 1, Poisson)")
    w.add_argument("--num-prompts", type=int, default=100, help="requests (default: 100)")
    w.add_argument("--seed", type=int, default=0, help="seed of the schedule and the lengths (default: 0)")
    w.add_argument(
        "--goodput", nargs="+", default=[], metavar="KEY:MS", help="SLOs, e.g. ttft:500 tpot:50 (default: none)"
    )
    w.add_argument("--calibration", metavar="PROFILE.json", help="coefficients from python -m planner calibrate")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``predict`` subcommand to ``sub``."""
    p = sub.add_parser(
        "predict",
        help="predict TTFT, TPOT, ITL and throughput of a planned vLLM deployment under a load",
        description="Predict what vllm bench serve would measure on a planned deployment: a step-time model "
        "(weights and KV bytes over bandwidth, FLOPs over peak, overheads) drives a simulation of vLLM V1's "
        "continuous-batching scheduler, with the capacity plan's KV cache. Deployment flags as plan's, workload "
        "flags as vllm bench serve's.",
    )
    add_scenario_arguments(p)
    add_workload_arguments(p)
    p.add_argument("--sweep", type=int, metavar="N", help="predict concurrency 1, 2, 4, ... N; one row per level")
    p.add_argument("--static", action="store_true", help="also predict static batching, for comparison")
    p.add_argument(
        "--prefix-cache-hit-rate",
        type=float,
        default=0.0,
        help="share (0-1) of each prompt served from the prefix cache, not prefilled (default: 0; e.g. a Load Test "
        "run's measured hit rate)",
    )
    p.add_argument("--save-result", metavar="FILE", help="write the prediction as a vllm bench serve result file")
    p.add_argument("--json", action="store_true", help="print one JSON object (vllm bench serve's keys)")


def _goodput(items: list[str]) -> tuple[tuple[str, float], ...]:
    try:
        return parse_goodput(" ".join(items))
    except BadValue as exc:
        raise InvalidParameterError("goodput", " ".join(items), exc.accepted) from exc


def workload_from_args(args: argparse.Namespace) -> LoadSettings:
    """The :class:`~planner.loadtest.settings.LoadSettings` of :func:`add_workload_arguments`' flags.

    Raises:
        InvalidParameterError: a flag outside what is accepted (``--num-prompts`` at most :data:`MAX_REQUESTS`).
    """
    if not 1 <= args.num_prompts <= MAX_REQUESTS:
        raise InvalidParameterError("num_prompts", args.num_prompts, f"an integer from 1 to {MAX_REQUESTS:,}")
    return LoadSettings(
        num_prompts=args.num_prompts,
        max_concurrency=args.concurrency,
        request_rate=args.request_rate,
        burstiness=args.burstiness,
        seed=args.seed,
        input_len=args.input_len,
        output_len=args.output_len,
        range_ratio=args.range_ratio,
        ignore_eos=True,
        goodput_ms=_goodput(args.goodput),
        duration_s=None,
        sweep_max=args.sweep or 1,
    )


def read_profile(path: str | None) -> CalibrationProfile | None:
    """The profile at ``path`` (None without one).

    Raises:
        InvalidParameterError: the file cannot be read or is not a profile.
    """
    if path is None:
        return None
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidParameterError("calibration", path, f"a readable profile file ({exc.strerror})") from exc
    return load_profile(text, name=path)


def _ms(value_s: float | None) -> str:
    return "n/a" if value_s is None else f"{value_s * 1e3:,.1f} ms"


def _payload(prediction: Prediction) -> dict[str, Any]:
    run = prediction.run
    out = to_vllm_file(predicted_run(prediction), per_request=False)
    out.update(
        planner_calibration=prediction.calibration,
        planner_preemptions=run.preemptions,
        planner_peak_kv_blocks=run.peak_kv_blocks,
        planner_num_gpu_blocks=run.num_gpu_blocks,
        planner_kv_saturated=run.kv_saturated,
        planner_mean_running=run.mean_running,
        planner_num_steps=run.num_steps,
        planner_notes=list(prediction.notes),
    )
    if prediction.static is not None:
        out["planner_static_output_throughput"] = prediction.static.metrics.output_throughput
        out["planner_continuous_gain"] = prediction.continuous_gain
    return out


def _text(prediction: Prediction) -> str:
    m = prediction.run.metrics
    s = prediction.settings
    load = f"{s.max_concurrency} in flight" if s.max_concurrency else f"{s.request_rate:g} req/s"
    lines = [
        f"{prediction.plan.model_id} on {prediction.plan.num_gpus}x {prediction.plan.gpu_name}: "
        f"{s.num_prompts} requests of {s.input_len} in / {s.output_len} out, {load}",
        f"  TTFT    median {_ms(m.ttft.median_s if m.ttft else None)}   p99 {_ms(m.ttft.p99_s if m.ttft else None)}",
        f"  TPOT    median {_ms(m.tpot.median_s if m.tpot else None)}   p99 {_ms(m.tpot.p99_s if m.tpot else None)}",
        f"  ITL     median {_ms(m.itl.median_s if m.itl else None)}",
        f"  output  {m.output_throughput:,.0f} tok/s   requests {m.request_throughput:,.2f}/s",
        f"  KV cache: peak {prediction.run.peak_kv_blocks:,} of {prediction.run.num_gpu_blocks:,} blocks, "
        f"{prediction.run.preemptions:,} preemption(s)",
    ]
    if m.request_goodput is not None:
        lines.append(f"  goodput {m.request_goodput:,.2f} req/s")
    if prediction.static is not None:
        gain = prediction.continuous_gain
        lines.append(
            f"  static batching: {prediction.static.metrics.output_throughput:,.0f} tok/s "
            f"(continuous gives {gain:.2f}x)"
            if gain
            else "  static batching: n/a"
        )
    lines.append(f"  coefficients: {prediction.calibration}")
    lines += [f"  note: {n}" for n in prediction.notes]
    return "\n".join(lines)


def _curve_text(curve: PredictedCurve) -> str:
    rows = [f"{'concurrency':>11} {'TTFT p50':>10} {'TPOT p50':>10} {'ITL p50':>9} {'out tok/s':>10}  KV"]
    for p in curve.points:
        m = p.metrics
        rows.append(
            f"{p.level:>11.0f} {_ms(m.ttft.median_s if m.ttft else None):>10} "
            f"{_ms(m.tpot.median_s if m.tpot else None):>10} {_ms(m.itl.median_s if m.itl else None):>9} "
            f"{m.output_throughput:>10,.0f}  {'full' if p.kv_saturated else ''}"
        )
    rows.append(f"knee: {curve.knee:.0f}" if curve.knee is not None else "knee: none (the curve does not bend)")
    if curve.saturation_level is not None:
        rows.append(f"KV cache fills at concurrency {curve.saturation_level:.0f}")
    if curve.kv_max_concurrency is not None:
        rows.append(f"KV cache holds {curve.kv_max_concurrency:,.1f} requests of this length at once")
    rows.append(f"coefficients: {curve.calibration}")
    rows += [f"note: {n}" for n in curve.notes]
    return "\n".join(rows)


def _curve_json(curve: PredictedCurve) -> dict[str, Any]:
    return {
        "levels": [
            {"max_concurrency": int(p.level), **p.metrics.to_vllm_json(), "planner_kv_saturated": p.kv_saturated}
            for p in curve.points
        ],
        "knee": curve.knee,
        "kv_saturation_concurrency": curve.saturation_level,
        "kv_max_concurrency": curve.kv_max_concurrency,
        "planner_calibration": curve.calibration,
        "planner_notes": list(curve.notes),
    }


def run(args: argparse.Namespace) -> int:
    """Run ``predict``; returns the exit code (0, or 2 for bad input or a deployment that does not fit)."""
    try:
        scenario = scenario_from_args(args)
        settings = workload_from_args(args)
        profile = read_profile(args.calibration)
        if args.sweep is not None:
            if args.concurrency is not None:
                raise InvalidParameterError("max_concurrency", args.concurrency, "no --max-concurrency with --sweep")
            try:
                sweep_levels(args.sweep)
            except InvalidParameterError as exc:  # named after the flag, not sweep_levels' argument
                raise InvalidParameterError("sweep", args.sweep, exc.accepted) from exc
            curve = predict_curve(scenario, settings, profile=profile)
        else:
            hit_rate = args.prefix_cache_hit_rate
            prediction = predict(
                scenario, settings, profile=profile, static=args.static, prefix_cache_hit_rate=hit_rate
            )
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    if args.sweep is not None:
        print(json.dumps(_curve_json(curve), indent=2) if args.json else _curve_text(curve))
        return 0
    payload = _payload(prediction)
    if args.save_result:
        try:
            Path(args.save_result).write_text(json.dumps(payload, indent=1))
        except OSError as exc:
            return error(f"python -m planner {args.command}", f"--save-result {args.save_result}: {exc.strerror}")
    print(json.dumps(payload, indent=2) if args.json else _text(prediction))
    return 0
