"""Ready-made scenarios: the article's four scenarios and three deployment recipes.

The article ("design_memory_budget") published four scenarios. Scenarios 1 and 4 are quoted exactly
(RTX 4090 24 GB, Llama 3.1 8B, int4 weights, fp16 KV, 8,192 tokens → 131,072 B/token, 153,802 tokens,
18 requests; H100 80 GB, Llama 3.1 70B, int4 weights, fp8 KV, 8,192 tokens → 163,840 B/token,
300,834 tokens, 36 requests). Scenarios 2 and 3 were not available to us; the ones here are
*reconstructed* stand-ins and are labelled so.

Each article scenario exists twice: under the ``article`` engine (the rule of thumb) and under
``vllm`` with the matching settings (int4 → ``--quantization awq``, int8 → ``int8``, fp16 KV →
``--kv-cache-dtype auto``, fp8 KV → ``fp8``, ``--max-model-len`` = the context), so the two can be
compared side by side.

Example:
    >>> from planner.catalog.presets import article_scenarios
    >>> article_scenarios("article")[0].gpu
    'rtx-4090'
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from planner.capacity.result import Advice, Plan
from planner.capacity.scenario import Scenario
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
        reconstructed: ``True`` when the scenario is our stand-in, not the article's text.
    """

    number: int
    model: str
    gpu: str
    params_b: float
    weight_quant: str
    kv_quant: str
    context_tokens: int
    reconstructed: bool

    @property
    def title(self) -> str:
        """``"Article 2 (reconstructed)"`` or ``"Article 1"``."""
        return f"Article {self.number}" + (" (reconstructed)" if self.reconstructed else "")


#: The article's scenarios. ``params_b`` is pinned to the article's figure: the catalog's count for
#: Llama 3.1 70B (70.55 B) rounds to 71, which would not reproduce scenario 4.
ARTICLE_CASES: tuple[ArticleCase, ...] = (
    ArticleCase(1, "meta-llama/Llama-3.1-8B-Instruct", "rtx-4090", 8, "int4", "fp16", 8192, False),
    ArticleCase(2, "meta-llama/Llama-3.1-8B-Instruct", "l40s", 8, "fp16", "fp16", 32768, True),
    ArticleCase(3, "meta-llama/Llama-3.1-70B-Instruct", "a100-sxm4-80gb", 70, "int8", "fp8", 8192, True),
    ArticleCase(4, "meta-llama/Llama-3.1-70B-Instruct", "h100-sxm-80gb", 70, "int4", "fp8", 8192, False),
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
        Four scenarios, in the article's order; 2 and 3 are reconstructed (see module docstring).

    Raises:
        InvalidParameterError: ``engine`` is neither ``article`` nor ``vllm``.
    """
    if engine not in ("article", "vllm"):
        raise InvalidParameterError("engine", engine, "article or vllm")
    return tuple(_article_scenario(case, engine) for case in ARTICLE_CASES)


def recipes() -> tuple[Preset, ...]:
    """Three deployment starting points: personal, production and long-context agent."""
    personal = Scenario(
        model="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", gpu="rtx-4090", max_model_len=8192, max_num_seqs=16
    )
    production = Scenario(
        model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
        gpu="h100-sxm-80gb",
        tensor_parallel_size=2,
        max_model_len=16384,
    )
    agent = Scenario(
        model="Qwen/Qwen3-30B-A3B-Instruct-2507", gpu="h200-sxm-141gb", max_model_len=131072, kv_cache_dtype="fp8"
    )
    return (
        Preset(
            "personal",
            "Recipe: personal (RTX 4090, Llama 3.1 8B AWQ)",
            "One consumer GPU serving a 4-bit 8B model to a few users: 8K context, 16 sequences.",
            (personal,),
            ("Personal",),
        ),
        Preset(
            "production",
            "Recipe: production (2× H100, Llama 3.3 70B FP8)",
            "A 70B FP8 checkpoint split over two H100s with tensor parallelism, 16K context.",
            (production,),
            ("Production",),
        ),
        Preset(
            "agent",
            "Recipe: long-context agent (H200, Qwen3 30B-A3B)",
            "A mixture-of-experts model with a 128K context on one H200, fp8 KV cache to fit it.",
            (agent,),
            ("Long-context agent",),
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
            "The article's four scenarios under its own rule of thumb. 2 and 3 are reconstructed.",
            article_scenarios("article"),
            titles,
        ),
        Preset(
            "article-vllm",
            "Article scenarios 1–4 — vLLM",
            "The same four scenarios under vLLM's own accounting. 2 and 3 are reconstructed.",
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
