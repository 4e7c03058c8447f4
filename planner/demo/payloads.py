"""The demo server's response bodies, in vLLM's shapes: streamed ``chat.completion.chunk`` / ``text_completion``
events, the ``usage`` object, and the whole body of a non-streamed answer."""

from __future__ import annotations

from typing import Any

from planner.demo.script import token_text
from planner.demo.state import PROMPT_TOKENS, STATE

__all__ = ["answer_chunk", "chat_chunk", "usage_of", "whole_answer"]


def chat_chunk(delta: dict, finish: str | None, usage: dict | None) -> dict:
    """One ``chat.completion.chunk`` event with this ``delta``, ``finish_reason`` and, when given, ``usage``."""
    out: dict[str, Any] = {
        "id": "chatcmpl-timed",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": STATE.model_id,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def usage_of(n: int, n_prompt: int = PROMPT_TOKENS) -> dict:
    """The ``usage`` object of an answer of ``n`` tokens to a prompt of ``n_prompt`` tokens."""
    return {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}


def answer_chunk(completions: bool, text: str, finish: str | None, usage: dict | None) -> dict:
    """One streamed event of an answer: a ``text_completion`` choice with ``text`` on ``/v1/completions``, a
    ``chat.completion.chunk`` with ``delta.content`` on chat (vLLM's shapes)."""
    if not completions:
        return chat_chunk({"content": text}, finish, usage)
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
    out = {"id": "cmpl-timed", "object": "text_completion", "created": 0, "model": STATE.model_id, "choices": [choice]}
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
    return {**head, "created": 0, "model": STATE.model_id, "choices": [choice], "usage": usage_of(n, n_prompt)}
