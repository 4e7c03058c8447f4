"""A TGI-protocol test server that validates every response against TGI's own OpenAPI spec before sending it.

Sources (text-generation-inference @db931fc, copied to ``tests/servers/tgi_reference``; see ``REFERENCE_DIR``):

- ``openapi.json``: the router's utoipa-generated spec. Every JSON body and every SSE ``data:`` payload this server
  sends is checked against ``components/schemas`` first (`SpecValidator`); a payload that does not validate is
  recorded in ``TGIServer.violations``, the client gets a broken response, and ``TGIServer.close()`` (also run by
  ``__exit__``) raises `SpecViolation`, so the test fails.
- ``test_flash_llama_*.json`` / ``test_chat_hfhub_usage.json``: snapshots from TGI's integration tests. Their token
  texts are replayed, so shapes and texts are real: ``/generate`` and ``/generate_stream`` replay the 10 tokens (ids,
  texts, logprobs) of ``test_flash_llama_simple.json``; chat replays the 10 contents of
  ``test_flash_llama_completion_stream_usage.json``; ``/v1/completions`` replays, per prompt index, the tokens of
  ``test_flash_llama_completion_many_prompts_stream.json``. After the recorded tokens comes one special EOS token
  (synthetic: ``</s>`` id 2 for the native routes, ``<|eot_id|>`` for chat and completions), so a request with a
  larger budget ends with ``eos_token`` (chat: ``"stop"``) and one with ``max_new_tokens`` <= 10 ends with ``length``.
- Behaviour that the spec does not say (stream framing, errors inside HTTP 200 streams, ``finish_reason`` mapping,
  ``/metrics`` names) follows TGI's router at text-generation-inference @db931fc (``router/src/server.rs``, ``lib.rs``,
  ``validation.rs``).

Token counting is a stand-in for the model's tokenizer: a prompt has ``len(text.split())`` tokens (whitespace
words). A chat prompt is rendered as ``"<|{role}|> {text}\\n"`` per message plus ``"<|assistant|>"``, so each message
costs its words + 1 and the generation prompt 1. Validation then follows TGI's validation.rs with those counts.

Choices where neither source pins the value: a missing ``max_new_tokens``/``max_tokens`` means
``max_total_tokens - input tokens`` (validation.rs in 3.x); ``details.seed`` echoes the request's ``seed`` (else
``null``); ``/info`` has ``model_sha``/``sha``/``docker_label`` ``null``. Not modelled: ``top_n_tokens``, ``best_of``
> 1, tools/grammars, ``/chat_tokenize``, ``/invocations``; request bodies are read leniently, not validated.

Where the spec and real TGI disagree, the server follows real TGI and the disagreement is listed in
`SPEC_DEVIATIONS` (validated against an explicit stand-in schema, never skipped). Ways the integration-test
snapshots differ from the wire (they are client-side ``model_dump()``s) are listed in `RECORDING_ARTIFACTS`.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import socketserver
import sys
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

__all__ = [
    "DEVIATION_SCHEMAS",
    "FAIL_MODES",
    "RECORDING_ARTIFACTS",
    "REFERENCE_DIR",
    "SPEC_DEVIATIONS",
    "SpecValidator",
    "SpecViolation",
    "TGIServer",
    "count_tokens",
    "render_chat_prompt",
    "strip_recording_artifacts",
]

#: Where the TGI spec and recordings live; override with the ``TGI_REFERENCE_DIR`` environment variable.
REFERENCE_DIR = Path(os.environ.get("TGI_REFERENCE_DIR", Path(__file__).resolve().parent / "tgi_reference"))

#: Modes accepted by `TGIServer.fail_next`, each consumed by the next request it applies to.
FAIL_MODES: dict[str, str] = {
    "overloaded": "next generation request: in-stream {'error': 'Model is overloaded', 'error_type': 'overloaded'} on"
    " HTTP 200 (chat/completions: OpenAI-style error event + [DONE]); non-stream: HTTP 429",
    "validation": "next generation request: in-stream validation error on HTTP 200; non-stream: HTTP 422",
    "generation": "next generation request: 2 tokens, then an in-stream generation error; non-stream: HTTP 424",
    "cut": "next generation request: the connection is closed after the first token (non-stream: before any reply)",
    "http_500": "next generation request: HTTP 500 {'error': 'Incomplete generation', 'error_type':"
    " 'incomplete_generation'}",
    "unhealthy": "next GET /health: HTTP 503 {'error': 'unhealthy', 'error_type': 'healthcheck'}",
}

#: Known disagreements between openapi.json and what TGI @db931fc really sends; the server does what TGI does.
SPEC_DEVIATIONS: dict[str, str] = {
    "nullable-allOf": "utoipa writes `Option<Struct>` as {'allOf': [{'$ref': ...}], 'nullable': true} (e.g."
    " StreamResponse.details, ChatCompletionChunk.usage, ChatCompletionChoice.logprobs). OpenAPI 3.0.3 says `nullable`"
    " only acts next to `type`, so a strict OAS 3.0 validator (openapi-schema-validator 0.9 OAS30Validator) rejects"
    " the `null` TGI really sends. SpecValidator reads `nullable: true` as 'null is also allowed' everywhere.",
    "v1-models-list": "GET /v1/models is documented as one ModelInfo but returns {'object': 'list', 'data':"
    " [ModelInfo]} (server.rs openai_get_model_info -> ModelsInfo). Validated as DEVIATION_SCHEMAS['ModelsList'],"
    " whose items are the spec's ModelInfo.",
    "openai-stream-error": "/v1/chat/completions (and, assumed the same, /v1/completions) streams report errors as"
    " {'error': {'message': ..., 'http_status_code': 422}} (InferError::into_openai_event, 422 even for overload)"
    " inside HTTP 200, then `data: [DONE]`; the spec only lists ErrorResponse with 4xx statuses. Validated as"
    " DEVIATION_SCHEMAS['OpenAIErrorEvent'].",
    "stream-error-status": "/generate_stream and the `/` compat stream send ErrorResponse as an SSE event inside"
    " HTTP 200 (validation and the overload permit run inside infer.generate_stream); the spec lists them under"
    " 422/424/429/500. The payload itself is validated as ErrorResponse.",
    "openai-shape-notes": 'Valid against the TGI spec but unlike OpenAI: `id` is "" on every chat/completions'
    ' payload; completions stream chunks carry `finish_reason: ""` (not null) until the last; chat keeps'
    " `stop_sequence` as a finish_reason. Sent as TGI does; tests assert them.",
    "undeclared-object-field": "ChatCompletion, ChatCompletionChunk, Chunk and CompletionFinal carry an `object`"
    " field ('chat.completion', 'chat.completion.chunk', 'text_completion') that their schemas do not declare"
    " (allowed: the schemas do not forbid additional properties). Chunk also has no `usage`.",
}

#: Differences between the integration-test snapshots and the wire: the snapshots are ``model_dump()`` of client
#: models (integration-tests/conftest.py ``ResponseComparator``), so optional fields TGI omits come back as ``null``.
#: Keyed by schema name; values are key paths whose ``null`` is dropped before validation (and only ``null``).
RECORDING_ARTIFACTS: dict[str, tuple[tuple[str, ...], ...]] = {
    # lib.rs Details: `#[serde(skip_serializing_if = "Vec::is_empty")] top_tokens` -> absent on the wire,
    # `null` in the text_generation client's `Details` model. The spec types it as a non-nullable array.
    "GenerateResponse": (("details", "top_tokens"),),
}

#: Stand-in schemas for the deviations above; `$ref`s point into the spec's own components.
DEVIATION_SCHEMAS: dict[str, dict[str, Any]] = {
    "ModelsList": {
        "type": "object",
        "required": ["object", "data"],
        "properties": {
            "object": {"enum": ["list"]},
            "data": {"type": "array", "items": {"$ref": "#/components/schemas/ModelInfo"}},
        },
    },
    "OpenAIErrorEvent": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "http_status_code"],
                "properties": {"message": {"type": "string"}, "http_status_code": {"type": "integer"}},
            }
        },
    },
}

_SPEC_URI = "urn:tgi-openapi"
_DONE = object()  # marker for `data: [DONE]` in event lists


class SpecViolation(AssertionError):
    """A payload does not match the TGI OpenAPI schema it was checked against."""


# --- validation -------------------------------------------------------------------------------------------------------
_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("int32")
def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**31) <= value < 2**32  # u32 is int32 here


@_FORMATS.checks("int64")
def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**63) <= value < 2**64  # u64 is int64 here


def _openapi30_to_json_schema(node: Any) -> Any:
    """Turn an OpenAPI 3.0 schema into JSON Schema (draft 4): ``nullable: true`` becomes ``anyOf [..., null]``.

    ``example``/``discriminator``/``default`` stay: JSON Schema ignores them (annotations), and a ``oneOf`` is still
    enforced without its discriminator. See SPEC_DEVIATIONS["nullable-allOf"].
    """
    if isinstance(node, list):
        return [_openapi30_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _openapi30_to_json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _leaf(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The most relevant innermost error of an ``anyOf``/``oneOf`` failure (so messages name the real field)."""
    while error.context:
        real = [e for e in error.context if e.validator_value != "null"]  # skip the anyOf branch added for nullable
        error = jsonschema.exceptions.best_match(real or error.context)
    return error


class SpecValidator:
    """Validates payloads against ``components/schemas`` of the TGI OpenAPI spec, resolving ``$ref``s.

    Args:
        spec: the parsed openapi.json.

    Example:
        >>> SpecValidator.from_file().validate("ErrorResponse", {"error": "x", "error_type": "validation"})
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        components = _openapi30_to_json_schema(spec["components"])
        components["x-deviations"] = copy.deepcopy(DEVIATION_SCHEMAS)
        resource = Resource.from_contents({"components": components}, default_specification=DRAFT4)
        self._registry = Registry().with_resource(_SPEC_URI, resource)
        self._validators: dict[str, jsonschema.Draft4Validator] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: Path | None = None) -> SpecValidator:
        """Load ``openapi.json`` (default: ``REFERENCE_DIR / "openapi.json"``)."""
        path = path or REFERENCE_DIR / "openapi.json"
        if not path.is_file():
            raise FileNotFoundError(f"TGI OpenAPI spec not found at {path}; set TGI_REFERENCE_DIR")
        return cls(json.loads(path.read_text(encoding="utf-8")))

    @property
    def schema_names(self) -> list[str]:
        """Names under ``components/schemas``."""
        return sorted(self.spec["components"]["schemas"])

    def _validator(self, name: str) -> jsonschema.Draft4Validator:
        with self._lock:
            if name not in self._validators:
                if name in DEVIATION_SCHEMAS:
                    ref = f"{_SPEC_URI}#/components/x-deviations/{name}"
                elif name in self.spec["components"]["schemas"]:
                    ref = f"{_SPEC_URI}#/components/schemas/{name}"
                else:
                    raise KeyError(f"no schema {name!r} in the TGI spec or DEVIATION_SCHEMAS")
                self._validators[name] = jsonschema.Draft4Validator(
                    {"$ref": ref}, registry=self._registry, format_checker=_FORMATS
                )
            return self._validators[name]

    def errors(self, name: str, instance: Any) -> list[str]:
        """Messages of every violation of schema ``name`` by ``instance`` (empty when it validates)."""
        found = [_leaf(e) for e in self._validator(name).iter_errors(instance)]
        found.sort(key=lambda e: list(map(str, e.absolute_path)))
        return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in found]

    def validate(self, name: str, instance: Any) -> None:
        """Raise `SpecViolation` naming the schema, the paths and the messages when ``instance`` does not validate."""
        errors = self.errors(name, instance)
        if errors:
            shown = json.dumps(instance)[:400]
            raise SpecViolation(f"{name} does not validate: {'; '.join(errors[:5])} -- payload: {shown}")


@functools.cache
def _default_validator() -> SpecValidator:
    """One validator per process: compiled schemas are reused by every server (validation is thread-safe)."""
    return SpecValidator.from_file()


def strip_recording_artifacts(schema: str, payload: Any) -> Any:
    """A copy of a recorded snapshot with the `RECORDING_ARTIFACTS` ``null``s of ``schema`` removed."""
    payload = copy.deepcopy(payload)
    for path in RECORDING_ARTIFACTS.get(schema, ()):
        node = payload
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node and node[path[-1]] is None:
            del node[path[-1]]
    return payload


# --- tokens -----------------------------------------------------------------------------------------------------------
def count_tokens(text: str) -> int:
    """Stand-in token count: whitespace-separated words of ``text``."""
    return len(text.split())


def _message_text(content: Any) -> str:
    if isinstance(content, list):  # MessageChunk list: keep the text parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def render_chat_prompt(messages: list[dict[str, Any]]) -> str:
    """Stand-in chat template: ``"<|{role}|> {text}\\n"`` per message, then ``"<|assistant|>"``."""
    return (
        "".join(f"<|{m.get('role', 'user')}|> {_message_text(m.get('content'))}\n" for m in messages) + "<|assistant|>"
    )


def _token_id(text: str) -> int:
    return zlib.crc32(text.encode()) % 128_000


@dataclass(frozen=True)
class _Token:
    id: int
    text: str
    logprob: float
    special: bool = False

    def wire(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "logprob": self.logprob, "special": self.special}


def _load_json(name: str) -> Any:
    path = REFERENCE_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"TGI recording not found at {path}; set TGI_REFERENCE_DIR")
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def _load_scripts() -> tuple[list[_Token], list[_Token], list[list[_Token]]]:
    """(native, chat, completions per prompt index) token scripts replayed from the recordings."""
    simple = _load_json("test_flash_llama_simple.json")
    native = [_Token(t["id"], t["text"], t["logprob"], t["special"]) for t in simple["details"]["tokens"]]
    native.append(_Token(2, "</s>", -0.0625, special=True))  # synthetic EOS (Llama-2 vocab, like the recording)
    eot = _Token(128009, "<|eot_id|>", -0.0625, special=True)  # synthetic EOS (Llama-3.1 vocab)
    chat_chunks = _load_json("test_flash_llama_completion_stream_usage.json")
    chat = [
        _Token(_token_id(c["choices"][0]["delta"]["content"]), c["choices"][0]["delta"]["content"], -1.0)
        for c in chat_chunks
        if c["choices"]
    ]
    chat.append(eot)
    per_index: dict[int, list[_Token]] = {}
    for c in _load_json("test_flash_llama_completion_many_prompts_stream.json"):
        choice = c["choices"][0]
        per_index.setdefault(choice["index"], []).append(_Token(_token_id(choice["text"]), choice["text"], -1.0))
    completions = [[*tokens, eot] for _, tokens in sorted(per_index.items())]
    return native, chat, completions


# --- metrics ----------------------------------------------------------------------------------------------------------
def _duration_buckets() -> list[float]:
    """router/src/server.rs: 35 buckets, geometric from 0.0001 s × 1.5 (Matcher::Suffix("duration"))."""
    buckets, value = [], 0.0001
    for _ in range(35):
        value *= 1.5
        buckets.append(value)
    return buckets


class _Histogram:
    def __init__(self, buckets: list[float]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.sum += value
        self.count += 1

    def render(self, name: str) -> list[str]:
        lines = [f"# TYPE {name} histogram"]
        lines += [f'{name}_bucket{{le="{bound!r}"}} {n}' for bound, n in zip(self.buckets, self.counts, strict=True)]
        lines += [f'{name}_bucket{{le="+Inf"}} {self.count}', f"{name}_sum {self.sum!r}", f"{name}_count {self.count}"]
        return lines


class _Metrics:
    """The router's Prometheus metrics (docs/source/reference/metrics.md), rendered like metrics-exporter-prometheus
    (counters without a ``_total`` suffix, histogram buckets as configured in server.rs)."""

    def __init__(self, max_input_tokens: int, max_total_tokens: int) -> None:
        self.lock = threading.Lock()
        self.queue_size = 0
        self.batch_current_size = 0
        self.batch_current_max_tokens = 0
        self.request_count = 0
        self.request_success = 0
        self.request_failure: dict[str, int] = {}
        self.histograms = {
            name: _Histogram(_duration_buckets())
            for name in (
                "tgi_request_duration",
                "tgi_request_queue_duration",
                "tgi_request_validation_duration",
                "tgi_request_inference_duration",
                "tgi_request_mean_time_per_token_duration",
            )
        }
        self.histograms["tgi_request_input_length"] = _Histogram([max_input_tokens / 100 * (x + 1) for x in range(100)])
        for name in ("tgi_request_generated_tokens", "tgi_request_max_new_tokens"):
            self.histograms[name] = _Histogram([max_total_tokens / 100 * (x + 1) for x in range(100)])

    def render(self) -> str:
        with self.lock:
            lines = []
            for name, value in (
                ("tgi_queue_size", self.queue_size),
                ("tgi_batch_current_size", self.batch_current_size),
                ("tgi_batch_current_max_tokens", self.batch_current_max_tokens),
            ):
                lines += [f"# TYPE {name} gauge", f"{name} {value}"]
            lines += ["# TYPE tgi_request_count counter", f"tgi_request_count {self.request_count}"]
            lines += ["# TYPE tgi_request_success counter", f"tgi_request_success {self.request_success}"]
            if self.request_failure:
                lines.append("# TYPE tgi_request_failure counter")
                lines += [f'tgi_request_failure{{err="{err}"}} {n}' for err, n in sorted(self.request_failure.items())]
            for name, histogram in self.histograms.items():
                lines += histogram.render(name)
            return "\n".join(lines) + "\n"


# --- HTTP plumbing ----------------------------------------------------------------------------------------------------
class _Reply(Exception):
    """A complete non-stream reply; raised from route code."""

    def __init__(self, status: int, schema: str | None, payload: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.schema, self.payload, self.headers = status, schema, payload, headers or {}


class _Cut(Exception):
    """Close the connection now, without finishing the response."""


@dataclass
class _Generation:
    tokens: list[_Token]
    finish_reason: str  # FinishReason: length | eos_token | stop_sequence
    input_length: int
    max_new_tokens: int
    seed: int | None

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens if not t.special)


def _openai_finish(reason: str) -> str:
    """FinishReason::format(true): eos_token -> "stop"; length and stop_sequence unchanged."""
    return "stop" if reason == "eos_token" else reason


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    tgi: TGIServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves socket.getfqdn(host), a reverse-DNS lookup that costs ~50 ms per server.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver's default prints the traceback to stderr from the request thread, where pytest shows it
        # between two tests of an all-passing run. A client that hangs up (a reset while the server waits for the next
        # keep-alive request or reads a body) is no error: TGI's router drops such a connection silently. Anything
        # else is a bug of this stand-in, kept for close() to fail the test with.
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return
        with self.tgi._lock:
            self.tgi.errors.append("".join(traceback.format_exception(exc)).rstrip())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "text-generation-router-standin"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.tgi._dispatch(self, "GET")  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        self.server.tgi._dispatch(self, "POST")  # type: ignore[attr-defined]


class _SSE:
    """Writes one HTTP/1.1 chunk per SSE event, the way axum's `Sse` does: ``data: <compact json>\\n\\n``
    (serde_json writes no spaces; axum >= 0.7 puts a space after ``data:``)."""

    def __init__(self, server: TGIServer, handler: BaseHTTPRequestHandler, headers: dict[str, str]) -> None:
        self.server, self.handler = server, handler
        handler.send_response(200)
        for key, value in {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
            "X-Accel-Buffering": "no",
            **headers,
        }.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def event(self, schema: str, payload: Any) -> None:
        self.server._check(schema, payload)
        self._chunk(b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n")

    def done(self) -> None:
        self._chunk(b"data: [DONE]\n\n")

    def end(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


_OVERLOADED = "Model is overloaded"
_GENERATION_ERROR = "Request failed during generation: Server error: CUDA out of memory. Tried to allocate 1.00 GiB"
_VALIDATION_ERROR = "Input validation error: `temperature` must be strictly positive"


class TGIServer:
    """A TGI router stand-in on ``127.0.0.1`` (ephemeral port) whose responses are validated against openapi.json.

    Args:
        model_id: served model (``/info``, ``/v1/models``, ``model`` of chat/completions responses).
        max_input_tokens: ``/info.max_input_tokens``; longer prompts fail validation.
        max_total_tokens: ``/info.max_total_tokens``; prompt tokens + ``max_new_tokens`` above it fail validation.
        version: router version (``/info.version``; ``system_fingerprint`` is ``"{version}-native"``).
        token_delay_s: sleep between two generated tokens, seconds (inter-token latency).
        first_token_delay_s: sleep before the first token, seconds, after stream headers are sent (TTFT).

    Attributes:
        base_url: ``http://127.0.0.1:{port}``, set once started.
        requests: every request received: ``{"method", "path", "json", "headers"}`` (headers lower-cased).
        violations: `SpecViolation` messages of payloads that failed validation (the client got a broken reply).
        errors: tracebacks of exceptions the stand-in itself raised while serving (a client hanging up is none).

    Raises:
        SpecViolation: from `close`/``__exit__`` when any response failed validation.
        AssertionError: from `close`/``__exit__`` when the stand-in raised while serving (``errors``).

    Example:
        >>> with TGIServer(max_total_tokens=4096) as tgi:
        ...     httpx.get(tgi.base_url + "/info").json()["max_total_tokens"]
        4096
    """

    def __init__(
        self,
        *,
        model_id: str = "meta-llama/Llama-3.1-8B-Instruct",
        max_input_tokens: int = 4095,
        max_total_tokens: int = 4096,
        version: str = "3.3.7",
        token_delay_s: float = 0.0,
        first_token_delay_s: float = 0.0,
    ) -> None:
        if max_input_tokens >= max_total_tokens:
            raise ValueError(
                f"max_input_tokens must be < max_total_tokens; got {max_input_tokens} >= {max_total_tokens}"
            )
        if token_delay_s < 0 or first_token_delay_s < 0:
            raise ValueError(f"delays must be >= 0 s; got {token_delay_s=}, {first_token_delay_s=}")
        self.model_id = model_id
        self.max_input_tokens = max_input_tokens
        self.max_total_tokens = max_total_tokens
        self.version = version
        self.token_delay_s = token_delay_s
        self.first_token_delay_s = first_token_delay_s
        self.validator = _default_validator()
        native, chat, completions = _load_scripts()
        self._native, self._chat, self._completions = list(native), list(chat), [list(c) for c in completions]
        self.requests: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.errors: list[str] = []
        self.base_url = ""
        self._pending: list[str] = []
        self._lock = threading.Lock()
        self._metrics = _Metrics(max_input_tokens, max_total_tokens)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes: dict[tuple[str, str], Callable[[BaseHTTPRequestHandler, Any], None]] = {
            ("GET", "/health"): self._health,
            ("GET", "/ping"): self._health,
            ("GET", "/"): self._health,
            ("GET", "/info"): self._info,
            ("GET", "/v1/models"): self._models,
            ("GET", "/metrics"): self._metrics_route,
            ("POST", "/generate"): self._generate,
            ("POST", "/generate_stream"): self._generate_stream,
            ("POST", "/"): self._compat,
            ("POST", "/v1/chat/completions"): self._chat_completions,
            ("POST", "/v1/completions"): self._completions_route,
            ("POST", "/tokenize"): self._tokenize,
        }

    # --- lifecycle ---
    def start(self) -> TGIServer:
        """Bind ``127.0.0.1:0`` and serve in a daemon thread; returns self."""
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.tgi = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; raise `SpecViolation` if any response failed validation, AssertionError if serving raised."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.violations:
            raise SpecViolation(
                f"{len(self.violations)} response(s) violated the TGI spec:\n" + "\n".join(self.violations)
            )
        if self.errors:
            raise AssertionError(f"the TGI stand-in raised {len(self.errors)} time(s):\n" + "\n".join(self.errors))

    def __enter__(self) -> TGIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def fail_next(self, mode: str) -> None:
        """Make the next request that ``mode`` applies to fail that way; see `FAIL_MODES`.

        Raises:
            ValueError: ``mode`` is not a key of `FAIL_MODES`.
        """
        if mode not in FAIL_MODES:
            raise ValueError(f"mode must be one of {sorted(FAIL_MODES)}; got {mode!r}")
        with self._lock:
            self._pending.append(mode)

    def _take_failure(self, kind: str) -> str | None:
        with self._lock:
            for i, mode in enumerate(self._pending):
                if (mode == "unhealthy") == (kind == "health"):
                    return self._pending.pop(i)
        return None

    # --- dispatch ---
    def _check(self, schema: str, payload: Any) -> None:
        try:
            self.validator.validate(schema, payload)
        except SpecViolation as exc:
            with self._lock:
                self.violations.append(str(exc))
            raise

    def _dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = urlsplit(handler.path).path
        handler._tgi_headers_sent = False  # type: ignore[attr-defined]  # per request, connections are kept alive
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(
                {
                    "method": method,
                    "path": handler.path,
                    "json": body,
                    "headers": {k.lower(): v for k, v in handler.headers.items()},
                }
            )
        route = self._routes.get((method, path))
        try:
            if route is None:
                raise _Reply(404, None, b"")
            if method == "POST" and not isinstance(body, dict):
                raise _Reply(
                    422,
                    "ErrorResponse",
                    {"error": "Failed to deserialize the JSON body into the target type", "error_type": "validation"},
                )
            route(handler, body)
        except _Reply as reply:
            self._send(handler, reply)
        except _Cut:
            handler.close_connection = True
        except SpecViolation as exc:  # a stream event failed validation after the headers went out: break it
            handler.close_connection = True
            if not getattr(handler, "_tgi_headers_sent", False):
                self._send(handler, _Reply(500, None, {"error": str(exc), "error_type": "spec_violation"}))
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True

    def _send(self, handler: BaseHTTPRequestHandler, reply: _Reply) -> None:
        if reply.schema is not None:
            try:
                self._check(reply.schema, reply.payload)
            except SpecViolation as exc:
                reply = _Reply(500, None, {"error": str(exc), "error_type": "spec_violation"})
        if isinstance(reply.payload, bytes):
            data, content_type = reply.payload, "text/plain; charset=utf-8"
        elif isinstance(reply.payload, str):
            data, content_type = reply.payload.encode(), "text/plain; version=0.0.4; charset=utf-8"
        else:
            data, content_type = (
                json.dumps(reply.payload, ensure_ascii=False, separators=(",", ":")).encode(),
                "application/json",
            )
        handler.send_response(reply.status)
        if data:
            handler.send_header("Content-Type", content_type)
        for key, value in reply.headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    def _sse(self, handler: BaseHTTPRequestHandler, headers: dict[str, str]) -> _SSE:
        sse = _SSE(self, handler, headers)
        handler._tgi_headers_sent = True  # type: ignore[attr-defined]
        return sse

    # --- simple routes ---
    def info(self) -> dict[str, Any]:
        """The ``/info`` payload (struct ``Info`` of router/src/lib.rs)."""
        return {
            "model_id": self.model_id,
            "model_sha": None,
            "model_pipeline_tag": "text-generation",
            "max_concurrent_requests": 128,
            "max_best_of": 2,
            "max_stop_sequences": 4,
            "max_input_tokens": self.max_input_tokens,
            "max_total_tokens": self.max_total_tokens,
            "validation_workers": 2,
            "max_client_batch_size": 4,
            "router": "text-generation-router",
            "version": self.version,
            "sha": None,
            "docker_label": None,
        }

    @property
    def system_fingerprint(self) -> str:
        """``"{version}-{docker_label or 'native'}"`` as in chat.rs."""
        return f"{self.version}-native"

    def _health(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        if self._take_failure("health"):
            raise _Reply(503, "ErrorResponse", {"error": "unhealthy", "error_type": "healthcheck"})
        raise _Reply(200, None, b"")

    def _info(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        raise _Reply(200, "Info", self.info())

    def _models(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        model = {"id": self.model_id, "object": "model", "created": 0, "owned_by": self.model_id}
        raise _Reply(200, "ModelsList", {"object": "list", "data": [model]})

    def _metrics_route(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        raise _Reply(200, None, self._metrics.render())

    def _tokenize(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        inputs = body.get("inputs") if isinstance(body.get("inputs"), str) else ""
        tokens = [
            {"id": _token_id(m.group()), "text": m.group(), "start": m.start(), "stop": m.end()}
            for m in re.finditer(r"\S+", inputs)
        ]
        raise _Reply(200, "TokenizeResponse", tokens)

    # --- generation core ---
    def _validate_request(
        self, inputs: str, max_new_tokens: Any, stop: Any, *, stream: bool, params: dict[str, Any]
    ) -> tuple[int, int]:
        """validation.rs with whitespace token counts; returns (input_length, max_new_tokens) or raises ValueError."""
        if not inputs:
            raise ValueError("Input validation error: `inputs` cannot be empty")
        input_length = count_tokens(inputs)
        if stop is not None and len(stop) > 4:
            raise ValueError(f"Input validation error: `stop` supports up to 4 stop sequences. Given: {len(stop)}")
        if stream and params.get("decoder_input_details"):
            raise ValueError(
                "Input validation error: `decoder_input_details` == true is not supported when streaming tokens"
            )
        if stream and (params.get("best_of") or 1) > 1:
            raise ValueError("Input validation error: `best_of` != 1 is not supported when streaming tokens")
        if max_new_tokens is None:
            max_new = max(self.max_total_tokens - input_length, 0)
        else:
            max_new = int(max_new_tokens)
            if max_new <= 0:
                raise ValueError("Input validation error: `max_new_tokens` must be strictly positive")
        if input_length + max_new > self.max_total_tokens:
            raise ValueError(
                f"Input validation error: `inputs` tokens + `max_new_tokens` must be <= {self.max_total_tokens}."
                f" Given: {input_length} `inputs` tokens and {max_new} `max_new_tokens`"
            )
        if input_length > self.max_input_tokens:
            raise ValueError(
                f"Input validation error: `inputs` must have less than {self.max_input_tokens} tokens."
                f" Given: {input_length}"
            )
        return input_length, max_new

    @staticmethod
    def _run(script: list[_Token], input_length: int, max_new: int, stop: list[str] | None, seed: Any) -> _Generation:
        tokens: list[_Token] = []
        finish = "length"
        for token in script:
            if len(tokens) >= max_new:
                break
            tokens.append(token)
            if token.special:
                finish = "eos_token"
                break
            text = "".join(t.text for t in tokens)
            if stop and any(s and s in text for s in stop):
                finish = "stop_sequence"
                break
        return _Generation(tokens, finish, input_length, max_new, seed if isinstance(seed, int) else None)

    def _pace(self, index: int) -> None:
        delay = self.first_token_delay_s if index == 0 else self.token_delay_s
        if delay:
            time.sleep(delay)

    def _record(self, gen: _Generation | None, started: float, error: str | None) -> None:
        m = self._metrics
        with m.lock:
            m.request_count += 1
            if error is not None:
                m.request_failure[error] = m.request_failure.get(error, 0) + 1
                return
            assert gen is not None
            m.request_success += 1
            duration = time.perf_counter() - started
            first = self.first_token_delay_s
            m.histograms["tgi_request_duration"].observe(duration)
            m.histograms["tgi_request_queue_duration"].observe(first)
            m.histograms["tgi_request_validation_duration"].observe(0.0)
            m.histograms["tgi_request_inference_duration"].observe(max(duration - first, 0.0))
            n = len(gen.tokens)
            if n > 1:
                m.histograms["tgi_request_mean_time_per_token_duration"].observe(max(duration - first, 0.0) / (n - 1))
            m.histograms["tgi_request_input_length"].observe(gen.input_length)
            m.histograms["tgi_request_generated_tokens"].observe(n)
            m.histograms["tgi_request_max_new_tokens"].observe(gen.max_new_tokens)

    def _events(self, gen: _Generation) -> Iterator[tuple[int, _Token]]:
        """Yield (index, token) with the configured pacing, keeping the queue/batch gauges current."""
        m = self._metrics
        with m.lock:
            m.queue_size += 1
        running = False
        try:
            for i, token in enumerate(gen.tokens):
                self._pace(i)
                if not running:
                    with m.lock:
                        m.queue_size -= 1
                        m.batch_current_size += 1
                        m.batch_current_max_tokens += gen.input_length + gen.max_new_tokens
                    running = True
                yield i, token
        finally:
            with m.lock:
                if running:
                    m.batch_current_size -= 1
                    m.batch_current_max_tokens -= gen.input_length + gen.max_new_tokens
                else:
                    m.queue_size -= 1

    @staticmethod
    def _error_for(mode: str) -> tuple[int, str, str]:
        """(status, message, error_type) of a forced failure (server.rs `impl From<InferError>`)."""
        return {
            "overloaded": (429, _OVERLOADED, "overloaded"),
            "validation": (422, _VALIDATION_ERROR, "validation"),
            "generation": (424, _GENERATION_ERROR, "generation"),
            "http_500": (500, "Incomplete generation", "incomplete_generation"),
        }[mode]

    def _compute_headers(self, gen: _Generation, inputs: str, started: float) -> dict[str, str]:
        total_ms = (time.perf_counter() - started) * 1000
        n = max(len(gen.tokens), 1)
        return {
            "x-compute-type": "gpu+optimized",
            "x-compute-time": f"{total_ms / 1000:.6f}",
            "x-compute-characters": str(len(inputs)),
            "x-total-time": str(round(total_ms)),
            "x-validation-time": "0",
            "x-queue-time": str(round(self.first_token_delay_s * 1000)),
            "x-inference-time": str(round(max(total_ms - self.first_token_delay_s * 1000, 0))),
            "x-time-per-token": str(round(total_ms / n)),
            "x-prompt-tokens": str(gen.input_length),
            "x-generated-tokens": str(len(gen.tokens)),
        }

    # --- native routes ---
    @staticmethod
    def _native_params(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        inputs = body.get("inputs")
        params = body.get("parameters") or {}
        return (inputs if isinstance(inputs, str) else ""), (params if isinstance(params, dict) else {})

    def _generate(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], *, as_list: bool = False) -> None:
        started = time.perf_counter()
        inputs, params = self._native_params(body)
        mode = self._take_failure("generate")
        if mode == "cut":
            raise _Cut
        if mode is not None:
            status, message, error_type = self._error_for(mode)
            self._record(None, started, error_type)
            raise _Reply(status, "ErrorResponse", {"error": message, "error_type": error_type})
        try:
            input_length, max_new = self._validate_request(
                inputs, params.get("max_new_tokens"), params.get("stop"), stream=False, params=params
            )
        except ValueError as exc:
            self._record(None, started, "validation")
            raise _Reply(422, "ErrorResponse", {"error": str(exc), "error_type": "validation"}) from None
        gen = self._run(self._native, input_length, max_new, params.get("stop"), params.get("seed"))
        for _ in self._events(gen):
            pass
        text = (inputs if params.get("return_full_text") else "") + gen.text
        payload: dict[str, Any] = {"generated_text": text}
        if params.get("details"):
            prefill = []
            if params.get("decoder_input_details"):
                prefill = [
                    {"id": _token_id(word), "text": word, "logprob": None if i == 0 else -1.0}
                    for i, word in enumerate(inputs.split())
                ]
            payload["details"] = {
                "finish_reason": gen.finish_reason,
                "generated_tokens": len(gen.tokens),
                "seed": gen.seed,
                "prefill": prefill,
                "tokens": [t.wire() for t in gen.tokens],
            }
        self._record(gen, started, None)
        headers = self._compute_headers(gen, inputs, started)
        if as_list:
            raise _Reply(200, None, self._checked_list("GenerateResponse", [payload]), headers)
        raise _Reply(200, "GenerateResponse", payload, headers)

    def _checked_list(self, item_schema: str, items: list[Any]) -> list[Any]:
        for item in items:
            self._check(item_schema, item)
        return items

    def _generate_stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        inputs, params = self._native_params(body)
        mode = self._take_failure("generate")
        if mode == "http_500":
            status, message, error_type = self._error_for(mode)
            self._record(None, started, error_type)
            raise _Reply(status, "ErrorResponse", {"error": message, "error_type": error_type})
        sse = self._sse(handler, {"x-compute-type": "gpu+optimized", "x-compute-characters": str(len(inputs))})
        if mode in ("overloaded", "validation"):
            _, message, error_type = self._error_for(mode)
            self._record(None, started, error_type)
            sse.event("ErrorResponse", {"error": message, "error_type": error_type})
            sse.end()
            return
        try:
            input_length, max_new = self._validate_request(
                inputs, params.get("max_new_tokens"), params.get("stop"), stream=True, params=params
            )
        except ValueError as exc:
            self._record(None, started, "validation")
            sse.event("ErrorResponse", {"error": str(exc), "error_type": "validation"})
            sse.end()
            return
        gen = self._run(self._native, input_length, max_new, params.get("stop"), params.get("seed"))
        last = len(gen.tokens) - 1
        for i, token in self._events(gen):
            if mode == "cut" and i == 1:
                raise _Cut
            if mode == "generation" and i == 2:
                self._record(None, started, "generation")
                sse.event("ErrorResponse", {"error": _GENERATION_ERROR, "error_type": "generation"})
                sse.end()
                return
            event: dict[str, Any] = {"index": i + 1, "token": token.wire(), "generated_text": None, "details": None}
            if i == last:
                event["generated_text"] = (inputs if params.get("return_full_text") else "") + gen.text
                if params.get("details"):
                    event["details"] = {
                        "finish_reason": gen.finish_reason,
                        "generated_tokens": len(gen.tokens),
                        "seed": gen.seed,
                        "input_length": gen.input_length,
                    }
            sse.event("StreamResponse", event)
        self._record(gen, started, None)
        sse.end()

    def _compat(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        """``POST /``: dispatches on ``"stream"`` (CompatGenerateRequest); non-stream answers a one-item list."""
        if body.get("stream"):
            self._generate_stream(handler, body)
        else:
            self._generate(handler, body, as_list=True)

    # --- OpenAI-compatible routes ---
    def _openai_error(self, sse: _SSE, message: str) -> None:
        sse.event("OpenAIErrorEvent", {"error": {"message": message, "http_status_code": 422}})
        sse.done()
        sse.end()

    def _chat_completions(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        prompt = render_chat_prompt(messages)
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        stop = body.get("stop")
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        mode = self._take_failure("generate")
        created = int(time.time())
        base = {"id": "", "created": created, "model": self.model_id, "system_fingerprint": self.system_fingerprint}
        if not stream or mode == "http_500":
            if mode == "cut":
                raise _Cut
            if mode is not None:
                status, message, error_type = self._error_for(mode)
                self._record(None, started, error_type)
                raise _Reply(status, "ErrorResponse", {"error": message, "error_type": error_type})
            try:
                input_length, max_new = self._validate_request(prompt, max_tokens, stop, stream=False, params={})
            except ValueError as exc:
                self._record(None, started, "validation")
                raise _Reply(422, "ErrorResponse", {"error": str(exc), "error_type": "validation"}) from None
            gen = self._run(self._chat, input_length, max_new, stop, body.get("seed"))
            for _ in self._events(gen):
                pass
            self._record(gen, started, None)
            payload = {
                "object": "chat.completion",
                **base,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": gen.text},
                        "logprobs": None,
                        "finish_reason": _openai_finish(gen.finish_reason),
                    }
                ],
                "usage": self._usage(gen),
            }
            raise _Reply(200, "ChatCompletion", payload, self._compute_headers(gen, prompt, started))
        sse = self._sse(handler, {"x-compute-type": "gpu+optimized", "x-compute-characters": str(len(prompt))})
        if mode in ("overloaded", "validation"):
            _, message, error_type = self._error_for(mode)
            self._record(None, started, error_type)
            self._openai_error(sse, message)
            return
        try:
            input_length, max_new = self._validate_request(prompt, max_tokens, stop, stream=True, params={})
        except ValueError as exc:
            self._record(None, started, "validation")
            self._openai_error(sse, str(exc))
            return
        gen = self._run(self._chat, input_length, max_new, stop, body.get("seed"))
        last = len(gen.tokens) - 1
        for i, token in self._events(gen):
            if mode == "cut" and i == 1:
                raise _Cut
            if mode == "generation" and i == 2:
                self._record(None, started, "generation")
                self._openai_error(sse, _GENERATION_ERROR)
                return
            choice = {
                "index": 0,
                "delta": {"role": "assistant", "content": "" if token.special else token.text},
                "logprobs": None,
                "finish_reason": _openai_finish(gen.finish_reason) if i == last else None,
            }
            sse.event(
                "ChatCompletionChunk", {"object": "chat.completion.chunk", **base, "choices": [choice], "usage": None}
            )
        self._record(gen, started, None)
        if include_usage:
            usage_chunk = {"object": "chat.completion.chunk", **base, "choices": [], "usage": self._usage(gen)}
            sse.event("ChatCompletionChunk", usage_chunk)
        sse.done()
        sse.end()

    @staticmethod
    def _usage(*gens: _Generation) -> dict[str, int]:
        prompt = sum(g.input_length for g in gens)
        completion = sum(len(g.tokens) for g in gens)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _completions_route(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        prompt = body.get("prompt")
        prompts = [prompt] if isinstance(prompt, str) else [p for p in prompt or [] if isinstance(p, str)]
        max_tokens, stop, stream = body.get("max_tokens"), body.get("stop"), bool(body.get("stream"))
        mode = self._take_failure("generate")
        base = {
            "id": "",
            "created": int(time.time()),
            "model": self.model_id,
            "system_fingerprint": self.system_fingerprint,
        }
        if not stream or mode == "http_500":
            if mode == "cut":
                raise _Cut
            if mode is not None:
                status, message, error_type = self._error_for(mode)
                self._record(None, started, error_type)
                raise _Reply(status, "ErrorResponse", {"error": message, "error_type": error_type})
        else:
            sse = self._sse(handler, {"x-compute-type": "gpu+optimized"})
            if mode in ("overloaded", "validation"):
                _, message, error_type = self._error_for(mode)
                self._record(None, started, error_type)
                self._openai_error(sse, message)
                return
        gens = []
        try:
            if not prompts:
                raise ValueError("Input validation error: `inputs` cannot be empty")
            for i, text in enumerate(prompts):
                input_length, max_new = self._validate_request(text, max_tokens, stop, stream=stream, params={})
                script = self._completions[i % len(self._completions)]
                gens.append(self._run(script, input_length, max_new, stop, body.get("seed")))
        except ValueError as exc:
            self._record(None, started, "validation")
            if not stream:
                raise _Reply(422, "ErrorResponse", {"error": str(exc), "error_type": "validation"}) from None
            self._openai_error(sse, str(exc))
            return
        if not stream:
            for gen in gens:
                for _ in self._events(gen):
                    pass
                self._record(gen, started, None)
            choices = [
                {"index": i, "text": g.text, "logprobs": None, "finish_reason": _openai_finish(g.finish_reason)}
                for i, g in enumerate(gens)
            ]
            payload = {"object": "text_completion", **base, "choices": choices, "usage": self._usage(*gens)}
            raise _Reply(200, "CompletionFinal", payload)
        # Stream: one event per token, prompts interleaved round-robin as in the many-prompts recording.
        longest = max(len(g.tokens) for g in gens)
        for step in range(longest):
            self._pace(step)
            if mode == "cut" and step == 1:
                raise _Cut
            if mode == "generation" and step == 2:
                self._record(None, started, "generation")
                self._openai_error(sse, _GENERATION_ERROR)
                return
            for i, gen in enumerate(gens):
                if step >= len(gen.tokens):
                    continue
                token = gen.tokens[step]
                finish = _openai_finish(gen.finish_reason) if step == len(gen.tokens) - 1 else ""
                choice = {
                    "index": i,
                    "text": "" if token.special else token.text,
                    "logprobs": None,
                    "finish_reason": finish,
                }
                sse.event("Chunk", {"object": "text_completion", **base, "choices": [choice]})
        for gen in gens:
            self._record(gen, started, None)
        sse.done()
        sse.end()
