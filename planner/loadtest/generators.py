"""Workloads with shared prefixes, conversations and traces: what each request's prompt is made of, and when it goes.

:func:`plan_requests` is pure: for ``prefix_repetition``, ``multi_turn``, ``timed_trace`` and ``burstgpt`` it gives
each request as :class:`PlannedRequest` — its prompt as a sequence of named :class:`Segment` s (equal names are
byte-identical text, so a shared prefix is shared to the byte), its output length, its release time or its place in a
conversation. :func:`render_segments` turns the names into text (or token ids) of the asked-for lengths, once per run,
with the server's tokenizer where it has one. :func:`reusable_prefix_tokens` says how much of each prompt repeats the
start of an earlier one: the most a prefix cache can hit on this workload.

The generators follow ``vllm bench serve``'s datasets (vllm-project/vllm ``vllm/benchmarks/datasets/datasets.py``,
v0.24):

* ``prefix_repetition`` (``PrefixRepetitionRandomDataset``): ``num_prefixes`` prefixes of ``prefix_len`` tokens,
  ``num_prompts // num_prefixes`` requests each with a suffix of its own of ``suffix_len`` tokens, shuffled (seeded).
  vLLM sends ``num_prefixes × (num_prompts // num_prefixes)`` requests; here the remainder goes to the first
  prefixes, so exactly ``num_prompts`` are sent.
* ``timed_trace`` (``TimedTrace``): each ``hash_ids`` entry is a block of ``chunk_hash_size`` tokens (the last one
  cut to the input length), the same id the same block; a request is released at its timestamp × ``time_scale``
  (vLLM ``--timed-trace-sec-multiplier``), relative to the first.
* ``burstgpt``: a prompt of ``Request tokens`` of its own per row, ``Response tokens`` out, released at ``Timestamp``
  × ``time_scale``.
* ``multi_turn`` (our own; the shape of inference-perf's and vLLM's ``benchmarks/multi_turn`` conversations):
  ⌈num_prompts / num_turns⌉ conversations; turn t sends the whole conversation so far — every earlier user message and
  the answer the server actually gave — then a new user message of ``input_len`` tokens (lengths drawn with
  ``range_ratio`` as the random dataset draws them); ``think_time_s`` between an answer and the next turn;
  conversations start on the run's arrival schedule (``request_rate``, ``burstiness``), at most ``max_concurrency``
  in progress.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.errors import InvalidParameterError
from planner.loadtest.datasets import TraceRow
from planner.loadtest.schedule import arrival_times, draw_lengths
from planner.loadtest.settings import LoadSettings
from planner.loadtest.workload import WORDS
from planner.serving.discovery import EndpointInfo, tokenize_text
from planner.serving.endpoints import Endpoint

__all__ = [
    "GENERATED",
    "PlannedRequest",
    "RenderedSegments",
    "Segment",
    "plan_requests",
    "render_segments",
    "reusable_prefix_tokens",
    "sampled_words",
]

#: Most segments whose length is checked with the server's tokenizer, one call each.
_MAX_COUNTS = 64
#: Datasets whose prompts :func:`plan_requests` builds.
GENERATED = ("prefix_repetition", "multi_turn", "timed_trace", "burstgpt")


@dataclass(frozen=True)
class Segment:
    """A named run of prompt tokens: two segments of one name are the same text, byte for byte.

    Attributes:
        key: The name (e.g. ``"p3"``: prefix 3; ``"s17"``: request 17's suffix; ``"h46:512"``: trace block 46).
        tokens: Its length, tokens.
    """

    key: str
    tokens: int


@dataclass(frozen=True)
class PlannedRequest:
    """One request of a generated workload (see the module docstring).

    Attributes:
        segments: The prompt (the new user message for a turn of a conversation), in order.
        output_len: ``max_tokens``.
        arrival_s: Release time, seconds after the run starts; None for a later turn of a conversation (sent
            ``think_time_s`` after the previous turn's answer).
        conversation: Conversation id (``multi_turn``); None for a request on its own.
        turn: Turn within its conversation, from 0 (0 for a request on its own).
    """

    segments: tuple[Segment, ...]
    output_len: int
    arrival_s: float | None = 0.0
    conversation: int | None = None
    turn: int = 0

    @property
    def tokens(self) -> int:
        """Tokens of the prompt (of the new user message for a turn)."""
        return sum(s.tokens for s in self.segments)


def _prefix_repetition(settings: LoadSettings, count: int, warmups: bool) -> list[PlannedRequest]:
    k, n_out = settings.num_prefixes, settings.output_len
    prefixes = [(Segment(f"p{p}", settings.prefix_len),) if settings.prefix_len else () for p in range(k)]
    if warmups:  # the prefixes in turn: with flush_cache they prime the cache ("flush, prime, measure")
        return [PlannedRequest((*prefixes[i % k], Segment(f"w{i}", settings.suffix_len)), n_out) for i in range(count)]
    # vLLM: prefix p serves num_prompts // k requests; the remainder joins the first prefixes, one each
    owners = [p for p in range(k) for _ in range(count // k + (p < count % k))]
    out = [PlannedRequest((*prefixes[p], Segment(f"s{i}", settings.suffix_len)), n_out) for i, p in enumerate(owners)]
    random.Random(settings.seed).shuffle(out)  # vLLM shuffles its prompts (seeded) unless --disable-shuffle
    times = arrival_times(_with_count(settings, count))
    return [PlannedRequest(r.segments, r.output_len, t) for r, t in zip(out, times, strict=True)]


def _with_count(settings: LoadSettings, count: int) -> LoadSettings:
    return replace(settings, num_prompts=max(1, count), dataset_name="random", trace_rows=())


def _multi_turn(settings: LoadSettings, count: int, warmups: bool) -> list[PlannedRequest]:
    offset = settings.num_prompts if warmups else 0
    draws = draw_lengths(settings, count, offset)
    if warmups:  # one-turn conversations of their own: they warm the client and the server, not the measured chats
        return [
            PlannedRequest((Segment(f"w{i}", n_in),), n_out, 0.0, None, 0) for i, (n_in, n_out, _) in enumerate(draws)
        ]
    turns = settings.num_turns
    conversations = -(-count // turns)
    starts = arrival_times(_with_count(settings, conversations))
    out = []
    for i, (n_in, n_out, _) in enumerate(draws):
        c, t = divmod(i, turns)
        out.append(PlannedRequest((Segment(f"c{c}t{t}", n_in),), n_out, starts[c] if t == 0 else None, c, t))
    return out


def _trace(settings: LoadSettings, rows: Sequence[TraceRow], count: int, warmups: bool) -> list[PlannedRequest]:
    block = settings.trace_chunk_hash_size
    t0 = rows[0].timestamp if rows else 0.0
    out = []
    for i, row in enumerate(rows[:count]):
        if warmups:  # the trace's first shapes, text of their own, sent before the replay starts
            out.append(PlannedRequest((Segment(f"w{i}", row.input_len),), row.output_len, 0.0))
            continue
        segments: list[Segment] = []
        left = row.input_len
        for h in row.hash_ids:
            size = min(block, left)
            segments.append(Segment(f"h{h}:{size}", size))  # vLLM's cache key has the size: a cut block differs
            left -= size
            if left <= 0:
                break
        if left > 0:
            segments.append(Segment(f"r{i}", left))
        out.append(PlannedRequest(tuple(segments), row.output_len, (row.timestamp - t0) * settings.time_scale))
    return out


def plan_requests(settings: LoadSettings, *, warmups: bool = False) -> tuple[PlannedRequest, ...]:
    """The measured requests (or, with ``warmups``, the ``num_warmups`` warm-up requests) of a generated workload.

    Args:
        settings: The load; ``dataset_name`` one of :data:`GENERATED` (trace datasets need ``trace_rows``).
        warmups: Plan the warm-up requests instead: for ``prefix_repetition`` they carry the prefixes in turn (so
            with ``flush_cache`` they prime the cache: "flush, prime, measure"); elsewhere prompts of their own.

    Returns:
        The requests in send order (conversations: turn by turn, a conversation's turns together).

    Raises:
        InvalidParameterError: a dataset :func:`plan_requests` does not build, or a trace without rows.

    Example:
        >>> s = LoadSettings(dataset_name="prefix_repetition", num_prompts=4, num_prefixes=2, prefix_len=8,
        ...                  suffix_len=2)
        >>> sorted(r.segments[0].key for r in plan_requests(s))
        ['p0', 'p0', 'p1', 'p1']
    """
    name = settings.dataset_name
    count = settings.num_warmups if warmups else settings.num_prompts
    if name not in GENERATED:
        raise InvalidParameterError("dataset_name", name, ", ".join(GENERATED))
    if count == 0:
        return ()
    if name == "prefix_repetition":
        return tuple(_prefix_repetition(settings, count, warmups))
    if name == "multi_turn":
        return tuple(_multi_turn(settings, count, warmups))
    if not settings.trace_rows:
        raise InvalidParameterError("trace_rows", "none", f"the rows of a {name} file")
    return tuple(_trace(settings, settings.trace_rows, count, warmups))


def reusable_prefix_tokens(planned: Sequence[PlannedRequest]) -> tuple[int, ...]:
    """Tokens at the start of each prompt that repeat the start of an earlier prompt of ``planned`` (send order).

    The longest run of leading segments a prompt shares with any earlier prompt, in tokens: the most an unbounded
    prefix cache could serve from cache, before block rounding (vLLM caches whole blocks and always computes a
    prompt's last token). Later turns of a conversation are left at 0 here: their reuse (the conversation so far)
    is only known once the answers are (:attr:`planner.loadtest.runner.LoadResult.reusable_prefix_share`).

    Example:
        >>> a, b = Segment("p0", 8), Segment("s1", 2)
        >>> reusable_prefix_tokens([PlannedRequest((a, b), 1), PlannedRequest((a, Segment("s2", 2)), 1)])
        (0, 8)
    """
    seen: set[tuple[str, ...]] = set()
    out = []
    for request in planned:
        keys = tuple(s.key for s in request.segments)
        shared = 0
        if request.conversation is None or request.turn == 0:
            for n in range(len(keys), 0, -1):
                if keys[:n] in seen:
                    shared = sum(s.tokens for s in request.segments[:n])
                    break
        for n in range(1, len(keys) + 1):
            seen.add(keys[:n])
        out.append(shared)
    return tuple(out)


def sampled_words(key: str, n_words: int, seed: int = 0) -> str:
    """``n_words`` words of :data:`planner.loadtest.workload.WORDS` (one token each on the common tokenizers), drawn
    with a generator seeded by ``(seed, key)``: the same key always gives the same text (Python's ``random.seed`` of
    a string is stable across runs and machines)."""
    rng = random.Random(f"{seed}:{key}")
    return " ".join(rng.choice(WORDS) for _ in range(max(1, n_words)))


@dataclass(frozen=True)
class RenderedSegments:
    """The text (or token ids) of every segment name of a run.

    Attributes:
        texts: Segment name → its text (always present: token-id prompts keep it as a label source).
        token_ids: Segment name → its token ids, when the prompts are sent as ids; None otherwise.
        tokens_per_word: The server tokenizer's tokens per word of the word list (1.0 when it was not asked).
        method: ``token_ids`` (exact by construction), ``calibrated`` (word counts scaled by the tokenizer's
            tokens per word) or ``estimate`` (one word per token, no tokenizer route).
    """

    texts: Mapping[str, str]
    token_ids: Mapping[str, tuple[int, ...]] | None
    tokens_per_word: float
    method: str

    def prompt(self, segments: Sequence[Segment]) -> str:
        """The prompt text of ``segments``: their texts joined by single spaces."""
        return " ".join(self.texts[s.key] for s in segments)

    def prompt_ids(self, segments: Sequence[Segment]) -> tuple[int, ...] | None:
        """The token ids of ``segments`` (concatenated); None for text prompts."""
        if self.token_ids is None:
            return None
        return tuple(i for s in segments for i in self.token_ids[s.key])


async def render_segments(
    endpoint: Endpoint,
    info: EndpointInfo,
    planned: Sequence[PlannedRequest],
    *,
    seed: int = 0,
    token_ids: bool = False,
    sizing: str = "tokenize",
    timeout_s: float = 10.0,
    secrets: Mapping[str, Any] | None = None,
) -> RenderedSegments:
    """Text (or token ids) for every segment name of ``planned``, sized with the server's tokenizer.

    Text: each name gets :func:`sampled_words` of ``round(tokens / k)`` words, k the tokens per word the server's
    tokenizer route counts on a 256-word sample (one call; 1 without a route or with ``sizing="words"``); the first
    64 names are then counted once each and their word counts moved by the miss, so the lengths are exact on
    word-level tokenizers and within a word on byte-level ones; the run's input check compares them with the
    server's ``usage.prompt_tokens``. Token ids (``token_ids=True``; vLLM and SGLang completions): each name gets
    exactly its tokens, drawn (seeded by its name) from the ids of the server's own tokens of the word list, so
    the lengths are exact by construction.

    Returns:
        The :class:`RenderedSegments`.
    """
    sizes = {s.key: s.tokens for r in planned for s in r.segments}
    sample = sampled_words("calibration", 256, seed)
    ids = None
    if sizing != "words" or token_ids:
        ids = await tokenize_text(endpoint, info, sample, timeout_s=timeout_s, secrets=secrets)
    per_word = len(ids) / 256 if ids else 1.0
    words = {key: max(1, round(n / per_word)) for key, n in sizes.items()}
    if ids and not token_ids:
        # one correcting count per segment (the first 64): drawn words vary in length on byte-level tokenizers
        sem = asyncio.Semaphore(8)

        async def correct(key: str) -> None:
            async with sem:
                found = await tokenize_text(
                    endpoint, info, sampled_words(key, words[key], seed), timeout_s=timeout_s, secrets=secrets
                )
            if found:
                words[key] = max(1, words[key] + round((sizes[key] - len(found)) / per_word))

        await asyncio.gather(*(correct(key) for key in list(sizes)[:_MAX_COUNTS]))
    texts = {key: sampled_words(key, n, seed) for key, n in words.items()}
    if token_ids and ids:
        pool = sorted(set(ids))
        table = {key: tuple(random.Random(f"{seed}:{key}").choices(pool, k=n)) for key, n in sizes.items()}
        return RenderedSegments(texts, table, per_word, "token_ids")
    return RenderedSegments(texts, None, per_word, "calibrated" if ids else "estimate")
