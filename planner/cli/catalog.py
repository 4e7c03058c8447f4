"""``python -m planner gpus`` and ``python -m planner models``: what the catalogs hold, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from planner.catalog.gpus import list_gpus
from planner.catalog.models import list_models
from planner.cli.command import Command
from planner.units import GIB

__all__ = ["GPUS", "MODELS", "add_arguments", "run_gpus", "run_models"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``gpus`` and ``models`` subcommands' flags, added to ``parser``."""
    parser.add_argument("--json", action="store_true", help="print one JSON list (default: a table)")


def _n(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def run_gpus(args: argparse.Namespace) -> int:
    """Print the GPU catalog; exit code 0."""
    gpus = list_gpus()
    if args.json:
        rows = [
            {
                "id": g.id,
                "name": g.name,
                "vendor": g.vendor,
                "memory_total_bytes": g.memory_total_bytes,
                "memory_total_gib": round(g.memory_total_bytes / GIB, 3),
                "memory_bandwidth_bytes_per_s": g.memory_bandwidth_bytes_per_s,
                "bf16_tflops": g.bf16_tflops,
                "fp8_support": g.fp8_support,
                "price_usd_per_hour": g.price_usd_per_hour,
                "aliases": list(g.aliases),
            }
            for g in gpus
        ]
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':24} {'name':34} {'memory GiB':>10} {'GB/s':>7} {'bf16 TFLOPS':>11}")
    for g in gpus:
        bandwidth = None if g.memory_bandwidth_bytes_per_s is None else g.memory_bandwidth_bytes_per_s / 1e9
        print(
            f"{g.id:24} {g.name[:34]:34} {g.memory_total_bytes / GIB:>10.2f} {_n(bandwidth, ',.0f'):>7} "
            f"{_n(g.bf16_tflops, ',.0f'):>11}"
        )
    print("memory: as the CUDA/ROCm driver reports it (what vLLM multiplies by gpu_memory_utilization); --gpu takes")
    print("an id, the name or an alias, e.g. --gpu h100 or --gpu 'RTX 4090'")
    return 0


def run_models(args: argparse.Namespace) -> int:
    """Print the model catalog; exit code 0."""
    models = list_models()
    if args.json:
        rows = [
            {
                "id": m.id,
                "architecture": m.spec.architecture,
                "attention": m.spec.attention_kind,
                "num_layers": m.spec.num_layers,
                "num_kv_heads": m.spec.num_kv_heads,
                "head_dim": m.spec.head_dim,
                "quantization": m.spec.quant.method,
                "total_params": m.total_params,
                "published_params": m.published_params,
            }
            for m in models
        ]
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':52} {'attention':10} {'layers':>6} {'KV heads':>8} {'quant':>10} {'params':>8}")
    for m in models:
        s = m.spec
        print(
            f"{m.id:52} {s.attention_kind:10} {s.num_layers:>6} {s.num_kv_heads:>8} {s.quant.method:>10} "
            f"{m.total_params / 1e9:>7.1f}B"
        )
    print("--model takes any of these ids, or any Hugging Face repo id (resolved through the Hub)")
    return 0


GPUS = Command(
    "gpus",
    help="list the GPU catalog: ids, names, memory as the driver reports it, bandwidth",
    add_arguments=add_arguments,
    run=run_gpus,
)
MODELS = Command(
    "models",
    help="list the model catalog: ids, attention, layers, KV heads, parameters",
    add_arguments=add_arguments,
    run=run_models,
)
