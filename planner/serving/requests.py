"""What goes over the wire: one request, and the exact JSON body each endpoint kind reads.

:class:`ChatRequest` is a prompt and its sampling parameters, independent of any server. :func:`build_request`
turns it into the :class:`WireRequest` an endpoint kind reads: the route, and the JSON body with every
engine-specific field where that engine reads it. Every client backend (:mod:`planner.serving.backends`) sends
this body and nothing else, so Live Compare and Load Test send the same bytes for the same request.

Where each engine reads its fields (the source of every rule below):

* **vLLM** (``vllm/entrypoints/openai/protocol.py``, v0.6 to v0.24): ``ignore_eos`` and ``min_tokens`` are top-level
  "extra sampling parameters" of ``ChatCompletionRequest`` and ``CompletionRequest``;
  ``stream_options.continuous_usage_stats`` puts cumulative usage on every chunk; ``CompletionRequest.prompt``
  takes a list of token ids, which skips the tokenizer (as ``vllm bench serve``'s random dataset relies on).
* **SGLang** (``python/sglang/srt/entrypoints/openai/protocol.py``): the same top-level ``ignore_eos`` and
  ``min_tokens``, ``continuous_usage_stats``, and token-id prompts on ``/v1/completions``.
* **llama.cpp** (``tools/server/README.md``, llama-server): ``ignore_eos`` top level on its OpenAI-compatible
  routes; no ``min_tokens``, no continuous usage, no token-id prompts on the OpenAI routes (llama-cpp-python's
  server ignores ``ignore_eos``: its request models drop unknown keys).
* **TGI** (``docs/openapi.json``, text-generation-inference 3.x): the Messages API (``/v1/chat/completions``) has no
  ``ignore_eos`` or ``min_tokens``; the native ``/generate_stream`` reads ``{"inputs", "parameters": {...},
  "stream"}`` with ``max_new_tokens`` and ``details`` (the last event then carries ``generated_tokens``);
  ``decoder_input_details`` is refused with streaming (router ``validation.rs``: ``PrefillDetailsStream``), so it is
  never sent.
* **openai** (any other OpenAI-compatible server, the OpenAI API itself): only the OpenAI parameters; the OpenAI
  API answers 400 "Unrecognized request argument" to ``ignore_eos``.

A field an engine does not read is not sent; :attr:`WireRequest.dropped` names it so the caller can say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.errors import InvalidParameterError
from planner.serving.discovery import EndpointInfo

__all__ = [
    "CONTINUOUS_USAGE_KINDS",
    "IGNORE_EOS_KINDS",
    "MIN_TOKENS_KINDS",
    "ROUTES",
    "TOKEN_ID_KINDS",
    "ChatRequest",
    "WireRequest",
    "build_request",
    "check_context",
    "default_route",
]

#: Routes a request can take: OpenAI chat, OpenAI (legacy) completions, TGI's native stream.
ROUTES = ("chat", "completions", "generate_stream")
#: Kinds that read a top-level ``ignore_eos`` (vLLM, SGLang, llama.cpp's llama-server).
IGNORE_EOS_KINDS = ("vllm", "sglang", "llamacpp")
#: Kinds that read a top-level ``min_tokens``.
MIN_TOKENS_KINDS = ("vllm", "sglang")
#: Kinds that honour ``stream_options.continuous_usage_stats`` (exact tokens per chunk).
CONTINUOUS_USAGE_KINDS = ("vllm", "sglang")
#: Kinds whose ``/v1/completions`` takes a prompt of token ids.
TOKEN_ID_KINDS = ("vllm", "sglang")

_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions", "generate_stream": "/generate_stream"}


@dataclass(frozen=True)
class ChatRequest:
    """One prompt and its sampling parameters, independent of the server. None = leave the server default.

    Attributes:
        prompt: User message (the prompt text on the completions route).
        system: System prompt; None = no system message.
        temperature: Sampling temperature (≥ 0).
        top_p: Nucleus sampling mass, in (0, 1].
        max_tokens: Output token limit (≥ 1); TGI's ``max_new_tokens`` on its native route.
        stop: Stop strings.
        seed: Sampling seed.
        ignore_eos: Generate exactly ``max_tokens`` tokens, past the end-of-sequence token (vLLM, SGLang,
            llama.cpp; not sent to other kinds).
        min_tokens: Fewest tokens to generate before a stop can end the answer (vLLM, SGLang); None = not sent.
        prompt_token_ids: The prompt as token ids instead of text (completions route of vLLM and SGLang): exact by
            construction, no tokenizer involved; ``prompt`` then only labels the request.
        history: Earlier turns of a conversation, ``((role, content), ...)`` with roles ``user`` and
            ``assistant``, sent between the system message and ``prompt`` (a multi-turn chat).

    Raises:
        InvalidParameterError: a value is out of range.
    """

    prompt: str
    system: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    seed: int | None = None
    ignore_eos: bool = False
    min_tokens: int | None = None
    prompt_token_ids: tuple[int, ...] | None = field(default=None, repr=False)
    history: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise InvalidParameterError("prompt", self.prompt, "a non-empty string")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InvalidParameterError("max_tokens", self.max_tokens, "an integer ≥ 1")
        if self.temperature is not None and not self.temperature >= 0:
            raise InvalidParameterError("temperature", self.temperature, "a number ≥ 0")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise InvalidParameterError("top_p", self.top_p, "a number in (0, 1]")
        if self.min_tokens is not None and not (
            isinstance(self.min_tokens, int) and 0 <= self.min_tokens <= self.max_tokens
        ):
            raise InvalidParameterError("min_tokens", self.min_tokens, "an integer in [0, max_tokens], or None")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.prompt_token_ids is not None:
            ids = tuple(self.prompt_token_ids)
            if not ids or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
                raise InvalidParameterError("prompt_token_ids", f"{len(ids)} ids", "a non-empty list of ids ≥ 0")
            object.__setattr__(self, "prompt_token_ids", ids)
        object.__setattr__(self, "history", tuple(tuple(turn) for turn in self.history))
        if any(len(t) != 2 or t[0] not in ("user", "assistant") or not isinstance(t[1], str) for t in self.history):
            raise InvalidParameterError("history", len(self.history), "(role, text) pairs, role user or assistant")
        if self.history and self.prompt_token_ids is not None:
            raise InvalidParameterError("history", len(self.history), "no history with a token-id prompt")

    def messages(self) -> list[dict[str, str]]:
        """The OpenAI ``messages`` list: optional system message, the conversation's earlier turns, the user prompt."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        out += [{"role": role, "content": content} for role, content in self.history]
        return [*out, {"role": "user", "content": self.prompt}]

    @property
    def text(self) -> str:
        """The prompt as one text without a chat template (system prompt, earlier turns and prompt joined by blank
        lines)."""
        return "\n\n".join([*([self.system] if self.system else []), *(c for _, c in self.history), self.prompt])


@dataclass(frozen=True)
class WireRequest:
    """The request an endpoint receives: its route and exact JSON body.

    Attributes:
        route: One of :data:`ROUTES`.
        path: Path from the server root, e.g. ``/v1/chat/completions``.
        body: The JSON body, exactly as sent (key order included).
        dropped: Fields of the :class:`ChatRequest` this kind does not read, so they were not sent (e.g.
            ``("ignore_eos",)`` for TGI).
    """

    route: str
    path: str
    body: Mapping[str, Any]
    dropped: tuple[str, ...] = ()

    def url(self, base_url: str) -> str:
        """The full URL on a server rooted at ``base_url`` (no trailing slash, no ``/v1``)."""
        return base_url + self.path

    @property
    def continuous_usage(self) -> bool:
        """The body asks for ``stream_options.continuous_usage_stats``."""
        options = self.body.get("stream_options")
        return isinstance(options, Mapping) and bool(options.get("continuous_usage_stats"))

    def without_continuous_usage(self) -> WireRequest:
        """The same request without ``continuous_usage_stats`` (for a server that refuses it with HTTP 400)."""
        body = dict(self.body)
        body["stream_options"] = {"include_usage": True}
        return WireRequest(self.route, self.path, body, (*self.dropped, "continuous_usage_stats"))


def default_route(kind: str, request: ChatRequest) -> str:
    """The route a request takes by default: ``completions`` for a token-id prompt, else ``chat``."""
    return "completions" if request.prompt_token_ids is not None else "chat"


def build_request(
    kind: str,
    request: ChatRequest,
    *,
    model: str | None,
    route: str | None = None,
    continuous_usage: bool = True,
) -> WireRequest:
    """The exact request ``kind`` reads for ``request`` (see the module docstring for each engine's fields).

    Body of the OpenAI routes, in this order: ``messages`` (chat) or ``prompt`` (completions: the text, or the token
    ids), ``model`` (the given id; ``"tgi"`` for TGI and ``"default"`` elsewhere when unknown, as the SDKs send),
    ``stream: true``, ``stream_options`` (``include_usage``, plus ``continuous_usage_stats`` on vLLM and SGLang
    unless ``continuous_usage`` is False), ``max_tokens``, the sampling parameters that are set (``temperature``,
    ``top_p``, ``seed``, ``stop``), then the engine's own top-level fields (``ignore_eos``, ``min_tokens``).

    TGI's native route: ``{"inputs": text, "parameters": {"max_new_tokens", sampling..., "details": true},
    "stream": true}`` (system prompt and prompt joined without a template).

    Args:
        kind: Endpoint kind, one of :data:`planner.serving.endpoints.KINDS`.
        request: The request.
        model: Served model id; None = unknown.
        route: One of :data:`ROUTES`; None = :func:`default_route`.
        continuous_usage: Ask vLLM/SGLang for usage on every chunk.

    Returns:
        The :class:`WireRequest`; fields ``kind`` does not read are left out and named in ``dropped``.

    Raises:
        InvalidParameterError: the route does not exist for ``kind`` (``generate_stream`` is TGI's only), or a
            token-id prompt goes to a kind or route that does not take one.

    Example:
        >>> build_request("vllm", ChatRequest("Hi", max_tokens=8, ignore_eos=True), model="m").body["ignore_eos"]
        True
    """
    route = route or default_route(kind, request)
    if route not in ROUTES:
        raise InvalidParameterError("route", route, ", ".join(ROUTES))
    if route == "generate_stream" and kind != "tgi":
        raise InvalidParameterError("route", route, "chat or completions for a non-TGI endpoint")
    if request.prompt_token_ids is not None and (route != "completions" or kind not in TOKEN_ID_KINDS):
        raise InvalidParameterError(
            "prompt_token_ids", f"{kind} {route}", f"the completions route of {' or '.join(TOKEN_ID_KINDS)}"
        )
    dropped: list[str] = []
    sampling: dict[str, Any] = {}
    for name in ("temperature", "top_p", "seed"):
        value = getattr(request, name)
        if value is not None:
            sampling[name] = value
    if request.stop:
        sampling["stop"] = list(request.stop)
    extras: dict[str, Any] = {}
    if request.ignore_eos:
        if kind in IGNORE_EOS_KINDS and route != "generate_stream":
            extras["ignore_eos"] = True
        else:
            dropped.append("ignore_eos")
    if request.min_tokens is not None:
        if kind in MIN_TOKENS_KINDS:
            extras["min_tokens"] = request.min_tokens
        else:
            dropped.append("min_tokens")
    if route == "generate_stream":
        parameters = {"max_new_tokens": request.max_tokens, **sampling, "details": True}
        return WireRequest(route, _PATHS[route], {"inputs": request.text, "parameters": parameters, "stream": True})
    body: dict[str, Any] = {}
    if route == "chat":
        body["messages"] = request.messages()
    else:
        body["prompt"] = list(request.prompt_token_ids) if request.prompt_token_ids is not None else request.text
    body["model"] = model or ("tgi" if kind == "tgi" else "default")
    body["stream"] = True
    options: dict[str, Any] = {"include_usage": True}
    if continuous_usage and kind in CONTINUOUS_USAGE_KINDS:
        options["continuous_usage_stats"] = True
    body["stream_options"] = options
    body["max_tokens"] = request.max_tokens
    body.update(sampling)
    body.update(extras)
    return WireRequest(route, _PATHS[route], body, tuple(dropped))


def check_context(request: ChatRequest, info: EndpointInfo | None, prompt_tokens: int | None = None) -> str | None:
    """Check a request against the endpoint's known context limits before sending it.

    Rule: ``prompt_tokens + max_tokens ≤ max_model_len_tokens`` (vLLM ``max_model_len``, TGI ``max_total_tokens``)
    and ``prompt_tokens ≤ max_input_tokens`` (TGI). An unknown prompt length counts as 0 (a token-id prompt counts
    its ids), so only requests that certainly exceed the limit are refused.

    Returns:
        A one-line reason when the request cannot fit; None when it may fit or no limit is known.
    """
    if info is None:
        return None
    if prompt_tokens is None and request.prompt_token_ids is not None:
        prompt_tokens = len(request.prompt_token_ids)
    n_prompt = prompt_tokens or 0
    limit = info.max_model_len_tokens
    if limit is not None and n_prompt + request.max_tokens > limit:
        given = f"{n_prompt} prompt + " if prompt_tokens is not None else ""
        return (
            f"{info.endpoint}: {given}{request.max_tokens} max_tokens exceeds the context limit of {limit} tokens; "
            "lower max_tokens"
        )
    if info.max_input_tokens is not None and prompt_tokens is not None and prompt_tokens > info.max_input_tokens:
        return f"{info.endpoint}: prompt of {prompt_tokens} tokens exceeds max_input_tokens={info.max_input_tokens}"
    return None
