"""Plan a scenario with its engine, and find the cheapest changes that make it fit.

:func:`plan` is the one entry point pages and the CLI call.
"""

from __future__ import annotations

from dataclasses import replace

from planner.capacity.engines.article import plan_article
from planner.capacity.engines.tgi import TGI_KV_CACHE_DTYPE, TGI_QUANTIZE, plan_tgi
from planner.capacity.engines.vllm import plan_vllm
from planner.capacity.result import Advice, Plan
from planner.capacity.scenario import Scenario, validate
from planner.capacity.version_range import version_range, versions_in_use
from planner.catalog.gpus import GPU, get_gpu, list_gpus
from planner.catalog.hub import resolve_model
from planner.catalog.model_spec import ModelSpec
from planner.catalog.models import quantized_exports
from planner.errors import PlannerError

__all__ = ["ADVICE_MAX_LEN_STEP_TOKENS", "advised_max_model_len", "plan", "plan_many"]

#: Most TP sizes the advice suggests (one 8-GPU node).
_MAX_ADVICE_GPUS = 8
#: Utilization the advice may raise to: vLLM's own examples go to 0.95; above it CUDA graphs and
#: other processes run out of headroom.
_HIGH_UTILIZATION = 0.95
#: Suggestions kept.
_MAX_ADVICE = 5
#: The advice's shorter ``--max-model-len`` is the longest that fits rounded down to a multiple of this, tokens.
ADVICE_MAX_LEN_STEP_TOKENS = 1024
#: A "bigger GPU" must have at least this much more memory to be worth suggesting.
_MIN_GPU_STEP = 1.1


def _plan_once(scenario: Scenario, spec: ModelSpec | None, gpu: GPU | None = None) -> Plan:
    if scenario.engine == "tgi":
        return plan_tgi(scenario, spec, gpu)
    if scenario.engine == "article":
        return plan_article(scenario, spec)
    return plan_vllm(scenario, spec, gpu)


def plan(
    scenario: Scenario,
    *,
    spec: ModelSpec | None = None,
    advise: bool = True,
    gpu: GPU | None = None,
    with_range: bool = True,
) -> Plan:
    """Validate ``scenario`` and plan it with its engine.

    Args:
        scenario: what to plan.
        spec: a model to use instead of resolving ``scenario.model`` (catalog, on-disk cache, then the Hub,
            see :func:`planner.catalog.hub.resolve_model`).
        advise: when it does not fit, search for the cheapest changes that make it fit.
        gpu: a GPU to use instead of the scenario's (a catalog GPU with the memory a log reports, say).
        with_range: vLLM without ``engine_version``: also plan the versions still in use
            (:attr:`Plan.version_range`).

    Returns:
        The plan; ``advice`` lists fitting alternatives, each re-planned to prove it, fewest GPUs
        first.

    Raises:
        PlannerError: invalid settings, unknown model or GPU.
    """
    scenario = validate(scenario)
    article_inputs = None not in (
        scenario.params_b,
        scenario.num_layers,
        scenario.num_kv_heads,
        scenario.head_dim,
        scenario.gpu_memory_gb,
    )
    if spec is None and not (scenario.engine == "article" and article_inputs):
        spec = resolve_model(scenario.model).spec
    result = _beyond_model(_plan_once(scenario, spec, gpu))
    if with_range and spec is not None and scenario.engine == "vllm" and scenario.engine_version is None:
        result = replace(result, version_range=version_range(scenario, spec, gpu))
    some_refuse = result.version_range is not None and bool(result.version_range.refused_by)
    if (result.fits and not some_refuse) or not advise:
        return result
    return replace(result, advice=_advice(scenario, result, spec))


def _beyond_model(result: Plan) -> Plan:
    """A target context beyond the model's own limit has no concurrency: ``None`` with a note naming the limit
    (vLLM refuses a ``--max-model-len`` above ``max_position_embeddings`` unless told to override it)."""
    target, limit = result.scenario.target_context, result.model_max_position_embeddings
    if not target or limit is None or target <= limit:
        return result
    note = f"target context {target:,} tokens is beyond the model's limit of {limit:,} tokens: concurrency n/a"
    return replace(result, max_concurrency_at_target=None, notes=(*result.notes, note))


def plan_many(scenarios: list[Scenario]) -> list[Plan | PlannerError]:
    """Plan several scenarios; a failing one yields its error in place instead of stopping the rest."""
    out: list[Plan | PlannerError] = []
    for s in scenarios:
        try:
            out.append(plan(s))
        except PlannerError as exc:
            out.append(exc)
    return out


def _candidates(s: Scenario, result: Plan, spec: ModelSpec) -> list[tuple[str, str, Scenario]]:
    """Single changes worth trying, as (category, description, changed scenario)."""
    out: list[tuple[str, str, Scenario]] = []
    if s.engine == "article":
        if s.weight_quant != "int4":
            out.append(("quant", "int4 weights", replace(s, weight_quant="int4")))
        if s.kv_quant not in ("fp8", "int8", "int4"):
            out.append(("kv", "fp8 KV cache", replace(s, kv_quant="fp8")))
    else:
        tgi = s.engine == "tgi"
        if s.kv_cache_dtype not in ("fp8", "fp8_e4m3", "fp8_e5m2"):
            kv_flag = f"--kv-cache-dtype {TGI_KV_CACHE_DTYPE['fp8'] if tgi else 'fp8'}"
            out.append(("kv", kv_flag, replace(s, kv_cache_dtype="fp8")))
        tp = s.tensor_parallel_size
        # a TP the heads do not divide is refused outright: the nearest smaller valid TPs are candidates too
        smaller = (1, 2, 4) if spec.num_attention_heads % tp else ()
        for bigger in (*smaller, 2, 4, 8):
            fits_node = bigger * s.pipeline_parallel_size <= _MAX_ADVICE_GPUS
            if bigger != tp and (bigger > tp or smaller) and spec.num_attention_heads % bigger == 0 and fits_node:
                flag = "--num-shard" if tgi else "--tensor-parallel-size"
                out.append(("tp", f"{flag} {bigger}", replace(s, tensor_parallel_size=bigger)))
        if s.engine == "vllm" and s.gpu_memory_utilization < _HIGH_UTILIZATION:
            out.append(
                (
                    "util",
                    f"--gpu-memory-utilization {_HIGH_UTILIZATION}",
                    replace(s, gpu_memory_utilization=_HIGH_UTILIZATION),
                )
            )
        if spec.quant.method == "none" and s.quantization is None:
            try:
                fp8 = get_gpu(s.gpu).fp8_support if s.gpu != "custom" else False
            except PlannerError:
                fp8 = False
            exports = quantized_exports(s.model)
            if fp8:
                flag = f"--quantize {TGI_QUANTIZE['fp8']}" if tgi else "--quantization fp8"
                out.append(("quant", f"{flag} (FP8 weights)", replace(s, quantization="fp8")))
            for export in exports:
                out.append(
                    (
                        "quant",
                        f"the {export.spec.quant.method.upper()} checkpoint {export.id}",
                        replace(s, model=export.id),
                    )
                )
            if not any(e.spec.quant.method in ("awq", "gptq") for e in exports):
                out.append(("quant", "an AWQ int4 export of this model", replace(s, quantization="awq")))
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
                    if g.memory_total_bytes > _MIN_GPU_STEP * current.memory_total_bytes and g.vendor == current.vendor
                ),
                key=lambda g: g.memory_total_bytes,
            )
            for g in bigger_gpus[:3]:
                out.append(("gpu", f"a bigger GPU: {g.name}", replace(s, gpu=g.id, gpu_memory_gb=None)))
    return out


def _try(candidate: Scenario, base: Scenario, spec: ModelSpec) -> Plan | None:
    """Plan ``candidate`` quietly; a candidate that swaps the checkpoint gets that checkpoint's spec.

    vLLM without ``engine_version``: the candidate is planned in every version of
    :func:`~planner.capacity.version_range.versions_in_use` and judged by the worst (a version where it does not
    fit, the shortest longest-that-fits first; else the least concurrency), so a suggested fix starts whatever the
    version; the plan returned keeps the newest version's scenario, as the plan it fixes does.
    """
    try:
        if candidate.model != base.model:
            spec = resolve_model(candidate.model).spec
        newest = _plan_once(validate(candidate), spec)
        if candidate.engine != "vllm" or candidate.engine_version not in (None, "", "latest"):
            return newest
        plans = [_plan_once(validate(replace(candidate, engine_version=v)), spec) for v in versions_in_use()]
    except PlannerError:
        return None
    # a version that refuses the configuration outright refuses it whatever the memory: not the range's question
    judged = [p for p in plans if not p.refused] or [newest]
    worst = min(judged, key=lambda p: (p.fits, p.estimated_max_model_len or 0, p.max_concurrency))
    return replace(worst, scenario=newest.scenario)


def _runs_on_its_gpu(candidate: Scenario) -> bool:
    """FP8 weights need a GPU with an FP8 path (``fp8_support``; TGI's launcher: its fp8 "works on H100 and above"):
    a pair of changes must not put them on, say, a V100. An FP8 KV cache is storage only and runs on Volta and
    Ampere too (vLLM PR #2279), so it is not checked. A custom GPU is taken at its word."""
    if candidate.quantization != "fp8" or candidate.gpu == "custom":
        return True
    try:
        return get_gpu(candidate.gpu).fp8_support
    except PlannerError:
        return False


def advised_max_model_len(longest_tokens: int) -> int | None:
    """The ``--max-model-len`` the advice offers when only ``longest_tokens`` fit: rounded down to a multiple of
    :data:`ADVICE_MAX_LEN_STEP_TOKENS` (a round number, a little headroom), or None below one step.

    Args:
        longest_tokens: the longest context that fits (:attr:`Plan.estimated_max_model_len`), tokens.
    """
    if longest_tokens < ADVICE_MAX_LEN_STEP_TOKENS:
        return None
    return longest_tokens // ADVICE_MAX_LEN_STEP_TOKENS * ADVICE_MAX_LEN_STEP_TOKENS


def _shorten(s: Scenario, alt: Plan) -> tuple[str, Scenario] | None:
    """vLLM only: cap ``max_model_len`` at what fits (:func:`advised_max_model_len`), if that is at least 1024."""
    estimate = alt.estimated_max_model_len or 0
    shorter = advised_max_model_len(estimate)
    if s.engine != "vllm" or shorter is None or estimate >= alt.max_model_len:
        return None
    return f"--max-model-len {shorter}", replace(s, max_model_len=shorter)


def _advice(s: Scenario, result: Plan, spec: ModelSpec | None) -> tuple[Advice, ...]:
    """Changes that make ``s`` fit: single changes first, then pairs from different categories, each
    optionally followed by a shorter ``max_model_len``; every one re-planned to prove it fits."""
    model_spec = spec
    if model_spec is None:
        return ()
    found: dict[str, Advice] = {}

    def consider(changes: list[str], candidate: Scenario) -> None:
        if not _runs_on_its_gpu(candidate):
            return
        alt = _try(candidate, s, model_spec)
        if alt is None:
            return
        if not alt.fits:
            shorter = _shorten(candidate, alt)
            if shorter is None:
                return
            alt = _try(shorter[1], s, model_spec)
            if alt is None or not alt.fits:
                return
            changes = [*changes, shorter[0]]
        key = " + ".join(changes)
        found.setdefault(key, Advice(key, alt.scenario, alt.max_concurrency, alt.num_gpus))

    singles = _candidates(s, result, model_spec)
    consider([], s)
    for _, change, candidate in singles:
        consider([change], candidate)
    if len(found) < _MAX_ADVICE:
        for i, (cat_a, change_a, cand_a) in enumerate(singles):
            for cat_b, change_b, _ in singles[i + 1 :]:
                if cat_a == cat_b:
                    continue
                combined = next(c for k, ch, c in _candidates(cand_a, result, model_spec) if ch == change_b)
                consider([change_a, change_b], combined)
    ranked = sorted(
        found.values(), key=lambda a: (a.num_gpus, a.change.count("+"), a.change.startswith("a bigger GPU"))
    )
    return tuple(ranked[:_MAX_ADVICE])
