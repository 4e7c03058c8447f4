"""What makes up a request's TTFT on a real vLLM 0.24.0, read off the server's own logs: the figures behind the
frontend terms of ``planner/predict/step_time.py`` (``request_overhead_s`` and the four after it).

Data: ``bench/data/h200_mechanisms/`` (``bench/h200/mechanisms_campaign.py``; how it was made: that folder's
README). Every server line carries its wall-clock time; ``clock.json`` puts the client's ``start_times``
(``time.perf_counter``) on the same clock.

* **way in** (send → engine): each request's "Received request <id>" line (logged after tokenization, right before
  the engine call) minus the client's send time, for requests sent alone (open-loop points and concurrency 1);
* **burst** (requests sent together): the first wave of each closed-loop point: (last "Received" − first send) / c;
* **way out** (step → client): at concurrency 1, the client's first token minus the engine's log line of the step
  that made it;
* **server against client** (the server's Prometheus histograms differenced over each point): mean TTFT as the
  server's ``vllm:time_to_first_token_seconds`` counts it (from the request's arrival in the API server's engine
  client) and its queue (``vllm:request_queue_time_seconds``) and prefill (``vllm:request_prefill_time_seconds``)
  parts, against the client's mean TTFT: the difference is time outside the server's clock (HTTP, the way out);
* **closure**: the engine's busy time per point against the step model's time for the logged step compositions (each
  "Iteration(k): … context tokens, … generation requests" line; the decode context is taken as the point's mean),
  which separates step-model error from scheduling and frontend error.

Usage: ``python bench/frontend_timing.py``
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.h200_runs import MECHANISMS, MODELS, _logged_kv_tokens, shape_of  # noqa: E402
from planner.predict.step_time import DEFAULT_COEFFICIENTS, critical_path, step_features  # noqa: E402

_ITERATION = re.compile(
    rb"\) (\d+\.\d+) INFO .*Iteration\((\d+)\): (\d+) context requests, (\d+) context tokens, "
    rb"(\d+) generation requests, (\d+) generation tokens"
)
_RECEIVED = re.compile(rb"\) (\d+\.\d+) INFO .*Received request cmpl-(.+)-(\d+)-0:")


#: The campaign's runs: (its record, its clock), each for the models it measured.
CAMPAIGNS = (
    ("campaign.json.gz", "clock.json.gz"),
    ("campaign_2026-12-03T1502.json.gz", "clock_2026-12-03T1502.json.gz"),
)


def _campaigns() -> list[tuple[dict, float]]:
    """Each run of the campaign and its ``time.time() - time.perf_counter()`` (the client's clock on the wall)."""
    out = []
    for record, clock in CAMPAIGNS:
        campaign = json.loads(gzip.decompress((MECHANISMS / record).read_bytes()))
        offset = json.loads(gzip.decompress((MECHANISMS / clock).read_bytes()))["time_minus_perf_counter_s"]
        out.append((campaign, offset))
    return out


def _load(model: str, campaign: dict) -> tuple[list[tuple[float, ...]], dict[tuple[str, int], float], list[dict]]:
    text = gzip.decompress((MECHANISMS / model / "server.log.gz").read_bytes())
    steps = [tuple(float(x) for x in m.groups()) for m in _ITERATION.finditer(text)]
    received = {(m[2].decode(), int(m[3])): float(m[1]) for m in _RECEIVED.finditer(text)}
    points = next(x for x in campaign["models"] if x["name"] == model)["points"]
    return steps, received, [p for p in points if "wall_s" in p and not p["point"].startswith("warmup")]


def _result(model: str, point: str) -> dict | None:
    path = MECHANISMS / model / f"{point}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None


_HISTOGRAMS = ("time_to_first_token_seconds", "request_queue_time_seconds", "request_prefill_time_seconds")


def _means(model: str, point: str) -> dict[str, float] | None:
    """Mean of each of ``_HISTOGRAMS`` over the point (its ``/metrics`` after minus before), seconds."""
    texts = []
    for when in ("pre", "post"):
        path = MECHANISMS / model / f"{point}.{when}.prom.gz"
        if not path.exists():
            return None
        texts.append(gzip.decompress(path.read_bytes()).decode())
    out = {}
    for name in _HISTOGRAMS:
        got = []
        for text in texts:
            sums = re.search(rf"^vllm:{name}_sum{{[^}}]*}} (\S+)", text, re.M)
            counts = re.search(rf"^vllm:{name}_count{{[^}}]*}} (\S+)", text, re.M)
            got.append((float(sums[1]), float(counts[1])) if sums and counts else (0.0, 0.0))
        n = got[1][1] - got[0][1]
        if n > 0:
            out[name] = (got[1][0] - got[0][0]) / n
    return out


def _step_s(shape, p: dict, n_ctx: float, ctx_tokens: float, n_gen: float) -> float:
    g = len(shape.groups)
    mean_ctx = p["in"] + p["out"] / 2
    f = step_features(
        shape,
        n_decode=np.array([n_gen]),
        decode_ctx=np.full((1, g), n_gen * mean_ctx),
        prefill_tokens=np.array([ctx_tokens]) if ctx_tokens else None,
        prefill_attn=np.full((1, g), ctx_tokens * (ctx_tokens / max(n_ctx, 1)) / 2) if ctx_tokens else None,
        n_sampled=np.array([n_gen + n_ctx]),
        n_seqs=np.array([n_gen + n_ctx]),
    )
    coef = DEFAULT_COEFFICIENTS.vector()
    return float(critical_path(f, coef)[0] @ coef)


def main() -> int:
    way_in: dict[tuple[int, str], list[float]] = {}
    burst: dict[int, list[float]] = {}
    way_out: list[float] = []
    runs = [(m["name"], c, clock) for c, clock in _campaigns() for m in c["models"] if m["name"] in MODELS]
    for model, campaign, clock in runs:
        steps, received, points = _load(model, campaign)
        times = np.array([s[0] for s in steps])
        shape = shape_of(MODELS[model], _logged_kv_tokens(MECHANISMS / model))
        print(f"\n{model}")
        for p in points:
            res = _result(model, p["point"])
            if res is None:
                continue
            sent = np.array(res["start_times"]) + clock
            first = sent + np.array(res["ttfts"])
            recv = np.array([received.get((p["point"], i), np.nan) for i in range(len(sent))])
            lag = recv - sent
            c = p.get("c")
            if not c or c == 1:
                kind = "concurrency 1" if c == 1 else "open loop"
                way_in.setdefault((p["in"], kind), []).extend(lag[np.isfinite(lag)].tolist())
            if c and c >= 8:
                wave = np.argsort(sent)[:c]
                burst.setdefault(p["in"], []).append((np.nanmax(recv[wave]) - sent.min()) / c)
            if c == 1:
                for i in range(len(sent)):
                    k = int(np.searchsorted(times, recv[i]))
                    while k < len(steps) and steps[k][2] == 0:
                        k += 1
                    if k < len(steps):
                        way_out.append(first[i] - times[k])
            # closure: busy time against the step model for the logged compositions
            window = [s for s in steps if p["t0_epoch"] <= s[0] <= p["t1_epoch"]]
            busy = predicted = 0.0
            for a, b in itertools.pairwise(window):
                t = _step_s(shape, p, b[2], b[3], b[4])
                if b[0] - a[0] > 3 * t + 0.05:  # idle between requests
                    continue
                busy += b[0] - a[0]
                predicted += t
            server = _means(model, p["point"]) or {}
            ttft_server = server.get("time_to_first_token_seconds")
            split = (
                f"TTFT client {np.mean(res['ttfts']) * 1e3:6.0f} / server {ttft_server * 1e3:6.0f} ms "
                f"(queue {server.get('request_queue_time_seconds', 0) * 1e3:5.0f}, "
                f"prefill {server.get('request_prefill_time_seconds', 0) * 1e3:5.0f})"
                if ttft_server
                else ""
            )
            print(
                f"  {p['point']:12} way in median {np.nanmedian(lag) * 1e3:6.1f} ms  "
                f"engine busy {busy:6.2f} s, step model {predicted:6.2f} s ({predicted / busy - 1:+.0%})  {split}"
            )
    print("\nway in, requests sent alone (median):")
    for (n, kind), v in sorted(way_in.items()):
        print(f"  {n:5d} prompt tokens, {kind:13}: {statistics.median(v) * 1e3:.2f} ms over {len(v)} requests")
    print("burst, first wave of closed-loop points (mean time per request):")
    for n, v in sorted(burst.items()):
        print(f"  {n:5d} prompt tokens: {statistics.mean(v) * 1e3:.2f} ms over {len(v)} points")
    print(f"way out at concurrency 1 (median): {statistics.median(way_out) * 1e3:.2f} ms over {len(way_out)} requests")
    c = DEFAULT_COEFFICIENTS
    print(
        f"\nthe model's figures: way in {c.request_in_s(1024) * 1e3:.2f} / {c.request_in_s(3072) * 1e3:.2f} ms, "
        f"burst {c.frontend_work_s(1024) * 1e3:.2f} / {c.frontend_work_s(3072) * 1e3:.2f} ms (1,024 / 3,072 "
        f"tokens), way out {c.response_overhead_s * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
