"""Load-test workloads: prompts files, example prompts, and synthetic prompts of an exact token length.

* :func:`parse_prompts_jsonl` reads a JSONL prompts file the way ``vllm bench serve --dataset-name custom`` does
  (vllm-project/vllm ``vllm/benchmarks/datasets.py`` ``CustomDataset``, later ``vllm/benchmarks/datasets/custom.py``:
  one JSON object per line with a ``"prompt"`` key), and also accepts ``"text"`` and chat ``"messages"`` lines.
* :data:`EXAMPLE_PROMPTS` is a small, varied prompt set of our own (see its note).
* :func:`synthetic_text` builds the synthetic prompts of :mod:`planner.loadtest.runner`; :func:`calibrate_prompt` and
  :func:`calibrate_prompts` adjust them until the server's own tokenizer (``/tokenize`` routes, see
  :func:`planner.serving.discovery.tokenize_text`) counts exactly the asked-for number of tokens;
  :func:`token_id_prompts` builds prompts of token ids instead (exact by construction);
  :func:`chat_template_tokens` measures what the chat template adds.

What "exact" means: the prompt TEXT has exactly the asked-for tokens under the server's tokenizer, without special
tokens, as ``vllm bench serve --dataset-name random`` sizes its prompts (``--random-input-len``); the chat template
then adds its fixed few tokens on the server (``usage.prompt_tokens`` = text + template), on every engine alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.errors import InvalidParameterError
from planner.loadtest.article import ARTICLE_PROMPTS
from planner.parsing import json_lines, json_value
from planner.serving.discovery import EndpointInfo, count_prompt_tokens, tokenize_text
from planner.serving.endpoints import Endpoint

__all__ = [
    "ACCEPTED_LINES",
    "EXAMPLE_PROMPTS",
    "MAX_DATASET_BYTES",
    "WORDS",
    "CalibratedPrompt",
    "InputCalibration",
    "calibrate_prompt",
    "calibrate_prompts",
    "chat_template_tokens",
    "example_prompts",
    "parse_prompts_jsonl",
    "synthetic_text",
    "token_id_prompts",
]

# --- prompts files ---------------------------------------------------------------------------------------------------
#: What one line of a prompts file may hold (shown in every parse error).
ACCEPTED_LINES = (
    'a JSON object with a non-empty string "prompt" (vLLM custom dataset) or "text", or "messages": '
    '[{"role": "user", "content": "..."}, ...] (the first user message is used)'
)
#: Largest prompts file read, bytes.
MAX_DATASET_BYTES = 16 * 2**20


def _prompt_of(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    for key in ("prompt", "text"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value
    messages = obj.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) and content.strip() else None
    return None


def parse_prompts_jsonl(
    data: bytes | str, *, max_prompts: int = 10_000, max_bytes: int = MAX_DATASET_BYTES
) -> tuple[str, ...]:
    """Prompts of a JSONL file, in file order; blank lines are skipped.

    Each line is a JSON object with a ``"prompt"`` string (the key of vLLM's ``CustomDataset``; its optional
    ``"output_tokens"`` is ignored here: ``output_len`` applies), else a ``"text"`` string, else ``"messages"``
    (OpenAI chat style) whose first ``user`` message is taken, as vLLM's ShareGPT loader takes the first turn of
    a conversation. Other keys are ignored.

    Args:
        data: The file's bytes (UTF-8) or text.
        max_prompts: Most prompts accepted (≥ 1).
        max_bytes: Largest accepted size, bytes (default 16 MiB).

    Returns:
        The prompts.

    Raises:
        InvalidParameterError: the file is too large, not UTF-8, empty, has more than ``max_prompts`` prompts,
            or a line is not accepted; the message names the line number and what a line may hold.

    Example:
        >>> parse_prompts_jsonl('{"prompt": "Hi"}\\n{"text": "Bye"}\\n')
        ('Hi', 'Bye')
    """
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise InvalidParameterError("dataset", f"{size:,} bytes", f"a JSONL file of at most {max_bytes:,} bytes")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidParameterError("dataset", f"byte {exc.start}", "UTF-8 text, one JSON object a line") from exc
    prompts: list[str] = []
    for number, line in json_lines(data):
        if not line.strip():
            continue
        obj = json_value(line, name="dataset", accepted=ACCEPTED_LINES, line=number)
        prompt = _prompt_of(obj)
        if prompt is None:
            raise InvalidParameterError(f"dataset line {number}", line, ACCEPTED_LINES)
        if len(prompts) >= max_prompts:
            raise InvalidParameterError("dataset", f"more than {max_prompts:,} prompts", f"at most {max_prompts:,}")
        prompts.append(prompt)
    if not prompts:
        raise InvalidParameterError("dataset", "no prompt", f"at least one line holding {ACCEPTED_LINES}")
    return tuple(prompts)


# --- example prompts -------------------------------------------------------------------------------------------------
#: The source article's eight prompts (:data:`planner.loadtest.article.ARTICLE_PROMPTS`), each with a short name.
EXAMPLE_PROMPTS: tuple[tuple[str, str], ...] = tuple(
    zip(
        ("python", "haiku", "gravity", "languages", "light", "photosynthesis", "machine-learning", "planets"),
        ARTICLE_PROMPTS,
        strict=True,
    )
)


def example_prompts() -> tuple[str, ...]:
    """The prompts of :data:`EXAMPLE_PROMPTS`, in order: the article's eight, from its continuous-batching demo."""
    return tuple(prompt for _, prompt in EXAMPLE_PROMPTS)


# --- synthetic prompts -----------------------------------------------------------------------------------------------
# Very common short English words: each is one token, with or without a leading space, in the Llama 2/3, Qwen,
# Mistral and Gemma tokenizers, so a prompt costs its word count plus the chat template's fixed overhead, and
# rotating the words (done per request so no two prompts share a prefix a prefix cache could reuse) keeps the count.
_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there would their we him been has when who will more no if out so said what up its about "
    "into than them can only other new some could time these two may then do first any my now such like our over "
    "man me even most made after also did many before must through back years where much your way well down"
)
#: The word list of the synthetic prompts (each word one token on the Llama, Qwen, Mistral and Gemma tokenizers).
WORDS: tuple[str, ...] = tuple(_TEXT.split(" "))
_WORDS = WORDS


def synthetic_text(n_words: int, offset: int = 0) -> str:
    """``n_words`` words of the built-in word list, starting at word ``offset`` (cycled)."""
    return " ".join(_WORDS[(offset + i) % len(_WORDS)] for i in range(max(1, n_words)))


@dataclass(frozen=True)
class CalibratedPrompt:
    """A synthetic prompt sized by the server's tokenizer.

    Attributes:
        text: The prompt.
        words: Its word count.
        target_tokens: Tokens asked for.
        counted_tokens: Tokens the server's tokenizer route counted; None when it has none (or it failed).
        method: ``"exact (server /tokenize)"`` when ``counted_tokens == target_tokens``, ``"nearest (server
            /tokenize)"`` when no word count hits it, or ``"estimate (words)"`` without a tokenizer route.
        tokens_per_word: The tokenizer's tokens per word of the word list (the slope between the counts made; the
            count over the words when only one was made).
        counts: Tokenizer calls made.
    """

    text: str
    words: int
    target_tokens: int
    counted_tokens: int | None
    method: str
    tokens_per_word: float = 1.0
    counts: int = 0


EXACT = "exact (server /tokenize)"
NEAREST = "nearest (server /tokenize)"
ESTIMATE = "estimate (words)"
TOKEN_IDS = "exact (token ids)"


async def _count(
    endpoint: Endpoint, info: EndpointInfo, text: str, timeout_s: float, secrets: Mapping[str, Any] | None
) -> int | None:
    ids = await tokenize_text(endpoint, info, text, timeout_s=timeout_s, secrets=secrets)
    return None if ids is None else len(ids)


def _cut(offset: int, chars: int) -> str:
    """The first ``chars`` characters of the word list from word ``offset`` (a prompt sized by characters)."""
    return synthetic_text(max(1, chars), offset)[: max(1, chars)]


async def _refine(
    endpoint: Endpoint,
    info: EndpointInfo,
    text: str,
    counted: int,
    target: int,
    offset: int,
    timeout_s: float,
    secrets: Mapping[str, Any] | None,
    rounds: int = 2,
) -> tuple[str, int, int]:
    """Move the end of ``text`` by characters until the server counts ``target`` tokens, at most ``rounds`` counts.

    Words are too coarse where a word is several tokens (byte-level, CJK); the step is the miss times the prompt's
    characters per token. Returns ``(text, its count, counts made)``; the closest text is kept.
    """
    used = 0
    for _ in range(rounds if counted != target else 0):
        step = round((target - counted) * len(text) / max(counted, 1)) or (1 if target > counted else -1)
        candidate = _cut(offset, len(text) + step)
        if not candidate.strip() or candidate == text:
            break
        found = await _count(endpoint, info, candidate, timeout_s, secrets)
        used += 1
        if found is None:
            break
        if abs(found - target) < abs(counted - target):
            text, counted = candidate, found
        if counted == target:
            break
    return text, counted, used


async def calibrate_prompt(
    endpoint: Endpoint,
    info: EndpointInfo,
    target_tokens: int,
    *,
    offset: int = 0,
    start_words: int | None = None,
    max_rounds: int = 6,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> CalibratedPrompt:
    """A synthetic prompt whose server-counted tokens equal ``target_tokens`` (when any word count gives it).

    Count once, then move the word count by the miss (secant step over the last two counts; one token per word
    for the first step), recount; at most ``max_rounds`` counts. The closest prompt is kept (ties: the shorter).
    If it still misses, its end is moved by characters (the miss times the prompt's characters per token, at most
    two more counts), which makes it exact on byte-level tokenizers, where one word is several tokens.

    Args:
        endpoint: The endpoint.
        info: Its discovery result (the model id is needed by vLLM's ``/tokenize``).
        target_tokens: Tokens wanted (≥ 1).
        offset: Word-list rotation of the prompt (see :func:`synthetic_text`).
        start_words: First word count to try; default ``target_tokens``.
        max_rounds: Most tokenizer calls (≥ 1).
        timeout_s: Timeout of each tokenizer call, seconds.
        secrets: Optional mapping holding the API key.

    Returns:
        The :class:`CalibratedPrompt`; ``method`` says whether the count is exact, nearest or an estimate.

    Raises:
        InvalidParameterError: ``target_tokens`` or ``max_rounds`` < 1.
    """
    if isinstance(target_tokens, bool) or not isinstance(target_tokens, int) or target_tokens < 1:
        raise InvalidParameterError("target_tokens", target_tokens, "an integer ≥ 1")
    if not isinstance(max_rounds, int) or max_rounds < 1:
        raise InvalidParameterError("max_rounds", max_rounds, "an integer ≥ 1")
    words = max(1, start_words if start_words is not None else target_tokens)
    tried: dict[int, int] = {}
    history: list[tuple[int, int]] = []
    for _ in range(max_rounds):
        counted = await _count(endpoint, info, synthetic_text(words, offset), timeout_s, secrets)
        if counted is None:
            if not tried:
                return CalibratedPrompt(
                    synthetic_text(target_tokens, offset), target_tokens, target_tokens, None, ESTIMATE
                )
            break
        tried[words] = counted
        history.append((words, counted))
        if counted == target_tokens:
            break
        if len(history) >= 2 and history[-1][0] != history[-2][0] and history[-1][1] != history[-2][1]:
            (w1, c1), (w2, c2) = history[-2], history[-1]
            slope = (c2 - c1) / (w2 - w1)
        else:
            slope = 1.0
        step = round((target_tokens - counted) / slope) if slope > 0 else target_tokens - counted
        nxt = max(1, words + (step or (1 if target_tokens > counted else -1)))
        if nxt in tried:
            # The tokenizer's granularity skips the target: try the unvisited neighbour once, else stop.
            nxt = next((w for w in (nxt + 1, nxt - 1) if w >= 1 and w not in tried), None)
            if nxt is None:
                break
        words = nxt
    best_words = min(tried, key=lambda w: (abs(tried[w] - target_tokens), w))
    counted = tried[best_words]
    points = sorted(tried.items())
    if len(points) >= 2 and points[-1][0] != points[0][0]:
        per_word = (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
    else:
        per_word = counted / best_words
    per_word = per_word if per_word > 0 else 1.0
    text, counted, extra = await _refine(
        endpoint, info, synthetic_text(best_words, offset), counted, target_tokens, offset, timeout_s, secrets
    )
    used = len(history) + extra
    method = EXACT if counted == target_tokens else NEAREST
    return CalibratedPrompt(text, len(text.split()), target_tokens, counted, method, per_word, used)


@dataclass(frozen=True)
class InputCalibration:
    """How the input lengths of a run's synthetic prompts were set.

    Attributes:
        method: ``"exact"`` (every prompt counted by the server, every count equal to its target), ``"segments"``
            (a generated workload's shared and own segments, each sized with the server's tokenizer), ``"calibrated"``
            (sized from a calibrated prompt, only some counted), ``"nearest"`` (counted, some miss the target), or
            ``"estimate"`` (no tokenizer route: words ≈ tokens).
        total: Prompts built.
        counted: Prompts whose tokens the server counted.
        exact: Counted prompts equal to their target.
        overhead_tokens: Tokens of the calibrated prompt beyond its word count; None without a tokenizer route.
        template_tokens: Tokens the server's chat template adds to a prompt (:func:`chat_template_tokens`; 0 for
            token-id prompts, which take no template); None when the server cannot say.
    """

    method: str
    total: int
    counted: int = 0
    exact: int = 0
    overhead_tokens: int | None = None
    template_tokens: int | None = None

    @property
    def input_tokens_method(self) -> str:
        """How input lengths were set, as result files name it: ``token_ids``, ``server_tokenize`` or ``words``."""
        if self.method == "token_ids":
            return "token_ids"
        return "words" if self.method == "estimate" else "server_tokenize"

    @property
    def label(self) -> str:
        """A short label for a page, e.g. ``"exact (server /tokenize)"`` or ``"estimate (words)"``."""
        if self.method == "estimate":
            return ESTIMATE
        if self.method == "token_ids":
            return TOKEN_IDS
        if self.method == "exact":
            return EXACT
        if self.method == "segments":
            return "segments sized by the server's /tokenize"
        return f"{self.method} (server /tokenize: {self.exact} of {self.total} prompts counted exact)"


async def calibrate_prompts(
    endpoint: Endpoint,
    info: EndpointInfo,
    targets: Sequence[tuple[int, int]],
    *,
    max_counts: int = 64,
    concurrency: int = 8,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> tuple[tuple[str, ...], tuple[int, ...], InputCalibration]:
    """Synthetic prompts for ``(target_tokens, offset)`` pairs, sized by the server's tokenizer where it has one.

    Cost is bounded so big runs stay fast: ONE prompt (the first target) is calibrated with
    :func:`calibrate_prompt`; that gives the tokens per word k, and every other prompt gets
    ``words = words₀ + round((target − target₀) / k)`` words, or, where the second prompt shows that characters
    keep the count better than words (a byte-level tokenizer), ``chars₀ × target / target₀`` characters. Then at
    most ``max_counts`` tokenizer calls in all (``concurrency`` at a time) count the prompts in order, and any
    counted miss has its end moved by characters while the budget lasts. Runs of up to roughly ``max_counts − 6``
    prompts are therefore exact prompt by prompt; beyond that, the uncounted prompts rely on the calibration
    (method ``"calibrated"``).

    Args:
        endpoint: The endpoint.
        info: Its discovery result.
        targets: ``(target_tokens ≥ 1, word offset)`` per prompt.
        max_counts: Budget of tokenizer calls (≥ 1).
        concurrency: Tokenizer calls in flight at once (≥ 1).
        timeout_s: Timeout of each tokenizer call, seconds.
        secrets: Optional mapping holding the API key.

    Returns:
        ``(texts, tokens, calibration)``: the prompts, their token counts (the server's count when counted, else
        the target), and how they were sized.

    Raises:
        InvalidParameterError: a target < 1, or ``max_counts`` / ``concurrency`` < 1.
    """
    if not targets:
        return (), (), InputCalibration("estimate", 0)
    for name, value in (("max_counts", max_counts), ("concurrency", concurrency)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidParameterError(name, value, "an integer ≥ 1")
    t0, off0 = targets[0]
    base = await calibrate_prompt(endpoint, info, t0, offset=off0, timeout_s=timeout_s, secrets=secrets)
    if base.counted_tokens is None:
        texts = tuple(synthetic_text(t, off) for t, off in targets)
        return texts, tuple(t for t, _ in targets), InputCalibration("estimate", len(targets))
    budget = max(0, max_counts - 6)

    def by_words(t: int, off: int) -> str:
        return synthetic_text(max(1, base.words + round((t - t0) / base.tokens_per_word)), off)

    def by_chars(t: int, off: int) -> str:
        return _cut(off, round(len(base.text) * t / t0))

    texts = [by_words(t, off) for t, off in targets]
    texts[0] = base.text  # the calibrated prompt itself (its end may have been moved by characters)
    counts: list[int | None] = [None] * len(targets)
    counts[0] = base.counted_tokens
    spent = 0
    if len(targets) > 1 and budget >= 1:
        # Words or characters? Where a word is one token, rotating the word list keeps the count; where a word
        # is several (byte-level tokenizers), its characters do. The second prompt decides for the others.
        (t1, off1), spent = targets[1], 1
        counts[1] = await _count(endpoint, info, texts[1], timeout_s, secrets)
        if counts[1] is not None and counts[1] != t1 and spent < budget:
            alt, spent = by_chars(t1, off1), spent + 1
            found = await _count(endpoint, info, alt, timeout_s, secrets)
            if found is not None and abs(found - t1) < abs(counts[1] - t1):
                texts[1], counts[1] = alt, found
                texts[2:] = [by_chars(t, off) for t, off in targets[2:]]
    sem = asyncio.Semaphore(concurrency)

    async def check(i: int) -> None:
        async with sem:
            counts[i] = await _count(endpoint, info, texts[i], timeout_s, secrets)

    to_check = list(range(2, len(targets)))[: max(0, budget - spent)]
    await asyncio.gather(*(check(i) for i in to_check))
    spent += len(to_check)
    for i in [1, *to_check] if len(targets) > 1 else []:
        target, offset = targets[i]
        current = counts[i]
        if current is None or current == target or spent + 2 > budget:
            continue
        texts[i], counts[i], used = await _refine(endpoint, info, texts[i], current, target, offset, timeout_s, secrets)
        spent += used
    counted = sum(c is not None for c in counts)
    exact = sum(c == t for c, (t, _) in zip(counts, targets, strict=True))
    if counted == exact == len(targets):
        method = "exact"
    elif exact < counted:
        method = "nearest"
    else:
        method = "calibrated"
    calibration = InputCalibration(method, len(targets), counted, exact, base.counted_tokens - base.words)
    tokens = tuple(c if c is not None else t for c, (t, _) in zip(counts, targets, strict=True))
    return tuple(texts), tokens, calibration


async def token_id_prompts(
    endpoint: Endpoint,
    info: EndpointInfo,
    targets: Sequence[tuple[int, int]],
    *,
    timeout_s: float = 10.0,
    secrets: Mapping[str, Any] | None = None,
) -> tuple[tuple[tuple[int, ...], ...], InputCalibration] | None:
    """Prompts of exactly ``target`` token ids each, for the completions route of vLLM and SGLang.

    The ids are the server's own tokens of the synthetic word list (one :func:`planner.serving.discovery.
    tokenize_text` call on a text of ``max(target)`` words, so every id exists in its vocabulary), taken cyclically
    from a start that moves with each prompt's offset, so no two prompts share a prefix a prefix cache could reuse.
    ``vllm bench serve``'s random dataset draws its prompts as token ids too (``vllm/benchmarks/datasets.py``
    ``RandomDataset``); here the server receives the ids themselves, so the length is exact by construction.

    Args:
        endpoint: The endpoint (kind ``vllm`` or ``sglang``).
        info: Its discovery result (the model id is needed by ``/tokenize``).
        targets: ``(tokens ≥ 1, offset)`` per prompt.
        timeout_s: Timeout of the tokenizer call, seconds.
        secrets: Optional mapping holding the API key.

    Returns:
        ``(ids per prompt, calibration)``; None when the server gave no token ids (no tokenizer route).
    """
    if not targets:
        return (), InputCalibration("token_ids", 0, template_tokens=0)
    longest = max(t for t, _ in targets)
    ids = await tokenize_text(endpoint, info, synthetic_text(longest), timeout_s=timeout_s, secrets=secrets)
    if not ids:
        return None
    n = len(ids)
    prompts = tuple(tuple(ids[(7 * offset + j) % n] for j in range(target)) for target, offset in targets)
    return prompts, InputCalibration("token_ids", len(targets), len(targets), len(targets), template_tokens=0)


async def chat_template_tokens(
    endpoint: Endpoint,
    info: EndpointInfo,
    *,
    timeout_s: float = 5.0,
    secrets: Mapping[str, Any] | None = None,
) -> int | None:
    """Tokens the server's chat template adds to a one-message prompt: (the chat request's count) − (its text's).

    Both counts come from the server: :func:`planner.serving.discovery.count_prompt_tokens` (the template applied:
    vLLM and SGLang ``/tokenize`` with ``messages``, TGI ``/chat_tokenize``) and
    :func:`planner.serving.discovery.tokenize_text`. None where the server cannot apply its template in a tokenizer
    route (llama.cpp, generic OpenAI servers) or a count failed.
    """
    if endpoint.kind not in ("vllm", "sglang", "tgi"):
        return None
    text = synthetic_text(16)
    with_template = await count_prompt_tokens(
        endpoint, info, [{"role": "user", "content": text}], timeout_s=timeout_s, secrets=secrets, template=True
    )
    alone = await _count(endpoint, info, text, timeout_s, secrets)
    if with_template is None or alone is None or with_template < alone:
        return None
    return with_template - alone
