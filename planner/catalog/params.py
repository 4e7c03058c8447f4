"""Parameter counts computed from a :class:`~planner.catalog.model_spec.ModelSpec`.

The counts follow the module shapes of the Hugging Face ``transformers`` implementations (and vLLM's,
which load the same tensors):

* embedding ``V·h``; ``lm_head`` another ``V·h`` unless ``tie_word_embeddings``;
* attention (GQA/MQA/MHA): q ``h·n_q·d``, k and v ``h·n_kv·d`` each, o ``n_q·d·h``, optional q/k/v
  biases ``(n_q + 2·n_kv)·d`` and o bias ``h``, optional per-head q/k norms ``2·d``;
* attention (MLA, DeepSeek-V2 paper arXiv:2405.04434 and ``DeepseekV2Attention``):
  ``h·q_lora + q_lora + q_lora·n_h·(d_nope + d_rope)`` (or ``h·n_h·(d_nope + d_rope)`` without a q
  LoRA) ``+ h·(kv_lora + d_rope) + kv_lora + kv_lora·n_h·(d_nope + d_v) + n_h·d_v·h``;
* gated MLP (SwiGLU/GeGLU): ``3·h·i``; MoE layers: ``E·3·h·i_e`` routed experts (plus
  ``E·(2·i_e + h)`` biases for gpt-oss), router ``h·E``, shared experts ``3·h·i_shared``;
* ``norms_per_layer·h`` norm weights per layer and one final norm ``h``.

A vision tower's parameters come from :attr:`ModelSpec.vision_params`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.model_spec import ModelSpec

__all__ = ["LayerParams", "ParamCounts", "count_params", "layer_params"]


@dataclass(frozen=True)
class LayerParams:
    """Parameters of one decoder layer, split by how they are quantized and sharded.

    Attributes:
        attn_q_o: q and o projection weights (split by TP; quantizable).
        attn_kv: k and v projection weights, or the MLA down-projections (quantizable). For GQA/MHA they
            split by TP until TP exceeds the KV heads; MLA's ``kv_a``/``q_a`` are replicated.
        attn_mla_up: MLA up-projections ``q_b`` and ``kv_b`` (split by TP; quantizable).
        mlp: dense MLP weights (split by TP; quantizable).
        experts: routed-expert weights (split by TP or EP; quantizable, the only part mxfp4 touches).
        shared_experts: shared-expert weights (split by TP; quantizable).
        small: biases, norms and the router, kept in the model dtype and mostly replicated.
    """

    attn_q_o: int
    attn_kv: int
    attn_mla_up: int
    mlp: int
    experts: int
    shared_experts: int
    small: int

    @property
    def total(self) -> int:
        """All parameters of the layer."""
        return (
            self.attn_q_o + self.attn_kv + self.attn_mla_up + self.mlp + self.experts + self.shared_experts + self.small
        )


@dataclass(frozen=True)
class ParamCounts:
    """Whole-model parameter counts.

    Attributes:
        embedding: input embedding ``V·h``.
        lm_head: output projection, 0 when tied to the embedding.
        layers: sum over decoder layers (attention, MLP/MoE, norms).
        final_norm: the last norm before ``lm_head``.
        vision: vision tower and projector.
        total: everything above.
        active: parameters a token touches (routed experts counted ``num_experts_per_tok`` times).
    """

    embedding: int
    lm_head: int
    layers: int
    final_norm: int
    vision: int
    total: int
    active: int


def layer_params(spec: ModelSpec, index: int) -> LayerParams:
    """Parameters of decoder layer ``index`` (0-based) of ``spec``; formulas in the module docstring."""
    h = spec.hidden_size
    small = spec.norms_per_layer * h
    mla_up = 0
    if spec.is_mla:
        rope = spec.qk_rope_head_dim or 0
        nope = spec.qk_nope_head_dim or 0
        n = spec.num_attention_heads
        kv_lora = spec.kv_lora_rank or 0
        if spec.q_lora_rank:
            q_down = h * spec.q_lora_rank
            mla_up += spec.q_lora_rank * n * (nope + rope)
            small += spec.q_lora_rank
            q_o = n * spec.v_head_dim * h
            kv = q_down + h * (kv_lora + rope)
        else:
            q_o = h * n * (nope + rope) + n * spec.v_head_dim * h
            kv = h * (kv_lora + rope)
        mla_up += kv_lora * n * (nope + spec.v_head_dim)
        small += kv_lora
    else:
        d = spec.head_dim
        q_o = 2 * h * spec.num_attention_heads * d
        kv = 2 * h * spec.num_kv_heads * d
        if spec.qkv_bias:
            small += (spec.num_attention_heads + 2 * spec.num_kv_heads) * d
        if spec.qk_norm:
            small += 2 * d
    if spec.o_bias:
        small += h
    if spec.attention_sinks:
        small += spec.num_attention_heads
    experts = shared = mlp = 0
    if spec.moe_layers and spec.moe_layers[index]:
        e, i_e = spec.num_experts, spec.moe_intermediate_size
        experts = e * 3 * h * i_e
        if spec.expert_bias:
            experts += e * (2 * i_e + h)
        small += h * e + (e if spec.router_bias else 0) + (e if spec.router_score_bias else 0)
        if spec.num_shared_experts:
            shared = 3 * h * spec.shared_expert_intermediate_size
            if spec.shared_expert_gate:
                small += h
    else:
        inter = spec.dense_intermediate_sizes[index] if spec.dense_intermediate_sizes else spec.intermediate_size
        mlp = 3 * h * inter
    return LayerParams(q_o, kv, mla_up, mlp, experts, shared, small)


def count_params(spec: ModelSpec) -> ParamCounts:
    """Total and active parameter counts of ``spec``.

    Args:
        spec: the model.

    Returns:
        The counts by component. ``active`` counts the routed experts a token uses
        (``num_experts_per_tok`` of ``num_experts``), the way MoE model cards report it.
    """
    embed = spec.vocab_size * spec.hidden_size
    head = 0 if spec.tie_word_embeddings else embed
    layers = [layer_params(spec, i) for i in range(spec.num_layers)]
    layer_total = sum(p.total for p in layers)
    routed_unused = 0
    if spec.num_experts:
        share = 1 - spec.num_experts_per_tok / spec.num_experts
        routed_unused = round(sum(p.experts for p in layers) * share)
    final = spec.hidden_size
    total = embed + head + layer_total + final + spec.vision_params
    return ParamCounts(embed, head, layer_total, final, spec.vision_params, total, total - routed_unused)
