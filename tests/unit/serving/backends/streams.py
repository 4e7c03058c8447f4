"""Server answers the backend tests replay in memory: vLLM's chat stream of 4 tokens in chunks of 1, 2 and 1 with
continuous usage (the demo server's shape, planner/demo/payloads.py), its error bodies, and TGI's native stream."""

from __future__ import annotations

import json

MODEL = "timed-model"


def _chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> dict:
    out = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return out | ({"usage": usage} if usage else {})


def _usage(n: int) -> dict:
    return {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}


def sse(*payloads: object, space: bool = True) -> bytes:
    """``data: <payload>`` events (JSON unless a string), each ended by a blank line."""
    sep = "data: " if space else "data:"
    return "".join(f"{sep}{p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads).encode()


#: Role chunk, "t1 " (1 token), "t2 t3 " (2), "t4 " (1, finish length), the usage chunk, [DONE].
CHAT_EVENTS = (
    _chunk({"role": "assistant", "content": ""}, usage=_usage(0)),
    _chunk({"content": "t1 "}, usage=_usage(1)),
    _chunk({"content": "t2 t3 "}, usage=_usage(3)),
    _chunk({"content": "t4 "}, "length", usage=_usage(4)),
    {**_chunk({}, usage=_usage(4)), "choices": []},
    "[DONE]",
)
CHAT = sse(*CHAT_EVENTS)
#: The same stream ended by the server after "t1 ": no finish reason, no [DONE].
CUT = sse(*CHAT_EVENTS[:2])
#: Two chunks, then vLLM's in-stream error payload, then [DONE] (HTTP 200).
IN_STREAM_ERROR = sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "t1 "}),
    {"error": {"message": "Engine core hit an error: CUDA out of memory", "type": "InternalServerError", "code": 500}},
    "[DONE]",
)
#: vLLM's nested error body for a request too long for the context.
CONTEXT_400 = {
    "error": {"message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError",
              "param": None, "code": 400}
}  # fmt: skip
#: TGI's /generate_stream: one token per event, ``data:`` without a space, no [DONE], the last with generated_text.
TGI_NATIVE = sse(
    *(
        {
            "index": k,
            "token": {"id": k, "text": f"t{k} ", "logprob": -0.5, "special": False},
            "generated_text": "t1 t2 t3 " if k == 3 else None,
            "details": {"finish_reason": "length", "generated_tokens": 3, "seed": None} if k == 3 else None,
        }
        for k in (1, 2, 3)
    ),
    space=False,
)
