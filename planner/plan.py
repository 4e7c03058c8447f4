"""Plan a scenario with its engine, and find the cheapest changes that make it fit.

:func:`plan` is the one entry point pages and the CLI call.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines.article import plan_article
from planner.engines.tgi import plan_tgi
from planner.engines.vllm import plan_vllm
from planner.errors import PlannerError
from planner.gpus import get_gpu, list_gpus
from planner.model_spec import ModelSpec
from planner.models import get_model
from planner.result import Advice, Plan
from planner.scenario import Scenario, validate

__all__ = ["plan", "plan_many"]

#: Most TP sizes the advice suggests (one 8-GPU node).
_MAX_ADVICE_GPUS = 8


def _plan_once(scenario: Scenario, spec: ModelSpec | None) -> Plan:
    if scenario.engine == "tgi":
        return plan_tgi(scenario, spec)
    if scenario.engine == "article":
        return plan_article(scenario)
    return plan_vllm(scenario, spec)


def plan(scenario: Scenario, *, spec: ModelSpec | None = None, advise: bool = True) -> Plan:
    """Validate ``scenario`` and plan it with its engine.

    Args:
        scenario: what to plan.
        spec: a model to use instead of the catalog entry named by ``scenario.model``.
        advise: when it does not fit, search for the cheapest changes that make it fit.

    Returns:
        The plan; ``advice`` lists fitting alternatives, each re-planned to prove it, fewest GPUs
        first.

    Raises:
        PlannerError: invalid settings, unknown model or GPU.
    """
    scenario = validate(scenario)
    result = _plan_once(scenario, spec)
    if result.fits or not advise:
        return result
    return replace(result, advice=_advice(scenario, result, spec))


def plan_many(scenarios: list[Scenario]) -> list[Plan | PlannerError]:
    """Plan several scenarios; a failing one yields its error in place instead of stopping the rest."""
    out: list[Plan | PlannerError] = []
    for s in scenarios:
        try:
            out.append(plan(s))
        except PlannerError as exc:
            out.append(exc)
    return out


def _candidates(s: Scenario, result: Plan, spec: ModelSpec) -> list[tuple[str, Scenario]]:
    out: list[tuple[str, Scenario]] = []
    if s.engine == "article":
        if s.weight_quant != "int4":
            out.append(("int4 weights", replace(s, weight_quant="int4")))
        if s.kv_quant not in ("fp8", "int8", "int4"):
            out.append(("fp8 KV cache", replace(s, kv_quant="fp8")))
    else:
        if s.kv_cache_dtype not in ("fp8", "fp8_e4m3", "fp8_e5m2"):
            out.append(("--kv-cache-dtype fp8", replace(s, kv_cache_dtype="fp8")))
        estimate = result.estimated_max_model_len or 0
        if s.engine == "vllm" and 1024 <= estimate < result.max_model_len:
            shorter = estimate // 1024 * 1024
            out.append((f"--max-model-len {shorter}", replace(s, max_model_len=shorter)))
        tp = s.tensor_parallel_size
        for bigger in (2, 4, 8):
            if (
                bigger > tp
                and spec.num_attention_heads % bigger == 0
                and bigger * s.pipeline_parallel_size <= _MAX_ADVICE_GPUS
            ):
                flag = "--num-shard" if s.engine == "tgi" else "--tensor-parallel-size"
                out.append((f"{flag} {bigger}", replace(s, tensor_parallel_size=bigger)))
        if spec.quant.method == "none" and s.quantization is None:
            try:
                fp8 = get_gpu(s.gpu).fp8_support if s.gpu != "custom" else False
            except PlannerError:
                fp8 = False
            if fp8:
                out.append(("--quantization fp8 (FP8 weights)", replace(s, quantization="fp8")))
            out.append(("an AWQ int4 checkpoint of this model", replace(s, quantization="awq")))
    if s.gpu != "custom":
        try:
            current = get_gpu(s.gpu)
        except PlannerError:
            current = None
        if current is not None:
            bigger_gpus = sorted(
                (
                    g
                    for g in list_gpus()
                    if g.memory_total_bytes > current.memory_total_bytes and g.vendor == current.vendor
                ),
                key=lambda g: g.memory_total_bytes,
            )
            for g in bigger_gpus[:4]:
                out.append((f"a bigger GPU: {g.name}", replace(s, gpu=g.id, gpu_memory_gb=None)))
    return out


def _advice(s: Scenario, result: Plan, spec: ModelSpec | None) -> tuple[Advice, ...]:
    model_spec = spec or (get_model(s.model).spec if s.engine != "article" or s.params_b is None else None)
    if model_spec is None:
        return ()
    found: list[Advice] = []
    seen_gpu_fix = False
    for change, candidate in _candidates(s, result, model_spec):
        if change.startswith("a bigger GPU") and seen_gpu_fix:
            continue
        try:
            alt = _plan_once(validate(candidate), spec)
        except PlannerError:
            continue
        if alt.fits:
            found.append(Advice(change, alt.scenario, alt.max_concurrency, alt.num_gpus))
            seen_gpu_fix = seen_gpu_fix or change.startswith("a bigger GPU")
    found.sort(key=lambda a: (a.num_gpus, a.change.startswith("a bigger GPU")))
    return tuple(found[:5])
