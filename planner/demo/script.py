"""The token timing script: how long an answer is, how its tokens are grouped into chunks and when each is due.

Token ``k`` (1-based) of an answer is ready at ``t0 + ttft + (k − 1) · itl`` (each gap grown by
``itl_per_running_ms`` per other running request); tokens go out in chunks of 1, 2, 1, 3, 1, 2, ... and a chunk is
sent when its last token is ready. A prompt's bracketed options (``[tokens=8] [ttft_ms=50] [mode=cut]``) override the
server's defaults for that request. See :mod:`planner.demo` for the whole timeline.
"""

from __future__ import annotations

import re
from typing import Any

from planner.demo.state import COMPLETIONS_DEFAULT_MAX_TOKENS, PROMPT_TOKENS, STATE

__all__ = [
    "answer_tokens",
    "chat_template",
    "chunk_sizes",
    "count_drafts",
    "drafts_of",
    "gap",
    "options",
    "prompt_tokens",
    "prompt_units",
    "token_text",
]

#: Tokens per chunk, repeated: 1, 2, 1, 3, 1, 2, 1, 3, ...
_PATTERN = (1, 2, 1, 3)


def chat_template(messages: list[dict[str, Any]]) -> str:
    """The prompt text a chat request becomes (``<|role|>`` headers, then the assistant's header), for counting."""
    parts = [f"<|{m.get('role', 'user')}|>\n{m.get('content', '')}\n" for m in messages]
    return "".join(parts) + "<|assistant|>\n"


def prompt_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a chat or completions body under the server's tokenizer: a token-id prompt counts its ids;
    else 12 (``--tokenizer fixed``) or the UTF-8 bytes of the (chat-templated) text (``--tokenizer bytes``)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        return len(prompt)
    if STATE.tokenizer != "bytes":
        return PROMPT_TOKENS
    text = prompt if isinstance(prompt, str) else chat_template(body.get("messages") or [])
    return len(text.encode("utf-8"))


def prompt_units(body: dict[str, Any]) -> list[int]:
    """The prompt's tokens for the prefix cache: a token-id prompt's ids, else the bytes of its (templated) text."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        return [int(t) for t in prompt]
    text = prompt if isinstance(prompt, str) else chat_template(body.get("messages") or [])
    return list(text.encode("utf-8"))


def drafts_of(n_tokens: int, accepted_per_draft: int) -> int:
    """Drafts an answer of ``n_tokens`` takes when each draft has its first ``accepted_per_draft`` tokens accepted:
    the first token comes from the prefill, then each draft yields the accepted tokens plus the bonus token, so
    ``ceil((n − 1) / (a + 1))`` (0 for an answer of one token or none)."""
    return -(-(n_tokens - 1) // (accepted_per_draft + 1)) if n_tokens > 1 else 0


def count_drafts(n_tokens: int) -> None:
    """Count an answer of ``n_tokens`` in the speculative-decoding counters (``--num-speculative-tokens k
    --spec-accepted-per-draft a``): :func:`drafts_of` drafts, ``a`` accepted each (not cut at ``max_tokens``)."""
    k, a = STATE.num_speculative_tokens, STATE.spec_accepted_per_draft
    if k and n_tokens > 1:
        drafts = drafts_of(n_tokens, a)
        STATE.spec_drafts += drafts
        STATE.spec_accepted += drafts * a


def answer_tokens(body: dict[str, Any], opts: dict[str, str], max_tokens: int | None, n_prompt: int) -> tuple[int, str]:
    """``(tokens, finish_reason)`` of an answer (:mod:`planner.demo`'s "Answer length"): a ``tokens=N`` option;
    else ``max_tokens``, or vLLM's default for the route when it is not given (``body`` with a ``prompt`` is
    ``/v1/completions``; ``n_prompt``: the prompt's tokens), cut at ``--eos-tokens`` unless ``ignore_eos``."""
    if "tokens" in opts:
        return int(opts["tokens"]), "length"
    if max_tokens:
        limit = int(max_tokens)
    elif "prompt" in body:
        limit = COMPLETIONS_DEFAULT_MAX_TOKENS
    else:
        limit = max(1, STATE.max_model_len - n_prompt)
    eos = STATE.eos_tokens
    if eos is None or limit <= eos or body.get("ignore_eos") is True:
        return limit, "length"
    return eos, "stop"


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


def options(prompt: str) -> dict[str, str]:
    """The prompt's bracketed options, e.g. ``"hi [mode=cut] [tokens=8]"`` → ``{"mode": "cut", "tokens": "8"}``."""
    return dict(re.findall(r"\[(\w+)=([\w.]+)\]", prompt))


def gap(itl_s: float) -> float:
    """Seconds to the next token: ``itl`` plus ``itl_per_running_ms`` for each other request running now."""
    return itl_s + STATE.itl_per_running_ms / 1000 * max(0, STATE.running - 1)
