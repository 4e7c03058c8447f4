"""Measurements of a real vLLM 0.24.0 server on one H200: sweeps, routes, speculative decoding, prefix caching.

Scored by ``bench/prediction_accuracy.py`` (sweeps) and the speculative-decoding and prefix-cache checks of
``bench/data/h200_sweeps/README.md``. Run on the H200 machine after ``shared/device/vllm/setup.sh`` (vLLM on
``PYTHONPATH``), from the project root::

    python3 bench/h200/sweep_campaign.py OUTDIR --deadline-s 1000 [--stages NAME,NAME]

The campaign is a list of **stages** (``STAGES``), each one ``vllm serve`` of one model (dummy weights from the
catalog's ``config.json``, a byte-level tokenizer of the model's vocabulary size from ``make_tokenizer.py``) with
the stage's flags, then its **points** one after the other on that server:

* ``bench``: ``vllm bench serve`` (in this process, through ``vllm.benchmarks.serve.main``, so its import cost is
  paid once) with ``--save-result --save-detailed``; the default point is the ``random`` dataset over
  ``/v1/completions`` with ``--ignore-eos``;
* ``reset``: ``POST /reset_prefix_cache`` (the server runs with ``VLLM_SERVER_DEV_MODE=1``), its status saved.

The server's ``/metrics`` text is saved when it is up (``initial.metrics.txt``) and after every point, so counters
(prefix-cache queries and hits, speculative drafts and accepted tokens) can be differenced per point. The server's
start-up log (its memory figures) is kept. A stage whose start and points would pass the deadline is skipped and
named in ``campaign.json``; a point past the deadline is listed as not run.

Files: ``OUTDIR/<stage>/server.log``, ``OUTDIR/<stage>/<point>.json`` (vllm's result file),
``OUTDIR/<stage>/<point>.metrics.txt``, ``OUTDIR/campaign.json`` (what ran, when, the settings), ``OUTDIR/DONE``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = Path("/tmp/vllm-parts")
MODELS_DIR = Path("/tmp/models")

SERVER_ARGS = [
    "--max-model-len",
    "8192",
    "--max-num-seqs",
    "256",
    "--max-num-batched-tokens",
    "8192",
    "--gpu-memory-utilization",
    "0.9",
    "--seed",
    "0",
]
NO_PREFIX_CACHE = ["--no-enable-prefix-caching"]
INPUT_LENS = [512, 2048]
CONCURRENCIES = [1, 4, 16, 64, 256]
OUTPUT_LEN = 128
#: most prompt tokens one point sends (bounds the run time of the long-input points at high concurrency)
MAX_POINT_INPUT_TOKENS = 300_000
#: The draft of the speculative stage: the source article's pair (Llama-3.1-8B with Llama-3.2-1B, 5 tokens).
#: Dummy weights accept nothing, so vLLM's synthetic rejection sampler accepts position i with these
#: unconditional rates (``vllm/config/speculative.py`` ``synthetic_acceptance_rates``; mean accepted length
#: 1 + Σ = 3.2), a stand-in for a real draft's acceptance that the predictor is then given.
SPEC_RATES = [0.75, 0.55, 0.4, 0.3, 0.2]
SPEC_DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
#: An EAGLE-3 head for Llama-3.1-8B, shaped as yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config.json as vLLM reads it
#: (``vllm/model_executor/models/llama_eagle3.py``: one decoder layer, ``fc`` over three target hidden states, a
#: draft vocabulary of 32,000); reconstructed from that checkpoint's published shape, dummy weights.
EAGLE3_CONFIG = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_hidden_layers": 1,
    "vocab_size": 128256,
    "draft_vocab_size": 32000,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}
EAGLE3_RATES = [0.8, 0.6, 0.45]


def num_prompts(concurrency: int, input_len: int) -> int:
    """Two waves of requests at each concurrency, at least 4, at most ``MAX_POINT_INPUT_TOKENS`` prompt tokens
    (then fewer requests than the cap: all in flight at once)."""
    return min(max(4, 2 * concurrency), max(4, MAX_POINT_INPUT_TOKENS // input_len))


def sweep_points(input_lens=INPUT_LENS, concurrencies=CONCURRENCIES) -> list[dict]:
    return [
        {"name": f"in{n}_c{c}", "kind": "bench", "input_len": n, "concurrency": c}
        for n in input_lens
        for c in concurrencies
    ]


def chat_points() -> list[dict]:
    """The chat route beside the completions route at the same load (the request overhead by route)."""
    return [
        {"name": f"chat_in512_c{c}", "kind": "bench", "input_len": 512, "concurrency": c, "route": "chat"}
        for c in (1, 16)
    ]


def prefix_points() -> list[dict]:
    """``prefix_repetition``: 4 prefixes of 1,024 tokens shared by 64 prompts (suffix 128, output 64), twice, with
    a cache reset between: the second run's hits come from the first, the third's only from its own requests."""
    common = {"kind": "bench", "dataset": "prefix_repetition", "concurrency": 16, "num_prompts": 64}
    return [
        {"name": "prefix_rep_1", **common},
        {"name": "prefix_rep_2", **common},
        {"name": "reset_prefix_cache", "kind": "reset"},
        {"name": "prefix_rep_3", **common},
    ]


STAGES: list[dict] = [
    {
        "name": "qwen3-30b-a3b",
        "model": "Qwen/Qwen3-30B-A3B-Instruct-2507",
        "expected_s": 260,
        "args": SERVER_ARGS + NO_PREFIX_CACHE,
        "points": sweep_points() + chat_points(),
    },
    {
        "name": "qwen2.5-32b",
        "model": "Qwen/Qwen2.5-32B-Instruct",
        "expected_s": 280,
        "args": SERVER_ARGS + NO_PREFIX_CACHE,
        "points": sweep_points(),
    },
    {
        "name": "llama-3.1-8b-spec",
        "served": "llama-3.1-8b",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "draft": SPEC_DRAFT,
        "expected_s": 200,
        # Prefix caching on for the prefix_repetition points (the random prompts repeat across points: some hits).
        "args": [*SERVER_ARGS, "--enable-prefix-caching"],
        "spec": {
            "method": "draft_model",
            "num_speculative_tokens": len(SPEC_RATES),
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_rates": SPEC_RATES,
        },
        "env": {"VLLM_SERVER_DEV_MODE": "1"},
        "points": sweep_points([512], [1, 4, 16, 64, 256]) + prefix_points(),
    },
    {
        "name": "llama-3.1-8b-eagle3",
        "served": "llama-3.1-8b",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "draft_config": EAGLE3_CONFIG,
        "expected_s": 170,
        "args": SERVER_ARGS + NO_PREFIX_CACHE,
        "spec": {
            "method": "eagle3",
            "num_speculative_tokens": len(EAGLE3_RATES),
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_rates": EAGLE3_RATES,
        },
        "points": sweep_points([512], [1, 16, 64]),
    },
    {
        # The 2026-12-02 00:23 sweep again (run-to-run spread), and its chat route; only when asked for by name.
        "name": "llama-3.1-8b",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "optional": True,
        "expected_s": 200,
        "args": SERVER_ARGS + NO_PREFIX_CACHE,
        "points": sweep_points() + chat_points(),
    },
]


#: Start-ups read by ``shared/device/vllm/capacity.py`` (``vllm.LLM``, dummy weights) once the stages are done, as
#: far as the deadline allows, most informative first: (name, catalog id, ``vllm.LLM`` keyword arguments). Eager
#: (no CUDA-graph capture) unless said, which halves a start.
CAPACITY_CASES: list[tuple[str, str, dict]] = [
    ("deepseek-v2-lite_mla_eager", "deepseek-ai/DeepSeek-V2-Lite-Chat", {}),
    ("gemma-2-9b_swa_eager", "google/gemma-2-9b-it", {}),
    ("llama-3.1-8b_fp8kv_eager", "meta-llama/Llama-3.1-8B-Instruct", {"kv_cache_dtype": "fp8"}),
    ("qwen2.5-7b-awq_eager", "Qwen/Qwen2.5-7B-Instruct-AWQ", {}),
    ("qwen3-coder-30b-a3b-fp8_moe_eager", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", {}),
    ("gemma-3-12b_swa_eager", "google/gemma-3-12b-it", {}),
    ("llama-3.1-8b_u0.5_eager", "meta-llama/Llama-3.1-8B-Instruct", {"gpu_memory_utilization": 0.5}),
    ("mistral-small-24b_eager", "mistralai/Mistral-Small-24B-Instruct-2501", {}),
    ("qwen3-30b-a3b_moe_eager", "Qwen/Qwen3-30B-A3B-Instruct-2507", {}),
    ("llama-3.3-70b-fp8_eager", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", {}),
    ("phi-4-mini_eager", "microsoft/Phi-4-mini-instruct", {}),
    ("qwen3-0.6b_eager", "Qwen/Qwen3-0.6B", {}),
    ("llama-3.2-3b_128k_eager", "meta-llama/Llama-3.2-3B-Instruct", {"max_model_len": 131072}),
    (
        "llama-3.1-8b_seqs512_u0.95_graphs",
        "meta-llama/Llama-3.1-8B-Instruct",
        {"enforce_eager": False, "max_num_seqs": 512, "gpu_memory_utilization": 0.95},
    ),
    ("gpt-oss-20b_mxfp4_eager", "openai/gpt-oss-20b", {}),
]
#: ``vllm.LLM`` arguments every capacity case starts from (the sweeps' server settings, eager).
CAPACITY_BASE = {
    "max_model_len": 8192,
    "max_num_seqs": 256,
    "max_num_batched_tokens": 8192,
    "gpu_memory_utilization": 0.9,
    "enforce_eager": True,
}


def run_capacity(outdir: Path, start: float, deadline_s: float, log: dict) -> None:
    """The capacity cases, one ``vllm.LLM`` start each, until the deadline (each case's line is appended to
    ``capacity/results.jsonl`` as it ends, so a cut run keeps what finished)."""
    out = outdir / "capacity"
    out.mkdir(parents=True, exist_ok=True)
    cases = [
        {"name": name, "model": model_id, "config": catalog_config(model_id), "args": {**CAPACITY_BASE, **args}}
        for name, model_id, args in CAPACITY_CASES
    ]
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    left = deadline_s - (time.time() - start)
    entry = {"stage": "capacity", "cases": len(cases), "seconds_left": round(left)}
    log["stages"].append(entry)
    if left < 90:
        entry["skipped"] = f"{left:.0f} s left of the deadline"
        return
    cmd = [sys.executable, str(PARTS / "capacity.py"), str(out / "cases.json"), str(out / "results.jsonl")]
    proc = subprocess.Popen([*cmd, str(out / "logs"), "--timeout", "240"], start_new_session=True)
    try:
        proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        entry["cut_at_deadline"] = True
    results = out / "results.jsonl"
    entry["done"] = len(results.read_text().splitlines()) if results.exists() else 0


def catalog_config(model_id: str) -> dict:
    for name in ("models_serving.json", "models_reference.json"):
        for entry in json.loads((ROOT / "planner/catalog/data" / name).read_text()):
            if entry["id"] == model_id:
                return entry["config"]
    raise SystemExit(f"{model_id} is not in the catalog")


def model_dir(model_id: str | None, served: str, env: dict, config: dict | None = None) -> Path:
    """A directory vLLM loads with dummy weights: ``config`` (default the catalog's config.json of ``model_id``)
    and a byte-level tokenizer."""
    mdir = MODELS_DIR / served
    config = config or catalog_config(model_id)
    if not (mdir / "tokenizer.json").exists():
        subprocess.run(
            [sys.executable, str(PARTS / "make_tokenizer.py"), str(mdir), str(config["vocab_size"])],
            check=True,
            env=env,
            capture_output=True,
        )
    (mdir / "config.json").write_text(json.dumps(config))
    return mdir


def wait_healthy(port: int, proc: subprocess.Popen, limit_s: float) -> bool:
    end = time.time() + limit_s
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(2)
    return False


def save_metrics(port: int, path: Path) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        path.write_bytes(r.read())


def bench_argv(point: dict, served: str, mdir: Path, out: Path, port: int) -> list[str]:
    c = point["concurrency"]
    chat = point.get("route") == "chat"
    argv = [
        "--backend",
        "openai-chat" if chat else "vllm",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--endpoint",
        "/v1/chat/completions" if chat else "/v1/completions",
        "--model",
        served,
        "--tokenizer",
        str(mdir),
        "--max-concurrency",
        str(c),
        "--seed",
        "0",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(out),
        "--result-filename",
        f"{point['name']}.json",
    ]
    if point.get("dataset") == "prefix_repetition":
        return [
            *argv,
            "--dataset-name",
            "prefix_repetition",
            "--prefix-repetition-prefix-len",
            "1024",
            "--prefix-repetition-suffix-len",
            "128",
            "--prefix-repetition-num-prefixes",
            "4",
            "--prefix-repetition-output-len",
            "64",
            "--num-prompts",
            str(point["num_prompts"]),
            "--ignore-eos",
        ]
    n = point["input_len"]
    return [
        *argv,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(n),
        "--random-output-len",
        str(OUTPUT_LEN),
        "--ignore-eos",
        "--num-prompts",
        str(point.get("num_prompts") or num_prompts(c, n)),
    ]


def run_point(point: dict, served: str, mdir: Path, out: Path, port: int) -> dict:
    t0 = time.time()
    if point["kind"] == "reset":
        req = urllib.request.Request(f"http://127.0.0.1:{port}/reset_prefix_cache", method="POST", data=b"")
        with urllib.request.urlopen(req, timeout=30) as r:
            (out / f"{point['name']}.txt").write_text(f"{r.status} {r.read().decode(errors='replace')}\n")
    else:
        from vllm.benchmarks.serve import add_cli_args, main

        try:
            from vllm.utils.argparse_utils import FlexibleArgumentParser as Parser
        except ImportError:
            Parser = argparse.ArgumentParser
        parser = Parser()
        add_cli_args(parser)
        argv = bench_argv(point, served, mdir, out, port)
        try:
            main(parser.parse_args(argv))
        except Exception:  # the in-process entry point moved: the CLI is the same benchmark
            subprocess.run([sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve", *argv], check=True)
    save_metrics(port, out / f"{point['name']}.metrics.txt")
    return {"point": point["name"], "wall_s": round(time.time() - t0, 1)}


def run_stage(stage: dict, outdir: Path, port: int, start: float, deadline_s: float, log: dict) -> None:
    served = stage.get("served", stage["name"])
    entry = {"stage": stage["name"], "model": stage["model"], "served_model_name": served, "points": []}
    log["stages"].append(entry)
    left = deadline_s - (time.time() - start)
    if left < stage["expected_s"]:
        entry["skipped"] = f"{left:.0f} s left of the deadline, {stage['expected_s']} s expected"
        return
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", VLLM_USE_FLASHINFER_SAMPLER="0", **stage.get("env", {}))
    mdir = model_dir(stage["model"], served, env)
    args = list(stage["args"])
    if stage.get("spec"):
        spec = dict(stage["spec"])
        if stage.get("draft") or stage.get("draft_config"):
            draft_dir = f"{served}-{spec['method']}-draft"
            spec["model"] = str(model_dir(stage.get("draft"), draft_dir, env, stage.get("draft_config")))
        args += ["--speculative-config", json.dumps(spec)]
    entry["server_args"] = args
    out = outdir / re.sub(r"[^A-Za-z0-9_.-]", "_", stage["name"])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(mdir), "--load-format", "dummy"]
    cmd += ["--served-model-name", served, "--port", str(port), *args]
    with open(out / "server.log", "w") as server_log:
        proc = subprocess.Popen(cmd, stdout=server_log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            if not wait_healthy(port, proc, 400):
                entry["error"] = "server did not come up"
                return
            entry["startup_s"] = round(time.time() - t0, 1)
            save_metrics(port, out / "initial.metrics.txt")
            for point in stage["points"]:
                if time.time() - start > deadline_s:
                    entry.setdefault("not_run", []).append(point["name"])
                    continue
                try:
                    entry["points"].append(run_point(point, served, mdir, out, port))
                except Exception as exc:  # one failed point must not end the campaign
                    entry["points"].append({"point": point["name"], "error": repr(exc)})
                (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            time.sleep(5)


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--deadline-s", type=float, default=1000)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--stages", default="", help="comma-separated stage names (default: all but the optional)")
    ap.add_argument("--no-capacity", action="store_true", help="skip the start-up cases after the stages")
    ap.add_argument("--dry-run", action="store_true", help="print each stage's server and bench commands")
    a = ap.parse_args()
    wanted = [s for s in a.stages.split(",") if s]
    unknown = set(wanted) - {s["name"] for s in STAGES}
    if unknown:
        raise SystemExit(f"unknown --stages {sorted(unknown)}; known: {', '.join(s['name'] for s in STAGES)}")
    stages = [s for s in STAGES if s["name"] in wanted or (not wanted and not s.get("optional"))]
    outdir = Path(a.outdir)
    if a.dry_run:
        for stage in stages:
            served = stage.get("served", stage["name"])
            print(stage["name"], stage["args"], stage.get("spec"))
            for point in stage["points"]:
                if point["kind"] == "bench":
                    print("  ", " ".join(bench_argv(point, served, MODELS_DIR / served, outdir, a.port)))
                else:
                    print("  ", point["name"])
        for name, model_id, args in CAPACITY_CASES:
            print("capacity", name, catalog_config(model_id)["architectures"], {**CAPACITY_BASE, **args})
        return
    start = time.time()
    outdir.mkdir(parents=True, exist_ok=True)
    log = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "output_len": OUTPUT_LEN,
        "stages": [],
    }
    for stage in stages:
        run_stage(stage, outdir, a.port, start, a.deadline_s, log)
        (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
    if not a.no_capacity:
        run_capacity(outdir, start, a.deadline_s, log)
    log["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
    (outdir / "DONE").write_text("ok\n")


if __name__ == "__main__":
    main_()
