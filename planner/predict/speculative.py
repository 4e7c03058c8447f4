"""Speculative decoding in the step model: tokens per target step, the draft's and the verification's cost, and the
batch size past which it stops paying.

One decode step of a request under speculative decoding with ``k`` = ``num_speculative_tokens`` (vLLM V1,
``vllm/v1/spec_decode/`` and ``vllm/v1/worker/gpu_model_runner.py``, v0.24.0):

1. **Verification**: the target runs ``k + 1`` tokens per sequence (the last accepted token and the ``k`` drafts),
   so a step of batch ``B`` computes ``B·(k + 1)`` tokens: the weight read is shared, the KV cache of each sequence is
   read once, but the matmul FLOPs, the LM head and the KV writes grow ``(k + 1)``-fold
   (:func:`planner.predict.step_time.step_row` with ``n_decode = B·(k + 1)``, ``n_seqs = B``). This is why it stops
   paying as the batch grows: a decode step is bandwidth-bound at small batch (the extra tokens are free) and
   compute-bound at large batch (they cost their FLOPs).
2. **Drafting**: ``k`` forward passes of the drafter, one after the other (vLLM's ``EagleProposer.propose``: the first
   over the step's ``B·(k + 1)`` positions, then ``k − 1`` of one token per sequence), each timed by the same step
   model with the drafter's shape (a small model for ``draft_model``; one decoder layer and its LM head for EAGLE,
   EAGLE-3 and MTP, :func:`layer_head_shape`) and the per-step host term (input preparation, graph replay and the
   draft's argmax happen once per forward). ``ngram`` drafts on the CPU from the prompt (no GPU pass: cost 0 here).
3. **Tokens emitted** per sequence per step: ``1 + E[accepted]``, ``E[accepted] = Σ_{i=1..k} Π_{j≤i} a_j``, where
   ``a_j`` is the acceptance rate of position ``j`` given that positions before it were accepted (a rejection ends
   the draft; the target's own token is the bonus), as in Leviathan et al. 2023 (arXiv:2211.17192, §3.1, with
   ``a_j = α`` for all ``j``) and AIConfigurator's ``nextn_accept_rates``. vLLM's "per-position acceptance rate"
   (``accepted at position i / drafts``, :class:`planner.serving.server_metrics.SpecDecodeStats`) is the product
   ``Π_{j≤i} a_j``: :func:`conditional_rates` turns it into ``a_j``.

Then ``TPOT = step_s / (1 + E[accepted])`` and output throughput ``= B · (1 + E[accepted]) / step_s``, against
``TPOT = step_s`` and ``B / step_s`` without (:func:`speculative_estimate`).

Default conditional rates per method (:data:`DEFAULT_ACCEPTANCE`; editable, a workload's own acceptance differs a
lot, measure it with the Load Test's spec-decode counters):

* ``eagle``/``eagle3``: 0.8 per position: EAGLE (Li et al., ICML 2024, arXiv:2401.15077) reports a draft accuracy
  of about 0.8 on MT-bench; EAGLE-3 (arXiv:2503.01840) trains the head so that acceptance stays flat over positions.
* ``mtp``: 0.85: DeepSeek-V3 technical report (arXiv:2412.19437, §5.4.3): "the acceptance rate of the second token
  prediction ranges between 85% and 90%".
* ``draft_model``: 0.6: Leviathan et al. 2023 (arXiv:2211.17192), Table 3: α between 0.5 and 0.9 across their
  target/draft pairs, about 0.6 for the largest model with a 8B-class draft on dialog.
* ``ngram``: none published for a general workload: the rates must be given.

**One fitted constant**, :data:`DRAFT_FORWARD_OVERHEAD_S` (``draft_model`` only): vLLM 0.24.0 runs the
``draft_model`` method on the V1 model runner without async scheduling ("Async scheduling not supported with
draft_model-based speculative decoding", its start-up log), and the H200 runs of Llama-3.1-8B with a Llama-3.2-1B
draft (``bench/data/h200_sweeps/llama-3.1-8b-spec``) took ~28 ms more per step than the mechanism above gives, flat
from concurrency 1 to 64: host time per draft forward the step model does not hold. ``bench/spec_prediction.py``
fits it as the mean residual per draft forward (7.1 ms with the three-model coefficients, 7.6 ms with the eleven-model
ones) and scores it leave-one-concurrency-out (TPOT +14% to +36%, −35% at c=256; without it −58% to −72%). EAGLE-3
(same server, Model Runner V2) needs none: the mechanism alone is within 13% at c=1 and 16 (steady decode). Set
``draft_forward_overhead_s`` to override.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from planner.errors import InvalidParameterError
from planner.predict.shape import AttentionGroup, StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients, step_row

__all__ = [
    "DEFAULT_ACCEPTANCE",
    "DRAFT_FORWARD_OVERHEAD_S",
    "SPEC_METHODS",
    "SpecDecodeConfig",
    "SpecDecodeEstimate",
    "break_even_batch",
    "conditional_rates",
    "expected_accepted",
    "layer_head_shape",
    "rates_from_measured",
    "speculative_estimate",
]

#: ``speculative_config.method`` values modelled (vLLM spelling, ``vllm/config/speculative.py``).
SPEC_METHODS: tuple[str, ...] = ("draft_model", "eagle", "eagle3", "mtp", "ngram")
#: Conditional acceptance rate per draft position, by method (sources in the module docstring).
DEFAULT_ACCEPTANCE: dict[str, float] = {"eagle": 0.8, "eagle3": 0.8, "mtp": 0.85, "draft_model": 0.6}
#: Host seconds per draft forward beyond the step model, by method (fitted, module docstring; 0 elsewhere).
DRAFT_FORWARD_OVERHEAD_S: dict[str, float] = {"draft_model": 7.6e-3}


def _rate(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


@dataclass(frozen=True)
class SpecDecodeConfig:
    """Speculative decoding as the predictor takes it (plain values; the scenario's ``speculative_config`` maps here).

    Attributes:
        method: One of :data:`SPEC_METHODS`.
        num_speculative_tokens: Draft tokens per step ``k``, ≥ 1.
        acceptance_rates: Conditional acceptance rate of each draft position (``a_1..a_k``, each in [0, 1]); fewer
            than ``k`` values repeat the last one. Empty = the method's :data:`DEFAULT_ACCEPTANCE`.
        draft_shape: The drafter's step shape (a planned small model for ``draft_model``; :func:`layer_head_shape`
            for EAGLE/MTP); None for ``ngram``. Required for the other methods.
        draft_forward_overhead_s: Host seconds added per draft forward; None = :data:`DRAFT_FORWARD_OVERHEAD_S` of
            the method (0 where it has none).

    Raises:
        InvalidParameterError: an unknown method, ``k`` < 1, a rate outside [0, 1], no rates for ``ngram``, or no
            ``draft_shape`` where a GPU drafter runs.
    """

    method: str
    num_speculative_tokens: int
    acceptance_rates: tuple[float, ...] = ()
    draft_shape: StepShape | None = None
    draft_forward_overhead_s: float | None = None

    def __post_init__(self) -> None:
        if self.method not in SPEC_METHODS:
            raise InvalidParameterError("method", self.method, " | ".join(SPEC_METHODS))
        k = self.num_speculative_tokens
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidParameterError("num_speculative_tokens", k, "an integer ≥ 1")
        if not all(_rate(a) for a in self.acceptance_rates):
            raise InvalidParameterError("acceptance_rates", self.acceptance_rates, "fractions in [0, 1]")
        if not self.acceptance_rates and self.method not in DEFAULT_ACCEPTANCE:
            raise InvalidParameterError(
                "acceptance_rates",
                "none given",
                f"rates per draft position for method {self.method!r}, which has no published rate "
                "(predict: --spec-acceptance-rates, e.g. 0.5,0.3,0.2, or --spec-acceptance-from a measured run)",
            )
        extra = self.draft_forward_overhead_s
        if extra is not None and not (isinstance(extra, int | float) and math.isfinite(extra) and extra >= 0):
            raise InvalidParameterError("draft_forward_overhead_s", extra, "seconds ≥ 0")
        if self.method != "ngram" and self.draft_shape is None:
            raise InvalidParameterError("draft_shape", None, f"the drafter's StepShape for method {self.method!r}")

    @property
    def forward_overhead_s(self) -> float:
        """Host seconds added per draft forward (the given value, else the method's fitted one, else 0)."""
        given = self.draft_forward_overhead_s
        return given if given is not None else DRAFT_FORWARD_OVERHEAD_S.get(self.method, 0.0)

    @property
    def rates(self) -> tuple[float, ...]:
        """The ``k`` conditional rates used (given ones padded with the last, or the method's default)."""
        given = self.acceptance_rates or (DEFAULT_ACCEPTANCE[self.method],)
        k = self.num_speculative_tokens
        return tuple(given[:k]) + (given[-1],) * max(0, k - len(given))


def expected_accepted(rates: Sequence[float]) -> float:
    """``Σ_i Π_{j≤i} a_j``: draft tokens accepted per step, in expectation (module docstring, item 3).

    Example:
        >>> round(expected_accepted([0.8, 0.75, 0.75]), 4)   # 0.8 + 0.6 + 0.45
        1.85
    """
    total, product = 0.0, 1.0
    for a in rates:
        product *= a
        total += product
    return total


def conditional_rates(per_position: Sequence[float]) -> tuple[float, ...]:
    """Conditional rates ``a_i = p_i / p_{i−1}`` from vLLM's per-position acceptance ``p_i`` (accepted at position i /
    drafts, which is ``Π_{j≤i} a_j``); a position after one never accepted gets 0.

    Raises:
        InvalidParameterError: a value outside [0, 1].

    Example:
        >>> conditional_rates([0.8, 0.6, 0.45])
        (0.8, 0.75, 0.75)
    """
    if not all(_rate(p) for p in per_position):
        raise InvalidParameterError("per_position", tuple(per_position), "fractions in [0, 1]")
    out, before = [], 1.0
    for p in per_position:
        out.append(min(1.0, round(p / before, 12)) if before > 0 else 0.0)
        before = p
    return tuple(out)


def rates_from_measured(
    per_position: Sequence[float] = (),
    *,
    mean_acceptance_length: float | None = None,
    num_speculative_tokens: int | None = None,
) -> tuple[float, ...]:
    """Conditional rates for the predictor from a measured run (the Load Test's counters or a ``vllm bench serve``
    file).

    Args:
        per_position: vLLM's per-position acceptance (accepted at position i / drafts); used when given.
        mean_acceptance_length: ``1 + accepted / drafts``, when per-position figures are missing: the one constant
            rate ``a`` with ``Σ_{i=1..k} aⁱ = length − 1`` (bisection).
        num_speculative_tokens: ``k``, needed with ``mean_acceptance_length``.

    Returns:
        The conditional rates ``a_1..a_k`` (:func:`conditional_rates`), or ``(a,)`` from the length.

    Raises:
        InvalidParameterError: neither figure, a length outside [1, k + 1], or a bad rate.

    Example:
        >>> round(rates_from_measured(mean_acceptance_length=2.839779, num_speculative_tokens=3)[0], 3)
        0.775
    """
    if per_position:
        return conditional_rates(per_position)
    k = num_speculative_tokens
    if mean_acceptance_length is None or not isinstance(k, int) or k < 1:
        raise InvalidParameterError(
            "acceptance", mean_acceptance_length, "per-position acceptance, or a mean acceptance length with k"
        )
    target = mean_acceptance_length - 1.0
    if not 0.0 <= target <= k:
        raise InvalidParameterError("mean_acceptance_length", mean_acceptance_length, f"a length in [1, {k + 1}]")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_accepted([mid] * k) < target else (lo, mid)
    return ((lo + hi) / 2,)


def layer_head_shape(target: StepShape, *, num_layers: int = 1, weight_bytes: float | None = None) -> StepShape:
    """The step shape of an EAGLE/EAGLE-3/MTP head on ``target``: ``num_layers`` decoder layers of the target's kind,
    with their KV cache, and the LM head.

    Args:
        target: The target model's step shape.
        num_layers: Decoder layers of the head (EAGLE, EAGLE-3 and DeepSeek's MTP have 1).
        weight_bytes: Bytes the head reads per forward (its layer, fc and LM head; e.g. 0.58 GiB for
            yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, from vLLM's "Model loading took"). Default: the target's dense
            weights per layer × ``num_layers`` plus an LM head as large as the target's.

    Raises:
        InvalidParameterError: ``num_layers`` < 1 or ``weight_bytes`` ≤ 0.
    """
    if not isinstance(num_layers, int) or num_layers < 1:
        raise InvalidParameterError("num_layers", num_layers, "an integer ≥ 1")
    if weight_bytes is not None and not (weight_bytes > 0 and math.isfinite(weight_bytes)):
        raise InvalidParameterError("weight_bytes", weight_bytes, "bytes > 0")
    layers = max(target.num_layers, 1)
    lm_head_bytes = target.lm_head_flops_per_token  # 2 FLOPs per weight, 2 bytes per bf16 weight
    per_layer = max(target.dense_weight_bytes - lm_head_bytes, 0.0) / layers
    weights = weight_bytes if weight_bytes is not None else per_layer * num_layers + lm_head_bytes
    first = target.groups[0]
    groups = (AttentionGroup(first.kind, first.window_tokens, num_layers, first.kv_bytes_per_token_layer),)
    return replace(
        target,
        model_id=f"{target.model_id} head",
        dense_weight_bytes=weights,
        expert_bytes=0.0,
        num_experts=0,
        experts_per_token=0,
        linear_flops_per_token=target.linear_flops_per_token / layers * num_layers,
        groups=groups,
        allreduces_per_step=2 * num_layers if target.allreduces_per_step else 0,
        num_layers=num_layers,
        num_moe_layers=0,
    )


@dataclass(frozen=True)
class SpecDecodeEstimate:
    """Predicted decode with and without speculative decoding at one batch size and context.

    Attributes:
        batch_size: Sequences decoding at once.
        context_tokens: Tokens each sequence attends to (mean).
        tokens_per_step: ``1 + E[accepted]`` per sequence per target step (vLLM's "mean acceptance length").
        verify_s: The target's step over ``B·(k + 1)`` tokens, seconds.
        draft_s: The drafter's ``k`` forwards, seconds (0 for ``ngram``).
        step_s: ``verify_s + draft_s``.
        base_step_s: The target's plain decode step (one token per sequence), seconds.
        tpot_s / tpot_without_s: ``step_s / tokens_per_step`` and ``base_step_s``, seconds per output token.
        output_throughput / output_throughput_without: ``B · tokens_per_step / step_s`` and ``B / base_step_s``,
            tokens/s.
    """

    batch_size: int
    context_tokens: float
    tokens_per_step: float
    verify_s: float
    draft_s: float
    step_s: float
    base_step_s: float
    tpot_s: float
    tpot_without_s: float
    output_throughput: float
    output_throughput_without: float

    @property
    def speedup(self) -> float:
        """``tpot_without_s / tpot_s``: > 1 where speculation pays."""
        return self.tpot_without_s / self.tpot_s


def _forward_s(
    shape: StepShape, coefficients: StepCoefficients, *, tokens: int, seqs: int, sampled: int, ctx: float
) -> float:
    coef = coefficients.vector()
    row = step_row(
        shape,
        n_decode=tokens,
        decode_ctx=[seqs * min(ctx, g.window_tokens or ctx) for g in shape.groups],
        n_sampled=sampled,
        n_seqs=seqs,
        allreduce_latency_s=coefficients.allreduce_latency_s,
        coef=coef,
    )
    return float(row @ coef)


def speculative_estimate(
    target: StepShape,
    spec: SpecDecodeConfig,
    *,
    batch_size: int,
    context_tokens: float,
    coefficients: StepCoefficients = DEFAULT_COEFFICIENTS,
) -> SpecDecodeEstimate:
    """Predicted TPOT and output throughput with and without speculative decoding (formulas: module docstring).

    Args:
        target: The target deployment's step shape (:func:`planner.predict.shape.step_shape`).
        spec: The speculative decoding.
        batch_size: Sequences decoding together, ≥ 1 (at steady state, the concurrency).
        context_tokens: Mean tokens each attends to (e.g. input + output / 2), ≥ 1.
        coefficients: The step model's coefficients (the drafter's forwards use the same).

    Returns:
        The :class:`SpecDecodeEstimate`.

    Raises:
        InvalidParameterError: ``batch_size`` < 1 or ``context_tokens`` < 1.

    Example: Llama-3.1-8B on an H200 with an EAGLE-3 head, ``k = 3``, rates 0.8/0.75/0.75, batch 1, 576 tokens of
    context: about 2.3 ms TPOT against 4.9 ms without (``bench/spec_prediction.py``).
    """
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise InvalidParameterError("batch_size", batch_size, "an integer ≥ 1")
    if not (isinstance(context_tokens, int | float) and math.isfinite(context_tokens) and context_tokens >= 1):
        raise InvalidParameterError("context_tokens", context_tokens, "tokens ≥ 1")
    k, b = spec.num_speculative_tokens, batch_size
    per_step = 1.0 + expected_accepted(spec.rates)
    base = _forward_s(target, coefficients, tokens=b, seqs=b, sampled=b, ctx=context_tokens)
    verify = _forward_s(target, coefficients, tokens=b * (k + 1), seqs=b, sampled=b * (k + 1), ctx=context_tokens)
    draft = 0.0
    if spec.draft_shape is not None:
        d = spec.draft_shape
        draft = _forward_s(d, coefficients, tokens=b * (k + 1), seqs=b, sampled=b, ctx=context_tokens)
        draft += (k - 1) * _forward_s(d, coefficients, tokens=b, seqs=b, sampled=b, ctx=context_tokens)
        draft += k * spec.forward_overhead_s
    step = verify + draft
    return SpecDecodeEstimate(
        batch_size=b,
        context_tokens=float(context_tokens),
        tokens_per_step=per_step,
        verify_s=verify,
        draft_s=draft,
        step_s=step,
        base_step_s=base,
        tpot_s=step / per_step,
        tpot_without_s=base,
        output_throughput=b * per_step / step,
        output_throughput_without=b / base,
    )


def break_even_batch(
    target: StepShape,
    spec: SpecDecodeConfig,
    *,
    context_tokens: float,
    coefficients: StepCoefficients = DEFAULT_COEFFICIENTS,
    max_batch: int | None = None,
) -> int | None:
    """The smallest batch size at which speculative decoding no longer shortens TPOT (speedup ≤ 1), scanning powers
    of two and then bisecting, up to ``max_batch`` (default the target's ``max_num_seqs``); None when it still pays
    there. 1 when it never pays."""
    top = max_batch or target.max_num_seqs

    def pays(b: int) -> bool:
        est = speculative_estimate(target, spec, batch_size=b, context_tokens=context_tokens, coefficients=coefficients)
        return est.speedup > 1.0

    if not pays(1):
        return 1
    lo, hi = 1, 2
    while hi <= top and pays(hi):
        lo, hi = hi, hi * 2
    if hi > top:
        return None if pays(top) else _bisect(lo, top, pays)
    return _bisect(lo, hi, pays)


def _bisect(lo: int, hi: int, pays: object) -> int:
    # invariant: pays(lo), not pays(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pays(mid):  # type: ignore[operator]
            lo = mid
        else:
            hi = mid
    return hi
