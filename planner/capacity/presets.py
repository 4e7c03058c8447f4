"""Ready-made scenarios: the source article's four scenarios and its three deployment recipes (its throughput
benchmark and eight prompts are load, in :mod:`planner.loadtest.article`).

The article ("LLM Inference Optimization Part 4 — Production Serving", facts restated in the project's
``shared/reference/article.md``) published four ``design_memory_budget`` scenarios, quoted here exactly:

1. Personal Server: RTX 4090 24 GB, Llama 3.1 8B, int4 weights, fp16 KV, 8,192 tokens (131,072 B/token,
   153,802 tokens, 18 requests);
2. Production: A100 80 GB, Llama 3.1 8B, fp16 weights, fp8 KV, 16,384 tokens;
3. Long Context Agent: A100 80 GB, Llama 3.1 8B, int4 weights, fp8 KV, 65,536 tokens;
4. Large Model: H100 80 GB, Llama 3.1 70B, int4 weights, fp8 KV, 8,192 tokens (163,840 B/token, 300,834 tokens,
   36 requests).

Each article scenario exists twice: under the ``article`` engine (the rule of thumb) and under
``vllm`` with the matching settings (int4 → ``--quantization awq``, int8 → ``int8``, fp16 KV →
``--kv-cache-dtype auto``, fp8 KV → ``fp8``, ``--max-model-len`` = the context), so the two can be
compared side by side.

Example:
    >>> from planner.capacity.presets import article_scenarios
    >>> article_scenarios("article")[0].gpu
    'rtx-4090'
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from planner.capacity.result import Advice, Plan
from planner.capacity.scenario import Scenario
from planner.capacity.speculative import SpeculativeConfig
from planner.errors import InvalidParameterError

__all__ = [
    "ARTICLE_CASES",
    "ArticleCase",
    "Preset",
    "article_scenarios",
    "presets",
    "recipes",
    "scenario_from_advice",
]


@dataclass(frozen=True)
class ArticleCase:
    """One of the article's scenarios, in the article's own terms.

    Attributes:
        number: the article's scenario number (1–4).
        model: catalog model id.
        gpu: catalog GPU id.
        params_b: parameters in billions as the article states them (8, 70).
        weight_quant / kv_quant: ``fp16``, ``fp8``, ``int8`` or ``int4``.
        context_tokens: tokens per request.
        name: the article's name of the scenario.
    """

    number: int
    model: str
    gpu: str
    params_b: float
    weight_quant: str
    kv_quant: str
    context_tokens: int
    name: str

    @property
    def title(self) -> str:
        """``"Article 2: Production"``."""
        return f"Article {self.number}: {self.name}"


#: The article's scenarios. ``params_b`` is pinned to the article's figure: the catalog's count for
#: Llama 3.1 70B (70.55 B) rounds to 71, which would not reproduce scenario 4.
ARTICLE_CASES: tuple[ArticleCase, ...] = (
    ArticleCase(1, "meta-llama/Llama-3.1-8B-Instruct", "rtx-4090", 8, "int4", "fp16", 8192, "Personal Server"),
    ArticleCase(2, "meta-llama/Llama-3.1-8B-Instruct", "a100-sxm4-80gb", 8, "fp16", "fp8", 16384, "Production"),
    ArticleCase(3, "meta-llama/Llama-3.1-8B-Instruct", "a100-sxm4-80gb", 8, "int4", "fp8", 65536, "Long Context Agent"),
    ArticleCase(4, "meta-llama/Llama-3.1-70B-Instruct", "h100-sxm-80gb", 70, "int4", "fp8", 8192, "Large Model"),
)

#: Article weight precision → vLLM ``--quantization`` (fp16 = the checkpoint as is).
_VLLM_QUANT = {"fp16": None, "fp8": "fp8", "int8": "int8", "int4": "awq"}
#: Where the catalog has the real export the article's precision stands for, vLLM plans that checkpoint
#: (its quantization_config, group scales and unquantized embeddings included).
_VLLM_CHECKPOINT = {("meta-llama/Llama-3.1-8B-Instruct", "int4"): "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"}
#: Article KV precision → vLLM ``--kv-cache-dtype``.
_VLLM_KV = {"fp16": "auto", "fp8": "fp8", "int8": "fp8", "int4": "fp8"}


@dataclass(frozen=True)
class Preset:
    """A named set of one to four scenarios to load together.

    Attributes:
        key: short stable id (``"article-vllm"``).
        name: what the selector shows.
        description: one or two sentences on what it is and where it comes from.
        scenarios: the scenarios, one to four.
        labels: a short label per scenario.
    """

    key: str
    name: str
    description: str
    scenarios: tuple[Scenario, ...]
    labels: tuple[str, ...]


def _article_scenario(case: ArticleCase, engine: str) -> Scenario:
    if engine == "article":
        return Scenario(
            engine="article",
            model=case.model,
            gpu=case.gpu,
            params_b=case.params_b,
            weight_quant=case.weight_quant,
            kv_quant=case.kv_quant,
            target_context=case.context_tokens,
        )
    export = _VLLM_CHECKPOINT.get((case.model, case.weight_quant))
    return Scenario(
        engine=engine,
        model=export or case.model,
        gpu=case.gpu,
        quantization=None if export else _VLLM_QUANT[case.weight_quant],
        kv_cache_dtype=_VLLM_KV[case.kv_quant],
        max_model_len=case.context_tokens,
    )


def article_scenarios(engine: str = "article") -> tuple[Scenario, ...]:
    """The article's four scenarios under ``engine``.

    Args:
        engine: ``"article"`` (the rule of thumb; ``params_b`` pinned to 8 and 70 as the article
            states) or ``"vllm"`` (int4 → ``awq``, int8 → ``int8``, fp16 KV → ``auto``, fp8 KV →
            ``fp8``, ``max_model_len`` = the context in tokens).

    Returns:
        Four scenarios, in the article's order (module docstring).

    Raises:
        InvalidParameterError: ``engine`` is neither ``article`` nor ``vllm``.
    """
    if engine not in ("article", "vllm"):
        raise InvalidParameterError("engine", engine, "article or vllm")
    return tuple(_article_scenario(case, engine) for case in ARTICLE_CASES)


def recipes() -> tuple[Preset, ...]:
    """The article's three deployment recipes, each planned under vLLM.

    * Personal / small-scale: Qwen 2.5 7B GPTQ int4 (GQA-4: a small KV cache) with an fp16 KV cache;
    * Production: Llama 3.1 8B AWQ int4, or 70B in fp16 on several GPUs, both with an fp8 KV cache and speculative
      decoding (the article's own draft: Llama-3.2-1B, 5 speculative tokens);
    * Long-context agent: DeepSeek-V3.2 (DSA sparse attention: its indexer cache is planned) with AWQ int4 weights
      and an fp8 KV cache, or Llama 3.1 8B + DMS, a KV compression no engine ships (a what-if ratio of 8, the
      compression DMS reports: Łańcucki et al., "Inference-Time Hyper-Scaling with KV Cache Compression",
      arXiv:2506.05345).

    The article names no GPU or context for the recipes: the GPUs (RTX 4090, the A100 80 GB and H100 of its
    scenarios, H200 for DeepSeek) and lengths (8K, 16K as scenario 2, 128K for the agent) are ours, and each
    description says so.
    """
    draft = SpeculativeConfig("draft_model", 5, "meta-llama/Llama-3.2-1B-Instruct")
    personal = Scenario(model="Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", gpu="rtx-4090", max_model_len=8192, max_num_seqs=16)
    production_8b = Scenario(
        model="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        gpu="a100-sxm4-80gb",
        kv_cache_dtype="fp8",
        max_model_len=16384,
        speculative_config=draft,
    )
    production_70b = Scenario(
        model="meta-llama/Llama-3.1-70B-Instruct",
        gpu="h100-sxm-80gb",
        tensor_parallel_size=4,
        kv_cache_dtype="fp8",
        max_model_len=16384,
        speculative_config=draft,
    )
    agent_v32 = Scenario(
        model="deepseek-ai/DeepSeek-V3.2",
        gpu="h200-sxm-141gb",
        tensor_parallel_size=8,
        quantization="awq",
        kv_cache_dtype="fp8",
        max_model_len=131072,
    )
    agent_dms = Scenario(
        model="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        gpu="a100-sxm4-80gb",
        kv_cache_dtype="fp8",
        max_model_len=131072,
        kv_compression_ratio=8.0,
    )
    return (
        Preset(
            "personal",
            "Recipe: personal (Qwen 2.5 7B GPTQ int4, fp16 KV)",
            "The article's personal recipe: a 4-bit 7B model whose GQA-4 KV cache is small enough to keep in fp16. "
            "Our choices: one RTX 4090, 8K context, 16 sequences.",
            (personal,),
            ("Personal",),
        ),
        Preset(
            "production",
            "Recipe: production (Llama 3.1 8B AWQ / 70B fp16, fp8 KV, speculative decoding)",
            "The article's production recipe: fp8 KV cache and speculative decoding with its Llama-3.2-1B draft "
            "(5 tokens), for 8B in AWQ int4 and for 70B in 16-bit over several GPUs. Our choices: an A100 80 GB for "
            "8B (scenario 2's GPU), 4× H100 for 70B, 16K context.",
            (production_8b, production_70b),
            ("Production 8B AWQ", "Production 70B TP4"),
        ),
        Preset(
            "agent",
            "Recipe: long-context agent (DeepSeek-V3.2 / Llama 3.1 8B + DMS)",
            "The article's long-context recipe: DeepSeek-V3.2 (DSA sparse attention, its indexer cache counted) in "
            "AWQ int4 with fp8 KV, or Llama 3.1 8B with DMS-style KV compression, a what-if ratio of 8 that no engine "
            "setting gives. Our choices: 8× H200 for DeepSeek, an A100 80 GB for 8B, 128K context.",
            (agent_v32, agent_dms),
            ("Agent DeepSeek-V3.2", "Agent 8B + DMS (what-if)"),
        ),
    )


def presets() -> tuple[Preset, ...]:
    """Every preset the UI offers: the article's scenarios (both engines, and each one side by side
    under ``article`` and ``vllm``), the three recipes, and the recipes together."""
    titles = tuple(case.title for case in ARTICLE_CASES)
    out = [
        Preset(
            "article-article",
            "Article scenarios 1–4 — article rule",
            "The article's four scenarios under its own rule of thumb, as published.",
            article_scenarios("article"),
            titles,
        ),
        Preset(
            "article-vllm",
            "Article scenarios 1–4 — vLLM",
            "The same four scenarios under vLLM's own accounting.",
            article_scenarios("vllm"),
            titles,
        ),
    ]
    for case in ARTICLE_CASES:
        out.append(
            Preset(
                f"article-{case.number}",
                f"{case.title}: article rule vs vLLM",
                f"{case.title}, {case.context_tokens:,} tokens, {case.weight_quant} weights, {case.kv_quant} KV, "
                "under the article's rule and under vLLM.",
                (_article_scenario(case, "article"), _article_scenario(case, "vllm")),
                (f"{case.title} · article", f"{case.title} · vLLM"),
            )
        )
    recipe_list = recipes()
    out.extend(recipe_list)
    out.append(
        Preset(
            "recipes",
            "Recipes: all three",
            "The three recipes side by side.",
            tuple(r.scenarios[0] for r in recipe_list),
            tuple(r.labels[0] for r in recipe_list),
        )
    )
    return tuple(out)


def scenario_from_advice(original: Scenario, plan: Plan, advice: Advice) -> Scenario:
    """The user's scenario with only the change an advice makes applied.

    ``advice.scenario`` is resolved (engine defaults filled in: ``max_model_len``, ``engine_version``,
    the article's inputs); applying it whole would pin those defaults. This applies only the fields in
    which ``advice.scenario`` differs from ``plan.scenario`` (the resolved original). A changed GPU
    does not pin the article's ``gpu_memory_gb`` when the user left it to the catalog.

    Args:
        original: the scenario as the user entered it.
        plan: its plan (``plan.scenario`` is the resolved original).
        advice: one of ``plan.advice``.

    Returns:
        ``original`` with the advice's changes.
    """
    changes = {
        f.name: getattr(advice.scenario, f.name)
        for f in fields(Scenario)
        if getattr(advice.scenario, f.name) != getattr(plan.scenario, f.name)
    }
    if "gpu" in changes and original.gpu_memory_gb is None:
        changes.pop("gpu_memory_gb", None)
    return replace(original, **changes)
