"""One replica's prefix-cache hit rate, simulated (planner/fleet) against a real vLLM 0.24.0 server.

The server (``bench/data/h200_mechanisms/llama-3.2-3b-prefix/``): Llama-3.2-3B's shape with dummy weights and a
byte-level tokenizer (``shared/device/vllm/make_tokenizer.py``: one token per byte; every other id of the 128,256
decodes to ``<wN>``; chat template ``role: content\\n`` per message then ``assistant:``), prefix caching on, one H200,
its KV cache fixed at the size its log gives ("GPU KV cache size"), flushed before each run; loaded by this project's
``python -m planner bench`` (the runs' ``*.stdout.log.gz``): ``mt_c8`` (multi_turn, 4 turns, 256-token messages, 64
output tokens, 128 requests, concurrency 8), ``mt_c32`` (256 requests, concurrency 32) and ``prefix_rep_c16``
(prefix_repetition, 10 prefixes of 256 tokens, 256-token suffixes, 200 requests, concurrency 16). Its counters
(``*.pre.prom.gz`` / ``*.post.prom.gz`` differenced): ``vllm:prefix_cache_queries`` / ``_hits`` and
``vllm:prompt_tokens_by_source{source="local_cache_hit"}`` over ``vllm:prompt_tokens``.

Simulated, one replica (``simulate_fleet``, replicas=1) with the server's block size (16) and KV cache, the same
generator settings and seed (0), two ways:

* **as generated**: the workload as :func:`planner.fleet.workload.fleet_requests` builds it: no chat template, each
  earlier answer sent back as the very tokens the replica generated;
* **as served**: the mechanisms of this server added: the chat template's tokens, and each earlier answer sent back as
  its *text*, which the byte-level tokenizer splits into one token per byte: ``64 × E[bytes per sampled id]`` tokens
  (dummy weights sample every id about evenly: ids 0–255 are one byte, 256–258 special (none), the others ``<wN>``,
  3 + digits bytes: 8.12 bytes an id for a 128,256-id vocabulary) that are not the generated ids, so the cache holds
  the previous prompt's blocks but not the answer's.

Usage: ``python bench/fleet_prefix_check.py``.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.capacity.scenario import Scenario
from planner.catalog.models import get_model
from planner.fleet.simulation import simulate_fleet
from planner.fleet.workload import FleetRequest, fleet_requests
from planner.loadtest.settings import LoadSettings
from planner.predict.api import planned_shape

DATA = Path(__file__).resolve().parent / "data" / "h200_mechanisms" / "llama-3.2-3b-prefix"
MODEL = "meta-llama/Llama-3.2-3B-Instruct"
#: The chat template of make_tokenizer.py, in bytes (= tokens): "user: " … "\n", "assistant:" (the generation
#: prompt), and an earlier answer " " + text + "\n" after it.
USER, NEWLINE, GENERATION, SPACE = 6, 1, 10, 1
RUNS = {
    "mt_c8": LoadSettings(
        dataset_name="multi_turn", num_prompts=128, num_turns=4, input_len=256, output_len=64, max_concurrency=8
    ),
    "mt_c32": LoadSettings(
        dataset_name="multi_turn", num_prompts=256, num_turns=4, input_len=256, output_len=64, max_concurrency=32
    ),
    "prefix_rep_c16": LoadSettings(
        dataset_name="prefix_repetition",
        num_prompts=200,
        prefix_len=256,
        suffix_len=256,
        num_prefixes=10,
        output_len=64,
        max_concurrency=16,
    ),
}


def bytes_per_id(vocab: int) -> float:
    """Mean bytes of one id's text when every id is equally likely (module docstring)."""
    total = 256.0  # ids 0-255: one byte each; 256-258 (<unk> <s> </s>) are skipped when decoding
    total += sum(3 + len(str(i)) for i in range(259, vocab))
    return total / vocab


def counters(name: str) -> dict[str, float]:
    """The server's counters over the run: post − pre."""

    def read(path: Path) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            m = re.match(r"^(vllm:[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$", line)
            if m and not m.group(1).endswith("_created"):
                source = re.search(r'source="([a-z_]+)"', m.group(2) or "")
                key = m.group(1) + (f"[{source.group(1)}]" if source else "")
                out[key] = out.get(key, 0.0) + float(m.group(3))
        return out

    pre, post = read(DATA / f"{name}.pre.prom.gz"), read(DATA / f"{name}.post.prom.gz")
    return {k: post[k] - pre.get(k, 0.0) for k in post}


def served(settings: LoadSettings, answer_tokens: int) -> list[FleetRequest]:
    """The workload as this server received it (module docstring): chat template tokens, answers as re-tokenized
    text."""
    out = []
    history: dict[int, tuple[tuple[str, int], ...]] = {}
    for r in fleet_requests(settings):
        if r.conversation is None:  # prefix_repetition: "user: " + prefix + suffix + "\n" + "assistant:"
            (prefix, suffix) = r.segments
            segments = (("user", USER), prefix, suffix, ("end", NEWLINE + GENERATION))
            out.append(replace(r, segments=segments))
            continue
        c, t = r.conversation, r.turn
        message = r.segments[-1]
        prompt = (*history.get(c, ()), (f"c{c}u{t}", USER + message[1] + NEWLINE), ("assistant:", GENERATION))
        history[c] = (*prompt, (f"c{c}text{t}", SPACE + answer_tokens + NEWLINE))
        out.append(replace(r, segments=prompt))
    return out


def main() -> int:
    vocab = get_model(MODEL).spec.vocab_size
    per_id = bytes_per_id(vocab)
    log = gzip.decompress((DATA / "server.log.gz").read_bytes()).decode()
    kv_tokens = int(re.search(r"GPU KV cache size: ([\d,]+) tokens", log).group(1).replace(",", ""))
    scenario = Scenario(
        engine="vllm", model=MODEL, gpu="h200", max_model_len=8192, max_num_seqs=256, max_num_batched_tokens=8192
    )
    _, shape = planned_shape(scenario)
    shape = replace(shape, num_gpu_blocks=kv_tokens // shape.block_size)
    print(
        f"{MODEL} shape on one H200, KV cache {kv_tokens:,} tokens ({shape.num_gpu_blocks:,} blocks of "
        f"{shape.block_size}) as the server logged; an answer of 64 ids re-tokenized: 64 × {per_id:.3f} = "
        f"{64 * per_id:,.0f} tokens\n"
    )
    header = f"{'run':<16} {'server':>24} {'counters':>8} {'reusable':>8} {'as generated':>12} {'as served':>9}"
    print(header + "   prompt tokens: measured / served model")
    for name, settings in RUNS.items():
        run = json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))
        got = counters(name)
        prompt = got["vllm:prompt_tokens_total"]
        local = got["vllm:prompt_tokens_by_source_total[local_cache_hit]"]
        by_counter = got["vllm:prefix_cache_hits_total"] / got["vllm:prefix_cache_queries_total"]
        cap = settings.max_concurrency
        generated = simulate_fleet(
            shape, fleet_requests(settings), replicas=1, router="round_robin", max_concurrency=cap
        )
        model = served(settings, round(64 * per_id))
        as_served = simulate_fleet(shape, model, replicas=1, router="round_robin", max_concurrency=cap)
        print(
            f"{name:<16} {local / prompt:>7.1%} ({int(local):,} of {int(prompt):,}) {by_counter:>8.1%} "
            f"{run['planner_reusable_prefix_share']:>8.1%} {generated.prefix_cache_hit_rate:>12.1%} "
            f"{as_served.prefix_cache_hit_rate:>9.1%}   {int(prompt):,} / {int(as_served.input_tokens.sum()):,}"
        )
        if run.get("planner_turns") and run["planner_turns"][0] is not None:
            lens, turns = run["input_lens"], run["planner_turns"]
            by_hand = sum(lens[i - 1] // 16 * 16 for i, t in enumerate(turns) if t > 0)
            print(f"{'':<16} by hand from the measured prompt lengths (the previous turn's full blocks): {by_hand:,}")
        ttft = run["median_ttft_ms"], as_served.metrics.ttft.median_s * 1e3
        print(f"{'':<16} median TTFT measured {ttft[0]:,.1f} ms, simulated as served {ttft[1]:,.1f} ms")
    print(
        "\nserver = prompt tokens vLLM counted as local cache hits / prompt tokens (prompt_tokens_by_source); counters "
        "= prefix_cache_hits / prefix_cache_queries, which vLLM 0.24 records at every admission attempt "
        "(KVCacheManager.get_computed_blocks runs before allocate_slots, which can refuse): a request waiting for KV "
        "blocks is queried again each step; reusable = the load test's workload figure (earlier prompt + answer "
        "tokens as counted)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
