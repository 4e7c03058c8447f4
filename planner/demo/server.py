"""The demo server: an OpenAI/vLLM/TGI-compatible streaming server with KNOWN token timing.

``python -m planner demo-server`` starts it for trying Live Compare, Load Test and the CLI without a GPU; the tests
run it as their timed server (``tests/servers/timed_sse.py`` starts it on an ephemeral port) to check what the
clients measure and what they send. It runs as its own process, so its timers do not share a GIL with the client
being measured::

    python -m planner.serving.demo_server --port 0      # prints "PORT <n>" once listening

Timeline of a streamed chat request (``t0`` = request parsed by the server):

* role chunk ``delta: {"role": "assistant", "content": ""}`` at once (vLLM shape; with ``continuous_usage_stats``
  it carries ``usage.completion_tokens = 0``);
* token ``k`` (1-based) is ready at ``t0 + ttft_ms + (k − 1) · itl_ms``; defaults 150 ms and 20 ms (``--ttft-ms``,
  ``--itl-ms``); with ``--itl-per-running-ms x`` each gap grows by ``x`` per other request running at the time
  (a batch's decode step takes longer with more sequences), so latency rises with concurrency as on a real server;
* tokens are grouped into chunks of 1, 2, 1, 3, 1, 2, 1, 3, ... tokens (the first chunk always holds 1); a chunk is
  sent when its last token is ready, so every token's share of its chunk gap is exactly ``itl_ms``;
* with ``continuous_usage_stats`` every chunk carries cumulative usage (exact tokens per chunk);
* the last token chunk has its ``finish_reason`` (see "End of sequence" below); then the usage chunk
  (``choices: []``) when ``include_usage``; then ``data: [DONE]``.

The prompt selects the behaviour with bracketed options, e.g. ``"hello [mode=cut] [tokens=8]"``:

* ``tokens=N`` (default: the end of sequence below), ``ttft_ms=X``, ``itl_ms=Y`` (the server's defaults);
* ``mode=ok`` (default); ``error`` (vLLM in-stream error payload after 2 chunks, then ``[DONE]``, on HTTP 200);
  ``tgi_error`` (TGI chat in-stream error ``{"error": {"message", "http_status_code": 422}}``); ``cut`` (the
  connection is dropped after 3 chunks, mid chunked body); ``http400`` (vLLM nested context-length error body);
  ``http400_flat`` (old flat vLLM error body); ``http500``; ``hang`` (never answers);
  ``reject_continuous`` (400 naming ``continuous_usage_stats`` when it is sent, else normal).

Routes: ``GET /health``, ``/v1/models`` (``max_model_len`` 4096), ``/version``, ``/info`` (TGI), ``/metrics``
(vLLM V1 Prometheus text, below), ``POST /v1/chat/completions`` (stream or not: ``chat.completion.chunk`` events or
one ``chat.completion`` body, ``choices[0].message``), ``POST /v1/completions`` (stream or not: ``text_completion``
events or body, ``choices[0].text``; the prompt may be text or token ids), ``POST /`` and ``/generate_stream`` (TGI
native stream: one token per event, the last with ``generated_text`` and ``details``, no ``[DONE]``).

Answer length, as a real server decides it: the answer runs to ``max_tokens`` (TGI ``max_new_tokens``;
``finish_reason: "length"``), or, when the request gives none, to vLLM's default: 16 on ``/v1/completions`` (its
``CompletionRequest`` default, as OpenAI's), what the context leaves (``max_model_len`` − prompt tokens) on chat and
TGI. The placeholder model never ends its answer by itself unless the server is given an end of sequence
(``--eos-tokens N``, :data:`TEST_DEFAULTS`' 12): then an answer longer than N ends after N tokens with
``finish_reason: "stop"``, unless the request asks for ``ignore_eos`` where vLLM reads it, at the top level of the body
(the tests check that the clients send it there). A ``tokens=N`` option overrides all of this.

Recording: every request is kept (method, path, headers, the body's exact text, and the server's wall-clock
``received_s`` and, for generation requests, ``finished_s``) and ``GET /_recorded`` returns them
as a JSON list, oldest first; ``DELETE /_recorded`` forgets them (:meth:`TimedServer.recorded`,
:meth:`TimedServer.clear_recorded`). The last 10,000 are kept.

Tokenizer: by default every prompt is ``PROMPT_TOKENS`` (12) tokens and there is no ``/tokenize``. With
``--tokenizer bytes`` (``TimedServer(tokenizer="bytes")``) the server counts as a byte-level tokenizer does (one
token per UTF-8 byte, like the tokenizer ``shared/device/vllm/make_tokenizer.py`` builds for a real vLLM), chat
messages rendered by :func:`chat_template` first: ``usage.prompt_tokens`` is that count, a token-id prompt counts
its ids, and vLLM's ``POST /tokenize`` (``{"model", "messages"}`` or ``{"model", "prompt"}`` → ``{"count",
"max_model_len", "tokens"}``) answers with the same count.

``GET /metrics`` renders with prometheus_client, as vLLM does (``# HELP``/``# TYPE`` lines, sorted labels, a
``_created`` gauge beside each counter), the names and label sets of vllm/v1/metrics/loggers.py, every series
labelled ``engine="0"`` and ``model_name="timed-model"``:

* ``vllm:num_requests_running``: generation requests (``POST /v1/chat/completions``, ``/``, ``/generate_stream``,
  streamed or not, every mode) admitted and not yet finished, counted live; ``vllm:num_requests_waiting``: those
  waiting for a slot under ``--max-num-seqs N`` (always 0 without it);
* ``vllm:kv_cache_usage_perc`` = min(1, 64 · running / 2048): each running request holds 64 blocks (1,024 tokens)
  of a fixed pool of 2,048 blocks × 16 tokens = 32,768 tokens, so one request is 0.03125;
* counters ``vllm:num_preemptions`` (always 0), ``vllm:prompt_tokens`` (each request's prompt tokens, as in usage),
  ``vllm:generation_tokens`` (tokens sent), exposed with ``_total``;
* ``vllm:cache_config_info{...} 1.0`` with the ``CacheConfig`` label set of a recent vLLM (as captured from a live
  server): ``block_size="16"``, ``num_gpu_blocks="2048"``, ``kv_cache_size_tokens="32768"``,
  ``kv_cache_max_concurrency="8.0"`` (32,768 / 4,096), ``gpu_memory_utilization="0.9"``, ``cache_dtype="auto"``, ...

Prefix caching (``--enable-prefix-caching``, as vLLM's flag; off for the tests' server, on for ``python -m planner
demo-server``): the prompt's tokens (bytes of the chat-templated text under ``--tokenizer bytes``, or the ids of a
token-id prompt) are hashed in full blocks of 16, each block's hash chained to the one before, as vLLM V1's
``KVCacheManager`` does (``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); the leading blocks already held
are hits, never the prompt's last token (vLLM always computes it), and the prompt's blocks are then kept, the least
recently used dropped past the 2,048-block pool. ``vllm:prefix_cache_queries`` and ``vllm:prefix_cache_hits`` count
the prompt tokens and the hits, as vLLM's do, and ``POST /reset_prefix_cache`` empties the cache (served as vLLM
serves it with ``VLLM_SERVER_DEV_MODE=1``). ``--prefill-ms-per-token x`` adds ``x`` ms to the first token for each
prompt token NOT served from the cache, so a cached prefix shows in TTFT as on a real server.

Speculative decoding (``--num-speculative-tokens k --spec-accepted-per-draft a``, off by default): the counters of
vLLM 0.24.0 (``vllm:spec_decode_num_drafts``, ``_num_draft_tokens``, ``_num_accepted_tokens`` and
``_num_accepted_tokens_per_pos`` by ``position``) as if every draft of ``k`` tokens had its first ``a`` accepted:
an answer of ``n`` tokens counts ``ceil((n − 1) / (a + 1))`` drafts (:func:`count_drafts`); the timing is unchanged.

``python -m tests.servers.timed_sse --legacy-metrics`` (``TimedServer(legacy_metrics=True)``) serves the names of
vLLM releases before 0.9 instead: ``vllm:gpu_cache_usage_perc`` in place of ``vllm:kv_cache_usage_perc``, and the
older ``cache_config_info`` label set (``swap_space_bytes``, ``cpu_offload_gb``, no ``kv_cache_size_tokens``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest

__all__ = [
    "DEMO_DEFAULTS",
    "KV_BLOCKS_PER_REQUEST",
    "KV_BLOCK_SIZE",
    "KV_NUM_GPU_BLOCKS",
    "MAX_MODEL_LEN",
    "MODEL_ID",
    "TEST_DEFAULTS",
    "add_arguments",
    "chat_chunk",
    "chat_template",
    "chunk_sizes",
    "count_drafts",
    "serve",
    "token_text",
    "usage_of",
]

MODEL_ID = "timed-model"
MAX_MODEL_LEN = 4096
PROMPT_TOKENS = 12
CONTEXT_ERROR = (
    "This model's maximum context length is 4096 tokens. However, you requested 5000 output tokens and your prompt "
    "contains at least 12 input tokens, for a total of at least 5012 tokens."
)
IN_STREAM_ERROR = "Engine core hit an error: CUDA out of memory"
SERVER_ERROR = "Internal server error: engine crashed"
TGI_STREAM_ERROR = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"
_PATTERN = (1, 2, 1, 3)
KV_BLOCK_SIZE = 16
KV_NUM_GPU_BLOCKS = 2048
KV_BLOCKS_PER_REQUEST = 64


class PlannedEngine(Protocol):
    """What the planned mode steps (:class:`planner.predict.simulator.OnlineScheduler` is one)."""

    @property
    def busy(self) -> bool: ...
    @property
    def running(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def kv_usage(self) -> float: ...
    @property
    def preemptions(self) -> int: ...
    @property
    def request_overhead_s(self) -> float: ...
    def request_in_s(self, prompt_tokens: int) -> float: ...
    def add(self, prompt_tokens: int, output_tokens: int) -> int: ...
    def drop(self, rid: int) -> None: ...
    def step(self) -> tuple[float, list[tuple[int, int, bool]]]: ...


class _State:
    """Live counts behind ``GET /metrics`` (one event loop, so no lock)."""

    def __init__(self) -> None:
        self.running = 0
        self.waiting = 0
        self.slots: asyncio.Semaphore | None = None
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.legacy_metrics = False
        self.tokenizer = "fixed"
        self.recorded: list[dict[str, Any]] = []
        self.ttft_ms = 150.0
        self.itl_ms = 20.0
        self.itl_per_running_ms = 0.0
        self.model_id = MODEL_ID
        self.max_model_len = MAX_MODEL_LEN
        self.engine: PlannedEngine | None = None
        #: ``cache_config_info`` labels that replace the fixed ones (planned mode: the plan's pool)
        self.cache_labels: dict[str, str] = {}
        self.queues: dict[int, asyncio.Queue[tuple[int, bool]]] = {}
        self.wake: asyncio.Event | None = None
        self.prefix_caching = False
        self.prefill_ms_per_token = 0.0
        #: block hash → None, least recently used first (the prefix cache)
        self.blocks: OrderedDict[int, None] = OrderedDict()
        self.prefix_queries = 0
        self.prefix_hits = 0
        #: speculative decoding played in the counters: draft length and tokens accepted per draft (0 = off)
        self.num_speculative_tokens = 0
        self.spec_accepted_per_draft = 0
        self.spec_drafts = 0
        self.spec_accepted = 0
        #: the placeholder model's end of sequence, tokens (``--eos-tokens``); None = it never ends by itself
        self.eos_tokens: int | None = None


_STATE = _State()
#: Most requests :data:`_State.recorded` keeps.
MAX_RECORDED = 10_000
#: vLLM's ``max_tokens`` when a ``/v1/completions`` request gives none (``CompletionRequest``, as OpenAI's API).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


def chat_template(messages: list[dict[str, Any]]) -> str:
    """The prompt text a chat request becomes (``<|role|>`` headers, then the assistant's header), for counting."""
    parts = [f"<|{m.get('role', 'user')}|>\n{m.get('content', '')}\n" for m in messages]
    return "".join(parts) + "<|assistant|>\n"


def prompt_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a chat or completions body under the server's tokenizer (see the module docstring)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        return len(prompt)
    if _STATE.tokenizer != "bytes":
        return PROMPT_TOKENS
    text = prompt if isinstance(prompt, str) else chat_template(body.get("messages") or [])
    return len(text.encode("utf-8"))


def _prompt_units(body: dict[str, Any]) -> list[int]:
    """The prompt's tokens for the prefix cache: a token-id prompt's ids, else the bytes of its (templated) text."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        return [int(t) for t in prompt]
    text = prompt if isinstance(prompt, str) else chat_template(body.get("messages") or [])
    return list(text.encode("utf-8"))


def cache_prompt(body: dict[str, Any]) -> int:
    """Look the prompt up in the prefix cache and keep its blocks; the tokens served from the cache (0 when caching
    is off). Counts ``prefix_cache_queries`` (every prompt token) and ``prefix_cache_hits``."""
    if not _STATE.prefix_caching:
        return 0
    units = _prompt_units(body)
    hashes, parent = [], 0
    for start in range(0, len(units) - len(units) % KV_BLOCK_SIZE, KV_BLOCK_SIZE):
        parent = hash((parent, tuple(units[start : start + KV_BLOCK_SIZE])))
        hashes.append(parent)
    hit_blocks = 0
    for h in hashes[: (len(units) - 1) // KV_BLOCK_SIZE]:  # the last token is always computed
        if h not in _STATE.blocks:
            break
        hit_blocks += 1
    for h in hashes:
        _STATE.blocks[h] = None
        _STATE.blocks.move_to_end(h)
    while len(_STATE.blocks) > KV_NUM_GPU_BLOCKS:
        _STATE.blocks.popitem(last=False)
    hits = hit_blocks * KV_BLOCK_SIZE
    _STATE.prefix_queries += len(units)
    _STATE.prefix_hits += hits
    return hits


def _prefill_s(body: dict[str, Any]) -> float:
    """Extra time to the first token: ``prefill_ms_per_token`` for each prompt token not served from the cache."""
    hits = cache_prompt(body)
    if not _STATE.prefill_ms_per_token:
        return 0.0
    return _STATE.prefill_ms_per_token / 1000 * max(0, len(_prompt_units(body)) - hits)


def count_drafts(n_tokens: int) -> None:
    """Count an answer of ``n_tokens`` in the speculative-decoding counters (``--num-speculative-tokens k
    --spec-accepted-per-draft a``): the first token comes from the prefill, then every draft of ``k`` tokens has its
    first ``a`` accepted plus the bonus token, so ``ceil((n − 1) / (a + 1))`` drafts (not cut at ``max_tokens``)."""
    k, a = _STATE.num_speculative_tokens, _STATE.spec_accepted_per_draft
    if k and n_tokens > 1:
        drafts = -(-(n_tokens - 1) // (a + 1))
        _STATE.spec_drafts += drafts
        _STATE.spec_accepted += drafts * a


def answer_tokens(body: dict[str, Any], opts: dict[str, str], max_tokens: int | None, n_prompt: int) -> tuple[int, str]:
    """``(tokens, finish_reason)`` of an answer (the module docstring's "Answer length"): a ``tokens=N`` option;
    else ``max_tokens``, or vLLM's default for the route when it is not given (``body`` with a ``prompt`` is
    ``/v1/completions``; ``n_prompt``: the prompt's tokens), cut at ``--eos-tokens`` unless ``ignore_eos``."""
    if "tokens" in opts:
        return int(opts["tokens"]), "length"
    if max_tokens:
        limit = int(max_tokens)
    elif "prompt" in body:
        limit = COMPLETIONS_DEFAULT_MAX_TOKENS
    else:
        limit = max(1, _STATE.max_model_len - n_prompt)
    eos = _STATE.eos_tokens
    if eos is None or limit <= eos or body.get("ignore_eos") is True:
        return limit, "length"
    return eos, "stop"


# CacheConfig.metrics_info() labels (vllm/config/cache.py: every field as str), as a recent vLLM V1 exposes them
_CACHE_CONFIG_LABELS = {
    "_block_size_resolved": "True",
    "block_size": str(KV_BLOCK_SIZE),
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "enable_prefix_caching": "True",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_cache_max_concurrency": str(KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE / MAX_MODEL_LEN),
    "kv_cache_memory_bytes": "None",
    "kv_cache_size_tokens": str(KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE),
    "kv_offloading_backend": "native",
    "kv_offloading_size": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": str(KV_NUM_GPU_BLOCKS),
    "num_gpu_blocks_override": "None",
    "prefix_caching_hash_algo": "sha256",
    "prefix_match_unit": "None",
    "skip_page_size_padded": "None",
    "sliding_window": "None",
    "user_specified_block_size": "False",
    "user_specified_mamba_block_size": "False",
}
# the label set of releases before 0.9 (vLLM docs/design/metrics.md "Cache Config Info" and a V0 capture)
_LEGACY_CACHE_CONFIG_LABELS = {
    "block_size": str(KV_BLOCK_SIZE),
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "cpu_offload_gb": "0",
    "enable_prefix_caching": "False",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "num_cpu_blocks": "2048",
    "num_gpu_blocks": str(KV_NUM_GPU_BLOCKS),
    "num_gpu_blocks_override": "None",
    "sliding_window": "None",
    "swap_space_bytes": "4294967296",
}


def _metrics_text() -> bytes:
    """The vLLM V1 ``/metrics`` body for the current state (a fresh registry each time: values are set, not kept)."""
    registry = CollectorRegistry()
    labels = {"model_name": _STATE.model_id, "engine": "0"}
    names = ["model_name", "engine"]

    def gauge(name: str, doc: str, value: float) -> None:
        Gauge(name, doc, labelnames=names, registry=registry).labels(**labels).set(value)

    def counter(name: str, doc: str, value: float) -> None:
        Counter(name, doc, labelnames=names, registry=registry).labels(**labels).inc(value)

    engine = _STATE.engine
    running = engine.running if engine else _STATE.running
    waiting = engine.waiting if engine else _STATE.waiting
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running)
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting)
    usage = engine.kv_usage if engine else min(1.0, KV_BLOCKS_PER_REQUEST * _STATE.running / KV_NUM_GPU_BLOCKS)
    if _STATE.legacy_metrics:
        gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", usage)
    else:
        gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage)
    counter(
        "vllm:num_preemptions", "Cumulative number of preemption from the engine.", engine.preemptions if engine else 0
    )
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", _STATE.prompt_tokens)
    counter("vllm:generation_tokens", "Number of generation tokens processed.", _STATE.generation_tokens)
    if _STATE.prefix_caching:
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            _STATE.prefix_queries,
        )
        counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", _STATE.prefix_hits)
    if _STATE.num_speculative_tokens:
        _spec_counters(registry, labels)
    info = dict(_LEGACY_CACHE_CONFIG_LABELS if _STATE.legacy_metrics else _CACHE_CONFIG_LABELS, engine="0")
    info.update(_STATE.cache_labels)
    config = Gauge(
        "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", labelnames=list(info), registry=registry
    )
    config.labels(**info).set(1)
    return generate_latest(registry)


def _spec_counters(registry: CollectorRegistry, labels: dict[str, str]) -> None:
    """vLLM 0.24.0's speculative-decoding counters (``vllm/v1/metrics/loggers.py``): drafts, draft tokens, accepted
    tokens and accepted tokens per position (label ``position``), as :func:`count_drafts` counted them."""
    k, a, drafts = _STATE.num_speculative_tokens, _STATE.spec_accepted_per_draft, _STATE.spec_drafts
    names = list(labels)
    for name, doc, value in (
        ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", drafts),
        ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", drafts * k),
        ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", _STATE.spec_accepted),
    ):
        Counter(name, doc, labelnames=names, registry=registry).labels(**labels).inc(value)
    per_pos = Counter(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "Accepted tokens per draft position.",
        labelnames=[*names, "position"],
        registry=registry,
    )
    for pos in range(k):
        per_pos.labels(**labels, position=str(pos)).inc(drafts if pos < a else 0)


def chunk_sizes(n_tokens: int) -> list[int]:
    """Tokens per chunk for an answer of ``n_tokens`` tokens: 1, 2, 1, 3, ... cut to sum to ``n_tokens``."""
    sizes: list[int] = []
    i = 0
    while sum(sizes) < n_tokens:
        sizes.append(min(_PATTERN[i % len(_PATTERN)], n_tokens - sum(sizes)))
        i += 1
    return sizes


def token_text(k: int) -> str:
    """Text of token ``k`` (1-based)."""
    return f"t{k} "


def _options(prompt: str) -> dict[str, str]:
    return dict(re.findall(r"\[(\w+)=([\w.]+)\]", prompt))


def _gap(itl_s: float) -> float:
    """Seconds to the next token: ``itl`` plus ``itl_per_running_ms`` for each other request running now."""
    return itl_s + _STATE.itl_per_running_ms / 1000 * max(0, _STATE.running - 1)


async def _sleep_until(target: float) -> None:
    """Sleep until perf_counter() ≥ target: asyncio sleep to 1 ms before, then spin (sub-ms accuracy)."""
    remaining = target - time.perf_counter()
    if remaining > 0.0015:
        await asyncio.sleep(remaining - 0.001)
    while time.perf_counter() < target:
        pass


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def head(self, status: int, headers: dict[str, str]) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 422: "Unprocessable Entity", 500: "Error"}
        lines = [f"HTTP/1.1 {status} {reason.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def json(self, status: int, body: Any) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        await self.head(status, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        self.writer.write(data)
        await self.writer.drain()

    async def chunk(self, text: str) -> None:
        data = text.encode()
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()

    async def event(self, payload: Any) -> None:
        await self.chunk(f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n")

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


def chat_chunk(delta: dict, finish: str | None, usage: dict | None) -> dict:
    out: dict[str, Any] = {
        "id": "chatcmpl-timed",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": _STATE.model_id,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def usage_of(n: int, n_prompt: int = PROMPT_TOKENS) -> dict:
    return {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}


def answer_chunk(completions: bool, text: str, finish: str | None, usage: dict | None) -> dict:
    """One streamed event of an answer: a ``text_completion`` choice with ``text`` on ``/v1/completions``, a
    ``chat.completion.chunk`` with ``delta.content`` on chat (vLLM's shapes)."""
    if not completions:
        return chat_chunk({"content": text}, finish, usage)
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
    out = {"id": "cmpl-timed", "object": "text_completion", "created": 0, "model": _STATE.model_id, "choices": [choice]}
    return out | ({"usage": usage} if usage else {})


def whole_answer(completions: bool, n: int, n_prompt: int, finish: str) -> dict:
    """The body of a non-streamed answer of ``n`` tokens: ``text_completion`` with ``choices[0].text`` on
    ``/v1/completions``, ``chat.completion`` with ``choices[0].message`` on chat, both with ``usage``."""
    text = "".join(token_text(k) for k in range(1, n + 1))
    if completions:
        choice: dict[str, Any] = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        head = {"id": "cmpl-timed", "object": "text_completion"}
    else:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        head = {"id": "chatcmpl-timed", "object": "chat.completion"}
    return {**head, "created": 0, "model": _STATE.model_id, "choices": [choice], "usage": usage_of(n, n_prompt)}


async def _chat(conn: _Conn, body: dict, t0: float) -> None:
    if "prompt" in body:  # /v1/completions
        prompt = body["prompt"] if isinstance(body["prompt"], str) else ""
    else:
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    opts = _options(prompt)
    mode = opts.get("mode", "ok")
    n_prompt = prompt_tokens(body)
    n, last_finish = answer_tokens(body, opts, body.get("max_tokens"), n_prompt)
    completions = "prompt" in body
    ttft = float(opts.get("ttft_ms", _STATE.ttft_ms)) / 1000
    itl = float(opts.get("itl_ms", _STATE.itl_ms)) / 1000
    stream_options = body.get("stream_options") or {}
    continuous = bool(stream_options.get("continuous_usage_stats"))
    include_usage = bool(stream_options.get("include_usage"))
    if mode == "hang":
        with contextlib.suppress(Exception):
            await conn.reader.read()  # until the client gives up and closes
        conn.writer.close()
        return
    if mode == "http400":
        await conn.json(
            400, {"error": {"message": CONTEXT_ERROR, "type": "BadRequestError", "param": None, "code": 400}}
        )
        return
    if mode == "http400_flat":
        body400 = {"object": "error", "message": CONTEXT_ERROR, "type": "BadRequestError", "param": None, "code": 400}
        await conn.json(400, body400)
        return
    if mode == "http500":
        await conn.json(500, {"error": {"message": SERVER_ERROR, "type": "InternalServerError", "code": 500}})
        return
    if mode == "reject_continuous" and continuous:
        msg = "stream_options.continuous_usage_stats is not supported"
        await conn.json(400, {"error": {"message": msg, "type": "BadRequestError", "code": 400}})
        return
    count_drafts(n)
    if not body.get("stream"):
        await _sleep_until(t0 + ttft + itl * (n - 1))
        _STATE.generation_tokens += n
        await conn.json(200, whole_answer(completions, n, n_prompt, last_finish))
        return
    due = t0 + ttft
    await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    if not completions:
        await conn.event(
            chat_chunk({"role": "assistant", "content": ""}, None, usage_of(0, n_prompt) if continuous else None)
        )
    sent = 0
    for j, size in enumerate(chunk_sizes(n)):
        if mode in ("error", "tgi_error") and j == 2:
            if mode == "error":
                err = {"error": {"message": IN_STREAM_ERROR, "type": "InternalServerError", "param": None, "code": 500}}
            else:
                err = {"error": {"message": TGI_STREAM_ERROR, "http_status_code": 422}}
            await conn.event(err)
            await conn.event("[DONE]")
            await conn.end()
            return
        if mode == "cut" and j == 3:
            conn.writer.transport.abort()
            return
        for _ in range(size - 1 if sent == 0 else size):  # the first token is due at t0 + ttft
            due += _gap(itl)
        await _sleep_until(due)
        text = "".join(token_text(k) for k in range(sent + 1, sent + size + 1))
        sent += size
        _STATE.generation_tokens += size
        finish = last_finish if sent == n else None
        usage = usage_of(sent, n_prompt) if continuous else None
        await conn.event(answer_chunk(completions, text, finish, usage))
    if include_usage:
        await conn.event({**answer_chunk(completions, "", None, usage_of(n, n_prompt)), "choices": []})
    await conn.event("[DONE]")
    await conn.end()


async def _planned(conn: _Conn, body: dict) -> None:
    """A chat or completions request in planned mode: its tokens come when the planned engine's steps end."""
    engine = _STATE.engine
    assert engine is not None and _STATE.wake is not None
    completions = "prompt" in body
    n_prompt = prompt_tokens(body)
    n, last_finish = answer_tokens(body, {}, body.get("max_tokens"), n_prompt)
    cached = min(cache_prompt(body), n_prompt - 1)  # the engine prefills only what the prefix cache does not hold
    await asyncio.sleep(engine.request_in_s(n_prompt))  # HTTP, parsing, tokenization before the engine sees it
    try:
        rid = engine.add(n_prompt - max(0, cached), n)
    except ValueError as exc:  # too long for the planned deployment: vLLM answers 400 too
        await conn.json(400, {"error": {"message": str(exc), "type": "BadRequestError", "param": None, "code": 400}})
        return
    queue: asyncio.Queue[tuple[int, bool]] = asyncio.Queue()
    _STATE.queues[rid] = queue
    _STATE.wake.set()
    stream = bool(body.get("stream"))
    options = body.get("stream_options") or {}
    continuous = bool(options.get("continuous_usage_stats"))
    done = False
    try:
        if stream:
            await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
            if not completions:
                await conn.event(
                    chat_chunk(
                        {"role": "assistant", "content": ""}, None, usage_of(0, n_prompt) if continuous else None
                    )
                )
        while not done:
            count, done = await queue.get()
            _STATE.generation_tokens += 1
            if not stream:
                continue
            finish = last_finish if done else None
            usage = usage_of(count, n_prompt) if continuous else None
            await conn.event(answer_chunk(completions, token_text(count), finish, usage))
        if not stream:
            await conn.json(200, whole_answer(completions, n, n_prompt, last_finish))
            return
        if options.get("include_usage"):
            await conn.event({**answer_chunk(completions, "", None, usage_of(n, n_prompt)), "choices": []})
        await conn.event("[DONE]")
        await conn.end()
    finally:
        _STATE.queues.pop(rid, None)
        if not done:
            engine.drop(rid)


async def _engine_loop() -> None:
    """Step the planned engine in real time: sleep each step's duration, then hand out its tokens."""
    engine, wake = _STATE.engine, _STATE.wake
    assert engine is not None and wake is not None
    clock: float | None = None  # when the engine's current step ends, on perf_counter's scale
    while True:
        if not engine.busy:
            wake.clear()
            await wake.wait()
            clock = None
            continue
        seconds, tokens = engine.step()
        now = time.perf_counter()
        # Steps follow each other on the engine's own clock, so a late wake-up is not added to every later step;
        # a clock more than a step behind (the loop was starved) starts again from now.
        clock = now + seconds if clock is None or clock < now - seconds else clock + seconds
        await _sleep_until(clock)
        for rid, count, done in tokens:
            queue = _STATE.queues.get(rid)
            if queue is not None:
                queue.put_nowait((count, done))


async def _generate_stream(conn: _Conn, body: dict, t0: float) -> None:
    """TGI ``/generate_stream``: one token per event, the last with ``generated_text`` and ``details``."""
    opts = _options(str(body.get("inputs", "")))
    params = body.get("parameters") or {}
    n, _ = answer_tokens({}, opts, params.get("max_new_tokens"), PROMPT_TOKENS)
    ttft = float(opts.get("ttft_ms", _STATE.ttft_ms)) / 1000
    itl = float(opts.get("itl_ms", _STATE.itl_ms)) / 1000
    await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    if opts.get("mode") == "error":
        await conn.chunk('data:{"error":"Model is overloaded","error_type":"overloaded"}\n\n')
        await conn.end()
        return
    due = t0 + ttft
    for k in range(1, n + 1):
        if k > 1:
            due += _gap(itl)
        await _sleep_until(due)
        _STATE.generation_tokens += 1
        last = k == n
        event = {
            "index": k,
            "token": {"id": k, "text": token_text(k), "logprob": -0.5, "special": False},
            "generated_text": "".join(token_text(i) for i in range(1, n + 1)) if last else None,
            "details": {"finish_reason": "length", "generated_tokens": n, "seed": None, "input_length": PROMPT_TOKENS}
            if last and params.get("details")
            else None,
        }
        await conn.chunk("data:" + json.dumps(event) + "\n\n")  # old TGI framing: no space after "data:"
    await conn.end()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Serve requests on one keep-alive connection until the client closes it."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = _Conn(reader, writer)
    try:
        while not writer.is_closing():
            await _one_request(conn)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _one_request(conn: _Conn) -> None:
    head = await conn.reader.readuntil(b"\r\n\r\n")
    t0 = time.perf_counter()
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
    length = int(headers.get("content-length", "0"))
    raw = await conn.reader.readexactly(length) if length else b""
    path = target.split("?", 1)[0].rstrip("/") or "/"
    entry: dict[str, Any] = {}
    if path != "/_recorded":
        entry = {"method": method, "path": path, "headers": headers, "body": raw.decode("utf-8", "replace")}
        entry["received_s"] = time.time()
        _STATE.recorded = [*_STATE.recorded[-(MAX_RECORDED - 1) :], entry]
    body = json.loads(raw) if raw else {}
    if path == "/_recorded":
        if method == "DELETE":
            _STATE.recorded = []
        await conn.json(200, _STATE.recorded)
    elif method == "POST" and path == "/reset_prefix_cache":
        _STATE.blocks.clear()
        await conn.json(200, None)
    elif method == "POST" and path == "/tokenize" and _STATE.tokenizer == "bytes":
        count = prompt_tokens(body)
        await conn.json(200, {"count": count, "max_model_len": _STATE.max_model_len, "tokens": list(range(count))})
    elif method == "GET" and path == "/health":
        await conn.json(200, None)
    elif method == "GET" and path == "/v1/models":
        model = {
            "id": _STATE.model_id,
            "object": "model",
            "owned_by": "vllm",
            "root": _STATE.model_id,
            "max_model_len": _STATE.max_model_len,
        }
        await conn.json(200, {"object": "list", "data": [model]})
    elif method == "GET" and path == "/version":
        await conn.json(200, {"version": "0.0.0-timed"})
    elif method == "GET" and path == "/info":
        info = {"model_id": MODEL_ID, "max_input_tokens": 4095, "max_total_tokens": 4096, "version": "3.3.6-timed"}
        await conn.json(200, info)
    elif method == "GET" and path == "/metrics":
        data = _metrics_text()
        await conn.head(200, {"Content-Type": CONTENT_TYPE_LATEST, "Content-Length": str(len(data))})
        conn.writer.write(data)
        await conn.writer.drain()
    elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions") and _STATE.engine is not None:
        _STATE.prompt_tokens += prompt_tokens(body)
        try:
            await _planned(conn, body)
        finally:
            entry["finished_s"] = time.time()
    elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions", "/", "/generate_stream"):
        if _STATE.slots is not None:
            # A scheduler with max_num_seqs slots: a request waits for one, and its timeline starts when admitted.
            _STATE.waiting += 1
            try:
                await _STATE.slots.acquire()
            finally:
                _STATE.waiting -= 1
            t0 = time.perf_counter()
        _STATE.running += 1
        _STATE.prompt_tokens += prompt_tokens(body) if path.startswith("/v1/") else PROMPT_TOKENS
        if path.startswith("/v1/"):
            t0 += _prefill_s(body)
        try:
            if path in ("/v1/chat/completions", "/v1/completions"):
                await _chat(conn, body, t0)
            else:
                await _generate_stream(conn, body, t0)
        finally:
            _STATE.running -= 1
            entry["finished_s"] = time.time()
            if _STATE.slots is not None:
                _STATE.slots.release()
    else:
        await conn.json(404, {"error": {"message": f"no route {method} {path}", "type": "NotFoundError"}})


async def _serve(args: argparse.Namespace, announce: Callable[[int], str]) -> None:
    tasks = []
    if _STATE.engine is not None:
        _STATE.wake = asyncio.Event()
        tasks.append(asyncio.create_task(_engine_loop()))
    _STATE.legacy_metrics = args.legacy_metrics
    _STATE.tokenizer = args.tokenizer
    _STATE.slots = asyncio.Semaphore(args.max_num_seqs) if args.max_num_seqs else None
    _STATE.ttft_ms, _STATE.itl_ms, _STATE.itl_per_running_ms = args.ttft_ms, args.itl_ms, args.itl_per_running_ms
    _STATE.prefix_caching, _STATE.prefill_ms_per_token = args.enable_prefix_caching, args.prefill_ms_per_token
    _STATE.num_speculative_tokens = args.num_speculative_tokens
    _STATE.spec_accepted_per_draft = min(args.spec_accepted_per_draft, args.num_speculative_tokens)
    _STATE.eos_tokens = args.eos_tokens
    server = await asyncio.start_server(_handle, args.host, args.port)
    print(announce(server.sockets[0].getsockname()[1]), flush=True)
    async with server:
        await server.serve_forever()


#: The flags' defaults for the tests' timed server (``python -m planner.serving.demo_server``): no load effects, and
#: an end of sequence at 12 tokens, so a test sees whether the client sent ``ignore_eos``.
TEST_DEFAULTS = {
    "port": 0,
    "tokenizer": "fixed",
    "itl_per_running_ms": 0.0,
    "max_num_seqs": None,
    "enable_prefix_caching": False,
    "prefill_ms_per_token": 0.0,
    "eos_tokens": 12,
}
#: The defaults of ``python -m planner demo-server``: vLLM's port, a byte-level tokenizer with ``/tokenize``, and a
#: decode step that grows with the batch (0.1 ms per other running request; ``planner/cli/demo.py`` caps it at 64 at
#: once unless ``--max-num-seqs`` says otherwise, and in planned mode leaves it to the engine's default).
DEMO_DEFAULTS = {
    "port": 8000,
    "tokenizer": "bytes",
    "itl_per_running_ms": 0.1,
    "max_num_seqs": None,
    "max_num_seqs_text": "64; with --model, the engine's",
    "enable_prefix_caching": True,
    "prefill_ms_per_token": 0.05,
    "eos_tokens": None,
}


def add_arguments(parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """The server's flags, with ``defaults`` (:data:`TEST_DEFAULTS` or :data:`DEMO_DEFAULTS`)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=defaults["port"], help=f"port (default: {defaults['port']})")
    parser.add_argument("--ttft-ms", type=float, default=150.0, help="first token after the request, ms (default: 150)")
    parser.add_argument("--itl-ms", type=float, default=20.0, help="gap between tokens, ms (default: 20)")
    parser.add_argument(
        "--itl-per-running-ms",
        type=float,
        default=defaults["itl_per_running_ms"],
        help=f"more gap per other running request, ms (default: {defaults['itl_per_running_ms']:g})",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int,
        default=defaults["max_num_seqs"],
        help="requests generating at once; the rest wait (default: "
        + defaults.get("max_num_seqs_text", str(defaults["max_num_seqs"] or "no limit"))
        + ")",
    )
    parser.add_argument(
        "--tokenizer",
        choices=("fixed", "bytes"),
        default=defaults["tokenizer"],
        help="fixed: every prompt 12 tokens; bytes: one token per byte, with /tokenize "
        f"(default: {defaults['tokenizer']})",
    )
    parser.add_argument(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=defaults["enable_prefix_caching"],
        help="keep a prefix cache and export vllm:prefix_cache_queries/hits (default: "
        f"{'on' if defaults['enable_prefix_caching'] else 'off'})",
    )
    parser.add_argument(
        "--prefill-ms-per-token",
        type=float,
        default=defaults["prefill_ms_per_token"],
        help="more time to the first token per prompt token not cached, ms "
        f"(default: {defaults['prefill_ms_per_token']:g})",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int,
        default=0,
        help="export vLLM's spec-decode counters as if drafting this many tokens per step (default: 0, off)",
    )
    parser.add_argument(
        "--spec-accepted-per-draft",
        type=int,
        default=0,
        help="draft tokens accepted per draft, the first ones (with --num-speculative-tokens; default: 0)",
    )
    parser.add_argument(
        "--eos-tokens",
        type=int,
        default=defaults["eos_tokens"],
        help="the placeholder model ends an answer by itself after this many tokens (finish_reason stop) unless "
        "the request sets ignore_eos; otherwise answers run to max_tokens (default: "
        f"{defaults['eos_tokens'] or 'none'})",
    )
    parser.add_argument(
        "--legacy-metrics", action="store_true", help="serve /metrics with vLLM's pre-0.9 names (gpu_cache_usage_perc)"
    )


def serve(
    args: argparse.Namespace,
    announce: Callable[[int], str],
    *,
    engine: PlannedEngine | None = None,
    model_id: str | None = None,
    max_model_len: int | None = None,
    cache_labels: dict[str, str] | None = None,
) -> None:
    """Run the server until Ctrl-C; ``announce(port)`` is printed once it listens.

    Args:
        args: the flags of :func:`add_arguments`.
        announce: the line printed once the server listens, from its port.
        engine: planned mode: chat and completions requests are timed by this engine's steps (the deployment
            :mod:`planner.predict` simulates), not by ``--ttft-ms``/``--itl-ms``; TGI routes keep the fixed timing.
        model_id / max_model_len: what ``/v1/models`` and the responses name (planned mode: the planned model).
        cache_labels: ``vllm:cache_config_info`` labels to report instead of the fixed pool's (planned mode:
            ``num_gpu_blocks``, ``block_size``, ``kv_cache_size_tokens``, ... of the plan).
    """
    _STATE.engine = engine
    _STATE.model_id = model_id or MODEL_ID
    _STATE.max_model_len = max_model_len or MAX_MODEL_LEN
    _STATE.cache_labels = dict(cache_labels or {})
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, announce))


def main() -> None:
    """``python -m planner.serving.demo_server``: the tests' defaults; prints ``PORT <n>`` once listening."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, TEST_DEFAULTS)
    serve(parser.parse_args(), lambda port: f"PORT {port}")


if __name__ == "__main__":
    main()
