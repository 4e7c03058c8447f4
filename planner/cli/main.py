"""Command line: ``python -m planner plan --engine vllm --model ... --gpu ... [--json]``,
``python -m planner model <repo id> [--json]`` and
``python -m planner compare --endpoint NAME=KIND:URL [--endpoint ...] --prompt TEXT [--json]`` and
``python -m planner bench --endpoint [NAME=]KIND:URL [--concurrency N | --sweep N] [--request-rate R]
[--dataset-path FILE.jsonl] [--save-result FILE] ... [--json]``.

Flags are spelled as ``vllm serve`` spells them. A bad flag or value exits with code 2 and one line
naming it and what is accepted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import DTYPES, ENGINES, QUANTIZATION_CHOICES, Scenario
from planner.catalog.hub import describe, resolve_model
from planner.catalog.launch import launch_command
from planner.errors import InvalidParameterError, PlannerError
from planner.units import GIB

if TYPE_CHECKING:
    from planner.loadtest.runner import LoadResult
    from planner.loadtest.sweep import SweepResult
    from planner.serving.streaming import RequestRecord

__all__ = ["main"]

_PRECISIONS = ("fp16", "fp8", "int8", "int4")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (expected true or false)")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m planner", description="LLM Serving Planner command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("plan", help="plan a scenario: VRAM budget, KV cache, max concurrency")
    p.add_argument("--engine", choices=ENGINES, default="vllm")
    p.add_argument("--model", help="catalog model id or any Hugging Face repo id")
    p.add_argument("--gpu", help="catalog GPU id or name, e.g. h100, 'RTX 4090', a100-40gb")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--dtype", choices=DTYPES, default="auto")
    p.add_argument("--quantization", "-q", choices=[q for q in QUANTIZATION_CHOICES if q])
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--block-size", type=int)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--engine-version", help="e.g. 0.19.0 (vLLM) or 2.2.0 (TGI); default: newest known")
    p.add_argument("--max-input-tokens", type=int, help="TGI")
    p.add_argument("--max-total-tokens", type=int, help="TGI")
    p.add_argument("--max-batch-prefill-tokens", type=int, help="TGI")
    p.add_argument("--cuda-memory-fraction", type=float, default=1.0, help="TGI")
    p.add_argument("--target-context", type=int, help="also report concurrency at this context")
    p.add_argument("--custom-gpu-memory-gib", type=float, help="memory of --gpu custom, GiB")
    art = p.add_argument_group("article engine inputs (override --model/--gpu)")
    art.add_argument("--params-b", type=float, help="parameters in billions")
    art.add_argument("--num-layers", type=int)
    art.add_argument("--num-kv-heads", type=int)
    art.add_argument("--head-dim", type=int)
    art.add_argument("--gpu-memory-gb", type=float)
    art.add_argument("--weight-quant", choices=_PRECISIONS)
    art.add_argument("--kv-quant", choices=_PRECISIONS)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    m = sub.add_parser("model", help="resolve a model id (catalog, cache, Hub) and print its architecture")
    m.add_argument("model_id", help="a catalog id or any Hugging Face repo id")
    m.add_argument("--refresh", action="store_true", help="ask the Hub again instead of the on-disk cache")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    _add_compare_parser(sub)
    _add_bench_parser(sub)
    return parser


def _scenario(args: argparse.Namespace) -> Scenario:
    article_inputs = None not in (args.params_b, args.num_layers, args.num_kv_heads, args.head_dim, args.gpu_memory_gb)
    for flag, value in (("--model", args.model), ("--gpu", args.gpu)):
        if value is not None and not value.strip():
            raise PlannerError(f"{flag} is empty; give a catalog name")
    if args.model is None and not article_inputs:
        raise PlannerError("--model is required (a catalog model id such as meta-llama/Llama-3.1-8B-Instruct)")
    if args.gpu is None and not article_inputs:
        raise PlannerError("--gpu is required (a catalog GPU such as h100, 'RTX 4090', a100-40gb)")
    defaults = Scenario()
    return Scenario(
        engine=args.engine,
        model=args.model or defaults.model,
        gpu=args.gpu or defaults.gpu,
        tensor_parallel_size=args.tensor_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size,
        dtype=args.dtype,
        quantization=args.quantization,
        kv_cache_dtype=args.kv_cache_dtype,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        block_size=args.block_size,
        enforce_eager=args.enforce_eager,
        engine_version=args.engine_version,
        max_input_tokens=args.max_input_tokens,
        max_total_tokens=args.max_total_tokens,
        max_batch_prefill_tokens=args.max_batch_prefill_tokens,
        cuda_memory_fraction=args.cuda_memory_fraction,
        target_context=args.target_context,
        params_b=args.params_b,
        num_layers=args.num_layers,
        num_kv_heads=args.num_kv_heads,
        head_dim=args.head_dim,
        gpu_memory_gb=args.gpu_memory_gb,
        weight_quant=args.weight_quant,
        kv_quant=args.kv_quant,
        custom_gpu_memory_gib=args.custom_gpu_memory_gib,
    )


def _gib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f} GiB"


def _text(result: Plan) -> str:
    t = result.per_gpu
    lines = [
        f"{result.engine_label}: {result.model_id} on {result.num_gpus} x {result.gpu_name}",
        f"  total memory per GPU      {_gib(t.total_bytes / GIB)}",
        f"  budget (x utilization)    {_gib(t.budget_bytes / GIB)}",
        f"  weights                   {_gib(t.weights_bytes / GIB)}",
        f"  activation peak           {_gib(None if t.activation_bytes is None else t.activation_bytes / GIB)}",
        f"  non-torch                 {_gib(None if t.non_torch_bytes is None else t.non_torch_bytes / GIB)}",
        f"  CUDA graphs               {_gib(None if t.cuda_graph_bytes is None else t.cuda_graph_bytes / GIB)}",
        f"  KV cache                  {_gib(t.kv_cache_bytes / GIB)}",
        f"  KV bytes per token        {result.kv_bytes_per_token:,.0f}",
        f"  GPU blocks                {'n/a' if result.num_gpu_blocks is None else f'{result.num_gpu_blocks:,}'}",
        f"  GPU KV cache size         {result.kv_cache_tokens:,} tokens",
        f"  Maximum concurrency for {result.max_model_len:,} tokens per request: {result.max_concurrency:.2f}x",
    ]
    if result.max_concurrency_at_target is not None:
        lines.append(
            f"  concurrency at {result.scenario.target_context:,} tokens: {result.max_concurrency_at_target:.2f}x"
        )
    lines.append("  fits: yes" if result.fits else f"  fits: NO - {result.reason}")
    for advice in result.advice:
        lines.append(f"  fix: {advice.change} -> {advice.max_concurrency:.2f}x on {advice.num_gpus} GPU(s)")
    lines.extend(f"  note: {note}" for note in result.notes)
    lines.append(f"  launch: {launch_command(result)}")
    return "\n".join(lines)


_ENGINE_FLAGS = {
    "tgi": ("max_input_tokens", "max_total_tokens", "max_batch_prefill_tokens"),
    "article": ("params_b", "num_layers", "num_kv_heads", "head_dim", "gpu_memory_gb", "weight_quant", "kv_quant"),
}


def _ignored_flags(args: argparse.Namespace) -> list[str]:
    """Flags given that the chosen engine or GPU does not use, so the user is not misled."""
    notes = []
    for engine, names in _ENGINE_FLAGS.items():
        given = ["--" + n.replace("_", "-") for n in names if getattr(args, n) is not None]
        if given and args.engine != engine:
            notes.append(f"{', '.join(given)} only apply to --engine {engine}; ignored")
    if args.custom_gpu_memory_gib is not None and args.gpu != "custom":
        notes.append("--custom-gpu-memory-gib only applies to --gpu custom; ignored")
    return notes


def _model_text(data: dict[str, object]) -> str:
    lines = [f"{data['model']} (from {data['source']})"]
    for key, value in data.items():
        if key in ("model", "source") or value in (None, [], {}):
            continue
        lines.append(
            f"  {key:26} {value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"  {key:26} {value}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 bench: every request failed, 2 bad input, 141 stdout closed).

    A reader that closes the pipe early (``python -m planner ... | head -1``) ends the command quietly with 141
    (128 + SIGPIPE, what a shell reports for a command killed by SIGPIPE) instead of a ``BrokenPipeError``
    traceback.
    """
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # inside the try, so a broken pipe surfaces here rather than at interpreter exit
    except BrokenPipeError:
        # Python's recipe (docs: signal, "Note on SIGPIPE"): point stdout at devnull so the flush at exit is silent.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured): nothing is flushed at exit anyway
            pass
        return 141


def _main(argv: Sequence[str] | None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "compare":
        return _compare(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "model":
        try:
            data = describe(resolve_model(args.model_id, refresh=args.refresh))
        except InvalidParameterError as exc:
            print(
                f"python -m planner model: error: {exc.value!r} is not valid: expected {exc.accepted}", file=sys.stderr
            )
            return 2
        except PlannerError as exc:
            print(f"python -m planner model: error: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(data, indent=2) if args.json else _model_text(data))
        return 0
    try:
        result = plan(_scenario(args))
    except InvalidParameterError as exc:
        flag = "--" + exc.name.replace("_", "-")
        shown = repr(exc.value) if len(repr(exc.value)) <= 80 else repr(exc.value)[:77] + "..."
        problem = "is required" if exc.value is None else f"{shown} is not valid"
        print(f"python -m planner {args.command}: error: {flag} {problem}: expected {exc.accepted}", file=sys.stderr)
        return 2
    except PlannerError as exc:
        print(f"python -m planner {args.command}: error: {exc}", file=sys.stderr)
        return 2
    for note in _ignored_flags(args):
        print(f"python -m planner {args.command}: note: {note}", file=sys.stderr)
    if args.json:
        payload = result.to_json()
        payload["launch_command"] = launch_command(result)
        print(json.dumps(payload, indent=2))
    else:
        print(_text(result))
    return 0


# --- compare ---------------------------------------------------------------------------------------------------------
def _add_compare_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compare", help="stream one prompt to several endpoints and compare TTFT/TPOT/ITL/E2E")
    c.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME=KIND:URL",
        help="e.g. a=vllm:http://127.0.0.1:8000 (kinds: vllm, tgi, openai, sglang, llamacpp); repeatable",
    )
    c.add_argument("--endpoints-file", help="an endpoints.toml with [[endpoint]] tables (adds to --endpoint)")
    c.add_argument("--prompt", required=True)
    c.add_argument("--system", help="system prompt")
    c.add_argument("--max-tokens", type=int, default=128)
    c.add_argument("--temperature", type=float)
    c.add_argument("--seed", type=int)
    c.add_argument("--repeat", type=int, default=1, help="requests per endpoint, one after the other")
    c.add_argument("--timeout", type=float, default=60.0, help="connect/read timeout per request, seconds")
    c.add_argument("--json", action="store_true", help="print one JSON object")


def _fmt_ms(value: object) -> str:
    return "n/a" if value is None or value != value else f"{value:,.1f}"  # NaN != NaN


def _fmt_tokens(value: object) -> str:
    return "n/a" if value is None or value != value else f"{value:g}"


def _median_tokens(records: Sequence[RequestRecord]) -> dict[str, float]:
    """Median output tokens of each endpoint's ok requests, from the records: an ok empty answer counts 0 tokens
    although it has no latency metrics (no token, so no TTFT/E2E)."""
    from planner.metrics.latency import summarize

    out: dict[str, float] = {}
    for name in dict.fromkeys(r.endpoint for r in records):
        s = summarize(
            float(r.output_tokens) for r in records if r.endpoint == name and r.ok and r.output_tokens is not None
        )
        if s is not None:
            out[name] = s.median
    return out


def _compare(args: argparse.Namespace) -> int:
    import asyncio

    from planner.compare.run import run_compare, summary_frame, to_json
    from planner.serving.endpoints import load_endpoints, parse_endpoint_flag
    from planner.serving.requests import ChatRequest

    prog = "python -m planner compare"
    try:
        endpoints = [parse_endpoint_flag(text) for text in args.endpoint]
        if args.endpoints_file:
            endpoints += list(load_endpoints(args.endpoints_file))
        if not endpoints:
            raise PlannerError("give at least one --endpoint NAME=KIND:URL (or --endpoints-file)")
        request = ChatRequest(
            prompt=args.prompt,
            system=args.system,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            seed=args.seed,
        )
        result = asyncio.run(run_compare(endpoints, request, repeat=args.repeat, timeout_s=args.timeout))
    except InvalidParameterError as exc:
        flag = {"max_tokens": "--max-tokens", "timeout_s": "--timeout", "endpoints": "--endpoint"}.get(
            exc.name, "--" + exc.name.replace("_", "-")
        )
        print(f"{prog}: error: {flag} {exc.value!r} is not valid: expected {exc.accepted}", file=sys.stderr)
        return 2
    except PlannerError as exc:
        for line in str(exc).splitlines():
            print(f"{prog}: error: {line}", file=sys.stderr)
        return 2
    if args.json:
        print(to_json(result))
        return 0
    table = summary_frame(result)
    tokens = _median_tokens(result.records)
    header = f"{'endpoint':16} {'ok':>5} {'TTFT ms':>9} {'TPOT ms':>9} {'ITL ms':>9} {'E2E ms':>9} {'tokens':>7}"
    lines = [header]
    for row in table.to_dict("records"):
        ok = f"{row['requests'] - row['failed']}/{row['requests']}"
        lines.append(
            f"{row['endpoint']:16} {ok:>5} {_fmt_ms(row['ttft_ms']):>9} {_fmt_ms(row['tpot_ms']):>9} "
            f"{_fmt_ms(row['itl_ms']):>9} {_fmt_ms(row['e2e_ms']):>9} {_fmt_tokens(tokens.get(row['endpoint'])):>7}"
        )
    for record in result.records:
        if not record.ok:
            lines.append(f"  {record.endpoint}: {record.error_kind}: {record.error}")
    lines.append("TTFT = first token - sent; TPOT = (E2E - TTFT)/(tokens - 1); ITL per token; medians over repeats")
    print("\n".join(lines))
    return 0


# --- bench -----------------------------------------------------------------------------------------------------------
def _add_bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="load-test one endpoint like vllm bench serve (TTFT/TPOT/ITL/E2EL, throughput)")
    b.add_argument("--endpoint", required=True, metavar="[NAME=]KIND:URL", help="e.g. vllm:http://127.0.0.1:8000")
    b.add_argument("--concurrency", "--max-concurrency", dest="concurrency", type=int, help="most requests in flight")
    b.add_argument("--request-rate", type=float, default=float("inf"), help="requests/s (default inf = burst)")
    b.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the gaps (1 = Poisson)")
    b.add_argument("--num-prompts", type=int, default=100)
    b.add_argument("--num-warmups", type=int, default=0)
    b.add_argument("--input-len", type=int, default=128, help="synthetic prompt length (words ~ tokens)")
    b.add_argument("--output-len", type=int, default=128, help="max_tokens of each request")
    b.add_argument("--range-ratio", type=float, default=0.0, help="lengths drawn from [L(1-r), L(1+r)]")
    b.add_argument("--ignore-eos", action="store_true", help="generate exactly --output-len tokens (not TGI)")
    b.add_argument("--prompt", action="append", default=[], help="use this prompt instead of synthetic text")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--duration", type=float, help="wall-time cap of the run, seconds")
    b.add_argument("--timeout", type=float, default=60.0, help="connect/read timeout per request, seconds")
    b.add_argument("--goodput", nargs="+", default=[], metavar="KEY:MS", help="SLOs, e.g. ttft:500 tpot:50")
    b.add_argument("--dataset-path", metavar="FILE.jsonl", help='prompts file: {"prompt": ...} per line (vLLM custom)')
    b.add_argument("--exact-input-len", action="store_true", help="size synthetic prompts with the server /tokenize")
    b.add_argument("--sweep", type=int, metavar="N", help="concurrency sweep 1, 2, 4, ... N; prints a row per level")
    b.add_argument(
        "--prompts-per-level", type=int, help="sweep: requests per level (default max(num-prompts, 4 x level))"
    )
    b.add_argument("--level-duration", type=float, default=120.0, help="sweep: wall-time cap per level, seconds")
    b.add_argument("--save-result", metavar="FILE", help="write the vllm-keyed JSON (with per-request arrays) here")
    b.add_argument("--json", action="store_true", help="print the vllm-keyed JSON object")


_BENCH_FLAGS = {
    "max_concurrency": "--concurrency",
    "num_prompts": "--num-prompts",
    "num_warmups": "--num-warmups",
    "duration_s": "--duration",
    "timeout_s": "--timeout",
    "slo_ms": "--goodput",
    "prompts": "--prompt",
    "levels": "--sweep",
    "level_duration_s": "--level-duration",
}


def _bench_text(result: LoadResult) -> str:
    """The vLLM-style summary table (``vllm bench serve`` console output, plus P90 and sample counts)."""
    m = result.metrics
    spec = result.spec
    # With no successful request, duration and throughputs are undefined (vLLM would print 0.00): n/a.
    measured = m.completed > 0

    def row(label: str, value: object, fmt: str = "{:.2f}") -> str:
        shown = "n/a" if value is None else (fmt.format(value) if isinstance(value, float) else str(value))
        return f"{label:<40} {shown}"

    def rate(value: float | None) -> float | None:
        return value if measured else None

    lines = [
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        row("Successful requests:", m.completed),
        row("Failed requests:", m.failed),
        row("Maximum request concurrency:", spec.max_concurrency),
        row("Request rate configured (RPS):", spec.request_rate),
        row("Benchmark duration (s):", rate(m.duration_s)),
        row("Total input tokens:", m.total_input_tokens),
        row("Total generated tokens:", m.total_output_tokens),
        row("Request throughput (req/s):", rate(m.request_throughput)),
    ]
    if m.request_goodput is not None:
        lines.append(row("Request goodput (req/s):", rate(m.request_goodput)))
    lines += [
        row("Output token throughput (tok/s):", rate(m.output_throughput)),
        row("Total Token throughput (tok/s):", rate(m.total_token_throughput)),
    ]
    titles = {
        "ttft": ("Time to First Token", "TTFT"),
        "tpot": ("Time per Output Token (excl. 1st token)", "TPOT"),
        "itl": ("Inter-token Latency", "ITL"),
        "e2el": ("End-to-end Latency", "E2EL"),
    }
    for key, (title, short) in titles.items():
        d = getattr(m, key)
        lines.append("{s:{c}^{n}}".format(s=title, n=50, c="-"))
        lines.append(row(f"Samples ({short}):", 0 if d is None else d.count))
        for stat, label in (("mean", "Mean"), ("median", "Median"), ("std", "Std"), ("p90", "P90"), ("p99", "P99")):
            value = None if d is None else getattr(d, f"{stat}_s")
            lines.append(row(f"{label} {short} (ms):", None if value is None else value * 1000))
    first = result.ttft_first_chunk
    lines.append("{s:{c}^{n}}".format(s="TTFT to first chunk (vllm bench serve)", n=50, c="-"))
    for stat, label in (("mean", "Mean"), ("median", "Median"), ("p99", "P99")):
        value = None if first is None else getattr(first, f"{stat}_s")
        lines.append(row(f"{label} TTFT first chunk (ms):", None if value is None else value * 1000))
    if result.input_calibration is not None:
        lines.append(row("Input lengths:", result.input_calibration.label))
    lines.append("=" * 50)
    for kind, count in m.failures_by_kind:
        lines.append(f"failed: {count} x {kind}")
    first_error = next((r for r in result.records if not r.ok), None)
    if first_error is not None:
        lines.append(f"  e.g. {first_error.error_kind}: {first_error.error}")
    if result.stopped is not None:
        lines.append(f"stopped by {result.stopped}: {result.cancelled} cancelled in flight, {result.not_sent} not sent")
    return "\n".join(lines)


def _sweep_text(sweep: SweepResult) -> str:
    """One row per level, then the knee."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.1f}"

    head = f"{'conc':>5} {'ok':>5} {'fail':>5} {'req/s':>8} {'out tok/s':>10} {'TTFT p50':>9} {'TTFT p99':>9}"
    lines = [head + f" {'TPOT p50':>9} {'E2EL p50':>9}  (latencies in ms)"]
    for p in sweep.points:
        # no successful request: throughputs are undefined, not 0
        req_s = f"{p.request_throughput:.2f}" if p.completed else "n/a"
        out_s = f"{p.output_throughput:.1f}" if p.completed else "n/a"
        lines.append(
            f"{p.concurrency:>5} {p.completed:>5} {p.failed:>5} {req_s:>8} "
            f"{out_s:>10} {ms(p.ttft_median_s):>9} {ms(p.ttft_p99_s):>9} "
            f"{ms(p.tpot_median_s):>9} {ms(p.e2el_median_s):>9}" + (f"  stopped by {p.stopped}" if p.stopped else "")
        )
    if sweep.knee is None:
        lines.append("knee: none found (Kneedle on concurrency -> output tok/s; needs 3+ levels and a bend)")
    else:
        lines.append(f"knee: concurrency {sweep.knee} (Kneedle on concurrency -> output tok/s)")
    if sweep.stopped:
        lines.append(f"sweep stopped by {sweep.stopped}")
    return "\n".join(lines)


def _all_failed(records: Sequence[RequestRecord]) -> str | None:
    """When requests were sent and none succeeded: "all N requests failed; most common: KIND (M of N): MESSAGE"
    (MESSAGE from the first request of that kind); else None."""
    from collections import Counter

    if not records or any(r.ok for r in records):
        return None
    kinds = Counter(r.error_kind or "error" for r in records)
    kind, count = kinds.most_common(1)[0]
    example = next(r.error for r in records if (r.error_kind or "error") == kind)
    n = len(records)
    what = f"all {n} request{'s' if n != 1 else ''} failed"
    return f"{what}; most common: {kind} ({count} of {n})" + (f": {example}" if example else "")


def _accepted(text: str) -> str:
    """What a flag accepts, in CLI words: a flag that is left out is not "None"."""
    return text.replace("or None for no cap", "or leave it out for no cap")


def _read_dataset(path: str) -> tuple[str, ...]:
    from planner.loadtest.workload import _MAX_BYTES, parse_prompts_jsonl

    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise InvalidParameterError("dataset_path", path, f"a readable JSONL file ({exc.strerror})") from exc
    return parse_prompts_jsonl(data)


def _bench(args: argparse.Namespace) -> int:
    import asyncio
    from datetime import datetime

    from planner.loadtest.results import saved_run, to_vllm_file
    from planner.loadtest.runner import LoadSpec, run_load
    from planner.loadtest.sweep import SweepSpec, run_sweep, sweep_levels
    from planner.serving.endpoints import parse_endpoint_flag

    prog = "python -m planner bench"
    started = datetime.now()
    try:
        text = args.endpoint
        head = text.split(":", 1)[0]
        if "=" not in head:  # KIND:URL -> named after its kind
            text = f"{head.strip().lower()}={text}"
        try:
            endpoint = parse_endpoint_flag(text)
        except InvalidParameterError as exc:  # echo what was typed, not the NAME= this function added
            raise InvalidParameterError(exc.name, args.endpoint, exc.accepted) from exc
        slo: list[tuple[str, float]] = []
        typed_slo: dict[tuple[str, float], str] = {}  # parsed SLO -> the --goodput item it came from
        for item in args.goodput:
            key, sep, value = item.partition(":")
            try:
                slo.append((key.strip().lower(), float(value)))
            except ValueError:
                sep = ""
            if not sep:
                raise InvalidParameterError("slo_ms", item, "KEY:MS with KEY ttft, tpot or e2el, e.g. ttft:500")
            typed_slo.setdefault(slo[-1], item)
        if args.sweep is not None and args.concurrency is not None:
            raise InvalidParameterError("max_concurrency", args.concurrency, "no --concurrency with --sweep")
        levels: tuple[int, ...] = ()
        if args.sweep is not None:
            try:
                levels = sweep_levels(args.sweep)
            except InvalidParameterError as exc:  # named after the flag, not sweep_levels' argument
                raise InvalidParameterError("levels", args.sweep, exc.accepted) from exc
        prompts = tuple(args.prompt) + (_read_dataset(args.dataset_path) if args.dataset_path else ())
        spec = LoadSpec(
            num_prompts=args.num_prompts,
            max_concurrency=args.concurrency,
            request_rate=args.request_rate,
            burstiness=args.burstiness,
            seed=args.seed,
            num_warmups=args.num_warmups,
            duration_s=args.duration,
            input_len=args.input_len,
            output_len=args.output_len,
            range_ratio=args.range_ratio,
            ignore_eos=args.ignore_eos,
            prompts=prompts,
            timeout_s=args.timeout,
            slo_ms=tuple(slo),
            exact_input_len=args.exact_input_len,
        )
        if args.sweep is not None:
            sweep_spec = SweepSpec(
                spec,
                levels,
                prompts_per_level=args.prompts_per_level,
                level_duration_s=args.level_duration,
            )
            sweep = asyncio.run(run_sweep(endpoint, sweep_spec))
        else:
            result = asyncio.run(run_load(endpoint, spec))
    except InvalidParameterError as exc:
        if exc.name == "dataset" or exc.name.startswith("dataset line"):
            where = exc.name.removeprefix("dataset").strip()
            shown = repr(exc.value) if len(repr(exc.value)) <= 80 else repr(exc.value)[:77] + "..."
            what = args.dataset_path + (f" {where}" if where else "")
            print(
                f"{prog}: error: --dataset-path {what}: {shown} is not valid: expected {exc.accepted}", file=sys.stderr
            )
            return 2
        flag = _BENCH_FLAGS.get(exc.name, "--" + exc.name.replace("_", "-"))
        value = exc.value
        if exc.name == "slo_ms" and isinstance(value, tuple):  # LoadSpec names the parsed pair; show the typed item
            value = typed_slo.get(value, value)
        print(f"{prog}: error: {flag} {value!r} is not valid: expected {_accepted(exc.accepted)}", file=sys.stderr)
        return 2
    except PlannerError as exc:
        for line in str(exc).splitlines():
            print(f"{prog}: error: {line}", file=sys.stderr)
        return 2
    # One writer for vLLM-keyed results (planner.loadtest.results), so the page re-imports what the CLI saves.
    if args.sweep is not None:
        runs = [
            saved_run(r, f"{endpoint.name} · c={p.concurrency}", started=started, sweep=f"{endpoint.name} sweep")
            for p, r in zip(sweep.points, sweep.results, strict=True)
        ]
        document: object = [to_vllm_file(run) for run in runs]
        levels = [to_vllm_file(run, per_request=False) for run in runs]
        summary = {"endpoint": endpoint.name, "knee_concurrency": sweep.knee, "levels": levels}
        shown = json.dumps(summary, indent=2) if args.json else _sweep_text(sweep)
    else:
        run = saved_run(result, endpoint.name, started=started)
        document = to_vllm_file(run)
        shown = json.dumps(to_vllm_file(run, per_request=False), indent=2) if args.json else _bench_text(result)
    if args.save_result:
        try:
            with open(args.save_result, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
        except OSError as exc:
            print(f"{prog}: error: --save-result {args.save_result!r}: {exc.strerror}", file=sys.stderr)
            return 2
    print(shown)
    records = [rec for r in sweep.results for rec in r.records] if args.sweep is not None else list(result.records)
    failure = _all_failed(records)
    if failure is not None:
        sys.stdout.flush()  # the results first, then the verdict as the last stderr line
        print(f"{prog}: error: {failure}", file=sys.stderr)
        return 1
    return 0
