"""``python -m planner plan``: plan a scenario (VRAM budget, KV cache, maximum concurrency) in vLLM's flag spelling.

A bad flag or value exits with code 2 and one line naming it and what is accepted; a plan that does not fit still
exits 0 and says why.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import replace

from planner.capacity.engines.vllm import profile_for
from planner.capacity.explain import (
    Explanation,
    VersionChange,
    compare_versions,
    explain,
    layout_rows,
    max_model_len_text,
    version_range_text,
)
from planner.capacity.launch import launch
from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import (
    DTYPES,
    ENGINES,
    ENTRY_POINTS,
    QUANTIZATION_CHOICES,
    Scenario,
    parse_max_model_len,
)
from planner.capacity.speculative import (
    SpeculativeConfig,
    from_legacy_flags,
    from_tgi_speculate,
    parse_speculative_config,
)
from planner.capacity.verdict import verdict
from planner.cli.command import Command
from planner.cli.messages import error
from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.units import GIB

__all__ = ["COMMAND", "add_arguments", "add_scenario_arguments", "run", "scenario_from_args", "usage_error"]

_PRECISIONS = ("fp16", "fp8", "int8", "int4")
#: Columns the explanation's sentences wrap at.
_WIDTH = 118


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``plan`` subcommand's flags, added to ``p``."""
    add_scenario_arguments(p)
    p.add_argument(
        "--compare-engine-version",
        metavar="VERSION",
        help="vLLM: also plan VERSION and say what changed between the two versions (default: no comparison)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that describe a deployment (``plan``, ``predict``, ``calibrate``), spelled as ``vllm serve``."""
    p.add_argument("--engine", choices=ENGINES, default="vllm", help="engine to plan for (default: vllm)")
    p.add_argument("--model", help="catalog model id (python -m planner models) or any Hugging Face repo id")
    p.add_argument("--gpu", help="catalog GPU id or name, e.g. h100, 'RTX 4090', a100-40gb (python -m planner gpus)")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1, help="GPUs per pipeline stage (default: 1)")
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1, help="pipeline stages (default: 1)")
    p.add_argument("--dtype", choices=DTYPES, default="auto", help="weight dtype (default: auto, the config's)")
    p.add_argument(
        "--quantization",
        "-q",
        choices=[q for q in QUANTIZATION_CHOICES if q],
        help="online quantization or the checkpoint's method (default: the checkpoint's, none if unquantized)",
    )
    p.add_argument("--kv-cache-dtype", default="auto", help="KV-cache dtype, e.g. fp8 (default: auto, the model's)")
    p.add_argument(
        "--gpu-memory-utilization", type=float, default=0.9, help="share of GPU memory vLLM may use (default: 0.9)"
    )
    p.add_argument(
        "--max-model-len",
        help="context length in tokens, or auto (also -1): the longest that fits, as vLLM v0.12+ resolves it "
        "(default: the model's maximum)",
    )
    p.add_argument("--max-num-seqs", type=int, help="most sequences per batch (default: the engine's, by GPU)")
    p.add_argument(
        "--max-num-batched-tokens", type=int, help="tokens per scheduler step (default: the engine's, by GPU)"
    )
    p.add_argument("--block-size", type=int, help="KV-cache block size in tokens (default: the engine's, 16)")
    p.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs (default: graphs captured)")
    p.add_argument(
        "--engine-version",
        help="e.g. 0.19.0 (vLLM) or 2.2.0 (TGI) (default: the newest known, with the range over the vLLM versions "
        "still in use)",
    )
    p.add_argument(
        "--entry-point",
        choices=ENTRY_POINTS,
        default="serve",
        help="vLLM: started as vllm serve or as the offline vllm.LLM class; their scheduler defaults differ "
        "(default: serve)",
    )
    p.add_argument("--max-input-tokens", type=int, help="TGI: longest prompt (default: TGI's)")
    p.add_argument("--max-total-tokens", type=int, help="TGI: longest prompt + output (default: TGI's)")
    p.add_argument("--max-batch-prefill-tokens", type=int, help="TGI: tokens of one prefill batch (default: TGI's)")
    p.add_argument("--cuda-memory-fraction", type=float, default=1.0, help="TGI: share of GPU memory (default: 1.0)")
    p.add_argument("--target-context", type=int, help="also report concurrency at this context (default: none)")
    p.add_argument(
        "--shared-prefix-ratio",
        type=float,
        help="what-if: this share (0-1) of each request is a prefix common to all, held once with prefix caching; "
        "reports the concurrency at --target-context (else max_model_len)",
    )
    p.add_argument("--custom-gpu-memory-gib", type=float, help="memory of --gpu custom, GiB (no default)")
    spec = p.add_argument_group("speculative decoding (default: none)")
    spec.add_argument(
        "--speculative-config",
        metavar="JSON",
        help='vLLM\'s JSON, e.g. \'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
        '"num_speculative_tokens": 3}\'; methods draft_model, eagle, eagle3, mtp, ngram',
    )
    spec.add_argument(
        "--speculative-model", help="older vLLM spelling: the draft model (with --num-speculative-tokens)"
    )
    spec.add_argument("--num-speculative-tokens", type=int, help="older vLLM spelling: tokens the draft proposes")
    spec.add_argument("--speculate", type=int, help="TGI: n-gram speculation of this many tokens")
    p.add_argument(
        "--kv-compression-ratio",
        type=float,
        help="what-if, not an engine setting: KV bytes divided by this (1-64), for DMS/KVTC-style compression "
        "(default: none)",
    )
    art = p.add_argument_group("article engine inputs (override --model/--gpu)")
    art.add_argument("--params-b", type=float, help="parameters in billions")
    art.add_argument("--num-layers", type=int, help="decoder layers")
    art.add_argument("--num-kv-heads", type=int, help="KV heads")
    art.add_argument("--head-dim", type=int, help="head dimension")
    art.add_argument(
        "--gpu-memory-gb",
        type=float,
        help="GPU memory as marketed (24 for an RTX 4090); the article then uses it as GiB, and so does this engine",
    )
    art.add_argument("--weight-quant", choices=_PRECISIONS, help="weight precision (default: fp16)")
    art.add_argument("--kv-quant", choices=_PRECISIONS, help="KV-cache precision (default: fp16)")


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The :class:`~planner.capacity.scenario.Scenario` of :func:`add_scenario_arguments`' flags.

    Raises:
        PlannerError: ``--model`` or ``--gpu`` missing or empty.
    """
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
        max_model_len=None if args.max_model_len is None else parse_max_model_len(args.max_model_len),
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        block_size=args.block_size,
        enforce_eager=args.enforce_eager,
        engine_version=args.engine_version,
        entry_point=args.entry_point,
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
        speculative_config=_speculative(args),
        kv_compression_ratio=getattr(args, "kv_compression_ratio", None),
    )


def _speculative(args: argparse.Namespace) -> SpeculativeConfig | None:
    """The speculative configuration of one of the three spellings; ``None`` without any.

    Raises:
        InvalidParameterError: more than one spelling, or a bad value (one line naming it).
    """
    config = getattr(args, "speculative_config", None)
    model = getattr(args, "speculative_model", None)
    tokens = getattr(args, "num_speculative_tokens", None)
    speculate = getattr(args, "speculate", None)
    given = [
        flag
        for flag, v in (
            ("--speculative-config", config),
            ("--speculative-model", model or tokens),
            ("--speculate", speculate),
        )
        if v is not None
    ]
    if len(given) > 1:
        raise InvalidParameterError(
            "speculative_config",
            " and ".join(given),
            "one of --speculative-config, --speculative-model with --num-speculative-tokens, or --speculate",
        )
    if config is not None:
        return parse_speculative_config(config)
    if model is not None or tokens is not None:
        return from_legacy_flags(model, tokens)
    if speculate is not None:
        return from_tgi_speculate(speculate)
    return None


def _gib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f} GiB"


def _text(result: Plan) -> str:
    t = result.per_gpu
    head = f"{result.engine_label}: {result.model_id} on {result.num_gpus} x {result.gpu_name}"
    if result.refused:  # no start-up to describe: the refusal, its fix and the changes that do start
        lines = [head, f"  refused: {result.reason}"]
        lines += [f"  fix: {a.change} -> {a.max_concurrency:.2f}x on {a.num_gpus} GPU(s)" for a in result.advice]
        lines.extend(f"  note: {note}" for note in result.notes)
        return "\n".join(lines)
    lines = [
        head,
        f"  total memory per GPU      {_gib(t.total_bytes / GIB)}",
        f"  budget (x utilization)    {_gib(t.budget_bytes / GIB)}",
        f"  weights                   {_gib(t.weights_bytes / GIB)}",
        f"  activation peak           {_gib(None if t.activation_bytes is None else t.activation_bytes / GIB)}",
        f"  non-torch                 {_gib(None if t.non_torch_bytes is None else t.non_torch_bytes / GIB)}",
        f"  CUDA graphs               {_gib(None if t.cuda_graph_bytes is None else t.cuda_graph_bytes / GIB)}",
        f"  KV cache                  {_gib(t.kv_cache_bytes / GIB)}",
        f"  KV bytes per token        {result.kv_bytes_per_token:,.0f} per GPU",
        *(
            [f"  KV bytes per token, model {result.kv_bytes_per_token_model:,.0f} over {result.num_gpus} GPUs"]
            if result.num_gpus > 1
            else []
        ),
        f"  GPU blocks                {'n/a' if result.num_gpu_blocks is None else f'{result.num_gpu_blocks:,}'}",
        f"  GPU KV cache size         {result.kv_cache_tokens:,} tokens",
        f"  Maximum concurrency for {result.max_model_len:,} tokens per request: {result.max_concurrency:.2f}x",
    ]
    if result.max_concurrency_at_target is not None:
        lines.append(
            f"  concurrency at {result.scenario.target_context:,} tokens: {result.max_concurrency_at_target:.2f}x"
        )
    at = f" at max_model_len {max_model_len_text(result)}" if result.max_model_len_auto else ""
    said = verdict(result)
    if said.level == "warning":
        lines.append(f"  fits: IN PART{at} - {said.detail}")
    else:
        lines.append(f"  fits: yes{at}" if result.fits else f"  fits: NO{at} - {result.reason}")
    for advice in result.advice:
        lines.append(f"  fix: {advice.change} -> {advice.max_concurrency:.2f}x on {advice.num_gpus} GPU(s)")
    if result.version_range is not None:
        lines.append(f"  vLLM version unknown: {version_range_text(result)}")
    if result.topology is not None and result.topology.all_reduce:
        lines.append(f"  all-reduce: {result.topology.all_reduce}")
    if result.topology is not None and result.topology.needs:
        lines.append(f"  multi-node: {' or '.join(result.topology.needs)}")
    lines.extend(f"  note: {note}" for note in result.notes)
    command = launch(result)
    lines.append(f"  launch: {command.command}")
    if command.warning:
        lines.append(f"  warning: {command.warning}")
    if command.corrected:
        lines.append(f"  launch that fits ({command.change}): {command.corrected}")
    return "\n".join(lines)


def _columns(rows: list[dict[str, str]], indent: str) -> list[str]:
    """``rows`` (same keys) as aligned text columns under a header line."""
    if not rows:
        return []
    keys = list(rows[0])
    widths = [max(len(k), *(len(r[k]) for r in rows)) for k in keys]
    out = [indent + "  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True)).rstrip()]
    out += [indent + "  ".join(r[k].ljust(w) for k, w in zip(keys, widths, strict=True)).rstrip() for r in rows]
    return out


def _explanation_text(explanation: Explanation) -> str:
    layout = explanation.layout
    lines = [f"  KV layout (vLLM {layout.engine_version}; per GPU unless it says model):"]
    lines += _columns(layout_rows(layout), "    ")
    lines += [_wrapped("why: ", line) for line in explanation.lines]
    lines += [_wrapped("longest that fits: ", line) for line in explanation.longest_fit.lines]
    return "\n".join(lines)


def _wrapped(label: str, text: str) -> str:
    """``  label text`` wrapped at :data:`_WIDTH` columns, continuation lines indented under the text."""
    return textwrap.fill(text, _WIDTH, initial_indent="  " + label, subsequent_indent="    ", break_on_hyphens=False)


def _version_change_text(change: VersionChange) -> str:
    lines = [f"  what changed from vLLM {change.old_version} to {change.new_version}:"]
    lines += [_wrapped("  ", line) for line in change.lines]
    return "\n".join(lines + _columns(change.rows(), "    "))


def _compared(args: argparse.Namespace, result: Plan) -> VersionChange | None:
    """The plan of ``--compare-engine-version`` set against ``result``.

    Raises:
        PlannerError: the flag is given for an engine other than vLLM, or names a bad version.
    """
    if args.compare_engine_version is None:
        return None
    accepted = "a vLLM version such as 0.9.0, with --engine vllm"
    if args.engine != "vllm":
        raise InvalidParameterError("compare_engine_version", args.compare_engine_version, accepted)
    try:
        profile_for(args.compare_engine_version)
    except InvalidParameterError:
        raise InvalidParameterError("compare_engine_version", args.compare_engine_version, accepted) from None
    other = plan(replace(result.scenario, engine_version=args.compare_engine_version), advise=False)
    return compare_versions(result, other)


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


def usage_error(command: str, exc: PlannerError, *, typed_max_model_len: object = None, flags: object = None) -> int:
    """Print a planner error as one line naming the flag (``InvalidParameterError``) and return exit code 2.

    ``typed_max_model_len`` is ``--max-model-len`` as typed, shown instead of the ``-1`` it was read as. ``flags``
    is the parsed namespace: an error whose name is not one of its flags (a file, a field inside a file, the
    deployment as a whole) is named as it is, without ``--``.
    """
    if isinstance(exc, InvalidParameterError) and not isinstance(exc, MalformedTextError):
        is_flag = flags is None or hasattr(flags, exc.name)
        flag = "--" + exc.name.replace("_", "-") if is_flag else exc.name
        typed = exc.name == "max_model_len" and exc.value == -1 and typed_max_model_len is not None
        value = typed_max_model_len if typed else exc.value
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        problem = "is required" if exc.value is None else f"{shown} is not valid"
        return error(f"python -m planner {command}", f"{flag} {problem}: expected {exc.accepted}")
    return error(f"python -m planner {command}", exc)


def run(args: argparse.Namespace) -> int:
    """Run ``plan``; returns the exit code (0, or 2 for bad input)."""
    try:
        result = plan(scenario_from_args(args))
        change = _compared(args, result)
    except PlannerError as exc:
        return usage_error(args.command, exc, typed_max_model_len=args.max_model_len, flags=args)
    for note in _ignored_flags(args):
        print(f"python -m planner {args.command}: note: {note}", file=sys.stderr)
    explanation = explain(result)
    if args.compare_engine_version is not None and change is None:
        print(
            f"python -m planner {args.command}: note: vLLM {args.compare_engine_version} accounts for this scenario "
            f"as {result.scenario.engine_version} does; nothing to compare",
            file=sys.stderr,
        )
    try:
        shared = _shared_prefix(args, result)
    except PlannerError as exc:
        return usage_error(args.command, exc, flags=args)
    if args.json:
        payload = result.to_json()
        if shared is not None:
            payload["shared_prefix"] = {
                "share_ratio": shared.share_ratio,
                "context_tokens": shared.context_tokens,
                "shared_blocks": shared.shared_blocks,
                "own_blocks_per_request": shared.own_blocks_per_request,
                "max_concurrency": shared.max_concurrency,
                "max_concurrency_unshared": shared.max_concurrency_unshared,
            }
        command = launch(result)
        payload["launch_command"] = command.command
        payload["launch_warning"] = command.warning
        payload["launch_command_that_fits"] = command.corrected
        said = verdict(result)
        payload["verdict"] = {"level": said.level, "text": said.text}
        payload["explanation"] = None if explanation is None else explanation.to_json()
        payload["version_change"] = None if change is None else change.to_json()
        print(json.dumps(payload, indent=2))
    else:
        parts = [_text(result)]
        parts += [] if explanation is None else [_explanation_text(explanation)]
        parts += [] if change is None else [_version_change_text(change)]
        if shared is not None:
            parts.append(
                f"Shared prefix {shared.share_ratio:.0%} of {shared.context_tokens:,} tokens: "
                f"{shared.shared_blocks:,} blocks held once, {shared.own_blocks_per_request:,} per request: "
                f"max concurrency {shared.max_concurrency:,} (unshared {shared.max_concurrency_unshared:,})"
            )
        print("\n".join(parts))
    return 0


def _shared_prefix(args: argparse.Namespace, result: object) -> object:
    """The shared-prefix what-if of ``--shared-prefix-ratio`` on the plan's block pool; None when not asked or the
    engine reports no blocks."""
    from planner.capacity.prefix_sharing import shared_prefix_concurrency
    from planner.errors import InvalidParameterError

    ratio = getattr(args, "shared_prefix_ratio", None)
    blocks = getattr(result, "num_gpu_blocks", None)
    if ratio is None or blocks is None:
        return None
    context = args.target_context or result.scenario.max_model_len  # type: ignore[attr-defined]
    try:
        return shared_prefix_concurrency(blocks, result.block_size, int(context), ratio)  # type: ignore[attr-defined]
    except InvalidParameterError as exc:  # named after the flag
        raise InvalidParameterError("shared_prefix_ratio", ratio, exc.accepted) from exc


COMMAND = Command(
    "plan",
    help="plan a scenario: VRAM budget, KV cache, max concurrency",
    description="Plan a deployment in the engine's own terms: per-GPU memory, KV-cache tokens and blocks, "
    "maximum concurrency, a verdict, the cheapest changes that make it fit, and the launch command. "
    "Flags are spelled as vllm serve (or text-generation-launcher) spells them.",
    add_arguments=add_arguments,
    run=run,
)
