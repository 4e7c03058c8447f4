"""A scripted OpenAI-compatible server: every generation request gets the stream its :class:`Script` sets, at
programmed times, and every request the server reads is recorded.

The streams it plays are the ones issue 24 found mis-measured: servers and proxies that end with ``data: [DONE]`` but
send no ``finish_reason``, a stream of ``[DONE]`` alone, several tokens per chunk with no usage at all, or only a final
usage chunk whatever ``stream_options`` asked for.

Timeline of a streamed request (``t0`` = the request was read; the head is sent at ``t0``):

* the role chunk ``delta: {"role": "assistant", "content": ""}`` at ``t0`` when :attr:`Script.role_chunk`;
* token chunk ``j`` (0-based, ``j < chunks``) at ``t0 + ttft_ms + j · gap_ms``, carrying ``tokens_per_chunk`` tokens:
  token ``k`` (1-based) is the word ``"w<k> "``, so the text of the whole answer has exactly ``chunks ·
  tokens_per_chunk`` words;
* the last token chunk carries :attr:`Script.finish_reason` (none when it is None); with no token chunk, a chunk
  with an empty delta carries it (an empty answer);
* ``usage: "final"``: a usage chunk (``choices: []``, ``completion_tokens`` = every token) after the last token chunk,
  whatever ``stream_options`` asked for (a proxy that drops per-chunk usage); ``"none"``: no usage anywhere;
* ``data: [DONE]`` when :attr:`Script.done`; then the chunked body ends.

So the truth a client must report: TTFT = ``ttft_ms``, E2E = ``ttft_ms + (chunks − 1) · gap_ms``, ``chunks ·
tokens_per_chunk`` output tokens, TPOT = ``(chunks − 1) · gap_ms / (chunks · tokens_per_chunk − 1)``, and an ITL of
``gap_ms / tokens_per_chunk`` per token (``gap_ms`` per chunk).

Tokenizer: one token per whitespace-separated word (ids 1, 2, ...). With :attr:`Script.tokenize` the server answers
vLLM's and SGLang's ``POST /tokenize`` (``{"model", "prompt", ...}`` → ``{"count", "max_model_len", "tokens"}``,
``vllm/entrypoints/openai/protocol.py``) and TGI's (``{"inputs"}`` → ``[{"id", "text", "start", "stop"}]``, TGI
``docs/openapi.json`` ``TokenizeResponse``); without it ``/tokenize`` is 404, as on a server that has none.

Routes: ``GET /health``, ``/v1/models`` (``max_model_len`` 4096), ``/version``, ``/info`` (TGI); ``POST
/v1/chat/completions``, ``/v1/completions`` (``choices[0].text``), ``/tokenize``; anything else 404. The server is
:class:`tests.servers.faulty.FaultyServer`'s asyncio server on an ephemeral 127.0.0.1 port, in a background thread.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

from tests.servers.faulty import FaultyServer, _Conn

__all__ = ["MODEL_ID", "Script", "ScriptedServer", "words"]

MODEL_ID = "scripted-model"
_MAX_MODEL_LEN = 4096


def words(first: int, n: int) -> str:
    """The text of tokens ``first`` .. ``first + n − 1`` (1-based): ``"w<k> "`` each."""
    return "".join(f"w{k} " for k in range(first, first + n))


@dataclass(frozen=True)
class Script:
    """The stream every generation request gets (see the module docstring).

    Attributes:
        ttft_ms: First token chunk after the request was read, ms.
        gap_ms: Gap between token chunks, ms.
        chunks: Token chunks (0 = none: the stream is the role chunk, the usage and ``[DONE]`` as set).
        tokens_per_chunk: Tokens (words) in each token chunk.
        finish_reason: On the last token chunk; None = never sent.
        usage: ``"final"`` (one usage chunk after the tokens) or ``"none"``.
        done: End with ``data: [DONE]``.
        role_chunk: Send vLLM's role chunk first.
        tokenize: Serve ``POST /tokenize``.
    """

    ttft_ms: float = 50.0
    gap_ms: float = 40.0
    chunks: int = 12
    tokens_per_chunk: int = 4
    finish_reason: str | None = "stop"
    usage: str = "final"
    done: bool = True
    role_chunk: bool = True
    tokenize: bool = False

    @property
    def output_tokens(self) -> int:
        """Tokens of the whole answer."""
        return self.chunks * self.tokens_per_chunk


class ScriptedServer(FaultyServer):
    """The scripted server, a context manager (``url`` once started).

    Args:
        script: The stream every generation request gets.

    Attributes:
        received: ``(method, path, body)`` of every request read, oldest first (``body`` parsed JSON, {} if none).
    """

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script
        self.received: list[tuple[str, str, Any]] = []

    def bodies(self, path: str) -> list[Any]:
        """The bodies of the POST requests to ``path``, oldest first."""
        return [body for method, p, body in self.received if method == "POST" and p == path]

    async def _one(self, conn: _Conn) -> bool:
        method, target, _, raw = await conn.request()
        t0 = asyncio.get_running_loop().time()
        body = json.loads(raw) if raw else {}
        path = target.split("?", 1)[0].rstrip("/") or "/"
        self.received.append((method, path, body))
        if method == "GET" and path == "/health":
            await conn.body(200, b"")
        elif method == "GET" and path == "/v1/models":
            model = {"id": MODEL_ID, "object": "model", "max_model_len": _MAX_MODEL_LEN}
            await conn.body(200, json.dumps({"object": "list", "data": [model]}).encode())
        elif method == "GET" and path == "/version":
            await conn.body(200, b'{"version": "0-scripted"}')
        elif method == "GET" and path == "/info":
            info = {"model_id": MODEL_ID, "max_input_tokens": 4000, "max_total_tokens": _MAX_MODEL_LEN}
            await conn.body(200, json.dumps(info).encode())
        elif method == "POST" and path == "/tokenize" and self.script.tokenize:
            await conn.body(200, json.dumps(_tokenize(body)).encode())
        elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
            await self._stream(conn, t0, chat=path.endswith("chat/completions"))
        else:
            await conn.body(404, json.dumps({"error": f"no route {method} {path}"}).encode())
        return True

    async def _stream(self, conn: _Conn, t0: float, *, chat: bool) -> None:
        s = self.script
        loop = asyncio.get_running_loop()
        await conn.head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        if s.role_chunk and chat:
            await conn.event(_chunk({"role": "assistant", "content": ""}, None, chat=True))
        for j in range(s.chunks):
            await asyncio.sleep(max(0.0, t0 + (s.ttft_ms + j * s.gap_ms) / 1000 - loop.time()))
            last = j == s.chunks - 1
            text = words(j * s.tokens_per_chunk + 1, s.tokens_per_chunk)
            await conn.event(_chunk({"content": text}, s.finish_reason if last else None, chat=chat))
        if not s.chunks and s.finish_reason is not None:  # an empty answer, as llama-cpp-python ends one
            await conn.event(_chunk({}, s.finish_reason, chat=chat))
        if s.usage == "final":
            usage = {"prompt_tokens": 9, "completion_tokens": s.output_tokens, "total_tokens": 9 + s.output_tokens}
            await conn.event({"id": "scripted", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        if s.done:
            await conn.event("[DONE]")
        await conn.end()


def _chunk(delta: dict[str, Any], finish: str | None, *, chat: bool) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if chat:
        choice["delta"] = delta
    else:
        choice["text"] = delta.get("content", "")
    kind = "chat.completion.chunk" if chat else "text_completion"
    return {"id": "scripted", "object": kind, "created": 0, "model": MODEL_ID, "choices": [choice]}


def _tokenize(body: Any) -> Any:
    """vLLM/SGLang ``{"model", "prompt"}`` or TGI ``{"inputs"}``: one token per word."""
    if isinstance(body, dict) and "inputs" in body:
        return [
            {"id": i, "text": m.group(), "start": m.start(), "stop": m.end()}
            for i, m in enumerate(re.finditer(r"\S+", str(body["inputs"])), start=1)
        ]
    text = body.get("prompt", "") if isinstance(body, dict) else ""
    ids = list(range(1, len(str(text).split()) + 1))
    return {"count": len(ids), "max_model_len": _MAX_MODEL_LEN, "tokens": ids}
