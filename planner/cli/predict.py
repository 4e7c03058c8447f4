"""``python -m planner predict``: predicted TTFT, TPOT, ITL and throughput of a planned vLLM deployment under a load.

The deployment flags are ``plan``'s (``vllm serve`` spelling), the workload flags ``bench``'s (``vllm bench serve``
spelling); ``--json`` prints the keys a ``vllm bench serve --save-result`` file has (``median_ttft_ms``,
``median_tpot_ms``, ``median_itl_ms``, ``p99_ttft_ms``, ``request_throughput``, ``output_throughput``, …) plus the
simulation's own (``planner_preemptions``, ``planner_peak_kv_blocks``, …). ``--sweep N`` predicts concurrency
1, 2, 4, … N instead, one row per level.

Speculative decoding (``--spec-method``, ``--num-speculative-tokens``, ``--spec-acceptance-rates`` conditional per
position, or ``--spec-acceptance-from`` a Load Test / ``vllm bench serve`` result file with measured acceptance)
adds predicted TPOT and output throughput with and without it, and the batch size at which it stops paying
(:func:`planner.predict.api.predict_speculative`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import Any

from planner import fields
from planner.capacity.scenario import Scenario
from planner.cli.command import Command
from planner.cli.messages import error, file_path
from planner.cli.plan import add_scenario_arguments, scenario_from_args, usage_error
from planner.errors import BadValue, InvalidParameterError, PlannerError
from planner.loadtest.results import to_vllm_file
from planner.loadtest.settings import LoadSettings, SweepSettings, parse_goodput
from planner.predict.api import Prediction, SpeculativePrediction, predict, predict_speculative, predicted_run
from planner.predict.band import band_note
from planner.predict.calibration import CalibrationProfile, load_profile
from planner.predict.curves import PredictedCurve, predict_curve
from planner.predict.speculative import SPEC_METHODS, rates_from_measured
from planner.units import GIB

__all__ = ["COMMAND", "MAX_REQUESTS", "add_arguments", "run"]

#: Most requests one prediction simulates (about 10 s of simulation on one core).
MAX_REQUESTS = 100_000


#: The :class:`~planner.loadtest.settings.LoadSettings` fields a prediction's workload flags set (``bench``'s flags).
WORKLOAD_FIELDS = (
    "input_len",
    "output_len",
    "range_ratio",
    "max_concurrency",
    "request_rate",
    "burstiness",
    "num_prompts",
    "seed",
    "goodput_ms",
)


def add_workload_arguments(p: argparse.ArgumentParser) -> None:
    """The workload flags of a prediction: ``bench``'s, from the same declarations (:func:`planner.fields.add_arguments`
    of :data:`WORKLOAD_FIELDS`)."""
    w = p.add_argument_group("workload (vllm bench serve flags)")
    fields.add_arguments(w, LoadSettings, WORKLOAD_FIELDS)
    w.add_argument(
        "--calibration", type=file_path, metavar="PROFILE.json", help="coefficients from python -m planner calibrate"
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``predict`` subcommand's flags, added to ``p``."""
    add_scenario_arguments(p)
    add_workload_arguments(p)
    fields.add_arguments(p, SweepSettings, ("sweep_max",))
    p.add_argument("--static", action="store_true", help="also predict static batching, for comparison")
    p.add_argument(
        "--prefix-cache-hit-rate",
        type=float,
        default=0.0,
        help="share (0-1) of each prompt served from the prefix cache, not prefilled (default: 0; e.g. a Load Test "
        "run's measured hit rate)",
    )
    s = p.add_argument_group("speculative decoding (vLLM speculative_config)")
    s.add_argument("--spec-method", choices=SPEC_METHODS, help="speculative_config.method: predict with and without it")
    # the scenario's flags (plan's) may define these two already: they are the same setting, read once
    with contextlib.suppress(argparse.ArgumentError):
        s.add_argument("--num-speculative-tokens", type=int, help="draft tokens per step k")
    s.add_argument(
        "--spec-acceptance-rates",
        metavar="A1,A2,...",
        help="acceptance rate of each draft position given the ones before were accepted (default: the method's "
        "published figure; fewer than k repeat the last)",
    )
    s.add_argument(
        "--spec-acceptance-from",
        type=file_path,
        metavar="RESULT.json",
        help="take the rates from a measured run (a Load Test or vllm bench serve result file with spec_decode_*)",
    )
    with contextlib.suppress(argparse.ArgumentError):
        s.add_argument("--speculative-model", metavar="MODEL", help="the draft model (--spec-method draft_model)")
    s.add_argument("--spec-head-gib", type=float, help="an EAGLE/MTP head's weights, GiB (default: one target layer)")
    p.add_argument(
        "--save-result", type=file_path, metavar="FILE", help="write the prediction as a vllm bench serve result file"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (vllm bench serve's keys)")


def workload_from_args(args: argparse.Namespace) -> LoadSettings:
    """The :class:`~planner.loadtest.settings.LoadSettings` of :func:`add_workload_arguments`' flags.

    Raises:
        InvalidParameterError: a flag outside what is accepted, named by its flag (``--num-prompts`` at most
            :data:`MAX_REQUESTS`).
    """
    if not 1 <= args.num_prompts <= MAX_REQUESTS:
        raise InvalidParameterError("num_prompts", args.num_prompts, f"an integer from 1 to {MAX_REQUESTS:,}")
    goodput = " ".join(args.goodput_ms)
    try:
        return fields.from_args(
            LoadSettings,
            args,
            ignore_eos=True,
            goodput_ms=parse_goodput(goodput),
            duration_s=None,
            sweep_max=getattr(args, "sweep_max", None) or 1,  # fleet reads these flags without --sweep
        )
    except BadValue as exc:
        raise InvalidParameterError("--goodput", goodput, exc.accepted) from exc
    except InvalidParameterError as exc:  # a field's name -> its flag, as the user typed it
        raise InvalidParameterError(fields.flag_of(LoadSettings, exc.name), exc.value, exc.accepted) from exc


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
    if prediction.band is not None:
        out["planner_band"] = prediction.band.to_json()
    if prediction.static is not None:
        out["planner_static_output_throughput"] = prediction.static.metrics.output_throughput
        out["planner_continuous_gain"] = prediction.continuous_gain
    return out


def _text(prediction: Prediction) -> str:
    m = prediction.run.metrics
    s = prediction.settings
    load = f"{s.max_concurrency} in flight" if s.max_concurrency else f"{s.request_rate:g} req/s"
    band = prediction.band

    def _within(metric: str, ms: bool = True) -> str:
        r = band.get(metric) if band is not None else None
        if r is None:
            return ""
        return f" ({_ms(r[0])}–{_ms(r[1])})" if ms else f" ({r[0]:,.0f}–{r[1]:,.0f})"

    lines = [
        f"{prediction.plan.model_id} on {prediction.plan.num_gpus}x {prediction.plan.gpu_name}: "
        f"{s.num_prompts} requests of {s.input_len} in / {s.output_len} out, {load}",
        f"  TTFT    median {_ms(m.ttft.median_s if m.ttft else None)}{_within('median_ttft')}   "
        f"p99 {_ms(m.ttft.p99_s if m.ttft else None)}{_within('p99_ttft')}",
        f"  TPOT    median {_ms(m.tpot.median_s if m.tpot else None)}{_within('median_tpot')}   "
        f"p99 {_ms(m.tpot.p99_s if m.tpot else None)}{_within('p99_tpot')}",
        f"  ITL     median {_ms(m.itl.median_s if m.itl else None)}{_within('median_itl')}",
        f"  output  {m.output_throughput:,.0f} tok/s{_within('output_throughput', ms=False)}   "
        f"requests {m.request_throughput:,.2f}/s",
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
    note = band_note([band])
    if note is not None:
        lines.append(f"  (low–high): {note}")
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
            {
                "max_concurrency": int(p.level),
                **p.metrics.to_vllm_json(),
                "planner_kv_saturated": p.kv_saturated,
                **({"planner_band": p.band.to_json()} if p.band is not None else {}),
            }
            for p in curve.points
        ],
        "knee": curve.knee,
        "kv_saturation_concurrency": curve.saturation_level,
        "kv_max_concurrency": curve.kv_max_concurrency,
        "planner_calibration": curve.calibration,
        "planner_notes": list(curve.notes),
    }


def _rates(args: argparse.Namespace) -> tuple[float, ...]:
    """The conditional rates of ``--spec-acceptance-rates`` or ``--spec-acceptance-from`` (empty: the default)."""
    if args.spec_acceptance_rates and args.spec_acceptance_from:
        raise InvalidParameterError("spec_acceptance_from", args.spec_acceptance_from, "no --spec-acceptance-rates too")
    if args.spec_acceptance_rates:
        try:
            return tuple(float(x) for x in args.spec_acceptance_rates.split(",") if x.strip())
        except ValueError as exc:
            raise InvalidParameterError(
                "spec_acceptance_rates", args.spec_acceptance_rates, "A1,A2,... in [0, 1]"
            ) from exc
    if not args.spec_acceptance_from:
        return ()
    from planner.loadtest.results import import_runs

    try:
        raw = Path(args.spec_acceptance_from).read_bytes()
    except OSError as exc:
        raise InvalidParameterError(
            "spec_acceptance_from", args.spec_acceptance_from, f"a readable file ({exc.strerror})"
        ) from exc
    measured = [r.spec_decode for r in import_runs(raw, args.spec_acceptance_from) if r.spec_decode is not None]
    if not measured or measured[-1].mean_acceptance_length is None:
        raise InvalidParameterError(
            "spec_acceptance_from", args.spec_acceptance_from, "a result with spec_decode_* counts"
        )
    stats = measured[-1]
    k = round(stats.num_draft_tokens / stats.num_drafts)
    return rates_from_measured(
        stats.per_position_acceptance, mean_acceptance_length=stats.mean_acceptance_length, num_speculative_tokens=k
    )


def _deployment_flags(args: argparse.Namespace) -> argparse.Namespace:
    """The flags the scenario is read from: with ``--spec-method`` and no draft named (``--speculative-model`` or
    ``--speculative-config``), ``--num-speculative-tokens`` is that method's ``k``, not plan's older spelling of a
    draft model (which needs ``--speculative-model``): an EAGLE/MTP head is timed as one target layer without one."""
    if args.spec_method is None or args.speculative_model is not None or args.speculative_config is not None:
        return args
    return argparse.Namespace(**{**vars(args), "num_speculative_tokens": None})


def _speculative(
    args: argparse.Namespace,
    scenario: Scenario,
    settings: LoadSettings,
    rates: tuple[float, ...],
    head_bytes: float | None,
    profile: CalibrationProfile | None,
) -> SpeculativePrediction | None:
    # a scenario that carries vLLM's speculative_config (plan's flags) gives the method, k and draft by default
    config = scenario.speculative_config
    given = {"method": args.spec_method, "num_speculative_tokens": args.num_speculative_tokens}
    given["model"] = args.speculative_model
    method, tokens, draft = (v if v is not None else getattr(config, k, None) for k, v in given.items())
    if method is None and tokens is None:
        return None
    if method is None or tokens is None:
        raise InvalidParameterError("spec_method", method, "both --spec-method and --num-speculative-tokens")
    return predict_speculative(
        scenario,
        settings,
        method=method,
        num_speculative_tokens=tokens,
        acceptance_rates=rates,
        draft_model=draft,
        draft_weight_bytes=head_bytes,
        profile=profile,
    )


#: Flags a ``--sweep`` does not use (its levels are plain predictions of the scenario), refused with it.
_NOT_WITH_SWEEP = (
    "static",
    "prefix_cache_hit_rate",
    "spec_method",
    "spec_acceptance_rates",
    "spec_acceptance_from",
    "spec_head_gib",
    "save_result",
)


def _spec_text(p: SpeculativePrediction) -> str:
    e, c = p.estimate, p.config
    rates = ", ".join(f"{a:.2f}" for a in c.rates)
    even = "still pays at max_num_seqs" if p.break_even_batch is None else f"stops paying at batch {p.break_even_batch}"
    m = p.run.metrics
    lines = [
        f"  with speculative decoding, simulated: TPOT median {_ms(m.tpot.median_s if m.tpot else None)}   "
        f"ITL median {_ms(m.itl.median_s if m.itl else None)}   output {m.output_throughput:,.0f} tok/s",
        f"  speculative decoding ({c.method}, k={c.num_speculative_tokens}, rates {rates}), steady decode:",
        f"    tokens per step {e.tokens_per_step:.2f}   step {_ms(e.step_s)} (verify {_ms(e.verify_s)}, "
        f"draft {_ms(e.draft_s)})",
        f"    TPOT {_ms(e.tpot_s)} with, {_ms(e.tpot_without_s)} without ({e.speedup:.2f}x)",
        f"    output {e.output_throughput:,.0f} tok/s with, {e.output_throughput_without:,.0f} without",
        f"    {even}",
    ]
    return "\n".join(lines + [f"    note: {n}" for n in p.notes])


def _spec_json(p: SpeculativePrediction) -> dict[str, Any]:
    e, c = p.estimate, p.config
    return {
        "planner_spec_method": c.method,
        "planner_num_speculative_tokens": c.num_speculative_tokens,
        "planner_spec_acceptance_rates": list(c.rates),
        "planner_spec_tokens_per_step": e.tokens_per_step,
        "planner_spec_tpot_ms": e.tpot_s * 1e3,
        "planner_spec_tpot_without_ms": e.tpot_without_s * 1e3,
        "planner_spec_output_throughput": e.output_throughput,
        "planner_spec_output_throughput_without": e.output_throughput_without,
        "planner_spec_break_even_batch": p.break_even_batch,
        "planner_spec_simulated": p.run.metrics.to_vllm_json(),
    }


def run(args: argparse.Namespace) -> int:
    """Run ``predict``; returns the exit code (0, or 2 for bad input or a deployment that does not fit)."""
    try:
        scenario = scenario_from_args(_deployment_flags(args))
        settings = workload_from_args(args)
        profile = read_profile(args.calibration)
        if args.sweep_max is not None:
            if args.max_concurrency is not None:
                raise InvalidParameterError(
                    "max_concurrency", args.max_concurrency, "no --max-concurrency with --sweep"
                )
            unused = next((k for k in _NOT_WITH_SWEEP if getattr(args, k) not in (None, False, 0.0)), None)
            if unused is not None:
                flag = "--" + unused.replace("_", "-")
                raise PlannerError(f"{flag} is not used by --sweep (one plain prediction per level): leave one out")
            curve = predict_curve(scenario, settings, profile=profile)
        else:
            rates = _rates(args)
            head = None if args.spec_head_gib is None else args.spec_head_gib * GIB
            try:
                # one set of rates for the headline (the scenario's speculative_config) and the lines below
                prediction = predict(
                    scenario,
                    settings,
                    profile=profile,
                    static=args.static,
                    prefix_cache_hit_rate=args.prefix_cache_hit_rate,
                    acceptance_rates=rates,
                    draft_weight_bytes=head,
                )
                speculative = _speculative(args, scenario, settings, rates, head, profile)
            except InvalidParameterError as exc:  # the config's field names -> this command's flags
                flag = {"acceptance_rates": "spec_acceptance_rates", "method": "spec_method"}.get(exc.name)
                if flag is None:
                    raise
                raise InvalidParameterError(flag, exc.value, exc.accepted) from exc
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    if args.sweep_max is not None:
        print(json.dumps(_curve_json(curve), indent=2) if args.json else _curve_text(curve))
        return 0
    payload = _payload(prediction)
    if speculative is not None:
        payload.update(_spec_json(speculative))
    if args.save_result:
        try:
            Path(args.save_result).write_text(json.dumps(payload, indent=1))
        except OSError as exc:
            return error(f"python -m planner {args.command}", f"--save-result {args.save_result}: {exc.strerror}")
    text = _text(prediction)
    if speculative is not None:
        if prediction.plan.scenario.speculative_config is None:
            # the figures above are the target alone: say so before the lines with speculation
            text = text.replace("\n", "; without speculative decoding (with it: the last lines)\n", 1)
        text += "\n" + _spec_text(speculative)
    print(json.dumps(payload, indent=2) if args.json else text)
    return 0


COMMAND = Command(
    "predict",
    help="predict TTFT, TPOT, ITL and throughput of a planned vLLM deployment under a load",
    description="Predict what vllm bench serve would measure on a planned deployment: a step-time model "
    "(weights and KV bytes over bandwidth, FLOPs over peak, overheads) drives a simulation of vLLM V1's "
    "continuous-batching scheduler, with the capacity plan's KV cache. Deployment flags as plan's, workload "
    "flags as vllm bench serve's.",
    add_arguments=add_arguments,
    run=run,
)
