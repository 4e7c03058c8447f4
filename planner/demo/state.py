"""What the demo server knows: its fixed answers (model id, context length, error texts, KV pool), the live counts
behind ``/metrics``, the recorded requests, and the clock its token timing runs on.

One :data:`STATE` per process: the server runs one event loop, so nothing here takes a lock.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Protocol

__all__ = [
    "COMPLETIONS_DEFAULT_MAX_TOKENS",
    "CONTEXT_ERROR",
    "IN_STREAM_ERROR",
    "KV_BLOCKS_PER_REQUEST",
    "KV_BLOCK_SIZE",
    "KV_NUM_GPU_BLOCKS",
    "MAX_MODEL_LEN",
    "MAX_RECORDED",
    "MODEL_ID",
    "PROMPT_TOKENS",
    "SERVER_ERROR",
    "STATE",
    "TGI_STREAM_ERROR",
    "Clock",
    "PlannedEngine",
    "State",
]

MODEL_ID = "timed-model"
MAX_MODEL_LEN = 4096
#: Tokens of every prompt under the fixed tokenizer (the default; ``--tokenizer bytes`` counts bytes instead).
PROMPT_TOKENS = 12
CONTEXT_ERROR = (
    "This model's maximum context length is 4096 tokens. However, you requested 5000 output tokens and your prompt "
    "contains at least 12 input tokens, for a total of at least 5012 tokens."
)
IN_STREAM_ERROR = "Engine core hit an error: CUDA out of memory"
SERVER_ERROR = "Internal server error: engine crashed"
TGI_STREAM_ERROR = "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"
#: The fixed KV pool behind ``vllm:kv_cache_usage_perc``: 2,048 blocks of 16 tokens, 64 blocks per running request.
KV_BLOCK_SIZE = 16
KV_NUM_GPU_BLOCKS = 2048
KV_BLOCKS_PER_REQUEST = 64
#: Most requests :attr:`State.recorded` keeps.
MAX_RECORDED = 10_000
#: vLLM's ``max_tokens`` when a ``/v1/completions`` request gives none (``CompletionRequest``, as OpenAI's API).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


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


class Clock:
    """The time the token timing runs on: ``perf_counter`` for intervals, ``time.time`` for the recorded wall clock.

    Tests swap in a scripted clock (same three methods) so the timing script runs without waiting.
    """

    def now(self) -> float:
        """Seconds on ``time.perf_counter``'s scale."""
        return time.perf_counter()

    def wall(self) -> float:
        """Seconds since the epoch (``time.time``), what ``received_s``/``finished_s`` record."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (asyncio)."""
        await asyncio.sleep(seconds)

    async def sleep_until(self, target: float) -> None:
        """Sleep until :meth:`now` ≥ ``target``: asyncio sleep to 1 ms before, then spin (sub-ms accuracy)."""
        remaining = target - time.perf_counter()
        if remaining > 0.0015:
            await asyncio.sleep(remaining - 0.001)
        while time.perf_counter() < target:
            pass


class State:
    """Live counts behind ``GET /metrics``, the recorded requests and the server's settings (one loop: no lock)."""

    def __init__(self) -> None:
        self.clock = Clock()
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

    def reset(self) -> None:
        """Back to a fresh server's state (tests start each case from here)."""
        vars(self).update(vars(State()))


#: The server's state (the process runs one server).
STATE = State()
