"""The 2026-12-03 H200 campaign: what makes up TTFT under load, and decode by architecture, on models never fitted.

Run on the H200 machine after ``shared/device/vllm/setup.sh`` (vLLM 0.24.0 in ``/tmp/vllm-site``), from a copy of
this file, as a daemon that outlives the device command that started it::

    PYTHONPATH=/tmp/vllm-site setsid python3 mechanisms_campaign.py OUTDIR --end-epoch E &

Eight models of six architecture classes that the step model's default coefficients were never fitted on (``MODELS``:
dense 3B and 14B, a Mixtral-style 8-expert MoE, a DeepSeek-V2 MLA MoE, a 70B with per-channel FP8 weights, a
block-FP8 dense 8B and a block-FP8 128-expert MoE, a sliding-window Gemma-2), each served by ``vllm serve`` with dummy
weights (the catalog's ``config.json``, a byte-level tokenizer from ``make_tokenizer.py``), then loaded by ``vllm
bench serve`` (in this process: ``vllm.benchmarks.serve.main``) over ``/v1/completions``, ``--ignore-eos``:

* closed loop, 1,024 input / 256 output tokens, ``--max-concurrency`` 1, 8, 32, 128 (256 where the KV cache was sized
  for it), about two waves of requests each;
* Poisson arrivals at 40% and 80% of the request throughput the model served at concurrency 128 (or 32);
* 3,072 input / 128 output tokens at concurrency 1 and 16 (prefill-heavy: TTFT, the KV-read term);
* on two models, 16 / 16 tokens at concurrency 256 (the API server's own per-request cost), and one gamma point
  (burstiness 0.5).

Each model is warmed up first (one untimed run with prefill chunks and decode batches of every size the points
use: Triton compiles the fused-MoE kernel the first time it meets a new shape).

**What the server records besides the client**: every line of its log carries its wall-clock time
(``VLLM_LOGGING_PREFIX="%(created).6f "``); ``--enable-log-requests`` logs when each request leaves the API server
for the engine ("Received request ..." is logged after tokenization, right before ``engine_client.generate``;
``vllm/entrypoints/openai/completion/serving.py`` v0.24.0); ``enable_logging_iteration_details`` logs every engine
step's context requests and tokens and decode requests and tokens (``vllm/v1/engine/core.py``
``log_iteration_details``). The client's ``start_times`` (``time.perf_counter``, the same monotonic clock in every
process) are put on the wall clock by ``clock.json`` (``time.time() - time.perf_counter()`` of this process). The
server's ``/metrics`` is saved before and after every point, so its histograms (queue, prefill, decode, TTFT,
iteration tokens) can be differenced per point.

**Two servers at a time**: the next model starts while the current one is measured (start-ups are mostly CPU:
imports, ``torch.compile``), each server on its own half of the 16 cores (``taskset``), each with a fixed KV cache
(``--kv-cache-memory-bytes``, which skips vLLM's memory profiling, so two servers cannot disturb each other's
accounting; ``--gpu-memory-utilization`` then only has to pass the start-up free-memory check). A point is not
started while the other server is in a GPU phase of its start-up (dummy weight initialisation, the profiling run,
CUDA-graph capture: from "Starting to load model" to "Model loading took", and from "torch.compile took" until it is
up); ``campaign.json`` records, per point, whether the other server was compiling meanwhile.

Files: ``OUTDIR/<model>/server.log``, ``<point>.json`` (vLLM's result, per-request arrays included),
``<point>.pre.prom`` and ``<point>.post.prom`` (``/metrics``), ``config.json``; ``OUTDIR/campaign.json`` (what ran,
when, where, each point's wall window); ``OUTDIR/clock.json``; ``OUTDIR/DONE`` at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from pathlib import Path

PARTS = Path("/tmp/vllm-parts")
MODELS_DIR = Path("/tmp/models")
CATALOG = Path(__file__).resolve().parent / "catalog_configs.json"
GIB = 2**30
#: Every server's flags (the 2026-12-02 sweeps' flags, bench/data/h200_sweeps/README.md), besides its KV size.
SERVER_ARGS = [
    "--max-model-len", "8192",
    "--max-num-seqs", "256",
    "--max-num-batched-tokens", "8192",
    "--gpu-memory-utilization", "0.05",
    "--seed", "0",
    "--no-enable-prefix-caching",
    "--enable-log-requests",
    "--max-log-len", "0",
    "--enable-logging-iteration-details",
]  # fmt: skip
LANES = ("0-7", "8-15")
#: GiB each server holds beyond weights and KV: activations of an 8,192-token step, CUDA graphs, the CUDA context
#: (1.9-2.6 GiB in the 2026-12-02 start-up logs at these flags), with room.
OVERHEAD_GIB = 3.5


#: Tokens a KV cache is sized for: ``max_c`` requests of 1,024 + 256 tokens, and 16 of 3,072 + 128, with 3% room.
def kv_tokens(max_c: int) -> int:
    return int(max(max_c * 1280, 16 * 3200) * 1.03)


#: name, catalog id, bytes of KV per token (planner, bf16 cache), weights GiB (planner), the highest concurrency,
#: whether to run the API-overhead and gamma points. Order = the order they are measured (the two that need the GPU
#: alone first; then pairs that fit side by side).
MODELS = [
    {"name": "llama-3.3-70b-fp8", "model": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "kv_b": 327680,
     "w_gib": 67.7, "max_c": 128, "extra": ["gamma"]},
    {"name": "mixtral-8x7b", "model": "mistralai/Mixtral-8x7B-Instruct-v0.1", "kv_b": 131072, "w_gib": 87.0,
     "max_c": 128},
    {"name": "deepseek-v2-lite", "model": "deepseek-ai/DeepSeek-V2-Lite-Chat", "kv_b": 31104, "w_gib": 29.3,
     "max_c": 256, "extra": ["api", "gamma"]},
    {"name": "gemma-2-9b", "model": "google/gemma-2-9b-it", "kv_b": 344064, "w_gib": 17.2, "max_c": 64},
    {"name": "qwen3-14b", "model": "Qwen/Qwen3-14B", "kv_b": 163840, "w_gib": 27.5, "max_c": 128},
    {"name": "qwen3-coder-30b-a3b-fp8", "model": "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "kv_b": 98304,
     "w_gib": 29.0, "max_c": 256},
    {"name": "llama-3.2-3b", "model": "meta-llama/Llama-3.2-3B-Instruct", "kv_b": 114688, "w_gib": 6.0,
     "max_c": 256, "extra": ["api"]},
    {"name": "qwen3-8b-fp8", "model": "Qwen/Qwen3-8B-FP8", "kv_b": 147456, "w_gib": 9.5, "max_c": 128},
    {"name": "llama-3.2-3b-prefix", "model": "meta-llama/Llama-3.2-3B-Instruct", "kv_b": 114688, "w_gib": 6.0,
     "max_c": 64, "prefix": True},
]  # fmt: skip
#: The prefix-caching server's points: ``python -m planner bench`` (this project's load test, from the checkout
#: given by ``--repo``) with conversations and shared prefixes, so the server's ``vllm:prefix_cache_queries`` and
#: ``vllm:prefix_cache_hits`` counters can be set against a simulated replica's hit rate on the same workload.
PREFIX_POINTS = [
    {"name": "mt_c8", "in": 256, "out": 64, "c": 8, "n": 128,
     "flags": ["--dataset-name", "multi_turn", "--num-turns", "4"]},
    {"name": "mt_c32", "in": 256, "out": 64, "c": 32, "n": 256,
     "flags": ["--dataset-name", "multi_turn", "--num-turns", "4"]},
    {"name": "prefix_rep_c16", "in": 512, "out": 64, "c": 16, "n": 200,
     "flags": ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "256",
               "--prefix-repetition-suffix-len", "256", "--prefix-repetition-num-prefixes", "10"]},
]  # fmt: skip
#: Seconds of a server's start-up beyond which it counts as failed.
STARTUP_LIMIT_S = 300
#: GPU phases of a start-up, as (line that opens, line that closes); the server being up closes the last.
GPU_PHASES = (("Starting to load model", "Model loading took"), ("torch.compile took", None))


def _can_pin() -> bool:
    """Lanes need 16 cores and a working ``taskset`` (a sandbox may refuse affinity)."""
    if (os.cpu_count() or 0) < 16 or not shutil.which("taskset"):
        return False
    return subprocess.run(["taskset", "-c", LANES[1], "true"], capture_output=True).returncode == 0


PIN = _can_pin()


def pin_self(lane: int) -> None:
    """Run this process (the benchmark client) on the lane of the server it measures."""
    if PIN:
        lo, hi = (int(x) for x in LANES[lane].split("-"))
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, range(lo, hi + 1))


def footprint_gib(m: dict) -> float:
    return m["w_gib"] + kv_tokens(m["max_c"]) * m["kv_b"] / GIB + OVERHEAD_GIB


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def gpu_free_gib() -> float | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20,
        ).stdout  # fmt: skip
        return float(out.split()[0]) / 1024
    except Exception:
        return None


class Server:
    """One ``vllm serve`` process on a lane, its log followed for the start-up phases."""

    def __init__(self, m: dict, lane: int, port: int, outdir: Path, fake: bool) -> None:
        self.m, self.lane, self.port = m, lane, port
        self.out = outdir / m["name"]
        self.out.mkdir(parents=True, exist_ok=True)
        self.t_start = time.time()
        self.t_up: float | None = None
        self.failed: str | None = None
        env = dict(os.environ, TOKENIZERS_PARALLELISM="false", VLLM_USE_FLASHINFER_SAMPLER="0", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
                   VLLM_LOGGING_PREFIX="%(created).6f ")  # fmt: skip
        if fake:
            cmd = [sys.executable, "-m", "planner.demo", "--port", str(port), "--tokenizer", "bytes"]
        else:
            mdir = model_dir(m, env)
            kv_bytes = int(kv_tokens(m["max_c"]) * m["kv_b"])
            args = [a for a in SERVER_ARGS if not (m.get("prefix") and a == "--no-enable-prefix-caching")]
            if m.get("prefix"):
                env["VLLM_SERVER_DEV_MODE"] = "1"  # for /reset_prefix_cache (planner bench --flush-cache)
            cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(mdir), "--load-format", "dummy",
                   "--served-model-name", m["name"], "--port", str(port), *args,
                   "--kv-cache-memory-bytes", str(kv_bytes)]  # fmt: skip
        if PIN:
            cmd = ["taskset", "-c", LANES[lane], *cmd]
        self.cmd = cmd
        self.log_path = self.out / "server.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (open for the server's whole life)
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log(f"start {m['name']} on lane {lane} port {port} (footprint {footprint_gib(m):.1f} GiB)")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def poll_up(self) -> bool:
        """True once up; sets ``failed`` when the process died or the start took too long."""
        if self.t_up is not None:
            return True
        if self.proc.poll() is not None:
            self.failed = f"exited with {self.proc.returncode}"
            return False
        if time.time() - self.t_start > STARTUP_LIMIT_S:
            self.failed = f"not up after {STARTUP_LIMIT_S} s"
            self.stop()
            return False
        if self.healthy():
            self.t_up = time.time()
            log(f"{self.m['name']} up after {self.t_up - self.t_start:.0f} s")
            return True
        return False

    def in_gpu_phase(self) -> bool:
        """Starting and inside one of ``GPU_PHASES`` (by its log so far)."""
        if self.t_up is not None or self.failed:
            return False
        text = self.log_text()
        return any(opens in text and (closes is None or closes not in text) for opens, closes in GPU_PHASES)

    def compiling(self) -> bool:
        if self.t_up is not None or self.failed:
            return False
        text = self.log_text()
        return "Model loading took" in text and "torch.compile took" not in text

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
                self.proc.wait(40)
            except Exception:
                with contextlib.suppress(Exception):
                    os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._log.close()


def model_dir(m: dict, env: dict) -> Path:
    mdir = MODELS_DIR / m["name"]
    config = json.loads(CATALOG.read_text())[m["model"]]
    if not (mdir / "tokenizer.json").exists():
        subprocess.run([sys.executable, str(PARTS / "make_tokenizer.py"), str(mdir), str(config["vocab_size"])],
                       check=True, env=env, capture_output=True)  # fmt: skip
    (mdir / "config.json").write_text(json.dumps(config))
    return mdir


def save_metrics(port: int, path: Path) -> None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            path.write_bytes(r.read())
    except OSError as exc:
        path.write_text(f"# scrape failed: {exc!r}\n")


def points_for(m: dict) -> list[dict]:
    """The model's points in the order they run (the most informative first, so a late cut loses the least)."""
    if m.get("prefix"):
        return [dict(p, tool="planner") for p in PREFIX_POINTS]
    c_top = min(m["max_c"], 128)
    pts = [
        {"name": "warmup", "in": 1024, "out": 24, "c": 64, "n": 128, "untimed": True},
        {"name": "warmup_long", "in": 3072, "out": 4, "c": 4, "n": 8, "untimed": True},
        {"name": "in1024_c1", "in": 1024, "out": 256, "c": 1, "n": 4},
        {"name": "in1024_c8", "in": 1024, "out": 256, "c": 8, "n": 16},
        {"name": "in1024_c32", "in": 1024, "out": 256, "c": 32, "n": 64},
    ]
    if m["max_c"] >= 64:
        pts.append({"name": f"in1024_c{c_top}", "in": 1024, "out": 256, "c": c_top, "n": int(1.5 * c_top)})
    pts += [
        {"name": "rate_hi", "in": 1024, "out": 256, "rate_frac": 0.8},
        {"name": "rate_lo", "in": 1024, "out": 256, "rate_frac": 0.4},
        {"name": "in3072_c1", "in": 3072, "out": 128, "c": 1, "n": 2},
        {"name": "in3072_c16", "in": 3072, "out": 128, "c": 16, "n": 32},
    ]
    if m["max_c"] >= 256:
        pts.append({"name": "in1024_c256", "in": 1024, "out": 256, "c": 256, "n": 384})
    if "gamma" in m.get("extra", []):
        pts.append({"name": "gamma_hi", "in": 1024, "out": 256, "rate_frac": 0.8, "burstiness": 0.5})
    if "api" in m.get("extra", []):
        pts.append({"name": "in16_c256", "in": 16, "out": 16, "c": 256, "n": 1024})
    return pts


class Estimator:
    """Seconds a point will take, from what the model's earlier points measured (crude on purpose: it only decides
    whether a point still fits before the deadline)."""

    def __init__(self) -> None:
        self.tpot = {}  # concurrency -> median TPOT s
        self.prefill_tok_s = 20000.0
        self.req_s: float | None = None

    def learn(self, p: dict, res: dict) -> None:
        if p.get("c") and res.get("median_tpot_ms"):
            self.tpot[p["c"]] = res["median_tpot_ms"] / 1000
        if p.get("c") == 1 and p["in"] >= 1024 and res.get("median_ttft_ms"):
            self.prefill_tok_s = max(2000.0, p["in"] / (res["median_ttft_ms"] / 1000))
        if p.get("c") and p["c"] >= 32 and p["in"] == 1024 and res.get("request_throughput"):
            self.req_s = res["request_throughput"]

    def step_s(self, c: float) -> float:
        if not self.tpot:
            return 0.03
        known = sorted(self.tpot.items())
        lo = known[0]
        hi = known[-1]
        if c <= lo[0] or hi[0] == lo[0]:
            return lo[1] * (1 + 0.004 * max(0.0, c - lo[0]))
        return lo[1] + (hi[1] - lo[1]) * (c - lo[0]) / (hi[0] - lo[0])

    def seconds(self, p: dict) -> float:
        if p.get("rate"):
            return p["n"] / p["rate"] + p["out"] * self.step_s(8) * 2 + 3
        waves = p["n"] / p["c"]
        return waves * (p["c"] * p["in"] / self.prefill_tok_s + p["out"] * self.step_s(p["c"])) + 3


def bench_argv(p: dict, m: dict, mdir: Path, out: Path, port: int) -> list[str]:
    argv = ["--backend", "vllm", "--base-url", f"http://127.0.0.1:{port}", "--endpoint", "/v1/completions",
            "--model", m["name"], "--tokenizer", str(mdir), "--dataset-name", "random",
            "--random-input-len", str(p["in"]), "--random-output-len", str(p["out"]), "--ignore-eos",
            "--num-prompts", str(p["n"]), "--seed", "0", "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--metric-percentiles", "50,90,99", "--save-result", "--save-detailed", "--result-dir", str(out),
            "--result-filename", f"{p['name']}.json", "--request-id-prefix", f"{p['name']}-",
            "--disable-tqdm"]  # fmt: skip
    if p.get("rate"):
        argv += ["--request-rate", f"{p['rate']:.4f}", "--burstiness", str(p.get("burstiness", 1.0))]
    else:
        argv += ["--max-concurrency", str(p["c"])]
    return argv


def run_planner_bench(p: dict, port: int, out: Path, repo: Path) -> dict:
    """One point through this project's load test (a subprocess from the checkout at ``repo``); returns its
    vllm-keyed JSON."""
    path = out / f"{p['name']}.json"
    argv = [sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:http://127.0.0.1:{port}",
            "--input-len", str(p["in"]), "--output-len", str(p["out"]), "--ignore-eos", "--num-prompts", str(p["n"]),
            "--concurrency", str(p["c"]), "--seed", "0", "--flush-cache", "--save-result", str(path),
            *p["flags"]]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=f"/tmp/proj-site:{repo}")
    done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    (out / f"{p['name']}.stdout.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    return json.loads(path.read_text()) if path.exists() else {"error": f"exit {done.returncode}"}


def run_bench(argv: list[str], fake: bool, port: int, p: dict, out: Path) -> dict:
    if fake:
        body = json.dumps({"model": "x", "prompt": "hi", "max_tokens": 4, "stream": False}).encode()
        for _ in range(min(p["n"], 4)):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})  # fmt: skip
            urllib.request.urlopen(req, timeout=30).read()
        res = {"median_tpot_ms": 5.0, "median_ttft_ms": 50.0, "request_throughput": 10.0, "completed": p["n"]}
        (out / f"{p['name']}.json").write_text(json.dumps(res))
        return res
    from vllm.benchmarks.serve import add_cli_args, main

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser as Parser
    except ImportError:
        Parser = argparse.ArgumentParser
    parser = Parser()
    add_cli_args(parser)
    res = main(parser.parse_args(argv))
    if not isinstance(res, dict):
        path = out / f"{p['name']}.json"
        res = json.loads(path.read_text()) if path.exists() else {}
    return res


class Campaign:
    def __init__(self, outdir: Path, end_epoch: float, fake: bool, only: list[str], repo: Path) -> None:
        self.outdir, self.end, self.fake, self.repo = outdir, end_epoch, fake, repo
        self.models = [m for m in MODELS if not only or m["name"] in only]
        self.log = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "end_epoch": end_epoch,
                    "server_args": SERVER_ARGS, "lanes": LANES, "models": []}  # fmt: skip
        self.servers: dict[str, Server] = {}
        self.lane_of = {m["name"]: i % 2 for i, m in enumerate(self.models)}
        self.port_of = {m["name"]: 8000 + i for i, m in enumerate(self.models)}

    def left(self) -> float:
        return self.end - time.time()

    def save(self) -> None:
        (self.outdir / "campaign.json").write_text(json.dumps(self.log, indent=1))

    def start(self, m: dict) -> Server:
        s = Server(m, self.lane_of[m["name"]], self.port_of[m["name"]], self.outdir, self.fake)
        self.servers[m["name"]] = s
        return s

    def maybe_start_next(self, i: int) -> None:
        """Start model ``i + 1`` if it is not started and the GPU has room for it now."""
        if i + 1 >= len(self.models):
            return
        nxt = self.models[i + 1]
        if nxt["name"] in self.servers or self.left() < 200:
            return
        free = gpu_free_gib()
        if self.fake or (free is not None and free >= footprint_gib(nxt) + 1.5):
            self.start(nxt)

    def others_gpu_busy(self, name: str) -> bool:
        return any(s.in_gpu_phase() for n, s in self.servers.items() if n != name)

    def others_compiling(self, name: str) -> bool:
        return any(s.compiling() for n, s in self.servers.items() if n != name)

    def run(self) -> None:
        clock = {"time_minus_perf_counter_s": time.time() - time.perf_counter(), "at_epoch": time.time(), "pinned": PIN}
        (self.outdir / "clock.json").write_text(json.dumps(clock))
        for i, m in enumerate(self.models):
            entry = {"name": m["name"], "model": m["model"], "lane": self.lane_of[m["name"]],
                     "kv_cache_memory_bytes": int(kv_tokens(m["max_c"]) * m["kv_b"]), "points": []}  # fmt: skip
            self.log["models"].append(entry)
            try:
                self.run_model(i, m, entry)
            except Exception:
                entry["error"] = traceback.format_exc()[-2000:]
                log(f"{m['name']} failed: {entry['error']}")
            finally:
                s = self.servers.pop(m["name"], None)
                if s is not None:
                    s.stop()
                    entry["stopped_epoch"] = time.time()
                self.save()
        for s in self.servers.values():
            s.stop()
        self.log["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.save()
        (self.outdir / "DONE").write_text("ok\n")

    def run_model(self, i: int, m: dict, entry: dict) -> None:
        s = self.servers.get(m["name"])
        if s is None:
            if self.left() < 240:
                entry["skipped"] = f"{self.left():.0f} s left"
                return
            # wait for room (the previous model's memory is released when its process ends)
            t0 = time.time()
            while not self.fake and time.time() - t0 < 60:
                free = gpu_free_gib()
                if free is None or free >= footprint_gib(m) + 1.0:
                    break
                time.sleep(2)
            s = self.start(m)
        entry["started_epoch"] = s.t_start
        while not s.poll_up():
            if s.failed:
                entry["error"] = f"server {s.failed}"
                log(f"{m['name']}: {entry['error']}")
                return
            if self.left() < 60:
                entry["error"] = "deadline while starting"
                s.stop()
                return
            time.sleep(2)
        entry["up_epoch"] = s.t_up
        entry["startup_s"] = round(s.t_up - s.t_start, 1)
        mdir = MODELS_DIR / m["name"]
        pin_self(s.lane)
        est = Estimator()
        saved_metrics = s.out / "initial.prom"
        save_metrics(s.port, saved_metrics)
        rate_base = None
        for p in points_for(m):
            self.maybe_start_next(i)
            p = dict(p)
            if p.get("rate_frac"):
                base = rate_base or est.req_s
                if not base:
                    entry["points"].append({"point": p["name"], "skipped": "no throughput measured"})
                    continue
                p["rate"] = p["rate_frac"] * base
                p["n"] = int(min(max(p["rate"] * 14, 32), 600))
            need = est.seconds(p)
            if self.left() - 45 < need:
                why = f"{self.left():.0f} s left, ~{need:.0f} s needed"
                entry["points"].append({"point": p["name"], "skipped": why})
                continue
            waited = 0.0
            while self.others_gpu_busy(m["name"]) and waited < 90:
                time.sleep(1)
                waited += 1
            for srv in list(self.servers.values()):
                srv.poll_up()
            rec = {"point": p["name"], "in": p["in"], "out": p["out"], "n": p["n"], "c": p.get("c"),
                   "rate": p.get("rate"), "burstiness": p.get("burstiness", 1.0) if p.get("rate") else None,
                   "waited_for_other_gpu_s": waited, "est_s": round(need, 1)}  # fmt: skip
            save_metrics(s.port, s.out / f"{p['name']}.pre.prom")
            compiling_before = self.others_compiling(m["name"])
            rec["t0_epoch"] = time.time()
            try:
                if p.get("tool") == "planner":
                    res = run_planner_bench(p, s.port, s.out, self.repo)
                else:
                    res = run_bench(bench_argv(p, m, mdir, s.out, s.port), self.fake, s.port, p, s.out)
                est.learn(p, res)
                if p["name"] == f"in1024_c{min(m['max_c'], 128)}" and res.get("request_throughput"):
                    rate_base = res["request_throughput"]
                rec.update({k: res.get(k) for k in ("completed", "failed", "median_ttft_ms", "median_tpot_ms",
                                                    "request_throughput", "output_throughput")})  # fmt: skip
            except BaseException as exc:  # one failed point must not end the campaign
                rec["error"] = repr(exc)[-500:]
                if isinstance(exc, KeyboardInterrupt):
                    raise
            rec["t1_epoch"] = time.time()
            rec["wall_s"] = round(rec["t1_epoch"] - rec["t0_epoch"], 1)
            rec["other_compiling"] = compiling_before or self.others_compiling(m["name"])
            rec["other_gpu_phase_after"] = self.others_gpu_busy(m["name"])
            save_metrics(s.port, s.out / f"{p['name']}.post.prom")
            entry["points"].append(rec)
            log(
                f"{m['name']} {p['name']}: {rec.get('wall_s')} s (est {rec['est_s']}) tpot {rec.get('median_tpot_ms')}"
                f" ttft {rec.get('median_ttft_ms')} {rec.get('error', '')}"
            )
            self.save()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--end-epoch", type=float, required=True, help="wall-clock second by which everything has stopped")
    ap.add_argument("--models", default="", help="comma-separated names (default: all, in order)")
    ap.add_argument("--fake", action="store_true", help="the project's demo server instead of vLLM (a dry run)")
    ap.add_argument("--repo", default=".", help="the project's checkout (for the prefix-caching points)")
    ap.add_argument("--print", action="store_true", help="print the plan (footprints, points) and exit")
    a = ap.parse_args()
    if a.print:
        for m in MODELS:
            print(f"{m['name']:26s} {footprint_gib(m):6.1f} GiB  kv {kv_tokens(m['max_c'])} tokens  "
                  f"{[p['name'] for p in points_for(m)]}")  # fmt: skip
        return
    outdir = Path(a.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    only = [x for x in a.models.split(",") if x]
    camp = Campaign(outdir, a.end_epoch, a.fake, only, Path(a.repo).resolve())
    stop = threading.Event()
    try:
        camp.run()
    finally:
        stop.set()
        for s in camp.servers.values():
            s.stop()


if __name__ == "__main__":
    main()
