"""Speculative decoding as the planner sizes it: the ``--speculative-config`` a scenario carries, and the memory the
draft adds (its weights and its KV cache), as vLLM 0.24.0 allocates them.

The configuration (``vllm/config/speculative.py``, ``SpeculativeConfig``, vLLM 0.24.0) is vLLM's JSON, keys spelled
as vLLM spells them: ``method`` (``draft_model``, ``eagle``, ``eagle3``, ``mtp``, ``ngram``), ``model`` (the draft
model or EAGLE head), ``num_speculative_tokens``, ``draft_tensor_parallel_size``. Without ``method`` vLLM takes
``ngram`` for ``model: "ngram"``, else ``draft_model``, then detects ``eagle`` from ``eagle-`` and ``eagle3`` from
``eagle3`` in the model's name (``SpeculativeConfig.__post_init__``); the older ``deepseek_mtp`` and other MTP names
mean ``mtp``. The source article's flags of older vLLM, ``--speculative-model X --num-speculative-tokens K``, are
the same as ``{"model": X, "num_speculative_tokens": K}`` (:func:`from_legacy_flags`); TGI's ``--speculate N`` is
n-gram (or Medusa heads in the checkpoint) speculation of N tokens (:func:`from_tgi_speculate`).

What the draft costs, per GPU (:func:`draft_memory`):

* ``draft_model``: a whole second model, loaded by ``vllm/v1/spec_decode/draft_model.py`` with its own embeddings and
  LM head, sharded over ``draft_tensor_parallel_size`` (default: the target's TP; only 1 or the target's TP are
  accepted, ``SpeculativeConfig._verify_and_get_draft_tp``). Its decoder layers get KV-cache specs of their own; in
  vLLM 0.24.0 they join the target's full-attention layers in the same KV-cache groups
  (``vllm/v1/core/kv_cache_utils.py``, ``UniformTypeKVCacheSpecs``), so a block holds every layer of both models and
  the per-token bytes add: Llama-3.1-8B's 131,072 + Llama-3.2-1B's 32,768 = 163,840 (measured on vLLM 0.24.0,
  ``bench/data/h200_sweeps/llama-3.1-8b-spec/server.log.gz``: 699,952 tokens in 106.8 GiB).
* ``eagle`` / ``eagle3``: a head of ``num_hidden_layers`` (1) decoder layers (``vllm/model_executor/models/
  llama_eagle.py``, ``llama_eagle3.py``) plus ``fc`` (``ReplicatedLinear``: 2·hidden → hidden for EAGLE,
  3·hidden → hidden for EAGLE-3, whose first layer's qkv also reads 2·hidden). The embeddings are the target's
  (``_maybe_share_embeddings`` in ``vllm/v1/spec_decode/llm_base_proposer.py`` and ``vllm/v1/worker/gpu/spec_decode/
  eagle/utils.py``: EAGLE-3 checkpoints carry none); the LM head is the target's unless the head has its own
  ``draft_vocab_size`` (EAGLE-3's 32,000-token head, a tensor of another shape). One layer of KV per head layer.
* ``mtp``: the target's own ``num_nextn_predict_layers`` layers after its decoder (DeepSeek-V3: 1, a full MoE layer
  plus ``enorm``, ``hnorm``, ``eh_proj`` 2·hidden → hidden, ``vllm/model_executor/models/deepseek_mtp.py``),
  embeddings and LM head shared ("Detected MTP model. Sharing target model ..."); one layer of the target's KV
  (MLA, and the indexer keys on DeepSeek-V3.2) per MTP layer.
* ``ngram``: prompt lookup on the CPU, no weights and no KV cache (``vllm/v1/spec_decode/ngram_proposer.py``).

vLLM 0.24.0's V2 model runner runs ``eagle``, ``eagle3`` and ``mtp``; ``draft_model`` and ``ngram`` fall back to the
V1 model runner (``VllmConfig._get_v2_model_runner_unsupported_features``; the measured log says "Model Runner V2
does not yet support speculative method 'draft_model'"), which :func:`runs_on_v1_runner` reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from planner.capacity.kv_cache import page_bytes_per_layer
from planner.capacity.weights import linear_bytes_per_param, weights_bytes_per_rank
from planner.catalog.model_spec import ModelSpec
from planner.catalog.params import layer_params
from planner.errors import InvalidParameterError, MalformedTextError, PlannerError
from planner.parsing import json_value
from planner.units import DTYPE_BYTES

__all__ = [
    "DRAFT_METHODS",
    "MAX_SPECULATIVE_TOKENS",
    "SPECULATIVE_METHODS",
    "DraftMemory",
    "SpeculativeConfig",
    "draft_memory",
    "from_legacy_flags",
    "from_tgi_speculate",
    "parse_speculative_config",
    "runs_on_v1_runner",
]

#: The methods the planner sizes (vLLM 0.24.0 ``SpeculativeMethod``, the ones with a memory cost worth planning).
SPECULATIVE_METHODS = ("draft_model", "eagle", "eagle3", "mtp", "ngram")
#: Methods whose draft has weights and KV cache of its own (``ngram`` has neither).
DRAFT_METHODS = ("draft_model", "eagle", "eagle3", "mtp")
#: Most speculative tokens accepted (vLLM takes any positive number; beyond 16 nobody gains).
MAX_SPECULATIVE_TOKENS = 16
#: vLLM's older names of the MTP method, all ``mtp`` since ``SpeculativeConfig.__post_init__`` (vLLM 0.24.0).
_MTP_ALIASES = ("deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp", "qwen3_next_mtp", "longcat_flash_mtp")
#: Keys of vLLM's JSON the planner reads; any other key of vLLM's is kept as given and passed on to the command.
_SIZED_KEYS = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size")
#: Other ``SpeculativeConfig`` keys of vLLM 0.24.0 that change no memory the planner counts.
_PASSED_KEYS = (
    "quantization",
    "max_model_len",
    "revision",
    "code_revision",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "rejection_sample_method",
    "synthetic_acceptance_rates",
    "draft_sample_method",
    "disable_padded_drafter_batch",
    "enforce_eager",
    "attention_backend",
    "moe_backend",
    "parallel_drafting",
    "speculative_token_tree",
)
_ACCEPTED = (
    'a JSON object as vLLM\'s --speculative-config takes, e.g. {"method": "eagle3", "model": '
    '"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}; methods ' + ", ".join(SPECULATIVE_METHODS)
)


@dataclass(frozen=True)
class SpeculativeConfig:
    """vLLM's ``--speculative-config``, as far as it sizes memory.

    Attributes:
        method: one of :data:`SPECULATIVE_METHODS` (resolved as vLLM resolves a missing one).
        num_speculative_tokens: tokens the draft proposes per step (1 to :data:`MAX_SPECULATIVE_TOKENS`).
        model: the draft model or EAGLE head (a Hub repo id or catalog id); ``None`` for ``mtp`` and ``ngram``.
        draft_tensor_parallel_size: the draft's TP, ``None`` = the target's (vLLM's default).
        passed: other keys of vLLM's JSON, as ``(key, JSON text)`` pairs in the order given: carried to the launch
            command and the link, not sized.
    """

    method: str
    num_speculative_tokens: int
    model: str | None = None
    draft_tensor_parallel_size: int | None = None
    passed: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        """vLLM's JSON object: ``method``, ``model`` (when set), ``num_speculative_tokens``, the rest as given."""
        out: dict[str, object] = {"method": self.method}
        if self.model is not None:
            out["model"] = self.model
        out["num_speculative_tokens"] = self.num_speculative_tokens
        if self.draft_tensor_parallel_size is not None:
            out["draft_tensor_parallel_size"] = self.draft_tensor_parallel_size
        for key, text in self.passed:
            out[key] = json.loads(text)
        return out

    def to_text(self) -> str:
        """The JSON as one line, as ``--speculative-config`` and links carry it."""
        return json.dumps(self.to_json(), separators=(", ", ": "))

    def describe(self) -> str:
        """``"eagle3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, 3 tokens"`` for notes and tables."""
        what = {"draft_model": "draft model", "eagle": "EAGLE head", "eagle3": "EAGLE-3 head"}.get(self.method)
        if what and self.model:
            return f"{what} {self.model}, {self.num_speculative_tokens} speculative tokens"
        return f"{self.method}, {self.num_speculative_tokens} speculative tokens"


def _bad(value: object, why: str = "") -> InvalidParameterError:
    """The one error of a bad ``speculative_config``: what is accepted, then what is wrong with this one (``why``, a
    clause whose subject is the value: ``"has an unknown key bogus"``)."""
    accepted = _ACCEPTED if not why else f"{_ACCEPTED}; this one {why}"
    return InvalidParameterError("speculative_config", value, accepted)


def _method(method: object, model: str | None, given: object) -> str:
    """vLLM's method resolution (``SpeculativeConfig.__post_init__``, vLLM 0.24.0)."""
    if method is None:
        if model in ("ngram", "[ngram]"):
            return "ngram"
        name = (model or "").lower()
        if "eagle-" in name:
            return "eagle"
        if "eagle3" in name:
            return "eagle3"
        if model is None:
            raise _bad(given, "has num_speculative_tokens but neither a model nor a method")
        return "draft_model"
    if not isinstance(method, str):
        raise _bad(given, "has a method that is not a string")
    if method in _MTP_ALIASES:
        return "mtp"
    if method == "[ngram]":
        return "ngram"
    if method not in SPECULATIVE_METHODS:
        raise _bad(given, f"has method {method!r}, which is not one the planner sizes")
    return method


def parse_speculative_config(value: str | Mapping[str, object]) -> SpeculativeConfig:
    """Read ``--speculative-config`` (its JSON text, or the parsed object).

    Args:
        value: the JSON text (at most 2,000 characters) or a mapping with vLLM's keys.

    Returns:
        The configuration, the method resolved as vLLM resolves it.

    Raises:
        InvalidParameterError: not a JSON object, an unknown key, a method the planner does not size, a missing or
            out-of-range ``num_speculative_tokens``, a draft method without ``model`` (``mtp`` excepted), or a
            ``draft_tensor_parallel_size`` below 1; one line naming the value and what is accepted.
    """
    given: object = value
    if isinstance(value, str):
        if len(value) > 2000:
            raise _bad(value[:60] + "...", "is longer than 2,000 characters")
        try:
            value = json_value(value, name="speculative_config", accepted="a JSON object")
        except MalformedTextError as exc:  # its value is the problem: "not valid JSON (Expecting value)"
            raise _bad(given, f"is {exc.value}") from exc
    if not isinstance(value, Mapping):
        raise _bad(given, "is not a JSON object")
    unknown = [str(k) for k in value if k not in _SIZED_KEYS and k not in _PASSED_KEYS]
    if unknown:
        raise _bad(given, "has an unknown key " + ", ".join(unknown))
    model = value.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip() or len(model) > 200):
        raise _bad(given, "has a model that is not a repo id of at most 200 characters")
    method = _method(value.get("method"), model, given)
    tokens = value.get("num_speculative_tokens")
    if type(tokens) is not int or not 1 <= tokens <= MAX_SPECULATIVE_TOKENS:
        raise _bad(given, f"has a num_speculative_tokens that is not an integer from 1 to {MAX_SPECULATIVE_TOKENS}")
    if method in ("draft_model", "eagle", "eagle3") and model is None:
        raise _bad(given, f"has method {method}, which needs a model")
    if method in ("mtp", "ngram"):
        model = None if model in (None, "ngram", "[ngram]") or method == "ngram" else model
    draft_tp = value.get("draft_tensor_parallel_size")
    if draft_tp is not None and (type(draft_tp) is not int or not 1 <= draft_tp <= 64):
        raise _bad(given, "has a draft_tensor_parallel_size that is not an integer from 1 to 64")
    passed = tuple((str(k), json.dumps(v)) for k, v in value.items() if k in _PASSED_KEYS)
    return SpeculativeConfig(method, tokens, model, draft_tp, passed)


def from_legacy_flags(speculative_model: str | None, num_speculative_tokens: int | None) -> SpeculativeConfig:
    """The source article's older flags, ``--speculative-model X --num-speculative-tokens K``, as vLLM 0.24.0's
    ``{"model": X, "num_speculative_tokens": K}`` (the method detected from the name as vLLM does).

    Raises:
        InvalidParameterError: one flag without the other, or either out of range.
    """
    if speculative_model is None or num_speculative_tokens is None:
        raise InvalidParameterError(
            "speculative_model" if speculative_model is None else "num_speculative_tokens",
            None,
            "--speculative-model and --num-speculative-tokens together",
        )
    return parse_speculative_config({"model": speculative_model, "num_speculative_tokens": num_speculative_tokens})


def from_tgi_speculate(tokens: int) -> SpeculativeConfig:
    """TGI's ``--speculate N``: n-gram speculation of N tokens (Medusa heads when the checkpoint has them), no draft
    model to load (``text-generation-inference`` launcher ``--speculate``).

    Raises:
        InvalidParameterError: ``tokens`` outside 1 to :data:`MAX_SPECULATIVE_TOKENS`.
    """
    if type(tokens) is not int or not 1 <= tokens <= MAX_SPECULATIVE_TOKENS:
        raise InvalidParameterError("speculate", tokens, f"an integer from 1 to {MAX_SPECULATIVE_TOKENS}")
    return SpeculativeConfig("ngram", tokens)


def runs_on_v1_runner(config: SpeculativeConfig) -> bool:
    """vLLM 0.24.0 falls back from the V2 to the V1 model runner for this method (``draft_model``, ``ngram``)."""
    return config.method not in ("eagle", "eagle3", "mtp")


@dataclass(frozen=True)
class DraftMemory:
    """What the draft adds on one GPU.

    Attributes:
        weights_bytes: the draft's weights on the GPU ("Model loading took" grows by this much).
        kv_page_bytes: the draft's KV bytes in one block of ``block_size`` tokens, all its layers together.
        kv_bytes_per_token: ``kv_page_bytes / block_size``.
        num_layers: the draft's layers holding KV cache.
        description: the draft in words, with what it shares with the target.
    """

    weights_bytes: float
    kv_page_bytes: int
    kv_bytes_per_token: float
    num_layers: int
    description: str


def draft_memory(
    config: SpeculativeConfig,
    target: ModelSpec,
    *,
    dtype: str,
    target_quantization: str,
    kv_dtype_bytes: float,
    tp: int,
    block_size: int,
    resolve: Callable[[str], ModelSpec],
) -> DraftMemory:
    """The draft's weights and KV cache on one GPU (module docstring for each method).

    Args:
        config: the speculative configuration.
        target: the target model.
        dtype: the dtype the engine runs in (the draft runs in the target's).
        target_quantization: the target's effective quantization (MTP layers are quantized alike).
        kv_dtype_bytes: bytes per cached element (``--kv-cache-dtype``).
        tp: the target's tensor-parallel size.
        block_size: tokens per KV block.
        resolve: model id → spec (catalog, cache, then the Hub).

    Returns:
        The draft's memory; zeros for ``ngram``.

    Raises:
        PlannerError: the draft cannot be resolved, ``draft_tensor_parallel_size`` is neither 1 nor the target's
            TP, or ``mtp`` on a model without MTP layers.
    """
    if config.method == "ngram":
        return DraftMemory(0.0, 0, 0.0, 0, "n-gram prompt lookup: no draft weights, no KV cache")
    draft_tp = config.draft_tensor_parallel_size or tp
    if draft_tp not in (1, tp):
        raise InvalidParameterError(
            "draft_tensor_parallel_size", draft_tp, f"1 or the target's tensor_parallel_size {tp} (vLLM's rule)"
        )
    dbytes = DTYPE_BYTES[dtype]
    h = target.hidden_size
    if config.method == "mtp":
        n = target.num_nextn_predict_layers
        if not n:
            raise InvalidParameterError(
                "speculative_config",
                config.to_text(),
                f"method mtp on a model with MTP layers; {target.model_id} has num_nextn_predict_layers 0",
            )
        p = layer_params(target, target.num_layers - 1)  # the MTP layer is shaped as the last decoder layer
        lin = linear_bytes_per_param(
            target_quantization,
            dbytes,
            group_size=target.quant.group_size,
            block_size=target.quant.weight_block_size,
            in_features=h,
        )
        kv_share = 1 if target.is_mla else max(1, target.num_kv_heads // tp) / target.num_kv_heads
        layer = (p.attn_q_o + p.attn_mla_up + p.mlp + p.shared_experts + p.experts) / tp * lin
        layer += p.attn_kv * kv_share * lin + p.small * dbytes
        # enorm, hnorm, shared_head.norm and eh_proj (an unquantized nn.Linear, on every rank)
        extra = (3 * h + 2 * h * h) * dbytes
        # paged as the target's own layers: MLA, and on DeepSeek-V3.2 the indexer keys too
        page = n * page_bytes_per_layer(target, tp=tp, block_size=block_size, dtype_bytes=kv_dtype_bytes)
        return DraftMemory(
            n * (layer + extra),
            page,
            page / block_size,
            n,
            f"{n} MTP layer(s) of {target.model_id}; embeddings and LM head shared with the target",
        )
    try:
        draft = resolve(config.model or "")
    except PlannerError as exc:
        raise InvalidParameterError(
            "speculative_config", config.model, f"a draft model the catalog or the Hub knows ({exc})"
        ) from None
    page = draft.num_layers * page_bytes_per_layer(
        draft, tp=draft_tp, block_size=block_size, dtype_bytes=kv_dtype_bytes
    )
    split = weights_bytes_per_rank(draft, method=draft.quant.method, dtype=dtype, tp=draft_tp, pp=1, stage=0)
    if config.method == "draft_model":
        return DraftMemory(
            split.total_bytes,
            page,
            page / block_size,
            draft.num_layers,
            f"draft model {draft.model_id}: its own embeddings, {draft.num_layers} layers and LM head",
        )
    # EAGLE heads: the layers, norms and fc; embeddings from the target, LM head too unless the head has its own
    weights = split.layers_bytes + split.other_bytes
    fan_in = 3 if config.method == "eagle3" else 2
    weights += fan_in * h * draft.hidden_size * dbytes
    if config.method == "eagle3":
        qkv_out = (draft.num_attention_heads + 2 * draft.num_kv_heads) * draft.head_dim
        weights += draft.hidden_size * qkv_out / draft_tp * dbytes
    own_head = draft.draft_vocab_size is not None and draft.draft_vocab_size != target.vocab_size
    shares = "embeddings shared with the target"
    if own_head:
        weights += (draft.draft_vocab_size or 0) * draft.hidden_size / draft_tp * dbytes
        shares += f", its own LM head of {draft.draft_vocab_size:,} tokens"
    else:
        shares += ", LM head too"
    name = "EAGLE-3" if config.method == "eagle3" else "EAGLE"
    return DraftMemory(
        weights,
        page,
        page / block_size,
        draft.num_layers,
        f"{name} head {draft.model_id}: {draft.num_layers} decoder layer(s) and fc; {shares}",
    )
