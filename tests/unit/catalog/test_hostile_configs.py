"""Hostile pasted and uploaded ``config.json`` files, property-based (issue 24).

Each case takes a real config from the catalog's data files, changes up to four of the fields the parser reads (to
wrong types, NaN/inf, huge, negative or fractional numbers, unicode, deep nesting, or removes them), and hands the
text, whole or damaged (truncated, nested thousands deep, a byte-order mark, not JSON at all), to
:func:`planner.catalog.hub.model_from_config`, the function behind VRAM Budget's paste box and upload. An accepted
config is then planned and its parameters counted, as the page does.

Properties: nothing raises but the package's own errors, and a refusal is one line naming the config; a field the
parser reads is either taken as given, or refused, or its replacement is named in the model's assumptions (never
changed without a message).
"""

from __future__ import annotations

import copy
import json
import math
from importlib import resources
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.catalog.hub import model_from_config
from planner.catalog.params import count_params
from tests.hostile import floats_any, hostile_settings, hostile_text, json_documents, json_values, outcome

#: Generated configs.
EXAMPLES = 1200
LABEL = "config.json"

_CONFIGS: list[dict[str, Any]] = [
    entry["config"]
    for name in ("models_serving.json", "models_reference.json")
    for entry in json.loads(resources.files("planner.catalog.data").joinpath(name).read_text(encoding="utf-8"))
]
#: Fields the parser reads from the text config, each with the :class:`~planner.catalog.model_spec.ModelSpec`
#: attribute that holds it as given (None: read, but not held as one attribute).
FIELDS: dict[str, str | None] = {
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_kv_heads",
    "head_dim": "head_dim",
    "intermediate_size": "intermediate_size",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings",
    "tie_word_embeddings": "tie_word_embeddings",
    "torch_dtype": "torch_dtype",
    "num_nextn_predict_layers": "num_nextn_predict_layers",
    "draft_vocab_size": "draft_vocab_size",
    "kv_lora_rank": "kv_lora_rank",
    "q_lora_rank": "q_lora_rank",
    "qk_rope_head_dim": "qk_rope_head_dim",
    "qk_nope_head_dim": "qk_nope_head_dim",
    "v_head_dim": "v_head_dim",
    "moe_intermediate_size": "moe_intermediate_size",
    "num_experts_per_tok": "num_experts_per_tok",
    "index_head_dim": "index_head_dim",
    "index_topk": "index_topk",
    "sliding_window": None,
    "layer_types": None,
    "sliding_window_pattern": None,
    "attention_chunk_size": None,
    "no_rope_layers": None,
    "use_sliding_window": None,
    "num_local_experts": None,
    "num_experts": None,
    "n_routed_experts": None,
    "n_shared_experts": None,
    "shared_expert_intermediate_size": None,
    "first_k_dense_replace": None,
    "moe_layer_freq": None,
    "decoder_sparse_step": None,
    "mlp_only_layers": None,
    "interleave_moe_layer_step": None,
    "intermediate_size_mlp": None,
    "experts_per_token": None,
    "attention_bias": None,
    "model_type": None,
    "architectures": None,
    "quantization_config": None,
    "vision_config": None,
    "text_config": None,
}
_QUANT = st.fixed_dictionaries(
    {"quant_method": st.sampled_from(["awq", "gptq", "fp8", "mxfp4", "bitsandbytes", "compressed-tensors", "x"])},
    optional={
        "bits": json_values(2),
        "group_size": json_values(2),
        "weight_block_size": json_values(3),
        "load_in_4bit": json_values(1),
        "config_groups": json_values(6),
        "modules_to_not_convert": json_values(4),
    },
)


def _near(value: Any) -> st.SearchStrategy[Any]:
    """Values near a field's real one: scaled, off by one, negative, fractional, as text, as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return st.just(value)
    number = float(value)
    return st.sampled_from(
        [value * 2, value // 2 or 1, value + 1, value - 1, -value, 0, number, number + 0.5, str(value), [value]]
    )


def _new_value(field: str, current: Any) -> st.SearchStrategy[Any]:
    if field == "quantization_config":
        return st.one_of(_QUANT, json_values())
    return st.one_of(
        _near(current),
        json_values(),
        floats_any(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.integers(min_value=0, max_value=300),
        hostile_text(),
    )


_REMOVED = object()


@st.composite
def configs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A catalog config with up to four fields changed; returns ``(config, {field: new value})`` where the changes
    were made in the dict the parser reads as the text config."""
    config = copy.deepcopy(draw(st.sampled_from(_CONFIGS)))
    text = next(
        (
            config[k]
            for k in ("text_config", "language_config", "llm_config", "text_model")
            if isinstance(config.get(k), dict)
        ),
        config,
    )
    changes: dict[str, Any] = {}
    for field in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=4, unique=True)):
        target = config if field in ("architectures", "quantization_config", "text_config", "vision_config") else text
        if draw(st.integers(0, 5)) == 0:
            target.pop(field, None)
            changes[field] = _REMOVED
        else:
            target[field] = changes[field] = draw(_new_value(field, target.get(field)))
        if target is not text:
            changes.pop(field)
    return config, changes


def _taken(value: Any, held: Any) -> bool:
    """Whether the spec holds ``value`` as given (an integral float is the same integer)."""
    if isinstance(value, bool) or isinstance(held, bool):
        return value is held
    if isinstance(value, int | float) and isinstance(held, int | float):
        return math.isfinite(value) and value == held
    return value == held


@hostile_settings(EXAMPLES)
@given(case=configs(), damage=st.integers(0, 9))
def test_pasted_config_is_read_as_given_or_refused_in_one_line(case, damage) -> None:
    config, changes = case
    text = json.dumps(config, allow_nan=True)
    resolved, _ = outcome("configs", lambda: model_from_config(text, label=LABEL), names=[LABEL])
    if resolved is None:
        return
    spec = resolved.spec
    notes = "\n".join(spec.assumptions)
    for field, value in changes.items():
        attribute = FIELDS[field]
        if attribute is None or value is _REMOVED or value is None:
            continue
        if field == "head_dim" and spec.kv_lora_rank:
            continue  # MLA: vLLM's head size is qk_rope_head_dim + qk_nope_head_dim, whatever head_dim says
        if field.startswith(("index_", "qk_", "q_lora", "v_head")) and not spec.kv_lora_rank:
            continue  # only MLA models read them
        if field in ("moe_intermediate_size", "num_experts_per_tok") and not spec.num_experts:
            continue  # only MoE models read them
        held = getattr(spec, attribute)
        assert _taken(value, held) or field in notes, (
            f"{field}={value!r} became {attribute}={held!r} with no note (notes: {spec.assumptions})"
        )
    params, _ = outcome("configs", lambda: count_params(spec), case=False)
    assert params is None or params.total >= 0, params
    planned, _ = outcome(
        "configs",
        lambda: plan(Scenario(model=resolved.model_id, gpu="h100-sxm-80gb"), spec=spec, advise=False, with_range=False),
        case=False,
    )
    if planned is not None:
        # a figure the page shows: weights and KV bytes per token are sizes, never negative or NaN
        for name in ("weights_total_bytes", "kv_bytes_per_token"):
            value = getattr(planned, name)
            assert math.isfinite(value) and value >= 0, f"{name}={value!r}"


@hostile_settings(EXAMPLES // 3)
@given(text=json_documents(st.one_of(st.sampled_from(_CONFIGS), json_values())))
def test_damaged_config_text_is_refused_in_one_line(text: str) -> None:
    outcome("configs.text", lambda: model_from_config(text, label=LABEL), names=[LABEL])
