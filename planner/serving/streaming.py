"""Normalization of streamed generation payloads and the per-request timeline recorder.

It reads the streams of vLLM and SGLang (OpenAI chat and completions chunks, ``vllm/entrypoints/openai/protocol.py``),
TGI (Messages API and ``/generate_stream``, ``docs/openapi.json``) and llama.cpp, per the SSE format of the WHATWG
HTML standard (§9.2 "Server-sent events"):

* :class:`SSEDecoder` splits a byte stream into ``data:`` payloads (with or without the space after the colon,
  ``:`` comments and ``event:``/``id:`` fields skipped, incremental UTF-8, ``[DONE]`` in any spacing ends it).
* :func:`normalize_payload` turns one parsed JSON payload of any supported server (vLLM/SGLang/OpenAI chat and
  completions, TGI Messages API and ``/generate_stream``, llama.cpp) into a :class:`Payload`.
* :class:`StreamRecorder` takes timestamped events (request sent, first byte, payloads, ``[DONE]``, failures) and
  builds a frozen :class:`RequestRecord`.

All absolute times are ``time.perf_counter()`` seconds; every ``*_s`` time of a record is relative to ``t_sent``.
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.serving.endpoints import redact

__all__ = [
    "ERROR_KINDS",
    "TOKEN_SOURCES",
    "TOKEN_SOURCE_LABELS",
    "Payload",
    "RequestRecord",
    "SSEDecoder",
    "StreamRecorder",
    "StreamUpdate",
    "TokenChunk",
    "normalize_payload",
    "one_line",
]

#: Values of :attr:`RequestRecord.error_kind`.
#: ``empty``: the stream ended normally (a finish reason or ``[DONE]``) without any text, reasoning or tool call.
#: ``worker``: the Ray load worker that held the request died before it ended (:mod:`planner.loadtest.ray_workers`).
#: ``setup``: the request was never sent because its endpoint could not be prepared (its API-key variable not set).
ERROR_KINDS: tuple[str, ...] = (
    "connect",
    "timeout",
    "http",
    "in_stream",
    "cut",
    "empty",
    "context_length",
    "cancelled",
    "worker",
    "setup",
)

#: Values of :attr:`RequestRecord.output_tokens_source`, most trusted first.
TOKEN_SOURCES: tuple[str, ...] = (
    "usage",
    "continuous_usage",
    "tgi_details",
    "tgi_events",
    "llamacpp_timings",
    "chunks_one_token_each",
    "tokenizer",
    "estimate",
)
#: How each token source reads in a table.
TOKEN_SOURCE_LABELS: dict[str, str] = {
    "usage": "server usage",
    "continuous_usage": "server usage per chunk",
    "tgi_details": "TGI details",
    "tgi_events": "TGI token events",
    "llamacpp_timings": "llama.cpp timings",
    "chunks_one_token_each": "1 per chunk",
    "tokenizer": "server tokenizer",
    "estimate": "1 per chunk, estimate",
}


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with an ellipsis.

    API keys are scrubbed first (:func:`planner.serving.endpoints.redact`): every error message a server sends passes
    through
    here, and some servers quote the ``Authorization`` header back.
    """
    flat = " ".join(redact(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- SSE framing -----------------------------------------------------------------------------------------------------
class SSEDecoder:
    """Incremental Server-Sent-Events decoder yielding the ``data`` of each event.

    Feed raw bytes as they arrive; complete events come back as strings. Lines starting with ``:`` are comments,
    ``event:``/``id:``/``retry:`` fields are ignored, ``data:`` may or may not be followed by a space, several
    ``data:`` lines of one event are joined with ``\\n``. After a ``[DONE]`` payload :attr:`done` is True and
    further input is ignored.
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self.done = False

    def feed(self, chunk: bytes) -> list[str]:
        """Decode ``chunk`` and return the data strings of the events it completes (``[DONE]`` excluded)."""
        self._buffer += self._utf8.decode(chunk)
        out: list[str] = []
        while not self.done:
            cut = min((i for i in (self._buffer.find("\n"), self._buffer.find("\r")) if i >= 0), default=-1)
            if cut < 0:
                break
            line = self._buffer[:cut]
            skip = 2 if self._buffer[cut : cut + 2] == "\r\n" else 1
            self._buffer = self._buffer[cut + skip :]
            self._line(line, out)
        return out

    def close(self) -> list[str]:
        """Flush a last event that was not followed by a blank line."""
        out: list[str] = []
        if self._buffer:
            self._line(self._buffer, out)
            self._buffer = ""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[str]) -> None:
        if self.done:
            return
        if line == "":
            if self._data:
                data = "\n".join(self._data)
                self._data = []
                if data.strip() == "[DONE]":
                    self.done = True
                else:
                    out.append(data)
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)


# --- payload normalization -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Payload:
    """One streamed JSON payload, normalized.

    Attributes:
        has_choices: The payload is a generation chunk (non-empty ``choices`` or a TGI ``token`` event).
        content: Answer text (``delta.content``, completions ``text``, or non-special TGI ``token.text``).
        reasoning: Reasoning text (``delta.reasoning`` or ``delta.reasoning_content``).
        tool_calls: Text of tool-call fragments (name and arguments concatenated); "" when none.
        has_tool_call: ``delta.tool_calls`` is non-empty (even when its fragments carry no text).
        finish_reason: ``choices[0].finish_reason`` or TGI ``details.finish_reason``; None when absent.
        usage_only: ``choices == []`` with ``usage`` (the final usage chunk).
        completion_tokens: ``usage.completion_tokens`` when the payload carries usage (cumulative when it is a
            ``continuous_usage_stats`` chunk); else None.
        prompt_tokens: ``usage.prompt_tokens`` or TGI ``details.input_length``; else None.
        tgi_event: The payload is a TGI ``/generate_stream`` event (exactly one token, possibly special).
        tgi_generated_tokens: TGI ``details.generated_tokens`` (last event with ``details: true``); else None.
        llamacpp_predicted_n: llama.cpp ``timings.predicted_n``; else None.
        ends_stream: A TGI ``/generate_stream`` event with ``generated_text`` (no ``[DONE]`` follows).
        error_message: In-stream error message (``error.message`` or the ``error`` string); None when no error.
        error_type: ``error.type`` / ``error_type``; None when absent.
        error_status: ``error.code`` / ``error.http_status_code`` when an integer; None when absent.
    """

    has_choices: bool = False
    content: str = ""
    reasoning: str = ""
    tool_calls: str = ""
    has_tool_call: bool = False
    finish_reason: str | None = None
    usage_only: bool = False
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    tgi_event: bool = False
    tgi_generated_tokens: int | None = None
    llamacpp_predicted_n: int | None = None
    ends_stream: bool = False
    error_message: str | None = None
    error_type: str | None = None
    error_status: int | None = None

    @property
    def is_error(self) -> bool:
        """True when the payload is an in-stream error."""
        return self.error_message is not None

    @property
    def has_token(self) -> bool:
        """True when the payload carries generated output: content, reasoning or a tool call."""
        return bool(self.content or self.reasoning or self.has_tool_call)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def normalize_payload(payload: Mapping[str, Any]) -> Payload:
    """Normalize one parsed stream payload of any supported server into a :class:`Payload`.

    Args:
        payload: The JSON object of one ``data:`` event (or an SDK chunk dumped with its extra fields).

    Returns:
        The normalized :class:`Payload`. Unknown fields are ignored; missing ones become ""/None.
    """
    error = payload.get("error")
    if error is not None and error != {}:
        if isinstance(error, Mapping):
            message = _str(error.get("message")) or one_line(json.dumps(error))
            etype = error.get("type") or error.get("error_type") or payload.get("error_type")
            status = _int(error.get("http_status_code")) or _int(error.get("code"))
        else:
            message, etype, status = str(error), payload.get("error_type"), None
        return Payload(
            error_message=one_line(message) or "error",
            error_type=etype if isinstance(etype, str) else None,
            error_status=status,
        )

    usage = payload.get("usage")
    completion_tokens = prompt_tokens = None
    if isinstance(usage, Mapping):
        completion_tokens = _int(usage.get("completion_tokens"))
        prompt_tokens = _int(usage.get("prompt_tokens"))
    timings = payload.get("timings")
    predicted_n = _int(timings.get("predicted_n")) if isinstance(timings, Mapping) else None

    token = payload.get("token")
    if isinstance(token, Mapping):  # TGI /generate_stream event
        details = payload.get("details")
        finish = generated = None
        if isinstance(details, Mapping):
            finish = details.get("finish_reason")
            generated = _int(details.get("generated_tokens"))
            prompt_tokens = _int(details.get("input_length"))
        return Payload(
            has_choices=True,
            content="" if token.get("special") else _str(token.get("text")),
            finish_reason=finish if isinstance(finish, str) else None,
            prompt_tokens=prompt_tokens,
            tgi_event=True,
            tgi_generated_tokens=generated,
            ends_stream=payload.get("generated_text") is not None,
        )

    choices = payload.get("choices")
    if isinstance(choices, list) and not choices:
        return Payload(
            usage_only=usage is not None,
            completion_tokens=completion_tokens,
            prompt_tokens=prompt_tokens,
            llamacpp_predicted_n=predicted_n,
        )
    if not isinstance(choices, list) or not isinstance(choices[0], Mapping):
        return Payload(
            completion_tokens=completion_tokens, prompt_tokens=prompt_tokens, llamacpp_predicted_n=predicted_n
        )
    choice = choices[0]
    delta = choice.get("delta")
    content = reasoning = tool_text = ""
    has_tool = False
    if isinstance(delta, Mapping):
        content = _str(delta.get("content"))
        reasoning = _str(delta.get("reasoning")) or _str(delta.get("reasoning_content"))
        tools = delta.get("tool_calls")
        if isinstance(tools, list) and tools:
            has_tool = True
            for call in tools:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(fn, Mapping):
                    tool_text += _str(fn.get("name")) + _str(fn.get("arguments"))
    else:
        content = _str(choice.get("text"))  # completions
    finish = choice.get("finish_reason")
    return Payload(
        has_choices=True,
        content=content,
        reasoning=reasoning,
        tool_calls=tool_text,
        has_tool_call=has_tool,
        finish_reason=finish if isinstance(finish, str) else None,
        completion_tokens=completion_tokens,
        prompt_tokens=prompt_tokens,
        llamacpp_predicted_n=predicted_n,
    )


# --- the record ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenChunk:
    """One token-bearing chunk of a stream.

    Attributes:
        t_s: Arrival time, seconds after the request was sent.
        text: Its text (content, reasoning or tool-call text).
        n_tokens: Tokens it carries (from ``continuous_usage_stats`` deltas, 1 for TGI events and llama.cpp
            chunks); None when unknown.
        kind: "content", "reasoning" or "tool_call".
    """

    t_s: float
    text: str
    n_tokens: int | None
    kind: str


@dataclass(frozen=True)
class RequestRecord:
    """What happened to one streamed request. Times are seconds after ``t_sent``; None = did not happen.

    Attributes:
        endpoint: Endpoint name.
        ok: The stream completed (finish reason or terminator seen, no error) with some output: a stream that ended
            normally without any text, reasoning or tool call failed as ``empty``.
        error: One-line error message; None when ok.
        error_kind: One of :data:`ERROR_KINDS`; None when ok.
        http_status: HTTP status of the response (or of an in-stream error when it states one); None if none.
        t_sent: Absolute ``time.perf_counter()`` when the request was handed to the client.
        first_byte_s: Response headers received.
        first_chunk_s: First payload with ``choices`` (e.g. vLLM's role chunk).
        first_token_s: First chunk carrying content, reasoning or a tool call.
        first_content_s: First chunk carrying non-reasoning content (or a tool call).
        last_token_s: Last token-bearing chunk (the usage chunk and ``[DONE]`` do not move it).
        end_s: Stream end (``[DONE]``, the last event, or the failure).
        chunks: Token-bearing chunks in arrival order.
        output_tokens: Generated tokens; None when unknown. 0 for an empty answer (a stream that ended normally
            without any token-bearing chunk and without a server count).
        output_tokens_source: Where ``output_tokens`` came from, one of :data:`TOKEN_SOURCES`; None if unknown
            (``chunks_one_token_each`` for an empty answer: zero chunks). ``estimate`` (one per token-bearing chunk)
            when the stream carried no count; :func:`planner.serving.discovery.recount_output_tokens` then counts
            the text with the server's tokenizer route (``tokenizer``).
        prompt_tokens: Prompt tokens reported by the server; None when not reported.
        text: Answer text (content and tool-call text).
        reasoning_text: Reasoning text.
        finish_reason: Server's finish reason; None when not sent.
        partial: The stream was cut or failed after some output; ``text`` holds what arrived.
        model: Model id that was requested; None when unknown.
    """

    endpoint: str
    ok: bool
    error: str | None = None
    error_kind: str | None = None
    http_status: int | None = None
    t_sent: float = 0.0
    first_byte_s: float | None = None
    first_chunk_s: float | None = None
    first_token_s: float | None = None
    first_content_s: float | None = None
    last_token_s: float | None = None
    end_s: float | None = None
    chunks: tuple[TokenChunk, ...] = ()
    output_tokens: int | None = None
    output_tokens_source: str | None = None
    prompt_tokens: int | None = None
    text: str = ""
    reasoning_text: str = ""
    finish_reason: str | None = None
    partial: bool = False
    model: str | None = None


@dataclass(frozen=True)
class StreamUpdate:
    """An incremental update for a live view, passed to ``on_event`` callbacks.

    Attributes:
        endpoint: Endpoint name.
        kind: "content", "reasoning", "tool_call" (a token-bearing chunk) or "end" (the request finished).
        t_s: Seconds after the request was sent.
        text: Text delta of the chunk ("" for "end").
        n_tokens: Tokens in the chunk when known; None otherwise.
        record: The finished record (only for "end").
    """

    endpoint: str
    kind: str
    t_s: float
    text: str = ""
    n_tokens: int | None = None
    record: RequestRecord | None = field(default=None, repr=False)


class StreamRecorder:
    """Collects the timestamped events of one streamed request and builds its :class:`RequestRecord`.

    Call :meth:`sent` first, then :meth:`first_byte`, :meth:`payload` for every parsed payload, and
    :meth:`done` on the terminator (or :meth:`terminated` when it arrives and :meth:`eof` when the body has ended) or
    :meth:`fail` on a failure; :meth:`record` builds the result. Every method takes an optional absolute ``t``
    (``time.perf_counter()`` seconds; default: now).

    Args:
        endpoint: Endpoint name put in the record.
        one_token_per_chunk: The server streams exactly one token per content chunk (llama-cpp-python), so the
            chunk count is the token count when no usage arrives.
        on_event: Called with a :class:`StreamUpdate` for every token-bearing chunk and at the end.
        model: Requested model id, copied into the record.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        one_token_per_chunk: bool = False,
        on_event: Callable[[StreamUpdate], None] | None = None,
        model: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self._one_token = one_token_per_chunk
        self.on_event = on_event
        self.t_sent: float | None = None
        self._first_byte = self._first_chunk = self._first_token = self._first_content = None
        self._last_token = self._end = None
        self._chunks: list[TokenChunk] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._usage_final: int | None = None
        self._usage_cont: int | None = None
        self._prompt_tokens: int | None = None
        self._tgi_details: int | None = None
        self._tgi_events = 0
        self._predicted_n: int | None = None
        self._finish: str | None = None
        self._done = False
        self._error: tuple[str, str, int | None] | None = None
        self._http_status: int | None = None
        self._record: RequestRecord | None = None

    @staticmethod
    def _now(t: float | None) -> float:
        return time.perf_counter() if t is None else t

    def _rel(self, t: float) -> float:
        return t - (self.t_sent if self.t_sent is not None else t)

    # events
    def sent(self, t: float | None = None) -> None:
        """The request is being handed to the client now (start of every interval)."""
        self.t_sent = self._now(t)

    def first_byte(self, t: float | None = None, *, http_status: int | None = None) -> None:
        """Response headers arrived (first time only)."""
        if self._first_byte is None:
            self._first_byte = self._rel(self._now(t))
        if http_status is not None:
            self._http_status = http_status

    def payload(self, data: Mapping[str, Any] | Payload, t: float | None = None) -> Payload:
        """Record one parsed payload (a JSON dict, or an already normalized :class:`Payload`).

        Returns:
            The normalized payload (so a caller can stop on ``ends_stream`` or ``is_error``).
        """
        now = self._rel(self._now(t))
        if self._first_byte is None:
            self._first_byte = now
        p = data if isinstance(data, Payload) else normalize_payload(data)
        if p.is_error:
            self.fail("in_stream", p.error_message or "error", http_status=p.error_status, t=t, error_type=p.error_type)
            return p
        if p.prompt_tokens is not None:
            self._prompt_tokens = p.prompt_tokens
        if p.llamacpp_predicted_n is not None:
            self._predicted_n = p.llamacpp_predicted_n
        if p.usage_only:
            self._usage_final = p.completion_tokens
            return p
        n_tokens: int | None = None
        if p.completion_tokens is not None and p.has_choices:
            previous = self._usage_cont or 0
            n_tokens = p.completion_tokens - previous
            self._usage_cont = p.completion_tokens
        elif p.completion_tokens is not None:
            self._usage_final = p.completion_tokens
        if p.tgi_event:
            self._tgi_events += 1
            n_tokens = 1
            if p.tgi_generated_tokens is not None:
                self._tgi_details = p.tgi_generated_tokens
        if p.has_choices and self._first_chunk is None:
            self._first_chunk = now
        if p.finish_reason is not None:
            self._finish = p.finish_reason
            if p.completion_tokens is not None and not p.tgi_event:
                # usage on the finish chunk (llama.cpp server) is the final count
                self._usage_final = p.completion_tokens
        if p.has_token:
            if self._one_token and n_tokens is None:
                n_tokens = 1
            kind = "content" if p.content else ("tool_call" if p.has_tool_call else "reasoning")
            text = p.content + p.tool_calls if kind != "reasoning" else p.reasoning
            if self._first_token is None:
                self._first_token = now
            if kind != "reasoning" and self._first_content is None:
                self._first_content = now
            self._last_token = now
            self._chunks.append(TokenChunk(now, text, n_tokens, kind))
            if p.reasoning and kind != "reasoning":
                self._reasoning.append(p.reasoning)
            if kind == "reasoning":
                self._reasoning.append(text)
            else:
                self._text.append(text)
            if self.on_event is not None:
                self.on_event(StreamUpdate(self.endpoint, kind, now, text, n_tokens))
        if p.ends_stream:
            self.done(t)
        return p

    def done(self, t: float | None = None) -> None:
        """The terminator arrived (``[DONE]``, or the last TGI ``/generate_stream`` event) and the stream ends now."""
        self.terminated()
        self.eof(t)

    def terminated(self) -> None:
        """``[DONE]`` arrived; the stream's end is stamped by :meth:`eof` (every client drains the body after it)."""
        self._done = True

    def eof(self, t: float | None = None) -> None:
        """The byte stream ended (a terminator or not: see :attr:`completed`)."""
        if self._end is None:
            self._end = self._rel(self._now(t))

    @property
    def failure(self) -> tuple[str, str, int | None] | None:
        """The recorded failure as ``(error_kind, message, http_status)``; None while none is recorded."""
        return self._error

    @property
    def record_started(self) -> bool:
        """Response headers (or a payload) arrived, so a later transport failure means the stream was cut."""
        return self._first_byte is not None

    def fail(
        self,
        kind: str,
        message: str,
        *,
        http_status: int | None = None,
        t: float | None = None,
        error_type: str | None = None,
    ) -> None:
        """Mark the request failed (first failure wins).

        Args:
            kind: One of :data:`ERROR_KINDS`.
            message: What went wrong (made one line).
            http_status: HTTP status, when there is one.
            t: Absolute time of the failure.
            error_type: Server's error type, appended to the message.
        """
        if kind not in ERROR_KINDS:
            raise ValueError(f"kind={kind!r} is not valid: expected one of {', '.join(ERROR_KINDS)}")
        if self._error is not None:
            return
        text = one_line(message) or kind
        if error_type and error_type not in text:
            text = f"{text} ({error_type})"
        self._error = (kind, text, http_status)
        if http_status is not None:
            self._http_status = http_status
        if self._end is None:
            self._end = self._rel(self._now(t))

    @property
    def text(self) -> str:
        """Answer text received so far."""
        return "".join(self._text)

    @property
    def completed(self) -> bool:
        """The stream ended properly: a terminator or a finish reason arrived."""
        return self._done or self._finish is not None

    def _output_tokens(self) -> tuple[int | None, str | None]:
        if self._usage_final is not None:
            return self._usage_final, "usage"
        if self._usage_cont is not None:
            return self._usage_cont, "continuous_usage"
        if self._tgi_details is not None:
            return self._tgi_details, "tgi_details"
        if self._tgi_events:
            return self._tgi_events, "tgi_events"
        if self._predicted_n is not None:
            return self._predicted_n, "llamacpp_timings"
        if self._one_token and self._chunks:
            return len(self._chunks), "chunks_one_token_each"
        if not self._chunks and self._error is None and self.completed:
            # An empty answer (llama.cpp: finish_reason "stop", no content, no usage): zero token-bearing chunks
            # is exactly zero tokens whatever the chunking, so it is not an estimate.
            return 0, "chunks_one_token_each"
        if self._chunks:
            return len(self._chunks), "estimate"
        return None, None

    def record(self) -> RequestRecord:
        """Build the record (idempotent; later events are ignored once built).

        A stream that ended without a terminator, a finish reason or an error is marked ``cut``; one that ended
        normally without any token-bearing chunk (no text, reasoning or tool call) is marked ``empty``.
        """
        if self._record is not None:
            return self._record
        if self._error is None and not self.completed:
            self.fail("cut", "stream ended before a finish reason or [DONE]")
        tokens, source = self._output_tokens()
        if self._error is None and not self._chunks:
            how = f"finish_reason {self._finish}" if self._finish is not None else "[DONE]"
            counted = f"; the server counted {tokens} output token{'s' if tokens != 1 else ''}" if tokens else ""
            what = "without any text, reasoning or tool call"
            self.fail("empty", f"empty answer: the stream ended normally ({how}) {what}{counted}")
        ok = self._error is None
        error = self._error
        record = RequestRecord(
            endpoint=self.endpoint,
            ok=ok,
            error=None if error is None else error[1],
            error_kind=None if error is None else error[0],
            http_status=self._http_status,
            t_sent=self.t_sent if self.t_sent is not None else 0.0,
            first_byte_s=self._first_byte,
            first_chunk_s=self._first_chunk,
            first_token_s=self._first_token,
            first_content_s=self._first_content,
            last_token_s=self._last_token,
            end_s=self._end,
            chunks=tuple(self._chunks),
            output_tokens=tokens,
            output_tokens_source=source,
            prompt_tokens=self._prompt_tokens,
            text="".join(self._text),
            reasoning_text="".join(self._reasoning),
            finish_reason=self._finish,
            partial=not ok and bool(self._chunks),
            model=self.model,
        )
        self._record = record
        if self.on_event is not None:
            self.on_event(StreamUpdate(self.endpoint, "end", record.end_s or 0.0, record=record))
        return record
