"""Score the vLLM planner against real vLLM start-up logs, in sample and cross-validated.

Two sets of records:

* the public logs, ``bench/data/vllm_capacity_logs.json`` (a copy of ``shared/reference/vllm_capacity_logs.json``):
  every usable record is planned with its model, GPU, TP/PP, dtype, quantization, KV dtype, utilization,
  ``max_model_len``, ``max_num_batched_tokens`` and engine version, given as ``python -m planner plan`` flags and read
  by the CLI's own argument parser, and the per-GPU KV cache is compared with what the log shows (available KV memory
  in GiB where logged, else KV tokens, else GPU blocks). A log that names a catalog GPU and its ``total_gpu_memory``
  is planned on that GPU (its interconnect) with the logged total;
* vLLM 0.24.0 start-ups on one H200 (``bench/data/h200_startups/``: ``vllm.LLM``, eager; and the three servers of
  ``bench/data/h200_sweeps/`` without speculative decoding: ``vllm serve``, CUDA graphs), scored on "Available KV
  cache memory".

Each record is scored twice: in sample (the planner as it ships), and cross-validated: every constant fitted to
logs (``planner/capacity/engines/vllm_fitted.py``) re-fitted without the record being scored (leave-one-out), so no
record is scored by a constant it helped fit. The script also checks that no record the engine refused to start is
planned as fitting, and reproduces the "X GiB KV cache is needed" figure of start-up failures.

Targets (issue 16): cross-validated median error <= 2%, >= 90% of records within 10%, no refused record planned as
fitting.

Usage: ``python bench/capacity_accuracy.py [--logs PATH] [--engine vllm|article] [--json]``
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the script runs from bench/; the planner package is one level up

from planner.capacity.engines.vllm_fitted import leave_out  # noqa: E402
from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.capacity.speculative import parse_speculative_config  # noqa: E402
from planner.catalog.gpus import GPU, get_gpu  # noqa: E402
from planner.cli.plan import add_scenario_arguments, scenario_from_args  # noqa: E402
from planner.errors import PlannerError  # noqa: E402
from planner.units import GIB  # noqa: E402

DEFAULT_LOGS = ROOT / "bench" / "data" / "vllm_capacity_logs.json"
STARTUPS = ROOT / "bench" / "data" / "h200_startups"
SWEEPS = ROOT / "bench" / "data" / "h200_sweeps"

#: Log GPU names that are not catalog names: what they stand for, and why.
GPU_ALIASES = {
    "46 GB-class GPU (48 GB card; model not named)": "l40s",  # "46GB" is the L40S's 46068 MiB nvidia-smi total
}
#: Records whose log does not name the model but whose figures identify it (the record's notes say how).
INFERRED_MODELS = {
    16: "Qwen/Qwen3-0.6B",  # weights 1.12 GiB and 112 KiB per token: Qwen3-0.6B, inferred by the log's notes
}
#: Records whose logged figures are known to be inconsistent, and how.
RECORD_NOTES = {
    29: "its logged terms do not add up: 71.26 - 64.38 weights - 7.38 activation - 0.13 non-torch = -0.63 GiB, "
    "yet 3.33 GiB of KV is logged; the planner follows the terms",
}
#: Log quantization strings and the ``--quantization`` they mean (None: the checkpoint's own).
QUANT_FLAGS = {
    "fp8 (runtime, --quantization fp8)": "fp8",
    "bitsandbytes 4-bit (fp4)": "bitsandbytes",
}
#: The H200 servers of bench/data/h200_sweeps scored here: folder, the model it served and its
#: ``--speculative-config`` (bench/h200/sweep_campaign.py; the draft's local folder is the catalog's config of that
#: model, the synthetic-acceptance keys change no memory). The EAGLE-3 server loaded dummy weights, so vLLM shared the
#: target's LM head with the head (no ``lm_head`` weight name was loaded); the plan counts the real checkpoint's own
#: 32,000-token head (0.24 GiB), so its KV comes out that much lower than the log.
SWEEP_SERVERS: dict[str, tuple[str, str | None]] = {
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B-Instruct", None),
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B-Instruct-2507", None),
    "qwen2.5-32b": ("Qwen/Qwen2.5-32B-Instruct", None),
    "llama-3.1-8b-spec": (
        "meta-llama/Llama-3.1-8B-Instruct",
        '{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 5}',
    ),
    "llama-3.1-8b-eagle3": (
        "meta-llama/Llama-3.1-8B-Instruct",
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}',
    ),
}
#: Every sweep server's flags (bench/data/h200_sweeps/README.md).
SWEEP_FLAGS = {
    "max_model_len": 8192,
    "max_num_seqs": 256,
    "max_num_batched_tokens": 8192,
    "gpu_memory_utilization": 0.9,
}
H200 = "h200-sxm-141gb"


def _model(record: dict) -> str | None:
    model = record.get("model_id") or INFERRED_MODELS.get(record["id"])
    if not model:
        return None
    return model.split(" (")[0]


def _version(record: dict) -> str | None:
    version = record.get("engine_version")
    arch = record.get("engine_arch")
    if not version:
        return "0.6.4 V0" if arch == "v0" else None
    if arch == "v0" and "v0" not in version.lower().replace("v0.", ""):
        return f"{version} V0"
    return version


def catalog_gpu(name: str | None) -> GPU | None:
    """The catalog GPU a log's GPU name stands for ("2x RTX 4090", "A10G (g5.2xlarge)"), or None (unnamed, a memory
    class, a mix of cards)."""
    if not name or "+" in name:
        return None
    if name in GPU_ALIASES:
        return get_gpu(GPU_ALIASES[name])
    bare = re.sub(r"^\d+\s*[x×]\s*", "", re.sub(r"\s*\(.*\)$", "", name))
    if "class" in bare:
        return None
    try:
        return get_gpu(bare)
    except PlannerError:
        return None


#: The article engine's weight precision for a record's checkpoint or --quantization.
ARTICLE_WEIGHTS = {"fp8": "fp8", "gptq": "int4", "awq": "int4", "mxfp4": "int4", "bitsandbytes": "int4"}


def article_command(record: dict, gpu_args: list[str]) -> list[str] | str:
    """The article rule of thumb for the same model, GPU, precisions and context (it knows nothing else)."""
    from planner.catalog.models import get_model

    flags = dict(zip(gpu_args[::2], gpu_args[1::2], strict=False))
    if record.get("dtype") == "float32":
        return "the article has no fp32 precision"
    model = _model(record)
    try:
        method = QUANT_FLAGS.get(record.get("quantization") or "") or get_model(model).spec.quant.method
    except PlannerError as exc:
        return str(exc)
    args = [
        "--engine",
        "article",
        "--model",
        model,
        "--gpu",
        flags["--gpu"],
        "--weight-quant",
        ARTICLE_WEIGHTS.get(method, "fp16"),
        "--kv-quant",
        "fp8" if (record.get("kv_cache_dtype") or "").startswith("fp8") else "fp16",
        "--target-context",
        str(record.get("max_model_len") or 8192),
    ]
    if flags["--gpu"] == "custom":
        args += ["--gpu-memory-gb", str(round(record["total_gpu_memory_gib"]))]
    return args


def command_for(record: dict, engine: str = "vllm") -> list[str] | str:
    """The ``python -m planner plan`` flags that plan ``record`` with ``engine``, or the reason it cannot be scored."""
    if record.get("engine") != "vllm":
        return f"engine {record.get('engine')} (not vLLM)"
    if not str(record.get("status", "")).startswith(("ok", "error")):
        return f"status {record['status']}: KV figure not in the log"
    if all(record.get(k) is None for k in ("kv_cache_size_gib", "kv_cache_tokens", "num_gpu_blocks")):
        return "no KV figure in the log"
    model = _model(record)
    if model is None:
        return "model not named in the log"
    args = ["--engine", "vllm", "--model", model]
    gpu = catalog_gpu(record.get("gpu_name"))
    total = record.get("total_gpu_memory_gib")
    if gpu is not None:
        args += ["--gpu", gpu.id]
    elif total is not None:
        args += ["--gpu", "custom", "--custom-gpu-memory-gib", str(total)]
    else:
        return f"GPU not identified ({record.get('gpu_name')})"
    flags = {
        "tensor_parallel_size": "--tensor-parallel-size",
        "pipeline_parallel_size": "--pipeline-parallel-size",
        "gpu_memory_utilization": "--gpu-memory-utilization",
        "max_model_len": "--max-model-len",
        "max_num_seqs": "--max-num-seqs",
        "max_num_batched_tokens": "--max-num-batched-tokens",
        "block_size": "--block-size",
    }
    for key, flag in flags.items():
        if record.get(key) is not None:
            args += [flag, str(record[key])]
    if record.get("dtype"):
        args += ["--dtype", record["dtype"]]
    if record.get("kv_cache_dtype"):
        args += ["--kv-cache-dtype", record["kv_cache_dtype"]]
    quant = QUANT_FLAGS.get(record.get("quantization") or "")
    if quant:
        args += ["--quantization", quant]
    if record.get("enforce_eager"):
        args.append("--enforce-eager")
    version = _version(record)
    if version:
        args += ["--engine-version", version]
    if engine == "article":
        return article_command(record, args[args.index("--gpu") : args.index("--gpu") + 2])
    return args


def gpu_override(record: dict) -> GPU | None:
    """A catalog GPU named by the log, with the total memory the log reports (None: plan the catalog's)."""
    gpu = catalog_gpu(record.get("gpu_name"))
    total = record.get("total_gpu_memory_gib")
    if gpu is None or total is None:
        return None
    return dataclasses.replace(gpu, memory_total_bytes=round(total * GIB), memory_total_source="vllm_log")


_PARSER = argparse.ArgumentParser(prog="python -m planner plan")
add_scenario_arguments(_PARSER)


def scenario_of(args: list[str]) -> Scenario:
    """The scenario ``python -m planner plan <args>`` would plan.

    Raises:
        PlannerError: bad flags, as the CLI reports them.
    """
    return scenario_from_args(_PARSER.parse_args(args))


def planned(scenario: Scenario, gpu: GPU | None, record_key: str | None) -> dict:
    """The plan's JSON, with every fitted constant fitted without ``record_key`` when given."""
    if record_key is None:
        return plan(scenario, advise=False, gpu=gpu, with_range=False).to_json()
    with leave_out(record_key):
        return plan(scenario, advise=False, gpu=gpu, with_range=False).to_json()


def needed_args(record: dict) -> list[str] | None:
    """For a start-up failure that logged "X GiB KV cache is needed": flags that plan the same model and length on
    any GPU (the figure depends on the model, TP and dtypes only)."""
    if record.get("kv_needed_for_max_len_gib") is None or (record.get("pipeline_parallel_size") or 1) > 1:
        return None
    model = _model(record)
    if model is None:
        return None
    args = ["--engine", "vllm", "--model", model, "--gpu", "b300", "--max-model-len", str(record["max_model_len"])]
    if record.get("kv_cache_dtype"):
        args += ["--kv-cache-dtype", record["kv_cache_dtype"]]
    return args


def score(record: dict, planned_json: dict) -> tuple[str, float, float, float]:
    """(metric, logged, planned, relative error) for the best KV figure the log gives."""
    if record.get("kv_cache_size_gib") is not None:
        logged = record["kv_cache_size_gib"]
        got = planned_json["kv_cache_memory_gib"]
        if logged <= 0:  # a negative "available" means the engine could not start
            return "kv_cache_gib", logged, got, 0.0 if got <= 0.01 else 1.0
        return "kv_cache_gib", logged, got, (got - logged) / logged
    if record.get("kv_cache_tokens") is not None:
        logged, got = record["kv_cache_tokens"], planned_json["kv_cache_tokens"]
        return "kv_tokens", logged, got, (got - logged) / logged
    logged, got = record["num_gpu_blocks"], planned_json["num_gpu_blocks"]
    return "gpu_blocks", logged, got, (got - logged) / logged


def h200_records() -> list[dict]:
    """The vLLM 0.24.0 H200 start-ups: ``{key, name, scenario, logged_kv_gib, logged_weights_gib, source}``."""
    out = []
    cases = {c["name"]: c for c in json.loads((STARTUPS / "cases.json").read_text())}
    for line in (STARTUPS / "results.jsonl").read_text().splitlines():
        result = json.loads(line)
        if not result.get("started"):
            continue
        case = cases[result["name"]]
        args = case["args"]
        scenario = Scenario(
            model=case["model"],
            gpu=H200,
            gpu_memory_utilization=args["gpu_memory_utilization"],
            max_model_len=args["max_model_len"],
            max_num_seqs=args["max_num_seqs"],
            max_num_batched_tokens=args["max_num_batched_tokens"],
            enforce_eager=args.get("enforce_eager", False),
            kv_cache_dtype=args.get("kv_cache_dtype", "auto"),
            engine_version="0.24.0",
            entry_point="llm",
        )
        out.append(
            {
                "key": f"h200:{result['name']}",
                "name": result["name"],
                "scenario": scenario,
                "logged_kv_gib": result["kv_cache_memory_gib"],
                "logged_weights_gib": result["weights_memory_gib"],
                "source": "vllm.LLM, eager",
            }
        )
    for folder, (model, speculative) in SWEEP_SERVERS.items():
        text = gzip.decompress((SWEEPS / folder / "server.log.gz").read_bytes()).decode(errors="replace")
        kv = re.search(r"Available KV cache memory: ([\d.]+) GiB", text)
        weights = re.search(r"Model loading took ([\d.]+) GiB", text)
        if kv is None or weights is None:
            continue
        scenario = Scenario(
            model=model,
            gpu=H200,
            engine_version="0.24.0",
            speculative_config=None if speculative is None else parse_speculative_config(speculative),
            **SWEEP_FLAGS,
        )
        out.append(
            {
                "key": f"h200:{folder}",
                "name": f"{folder} (server, CUDA graphs)",
                "scenario": scenario,
                "logged_kv_gib": float(kv.group(1)),
                "logged_weights_gib": float(weights.group(1)),
                "source": "vllm serve, CUDA graphs",
            }
        )
    return out


def _summary(errors: list[float]) -> dict[str, float]:
    errors = [abs(e) for e in errors]
    if not errors:
        return {}
    return {
        "median": statistics.median(errors),
        "mean": statistics.mean(errors),
        "p90": sorted(errors)[int(0.9 * (len(errors) - 1))],
        "within_10": sum(e <= 0.10 for e in errors) / len(errors),
        "within_5": sum(e <= 0.05 for e in errors) / len(errors),
        "n": len(errors),
    }


def _summary_line(label: str, s: dict[str, float]) -> str:
    return (
        f"{label:16} median {s['median']:5.1%}   mean {s['mean']:5.1%}   p90 {s['p90']:5.1%}   "
        f"within 10%: {s['within_10']:4.0%}   within 5%: {s['within_5']:4.0%}   ({s['n']:.0f} records)"
    )


def score_public(records: list[dict], engine: str) -> tuple[list[dict], list[tuple[int, str]]]:
    """Plan every usable public record in sample and cross-validated."""
    rows, skipped = [], []
    for record in records:
        args = command_for(record, engine)
        if isinstance(args, str):
            skipped.append((record["id"], args))
            continue
        key = f"log:{record['id']}"
        try:
            scenario = scenario_of(args)
            override = gpu_override(record) if engine == "vllm" else None
            insample = planned(scenario, override, None)
            cross = planned(scenario, override, key) if engine == "vllm" else insample
        except PlannerError as exc:
            skipped.append((record["id"], str(exc)))
            continue
        metric, logged, got, err = score(record, insample)
        _, _, got_cv, err_cv = score(record, cross)
        refused = record["status"].startswith("error")
        rows.append(
            {
                "id": record["id"],
                "model": _model(record),
                "version": _version(record),
                "metric": metric,
                "logged": logged,
                "planned": got,
                "error": err,
                "planned_cv": got_cv,
                "error_cv": err_cv,
                "log_fits": not refused,
                "plan_fits": insample["fits"],
                "plan_fits_cv": cross["fits"],
                "fit_mismatch": refused and (insample["fits"] or cross["fits"]),
                "pessimistic": not refused and not insample["fits"],
            }
        )
    return rows, skipped


def score_h200() -> list[dict]:
    """Plan every H200 start-up in sample and cross-validated."""
    rows = []
    for rec in h200_records():
        insample = planned(rec["scenario"], None, None)
        cross = planned(rec["scenario"], None, rec["key"])
        logged = rec["logged_kv_gib"]
        rows.append(
            {
                "key": rec["key"],
                "name": rec["name"],
                "source": rec["source"],
                "logged": logged,
                "planned": insample["kv_cache_memory_gib"],
                "error": (insample["kv_cache_memory_gib"] - logged) / logged,
                "planned_cv": cross["kv_cache_memory_gib"],
                "error_cv": (cross["kv_cache_memory_gib"] - logged) / logged,
                "logged_weights_gib": rec["logged_weights_gib"],
                "planned_weights_gib": insample["weights_memory_gib"],
            }
        )
    return rows


def score_needed(records: list[dict]) -> list[dict]:
    """The "X GiB KV cache is needed" figures of start-up failures."""
    out = []
    for record in records:
        args = needed_args(record)
        if args is None:
            continue
        try:
            got = planned(scenario_of(args), None, None)["kv_needed_for_max_len_gib"]
        except PlannerError:
            continue
        logged = record["kv_needed_for_max_len_gib"]
        out.append({"id": record["id"], "model": _model(record), "logged": logged, "planned": got})
    return out


def _print_rows(rows: list[dict], label: Callable[[dict], str]) -> None:
    print(f"{'record':52} {'metric':12} {'logged':>12} {'planned':>12} {'error':>8} {'cv error':>9}  fits log/plan")
    for r in rows:
        fits = ""
        if "log_fits" in r:
            fits = f"  {'yes' if r['log_fits'] else 'no'}/{'yes' if r['plan_fits'] else 'no'}"
        flags = ("  MISMATCH" if r.get("fit_mismatch") else "") + (
            "  (plan too pessimistic)" if r.get("pessimistic") else ""
        )
        print(
            f"{label(r)[:52]:52} {r.get('metric', 'kv_cache_gib'):12} {r['logged']:>12,.2f} {r['planned']:>12,.2f} "
            f"{r['error']:>+8.1%} {r['error_cv']:>+9.1%}{fits}{flags}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--logs", type=Path, default=DEFAULT_LOGS)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--engine",
        choices=("vllm", "article"),
        default="vllm",
        help="score the vLLM engine model (default) or the article's rule of thumb on the same records",
    )
    args = parser.parse_args()
    try:
        records = json.loads(args.logs.read_text())
    except (OSError, ValueError) as exc:
        parser.exit(2, f"capacity_accuracy.py: error: cannot read --logs {args.logs}: {exc}\n")
    rows, skipped = score_public(records, args.engine)
    needed = score_needed(records) if args.engine == "vllm" else []
    h200 = score_h200() if args.engine == "vllm" else []
    public = {
        "in_sample": _summary([r["error"] for r in rows]),
        "cross_validated": _summary([r["error_cv"] for r in rows]),
    }
    h200_summary = {
        "in_sample": _summary([r["error"] for r in h200]),
        "cross_validated": _summary([r["error_cv"] for r in h200]),
    }
    if args.json:
        payload = {
            "rows": rows,
            "summary": public,
            "needed_rows": needed,
            "h200_rows": h200,
            "h200_summary": h200_summary,
            "skipped": skipped,
        }
        print(json.dumps(payload, indent=2))
        return 0
    print(f"public vLLM start-up logs ({args.logs.name}), engine {args.engine}:")
    _print_rows(rows, lambda r: f"{r['id']:>3}  {r['model']} ({r['version'] or 'newest'})")
    print()
    mismatches = sum(r["fit_mismatch"] for r in rows)
    if rows:
        print(_summary_line("in sample", public["in_sample"]))
        if args.engine == "vllm":
            print(_summary_line("cross-validated", public["cross_validated"]))
    print(
        f"log refused but plan fits: {mismatches}   log started but plan refuses: {sum(r['pessimistic'] for r in rows)}"
        f"   skipped: {len(skipped)}"
    )
    print("targets: cross-validated median <= 2%, >= 90% within 10%, 0 refused records planned as fitting")
    for rid, note in RECORD_NOTES.items():
        if any(r["id"] == rid for r in rows):
            print(f"note on record {rid}: {note}")
    if needed:
        print()
        print("start-up check 'X GiB KV cache is needed' for max_model_len (bytes-per-token check, any GPU):")
        for r in needed:
            err = (r["planned"] - r["logged"]) / r["logged"]
            print(
                f"  {r['id']:>3}  {r['model'][:46]:46} logged {r['logged']:8.2f} GiB  planned {r['planned']:8.2f} GiB"
                f"  {err:+.1%}"
            )
    if h200:
        print()
        print("vLLM 0.24.0 start-ups on one H200 (bench/data/h200_startups, bench/data/h200_sweeps), KV cache GiB:")
        _print_rows(h200, lambda r: r["name"])
        print()
        print(_summary_line("in sample", h200_summary["in_sample"]))
        print(_summary_line("cross-validated", h200_summary["cross_validated"]))
    print()
    print("skipped records:")
    for rid, why in skipped:
        print(f"  {rid:>3}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
