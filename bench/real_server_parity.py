"""Parity of ``python -m planner bench`` with a peer on the same server: tokens, request throughput, TPOT.

Two modes:

* **A real vLLM server with ``vllm bench serve`` beside it** (``--base-url``, ``--peer-cmd``): for every concurrency
  (default 1, 16, 64) and round, ours and the peer run the same workload one after the other (the order alternates
  by round), both with the ``random`` dataset of ``--input-len`` prompt tokens, ``--output-len`` output tokens and
  ``--ignore-eos``, on the chat route; the server should run with ``--no-enable-prefix-caching`` (else repeated
  prompts are cache hits). Each tool writes its ``--save-result`` file; the script reads the shared keys
  (``total_input_tokens``, ``total_output_tokens``, ``request_throughput``, ``median_tpot_ms``) and checks the
  targets of issue 10: token totals within 1%, request throughput within 5%, median TPOT within 3% of the peer.
  How to start vLLM 0.24.0 with dummy weights on an H200 and run ``vllm bench serve``: the project's device notes
  (``shared/device/vllm/README.md`` of the reference material).

* **The tests' timed server** (``--timed-server``, no GPU): the peer is the server's own truth. It counts prompts
  byte-level (one token per UTF-8 byte, as the byte-level tokenizer the H200 runs used), exposes vLLM's
  ``vllm:prompt_tokens_total`` and ``vllm:generation_tokens_total`` counters, records when it received and
  finished each request, and streams on a fixed schedule (first token 150 ms after it read the request, then one
  every 20 ms), so the truth is: input tokens = what was asked, ``num_prompts × (input_len + the chat template's 24
  tokens)`` (the server's own counter is checked against it too), output tokens = ``num_prompts × output_len`` and
  the counter, TPOT = 20 ms, request throughput = ``num_prompts`` over the server's own span (first request
  received to last one finished).

Usage::

    python bench/real_server_parity.py --timed-server
    python bench/real_server_parity.py --base-url http://127.0.0.1:8000 --model NAME --tokenizer DIR \\
        --peer-cmd "python3 -m vllm.entrypoints.cli.main bench serve" --out results/

Prints one row per concurrency (medians over rounds) with each figure, the peer's, the gap and PASS/MISS; exits 0
when every target is met, 1 otherwise. ``--out`` keeps every result file and a ``parity.json`` summary.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: figure -> (largest relative gap to the peer, what it is)
TARGETS = {
    "total_input_tokens": (0.01, "input tokens"),
    "total_output_tokens": (0.01, "output tokens"),
    "request_throughput": (0.05, "req/s"),
    "median_tpot_ms": (0.03, "median TPOT ms"),
}


def ours(base_url: str, c: int, args: argparse.Namespace, out: Path) -> dict:
    """Run ``python -m planner bench`` once; its ``--save-result`` JSON."""
    path = out / f"ours_c{c}_{time.time_ns()}.json"
    cmd = [
        *(sys.executable, "-m", "planner", "bench", "--endpoint", f"vllm:{base_url}"),
        *("--max-concurrency", str(c), "--num-prompts", str(args.num_prompts)),
        *("--input-len", str(args.input_len), "--output-len", str(args.output_len), "--ignore-eos"),
        *("--input-sizing", args.input_sizing, "--seed", str(args.seed), "--save-result", str(path)),
        *(("--num-warmups", str(args.num_warmups)) if args.num_warmups else ()),
    ]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(path.read_text())


def peer(base_url: str, c: int, args: argparse.Namespace, out: Path) -> dict:
    """Run ``vllm bench serve`` once with the same workload; its ``--save-result`` JSON."""
    name = f"peer_c{c}_{time.time_ns()}.json"
    cmd = [
        *shlex.split(args.peer_cmd),
        *("--backend", "openai-chat", "--base-url", base_url, "--endpoint", "/v1/chat/completions"),
        *("--model", args.model, "--tokenizer", args.tokenizer, "--dataset-name", "random"),
        *("--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len), "--ignore-eos"),
        *("--max-concurrency", str(c), "--num-prompts", str(args.num_prompts), "--seed", str(args.seed)),
        *("--save-result", "--result-dir", str(out), "--result-filename", name),
        *(("--num-warmups", str(args.num_warmups)) if args.num_warmups else ()),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / name).read_text())


def _counter(base_url: str, name: str) -> float:
    text = httpx.get(base_url + "/metrics", timeout=5).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise KeyError(name)


def timed_truth(server: object, args: argparse.Namespace, counters: tuple[float, float]) -> dict:
    """The timed server's truth for the run just made (see the module docstring)."""
    from planner.demo.script import chat_template

    template = len(chat_template([{"role": "user", "content": ""}]).encode())
    asked_input = args.num_prompts * (args.input_len + template)
    asked_output = args.num_prompts * args.output_len
    sent = args.num_prompts + args.num_warmups  # the counters count the warm-up requests too
    grown = (sent * (args.input_len + template), sent * args.output_len)
    if counters != grown:
        raise SystemExit(f"the server's counters {counters} differ from what was asked {grown}")
    # the measured requests are the last num_prompts the server received (warm-ups go first)
    spans = sorted((r for r in server.recorded() if "finished_s" in r), key=lambda r: r["received_s"])
    spans = spans[-args.num_prompts :]
    span_s = max(r["finished_s"] for r in spans) - min(r["received_s"] for r in spans)
    return {
        "total_input_tokens": asked_input,
        "total_output_tokens": asked_output,
        "request_throughput": args.num_prompts / span_s,
        "median_tpot_ms": 20.0,
    }


def compare(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="parity-"))
    out.mkdir(parents=True, exist_ok=True)
    server = None
    if args.timed_server:
        from tests.servers.timed_sse import TimedServer

        server = TimedServer(tokenizer="bytes").__enter__()
        base_url = server.url
    else:
        base_url = args.base_url.rstrip("/")
    rows, summary = [], []
    try:
        for c in args.concurrency:
            pairs = []
            for rnd in range(args.rounds):
                if args.timed_server:
                    names = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")
                    before = [_counter(base_url, name) for name in names]
                    server.clear_recorded()
                    mine = ours(base_url, c, args, out)
                    grown = tuple(_counter(base_url, n) - b for n, b in zip(names, before, strict=True))
                    theirs = timed_truth(server, args, grown)
                elif rnd % 2 == 0:  # alternate who goes first, so neither always meets a warm server
                    mine = ours(base_url, c, args, out)
                    theirs = peer(base_url, c, args, out)
                else:
                    theirs = peer(base_url, c, args, out)
                    mine = ours(base_url, c, args, out)
                pairs.append((mine, theirs))
            for key, (tolerance, label) in TARGETS.items():
                a = statistics.median(float(m[key]) for m, _ in pairs)
                b = statistics.median(float(t[key]) for _, t in pairs)
                gap = a / b - 1 if b else math.inf
                ok = abs(gap) <= tolerance
                rows.append(
                    f"c={c:<4} {label:16} ours {a:12,.2f}   peer {b:12,.2f}   {gap:+7.2%}  "
                    f"{'PASS' if ok else 'MISS'} (±{tolerance:.0%})"
                )
                summary.append({"concurrency": c, "figure": key, "ours": a, "peer": b, "gap": gap, "ok": ok})
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    peer_name = "timed server truth" if args.timed_server else "vllm bench serve"
    print(f"ours: python -m planner bench · peer: {peer_name} · {args.rounds} round(s) per level, medians")
    print("\n".join(rows))
    (out / "parity.json").write_text(json.dumps({"peer": peer_name, "rows": summary, "args": vars(args)}, indent=2))
    print(f"results: {out}")
    return 0 if all(r["ok"] for r in summary) else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timed-server", action="store_true", help="no GPU: the tests' timed server is the truth")
    p.add_argument("--base-url", help="a running vLLM server, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", help="served model name (for vllm bench serve)")
    p.add_argument("--tokenizer", help="the server's tokenizer directory (for vllm bench serve)")
    p.add_argument("--peer-cmd", default="vllm bench serve", help="how to run vllm bench serve")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--rounds", type=int, default=2, help="alternating runs per concurrency")
    p.add_argument("--num-prompts", type=int, default=200)
    p.add_argument("--num-warmups", type=int, default=0)
    p.add_argument("--input-len", type=int, default=512)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--input-sizing", default="tokenize", choices=("tokenize", "token_ids"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="folder for the result files and parity.json (default: a temporary one)")
    args = p.parse_args()
    if not args.timed_server and not (args.base_url and args.model and args.tokenizer):
        p.error("give --timed-server, or --base-url, --model and --tokenizer of a running vLLM server")
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
