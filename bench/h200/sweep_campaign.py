"""Sweeps of a real vLLM 0.24.0 server on one H200, scored by ``bench/prediction_accuracy.py``.

Run on the H200 machine after ``shared/device/vllm/setup.sh`` (vLLM on ``PYTHONPATH``), from the project root::

    python3 bench/h200/sweep_campaign.py OUTDIR --deadline-s 1000

For each model of ``MODELS`` (dummy weights from the catalog's ``config.json``, a byte-level tokenizer of the model's
vocabulary size from ``make_tokenizer.py``) it starts ``vllm serve`` with the settings in ``SERVER_ARGS`` (prefix
caching off), waits for ``/health``, then runs ``vllm bench serve`` (in this process, through
``vllm.benchmarks.serve.main``, so its import cost is paid once) on the ``random`` dataset over ``/v1/completions``
for every input length of ``INPUT_LENS`` and concurrency of ``CONCURRENCIES``, with ``--ignore-eos`` and
``OUTPUT_LEN`` output tokens, ``--save-result --save-detailed``. After each point the server's ``/metrics`` text is
saved beside the result. The server's start-up log (its memory figures) is kept. A model whose start and sweep would
pass the deadline is skipped and named in ``campaign.json``.

Files: ``OUTDIR/<model>/server.log``, ``OUTDIR/<model>/in<N>_c<C>.json`` (vllm's result file),
``OUTDIR/<model>/in<N>_c<C>.metrics.txt``, ``OUTDIR/campaign.json`` (what ran, when, the settings).
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

#: (catalog id, served name, seconds the start and sweep are expected to take on an H200)
MODELS = [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 200),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b", 230),
    ("Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b", 280),
    ("meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b", 150),
]
#: served models that also get the client parity run against ``vllm bench serve``
PARITY = {"llama-3.1-8b"}
SERVER_ARGS = [
    "--max-model-len",
    "8192",
    "--max-num-seqs",
    "256",
    "--max-num-batched-tokens",
    "8192",
    "--gpu-memory-utilization",
    "0.9",
    "--no-enable-prefix-caching",
    "--seed",
    "0",
]
INPUT_LENS = [512, 2048]
CONCURRENCIES = [1, 4, 16, 64, 256]
OUTPUT_LEN = 128
#: most prompt tokens one point sends (bounds the run time of the long-input points at high concurrency)
MAX_POINT_INPUT_TOKENS = 300_000


def catalog_config(model_id: str) -> dict:
    for name in ("models_serving.json", "models_reference.json"):
        for entry in json.loads((ROOT / "planner/catalog/data" / name).read_text()):
            if entry["id"] == model_id:
                return entry["config"]
    raise SystemExit(f"{model_id} is not in the catalog")


def num_prompts(concurrency: int, input_len: int) -> int:
    """Two waves of requests at each concurrency, at least 4, at most ``MAX_POINT_INPUT_TOKENS`` prompt tokens
    (then fewer requests than the cap: all in flight at once)."""
    return min(max(4, 2 * concurrency), max(4, MAX_POINT_INPUT_TOKENS // input_len))


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


def bench_point(name: str, mdir: Path, out: Path, input_len: int, concurrency: int, port: int) -> dict:
    from vllm.benchmarks.serve import add_cli_args, main

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser as Parser
    except ImportError:
        Parser = argparse.ArgumentParser
    parser = Parser()
    add_cli_args(parser)
    fname = f"in{input_len}_c{concurrency}.json"
    argv = [
        "--backend",
        "vllm",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--endpoint",
        "/v1/completions",
        "--model",
        name,
        "--tokenizer",
        str(mdir),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(input_len),
        "--random-output-len",
        str(OUTPUT_LEN),
        "--ignore-eos",
        "--num-prompts",
        str(num_prompts(concurrency, input_len)),
        "--max-concurrency",
        str(concurrency),
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
        fname,
    ]
    t0 = time.time()
    try:
        main(parser.parse_args(argv))
    except Exception:  # the in-process entry point moved: the CLI is the same benchmark
        subprocess.run([sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve", *argv], check=True)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        (out / fname.replace(".json", ".metrics.txt")).write_bytes(r.read())
    return {"point": fname, "wall_s": round(time.time() - t0, 1)}


def run_parity(name: str, mdir: Path, out: Path, port: int) -> dict:
    """``bench/real_server_parity.py``: our ``bench`` against ``vllm bench serve`` on this server."""
    env = dict(os.environ, PYTHONPATH=f"/tmp/proj-site:{ROOT}")
    vllm_path = os.environ.get("PYTHONPATH", "")
    peer = f"env PYTHONPATH={vllm_path} {sys.executable} -m vllm.entrypoints.cli.main bench serve"
    t0 = time.time()
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/real_server_parity.py"),
            "--base-url",
            f"http://127.0.0.1:{port}",
            "--model",
            name,
            "--tokenizer",
            str(mdir),
            "--peer-cmd",
            peer,
            "--concurrency",
            "16",
            "64",
            "--rounds",
            "1",
            "--num-prompts",
            "128",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
    )
    (out / "parity.log").write_text(p.stdout + p.stderr)
    return {"rc": p.returncode, "wall_s": round(time.time() - t0, 1)}


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--deadline-s", type=float, default=1000)
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    start = time.time()
    outdir = Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    log = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "server_args": SERVER_ARGS,
        "input_lens": INPUT_LENS,
        "concurrencies": CONCURRENCIES,
        "output_len": OUTPUT_LEN,
        "models": [],
    }
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", VLLM_USE_FLASHINFER_SAMPLER="0")
    for model_id, name, expected_s in MODELS:
        entry = {"model": model_id, "served_model_name": name, "points": []}
        log["models"].append(entry)
        left = a.deadline_s - (time.time() - start)
        if left < expected_s:
            entry["skipped"] = f"{left:.0f} s left of the deadline, {expected_s} s expected"
            continue
        mdir = Path("/tmp/models") / name
        out = outdir / re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        out.mkdir(parents=True, exist_ok=True)
        config = catalog_config(model_id)
        subprocess.run(
            [sys.executable, str(PARTS / "make_tokenizer.py"), str(mdir), str(config["vocab_size"])],
            check=True,
            env=env,
            capture_output=True,
        )
        (mdir / "config.json").write_text(json.dumps(config))
        t0 = time.time()
        with open(out / "server.log", "w") as server_log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vllm.entrypoints.cli.main",
                    "serve",
                    str(mdir),
                    "--load-format",
                    "dummy",
                    "--served-model-name",
                    name,
                    "--port",
                    str(a.port),
                    *SERVER_ARGS,
                ],
                stdout=server_log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            try:
                if not wait_healthy(a.port, proc, 400):
                    entry["error"] = "server did not come up"
                    continue
                entry["startup_s"] = round(time.time() - t0, 1)
                for input_len in INPUT_LENS:
                    for c in CONCURRENCIES:
                        if time.time() - start > a.deadline_s:
                            entry.setdefault("not_run", []).append(f"in{input_len}_c{c}")
                            continue
                        try:
                            entry["points"].append(bench_point(name, mdir, out, input_len, c, a.port))
                        except Exception as exc:  # one failed point must not end the campaign
                            entry["points"].append({"point": f"in{input_len}_c{c}", "error": repr(exc)})
                        (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
                if name in PARITY and time.time() - start < 260:
                    entry["parity"] = run_parity(name, mdir, out / "parity", a.port)
            finally:
                proc.terminate()
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                time.sleep(5)
        (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
    log["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (outdir / "campaign.json").write_text(json.dumps(log, indent=1))
    (outdir / "DONE").write_text("ok\n")


if __name__ == "__main__":
    main_()
