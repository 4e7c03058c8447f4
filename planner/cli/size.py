"""``python -m planner size``: the cheapest GPU × parallelism × quantization × replicas for a target request rate
under percentile SLOs (:func:`planner.sizing.search.size`).

Flags are the settings' (:class:`~planner.sizing.settings.SizingSettings`) in ``vllm``'s spelling; ``--json`` prints
a list of options, the ranked ones first, each with ``gpu``, ``tensor_parallel_size``, ``quantization``,
``kv_cache_dtype``, ``replicas``, ``num_gpus``, ``usd_per_hour``, ``usd_per_million_output_tokens``, the predicted
``p99_ttft_ms`` and ``p99_tpot_ms`` at the chosen size, ``meets_slo``, ``slo_estimate`` (what the SLOs were
checked against: ``pessimistic``, the worse end of the predictor's error band, the default, or ``point``),
``slo_checks`` (the values that decided the replicas) and the configuration's ``verdict`` and ``reason``. Exit
codes: 0 (also when nothing meets the SLOs: the answer says what comes closest), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from planner.cli.messages import error, file_path, not_valid
from planner.errors import InvalidParameterError, PlannerError
from planner.links.rules import BadValue

__all__ = ["add_parser", "run"]

PROG = "python -m planner size"
#: Ranked and other rows the text output prints.
_TEXT_ROWS = 12


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``size`` subcommand to ``sub``."""
    from planner.sizing.settings import CHOICE_SETTINGS

    p = sub.add_parser(
        "size",
        help="the cheapest GPU x parallelism x replicas for a target request rate under percentile SLOs",
        description="Search the GPU catalog (or --gpus), tensor/pipeline parallelism, weight quantization and KV "
        "dtype for the cheapest deployment that serves --target-rate requests/s of --input-len + --output-len "
        "tokens within the --slo percentiles: each configuration planned (memory), bounded by the step-time model, "
        "the promising ones simulated (vLLM V1's scheduler) at their share of the load.",
    )
    p.add_argument("--model", required=True, help="catalog model id or Hugging Face repo id")
    p.add_argument("--target-rate", type=float, required=True, help="requests/s the deployment must serve")
    p.add_argument("--input-len", type=int, default=2048, help="prompt tokens per request (default: 2048)")
    p.add_argument("--output-len", type=int, default=300, help="output tokens per request (default: 300)")
    p.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the arrivals (default: 1, Poisson)")
    p.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="METRIC_STAT_ms=LIMIT",
        help="a percentile SLO, e.g. ttft_p99_ms=1000 (repeat the flag; default: ttft_p99_ms=1000 tpot_p99_ms=50)",
    )
    p.add_argument("--gpus", metavar="ID[:N],...", help="catalog GPU ids, each with GPUs per node (default: all, 8)")
    p.add_argument("--max-gpus", type=int, default=8, help="most GPUs of one replica, TP x PP (default: 8)")
    p.add_argument(
        "--price", action="append", default=[], metavar="ID=USD_PER_HOUR", help="a GPU's price per hour (repeat)"
    )
    p.add_argument("--headroom", type=float, default=0.2, help="spare capacity, a fraction (default: 0.2)")
    p.add_argument("--quantization", default="none,fp8", help="weight quantizations to consider (default: none,fp8)")
    p.add_argument("--kv-cache-dtype", default="auto,fp8", help="KV-cache dtypes to consider (default: auto,fp8)")
    p.add_argument("--max-model-len", type=int, help="--max-model-len of the deployments (default: the workload's)")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="(default: 0.9)")
    for choice in CHOICE_SETTINGS:
        p.add_argument(
            choice.flag,
            choices=choice.choices,
            default=choice.default,
            help=f"{choice.help} (default: {choice.default})",
        )
    p.add_argument(
        "--calibration", type=file_path, metavar="PROFILE.json", help="coefficients from python -m planner calibrate"
    )
    p.add_argument("--max-probes", type=int, default=40, help="most simulations of the search (default: 40)")
    p.add_argument("--json", action="store_true", help="print the options as a JSON list")


def _settings(args: argparse.Namespace) -> object:
    from planner.capacity.kv_cache import KV_CACHE_DTYPES
    from planner.metrics.slo import parse_slos
    from planner.sizing.settings import (
        CHOICE_SETTINGS,
        DEFAULT,
        QUANTIZATIONS,
        SizingSettings,
        parse_choices,
        parse_gpus,
        parse_prices,
    )

    def listed(name: str, text: str, parse: object, *args_: object) -> object:
        try:
            return parse(text, *args_)  # type: ignore[operator]
        except BadValue as bad:
            raise InvalidParameterError(name, text, bad.accepted) from None

    gpus = listed("gpus", args.gpus or "", parse_gpus)
    return SizingSettings(
        model=args.model,
        target_rate=args.target_rate,
        input_len=args.input_len,
        output_len=args.output_len,
        burstiness=args.burstiness,
        slos=parse_slos(args.slo) if args.slo else DEFAULT.slos,
        gpus=tuple(g for g, _ in gpus),  # type: ignore[attr-defined]
        node_gpus=tuple((g, n) for g, n in gpus if n is not None),  # type: ignore[attr-defined]
        max_gpus=args.max_gpus,
        prices=listed("price", " ".join(args.price), lambda t: parse_prices([t])),  # type: ignore[arg-type]
        headroom=args.headroom,
        quantizations=listed("quantization", args.quantization, parse_choices, QUANTIZATIONS),  # type: ignore[arg-type]
        kv_cache_dtypes=listed("kv_cache_dtype", args.kv_cache_dtype, parse_choices, KV_CACHE_DTYPES),  # type: ignore[arg-type]
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        **{choice.name: getattr(args, choice.name) for choice in CHOICE_SETTINGS},
    )


def _text(result: object) -> str:
    from planner.sizing.charts import options_table

    table = options_table(result, limit=_TEXT_ROWS)  # type: ignore[arg-type]
    columns = [
        "rank",
        "verdict",
        "GPU",
        "TP",
        "weights",
        "KV cache",
        "replicas",
        "GPUs",
        "$/hour",
        "$/M output tokens",
        "p99 TTFT (ms)",
        "p99 TPOT (ms)",
        "SLO values checked",
        "why",
    ]
    from planner.sizing.estimate import describe_estimate
    from planner.sizing.settings import choice_setting

    flag = choice_setting("slo_estimate").flag
    estimate = describe_estimate(result.settings.slo_estimate, switch=flag + " {}")  # type: ignore[attr-defined]
    lines = [result.answer, estimate, ""]  # type: ignore[attr-defined]
    lines.append(table[columns].to_string(index=False, max_colwidth=90) if len(table) else "(no configuration)")
    counts = result.counts()  # type: ignore[attr-defined]
    lines.append("")
    lines.append(
        f"{len(result.options):,} configurations: "  # type: ignore[attr-defined]
        + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n)
        + f"; {result.probes_run} simulations in {result.elapsed_s:.2f} s; coefficients: {result.calibration}"  # type: ignore[attr-defined]
    )
    best = result.best  # type: ignore[attr-defined]
    if best is not None:
        lines += ["", f"launch {best.replicas} replica(s) of:", best.launch_command]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``size``; returns the exit code (0, or 2 for bad input)."""
    from planner.cli.predict import read_profile
    from planner.sizing.search import size

    try:
        settings = _settings(args)
        if not 1 <= args.max_probes <= 1000:
            raise InvalidParameterError("max_probes", args.max_probes, "an integer from 1 to 1,000")
        result = size(settings, profile=read_profile(args.calibration), max_probes=args.max_probes)  # type: ignore[arg-type]
    except InvalidParameterError as exc:
        flag = {
            "slos": "--slo",
            "prices": "--price",
            "quantizations": "--quantization",
            "kv_cache_dtypes": "--kv-cache-dtype",
        }.get(exc.name, "--" + exc.name.replace("_", "-"))
        return not_valid(PROG, flag, exc.value, exc.accepted)
    except PlannerError as exc:
        return error(PROG, exc)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(_text(result))
    for note in result.notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)
    return 0
