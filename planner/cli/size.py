"""``python -m planner size``: the cheapest GPU × parallelism × quantization × replicas for a target request rate
under percentile SLOs (:func:`planner.sizing.search.size`).

Flags are the settings' own declarations (:class:`~planner.sizing.settings.SizingSettings`, :mod:`planner.fields`) in
``vllm``'s spelling; ``--json`` prints a list of options, the ranked ones first, each with ``gpu``,
``tensor_parallel_size``, ``quantization``, ``kv_cache_dtype``, ``replicas``, ``num_gpus``, ``usd_per_hour``,
``usd_per_million_output_tokens``, the predicted ``p99_ttft_ms`` and ``p99_tpot_ms`` at the chosen size,
``meets_slo``, ``slo_estimate`` (what the SLOs were checked against: ``pessimistic``, the worse end of the predictor's
error band, the default, or ``point``), ``slo_checks`` (the values that decided the replicas) and the configuration's
``verdict`` and ``reason``. Exit codes: 0 (also when nothing meets the SLOs: the answer says what comes closest), 2
for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from planner import fields
from planner.cli.command import Command
from planner.cli.messages import error, file_path, not_valid
from planner.errors import InvalidParameterError, PlannerError

if TYPE_CHECKING:
    from planner.sizing.settings import SizingSettings

__all__ = ["COMMAND", "add_arguments", "run"]

PROG = "python -m planner size"
#: Ranked and other rows the text output prints.
_TEXT_ROWS = 12


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``size`` subcommand's flags, added to ``p``: :class:`~planner.sizing.settings.SizingSettings`' own flags
    (:func:`planner.fields.add_arguments`), then the search's."""
    from planner.sizing.settings import SizingSettings

    fields.add_arguments(p, SizingSettings)
    p.add_argument(
        "--calibration", type=file_path, metavar="PROFILE.json", help="coefficients from python -m planner calibrate"
    )
    p.add_argument("--max-probes", type=int, default=40, help="most simulations of the search (default: 40)")
    p.add_argument("--json", action="store_true", help="print the options as a JSON list")


def _settings(args: argparse.Namespace) -> SizingSettings:
    """The settings the flags describe; each ``--slo`` is parsed on its own, so an error names the bad one.

    Raises:
        InvalidParameterError: a flag outside what is accepted, naming its field.
    """
    from planner.metrics.slo import parse_slos
    from planner.sizing.settings import SizingSettings

    given = {"slos": parse_slos(args.slos)} if args.slos else {}
    return fields.from_args(SizingSettings, args, **given)


def _text(result: object) -> str:
    from planner.sizing.charts import OPTIONS_HEADLINE, options_table

    table = options_table(result, limit=_TEXT_ROWS)  # type: ignore[arg-type]
    # The page's headline columns, with the GPU count after the replicas and the SLO figures before "why": a
    # terminal has no folded columns to look them up in.
    columns = list(OPTIONS_HEADLINE)
    columns.insert(columns.index("replicas") + 1, "GPUs")
    columns[-1:-1] = ["p99 TTFT (ms)", "p99 TPOT (ms)", "SLO values checked"]
    from planner.sizing.estimate import describe_estimate
    from planner.sizing.settings import SizingSettings

    flag = fields.flag_of(SizingSettings, "slo_estimate")
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
    if best is not None and best.prefill is not None:
        lines += ["", f"launch {best.layout} (prefill and decode instances behind a P/D-aware router):"]
        lines.append(best.launch_command)
    elif best is not None:
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
        from planner.sizing.settings import SizingSettings

        return not_valid(PROG, fields.flag_of(SizingSettings, exc.name), exc.value, exc.accepted)
    except PlannerError as exc:
        return error(PROG, exc)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(_text(result))
    for note in result.notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)
    return 0


COMMAND = Command(
    "size",
    help="the cheapest GPU x parallelism x replicas for a target request rate under percentile SLOs",
    description="Search the GPU catalog (or --gpus), tensor/pipeline parallelism, weight quantization and KV "
    "dtype for the cheapest deployment that serves --target-rate requests/s of --input-len + --output-len "
    "tokens within the --slo percentiles: each configuration planned (memory), bounded by the step-time model, "
    "the promising ones simulated (vLLM V1's scheduler) at their share of the load.",
    add_arguments=add_arguments,
    run=run,
)
