"""Why a vLLM plan's tokens, blocks and concurrency are what they are, in the engine's own terms.

Everything here is read off numbers the planner already computed (:class:`planner.capacity.kv_layout.KvLayout` on
:attr:`planner.capacity.result.Plan.kv_layout`, the plan's figures and its pool); nothing is estimated again.
The formulas quoted are vLLM's (``vllm/v1/core/kv_cache_utils.py``, ``vllm/v1/kv_cache_interface.py``, v0.10–v0.24):

* ``num_gpu_blocks = available_memory // page_size // group_size`` (``get_num_blocks``): the KV memory is cut into
  whole blocks, and a block id is one page in each of the ``group_size`` layers of a KV-cache group.
* Maximum concurrency = ``num_blocks / blocks_per_request`` (``get_max_concurrency_for_kv_cache_config``), where a
  request of ``max_model_len`` needs ``cdiv(len, block)`` blocks per full-attention group and ``cdiv(min(window − 1 +
  max_num_batched_tokens, len), block) + 1`` per sliding-window group.
* "GPU KV cache size" (``_report_kv_cache_config``): ``num_blocks // num_groups · block_size`` tokens up to v0.25;
  ``int(max_concurrency · max_model_len)`` from v0.26 (vLLM #51041); ``num_blocks · block_size`` in V0.
* The longest request (``estimate_max_model_len``, and ``_auto_fit_max_model_len`` for ``--max-model-len auto`` from
  v0.12, PR #29431): a bisection for the longest length whose blocks fit, capped at the model's
  ``max_position_embeddings``.

:func:`explain` describes one plan, :func:`compare_versions` what changed between two vLLM versions of the same
scenario; :func:`layout_rows` and :func:`max_model_len_text` are the display forms the page and the CLI share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

from planner import display
from planner.capacity.engines.vllm import VLLMProfile, accepts_max_model_len_auto, profile_for
from planner.capacity.kv_layout import KvGroupType, KvLayout
from planner.capacity.plan import ADVICE_MAX_LEN_STEP_TOKENS, advised_max_model_len
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.units import MIB

__all__ = [
    "SOURCES",
    "Explanation",
    "FigureChange",
    "LongestFit",
    "VersionChange",
    "compare_versions",
    "explain",
    "layout_rows",
    "max_model_len_text",
    "version_changes",
    "version_range_text",
]

#: Where the explanations' formulas come from.
SOURCES = (
    "vllm/v1/core/kv_cache_utils.py: get_kv_cache_groups, get_num_blocks, get_max_concurrency_for_kv_cache_config, "
    "_report_kv_cache_config, estimate_max_model_len, _auto_fit_max_model_len (v0.10-v0.24; v0.12+ for auto)",
    "vllm/v1/kv_cache_interface.py: FullAttentionSpec / SlidingWindowSpec.max_memory_usage_bytes, page_size_bytes",
    "vLLM #51041: GPU KV cache size printed as int(max_concurrency x max_model_len) from v0.26",
)
_ATTENTION_NAMES = {"full": "full attention", "sliding": "sliding window", "chunked": "chunked local attention"}
#: The same as adjectives: "a sliding-window group".
_ATTENTION_ADJECTIVES = {"full": "full-attention", "sliding": "sliding-window", "chunked": "chunked-attention"}


@dataclass(frozen=True)
class LongestFit:
    """The rounding behind "the longest that fits" (per GPU, the limiting one).

    Attributes:
        kv_cache_bytes: KV memory of the GPU, bytes.
        block_bytes: one block id, ``page_bytes_per_layer · group_size_layers``, bytes.
        num_gpu_blocks: ``kv_cache_bytes // block_bytes``.
        rounding_loss_bytes: what is left of the KV memory after the whole blocks (less than one block), bytes.
        longest_by_memory_tokens: the longest request the blocks hold (vLLM's bisection), tokens.
        model_max_position_embeddings: the model's own limit, tokens.
        longest_tokens: the smaller of the two: the longest that fits, tokens.
        limited_by: ``kv_cache`` or ``max_position_embeddings``.
        advice_tokens: the ``--max-model-len`` the advice offers for it (rounded down to a multiple of
            :data:`planner.capacity.plan.ADVICE_MAX_LEN_STEP_TOKENS`), or None below one step.
        lines: the same in words.
    """

    kv_cache_bytes: float
    block_bytes: int
    num_gpu_blocks: int
    rounding_loss_bytes: float
    longest_by_memory_tokens: int
    model_max_position_embeddings: int
    longest_tokens: int
    limited_by: str
    advice_tokens: int | None
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Explanation:
    """Why a vLLM plan's figures relate as they do.

    Attributes:
        layout: the KV layout (:attr:`planner.capacity.result.Plan.kv_layout`).
        lines: the groups, pages, blocks per request, concurrency, "GPU KV cache size" and KV bytes per token, in
            words with the plan's numbers; per-GPU and whole-model figures say which they are.
        longest_fit: the rounding behind the longest context that fits.
        sources: the vLLM files and versions the formulas come from.
    """

    layout: KvLayout
    lines: tuple[str, ...]
    longest_fit: LongestFit
    sources: tuple[str, ...] = SOURCES

    def to_json(self) -> dict[str, object]:
        """The explanation as a JSON-ready dict: ``lines``, ``longest_fit`` and ``sources`` (the layout is the plan's
        ``kv_layout`` key)."""
        return {"lines": list(self.lines), "longest_fit": asdict(self.longest_fit), "sources": list(self.sources)}


@dataclass(frozen=True)
class FigureChange:
    """One figure of two plans: ``label``, the older version's ``old`` and the newer's ``new``, as displayed."""

    label: str
    old: str
    new: str


@dataclass(frozen=True)
class VersionChange:
    """What changed between two vLLM versions planning the same scenario.

    Attributes:
        old_version / new_version: the versions, older first.
        lines: each change of the engine's accounting that moves a figure, with both figures.
        figures: the headline figures side by side.
    """

    old_version: str
    new_version: str
    lines: tuple[str, ...]
    figures: tuple[FigureChange, ...]

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict: ``old_version``, ``new_version``, ``lines``, ``figures`` (label, old, new)."""
        return asdict(self)

    def rows(self) -> list[dict[str, str]]:
        """The figures as table rows: ``figure``, ``vLLM <old>``, ``vLLM <new>``."""
        old, new = f"vLLM {self.old_version}", f"vLLM {self.new_version}"
        return [{"figure": f.label, old: f.old, new: f.new} for f in self.figures]


def _n(value: int | float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def _mib(num_bytes: float) -> str:
    return f"{num_bytes / MIB:,.2f} MiB"


def _groups_of(group: KvGroupType, *, each: bool = False) -> str:
    """``"the full-attention group"``, ``"each of the 5 sliding-window groups"`` (``each``) or ``"5 sliding-window
    groups"``."""
    name = _ATTENTION_ADJECTIVES.get(group.attention, group.attention) + " group"
    if group.num_groups == 1:
        return f"the {name}" if each else f"1 {name}"
    return f"each of the {group.num_groups} {name}s" if each else f"{group.num_groups} {name}s"


def max_model_len_text(plan: Plan) -> str:
    """``"8,192 tokens"``, or ``"auto → 38,960 tokens"`` for a plan of ``--max-model-len auto``."""
    text = f"{plan.max_model_len:,} tokens"
    return f"auto → {text}" if plan.max_model_len_auto else text


def layout_rows(layout: KvLayout) -> list[dict[str, str]]:
    """One row per attention type of the layout, as text ("n/a" where a figure does not apply).

    Keys: ``attention``, ``window`` (tokens), ``layers/GPU``, ``KV-cache groups``, ``tokens kept/request`` (what one
    request of ``max_model_len`` keeps in each group), ``blocks/request (each group)``, ``KV bytes/token/GPU``.
    """
    return [
        {
            "attention": _ATTENTION_NAMES.get(g.attention, g.attention),
            "window": display.count(g.window_tokens),
            "layers/GPU": f"{g.num_layers:,}" + (f" (+{g.padding_layers} padding)" if g.padding_layers else ""),
            "KV-cache groups": f"{g.num_groups:,} × {layout.group_size_layers:,} layers",
            "tokens kept/request": f"{g.tokens_per_request:,}",
            "blocks/request (each group)": f"{g.blocks_per_request:,}",
            "KV bytes/token/GPU": f"{g.kv_bytes_per_token_per_gpu:,.0f} B",
        }
        for g in layout.group_types
    ]


def _grouping_line(layout: KvLayout) -> str:
    version = f"vLLM {layout.engine_version}"
    per_gpu = layout.num_layers_per_gpu
    if layout.engine_arch == "v0":
        return (
            f"{version} runs the V0 engine: one block table for all {per_gpu} layers of the GPU, every layer keeping "
            "every token."
        )
    if layout.layers_cached_as_full:
        return (
            f"{version} has no hybrid KV-cache manager: the {layout.layers_cached_as_full} sliding-window layers are "
            f"cached as full attention (unify_hybrid_kv_cache_specs), so all {per_gpu} layers of the GPU form one "
            "KV-cache group and keep every token of a request."
        )
    if not layout.is_hybrid:
        only = layout.group_types[0]
        window = "" if only.window_tokens is None else f" (window {only.window_tokens:,} tokens)"
        return (
            f"All {per_gpu} layers of the GPU use {_ATTENTION_NAMES.get(only.attention, only.attention)}{window}: one "
            f"KV-cache group of {per_gpu} layers, so a block holds {layout.block_size_tokens} tokens of every layer."
        )
    parts = ", ".join(
        f"{_groups_of(g)} ({g.num_layers} layers"
        + ("" if g.window_tokens is None else f", window {g.window_tokens:,} tokens")
        + (f", {g.padding_layers} padding" if g.padding_layers else "")
        + ")"
        for g in layout.group_types
    )
    return (
        f"{version}'s hybrid KV-cache manager groups the {per_gpu} layers of the GPU by attention type into "
        f"{layout.num_kv_cache_groups} KV-cache groups of {layout.group_size_layers} layers: {parts}. Each group has "
        "its own block table; the groups share one pool of blocks."
    )


def _block_line(plan: Plan, layout: KvLayout) -> str:
    blocks = plan.num_gpu_blocks or 0
    spans = "all" if layout.group_size_layers == layout.num_layers_per_gpu else "each of the"
    return (
        f"A page is {layout.block_size_tokens} tokens of one layer: {layout.page_bytes_per_layer:,} B per GPU. A block "
        f"id is one page in {spans} {layout.group_size_layers} layers of a group: {layout.block_bytes:,} B "
        f"({_mib(layout.block_bytes)}). {display.gib(plan.per_gpu.kv_cache_bytes)} of KV cache per GPU // "
        f"{layout.block_bytes:,} B = {blocks:,} blocks (get_num_blocks)."
    )


def _request_line(layout: KvLayout) -> str:
    length = layout.max_model_len
    parts = []
    for g in layout.group_types:
        each = f"{g.blocks_per_request:,} blocks in {_groups_of(g, each=True)}"
        if g.window_tokens is None:
            each += f" (cdiv({length:,}, {layout.block_size_tokens}))"
        else:
            each += (
                f" (it keeps min({g.window_tokens:,} − 1 + {layout.max_num_batched_tokens:,} batched tokens, "
                f"{length:,}) = {g.tokens_per_request:,} tokens: the window plus one prefill chunk, + 1 block as the "
                "window need not start on a block boundary)"
            )
        parts.append(each)
    return (
        f"One request of {length:,} tokens takes {'; '.join(parts)}: {layout.blocks_per_request:,} blocks in all, "
        f"{display.gib(layout.kv_bytes_per_request_per_gpu)} per GPU."
    )


def _tokens_line(plan: Plan, layout: KvLayout) -> str:
    blocks = plan.num_gpu_blocks or 0
    block = layout.block_size_tokens
    groups = layout.num_kv_cache_groups
    tokens = plan.kv_cache_tokens
    if layout.kv_tokens_rule == "v0_blocks":
        return f'"GPU KV cache size" = {blocks:,} blocks × {block} = {tokens:,} tokens (V0: one block table).'
    if groups == 1:
        how = (
            f"int({plan.max_concurrency:.4f} × {layout.max_model_len:,})"
            if layout.kv_tokens_rule == "concurrency_times_len"
            else f"{blocks:,} blocks × {block}"
        )
        return (
            f'"GPU KV cache size" = {how} = {tokens:,} tokens: with one KV-cache group every block holds {block} '
            "tokens of every layer, so tokens = blocks × block size."
        )
    slots = blocks // groups * block
    line = (
        f"Tokens ≠ blocks × block size ({blocks:,} × {block} = {blocks * block:,}): a token takes a slot in a block of "
        f"each of the {groups} KV-cache groups that keep it, so {blocks:,} blocks hold {blocks:,} // {groups} × "
        f"{block} = {slots:,} tokens of every group."
    )
    if layout.kv_tokens_rule == "concurrency_times_len":
        return (
            f'{line} vLLM {layout.engine_version} prints "GPU KV cache size" as int({plan.max_concurrency:.4f} × '
            f"{layout.max_model_len:,}) = {tokens:,} tokens (from v0.26, vLLM #51041): the blocks a request really "
            "takes, windows capped and their extra block counted."
        )
    return (
        f'{line} That is what vLLM {layout.engine_version} prints as "GPU KV cache size" ({tokens:,} tokens, '
        "_report_kv_cache_config); sliding-window groups free the blocks behind their window, so requests longer "
        "than the window fit more tokens than that."
    )


def _concurrency_line(plan: Plan, layout: KvLayout) -> str:
    blocks = plan.num_gpu_blocks or 0
    if layout.engine_arch == "v0":
        return (
            f"Maximum concurrency = {plan.kv_cache_tokens:,} tokens / {layout.max_model_len:,} = "
            f"{plan.max_concurrency:.2f}x (V0)."
        )
    return (
        f"Maximum concurrency = {blocks:,} blocks / {layout.blocks_per_request:,} blocks per request = "
        f"{plan.max_concurrency:.2f}x (get_max_concurrency_for_kv_cache_config)."
    )


def _bytes_line(layout: KvLayout) -> str:
    per_gpu = layout.kv_bytes_per_token_per_gpu
    indexer = layout.indexer_bytes_per_token_per_layer
    heads = (
        "the MLA latent"
        + (f" and {indexer} B of the sparse-attention indexer's keys" if indexer else "")
        + ", the same on every GPU"
        if layout.is_mla
        else f"{layout.kv_heads_per_gpu} of the {layout.num_kv_heads_model} KV heads on each GPU"
    )
    # a speculative draft's layers add to the target's in every block (KvLayout.draft_bytes_per_token_per_gpu)
    draft = layout.draft_bytes_per_token_per_gpu
    target = per_gpu - draft
    line = (
        f"KV bytes per token: {per_gpu:,.0f} B per GPU ({layout.num_layers_per_gpu} layers × "
        f"{target / max(1, layout.num_layers_per_gpu):,.0f} B, {heads}"
        + (f"; plus the speculative draft's {draft:,.0f} B" if draft else "")
        + ")"
    )
    if layout.kv_heads_replicated:
        copies = layout.tensor_parallel_size // layout.num_kv_heads_model
        line += (
            f"; TP {layout.tensor_parallel_size} exceeds the {layout.num_kv_heads_model} KV heads, so each head is "
            f"cached on {copies} GPUs (get_num_kv_heads: max(1, heads // TP)) and the per-GPU figure stops shrinking"
        )
    gpus = layout.tensor_parallel_size * layout.pipeline_parallel_size
    if gpus > 1:
        line += f". Whole model: {layout.kv_bytes_per_token_model:,.0f} B of distinct K/V per token"
        if layout.kv_bytes_per_token_all_gpus != layout.kv_bytes_per_token_model:
            line += f", {layout.kv_bytes_per_token_all_gpus:,.0f} B stored over the {gpus} GPUs"
        else:
            line += f" over the {gpus} GPUs"
    windowed = [g for g in layout.group_types if g.window_tokens is not None]
    if windowed:
        capped = sum(g.kv_bytes_per_token_per_gpu for g in windowed)
        line += (
            f". The figure counts every layer as keeping every token; the sliding-window layers ({capped:,.0f} B of "
            f"it) keep at most {max(g.tokens_per_request for g in windowed):,} tokens of a request, so a request of "
            f"{layout.max_model_len:,} tokens takes {layout.kv_bytes_per_request_per_gpu / layout.max_model_len:,.0f} "
            "B per token per GPU"
        )
    return line + "."


def _longest_fit(plan: Plan, layout: KvLayout) -> LongestFit:
    blocks = plan.num_gpu_blocks or 0
    kv = plan.per_gpu.kv_cache_bytes
    model_max = plan.model_max_position_embeddings or layout.longest_by_memory_tokens
    longest = min(layout.longest_by_memory_tokens, model_max)
    limited_by = "kv_cache" if layout.longest_by_memory_tokens < model_max else "max_position_embeddings"
    advice = advised_max_model_len(longest) if longest < (plan.model_max_position_embeddings or longest + 1) else None
    loss = max(0.0, kv - blocks * layout.block_bytes)
    lines = [
        f"The KV memory is cut into whole blocks: {display.gib(kv)} // {layout.block_bytes:,} B = {blocks:,} blocks, "
        f"{_mib(loss)} left over (less than one block).",
    ]
    by_memory = layout.longest_by_memory_tokens
    pool = plan.pool
    if layout.engine_arch == "v0" or not layout.is_hybrid:
        lines.append(
            f"A request of L tokens needs cdiv(L, {layout.block_size_tokens}) blocks, so the longest the blocks hold "
            f"is {blocks:,} × {layout.block_size_tokens} = {by_memory:,} tokens (estimate_max_model_len)."
        )
    elif pool is not None and by_memory > 0:
        lines.append(
            f"vLLM's bisection (estimate_max_model_len) finds the longest request whose blocks fit: {by_memory:,} "
            f"tokens take {pool.blocks_per_request(by_memory):,} of the {blocks:,} blocks, one token more would take "
            f"{pool.blocks_per_request(by_memory + 1):,} (the sliding-window groups take a fixed number once the "
            "window and a prefill chunk are full)."
        )
    if limited_by == "max_position_embeddings":
        lines.append(f"The model's max_position_embeddings ({model_max:,}) is shorter: the longest is {longest:,}.")
    else:
        lines.append(f"The longest that fits is {longest:,} tokens, within the model's {model_max:,}.")
    if plan.max_model_len_auto:
        command = "auto" if accepts_max_model_len_auto(layout.engine_version) else f"{plan.max_model_len}"
        lines.append(
            f"--max-model-len auto: vLLM v0.12+ runs the same bisection at start-up, from 1 to the model's limit, "
            f"and serves the result (_auto_fit_max_model_len): {plan.max_model_len:,} tokens here; the launch command "
            f"passes {command}" + ("" if command == "auto" else f" (vLLM {layout.engine_version} has no auto)") + "."
        )
    elif advice is not None and longest < plan.max_model_len:
        lines.append(
            f"The advice rounds it down to a multiple of {ADVICE_MAX_LEN_STEP_TOKENS:,} (the planner's choice: a "
            f"round number with a little headroom): --max-model-len {advice}."
        )
    return LongestFit(
        kv_cache_bytes=kv,
        block_bytes=layout.block_bytes,
        num_gpu_blocks=blocks,
        rounding_loss_bytes=loss,
        longest_by_memory_tokens=by_memory,
        model_max_position_embeddings=model_max,
        longest_tokens=longest,
        limited_by=limited_by,
        advice_tokens=advice,
        lines=tuple(lines),
    )


def explain(plan: Plan) -> Explanation | None:
    """Why ``plan``'s tokens, blocks and concurrency relate as they do, in vLLM's terms.

    Args:
        plan: a plan from :func:`planner.capacity.plan.plan`.

    Returns:
        The explanation, or None for a plan without a vLLM KV layout (TGI, the article engine) and for a
        configuration vLLM refuses before it sizes anything.
    """
    layout = plan.kv_layout
    if layout is None or plan.refused:
        return None
    lines = [
        _grouping_line(layout),
        _block_line(plan, layout),
        _request_line(layout),
        _concurrency_line(plan, layout),
        _tokens_line(plan, layout),
        _bytes_line(layout),
    ]
    ratio = plan.scenario.kv_compression_ratio
    if ratio:
        lines.append(
            f"What-if — not an engine setting: every KV byte above is divided by {ratio:g} for a compression method "
            "no engine ships (DMS, KVTC-style); vLLM itself would cache "
            f"{layout.kv_bytes_per_token_per_gpu * ratio:,.0f} B per token per GPU."
        )
    return Explanation(layout=layout, lines=tuple(lines), longest_fit=_longest_fit(plan, layout))


def version_range_text(plan: Plan) -> str | None:
    """The plan's range over the vLLM versions still in use, in words; ``None`` without one.

    "between 9,968 and 20,704 tokens (1.52–3.16 GiB of KV cache per GPU, 0.08x–0.16x at 131,072) depending on the
    vLLM version: 0.18.0 sets the low end, 0.10.0 the high end; the figures above are 0.28.0's", with which versions
    start when only some do.
    """
    vr = plan.version_range
    if vr is None:
        return None
    low, high = vr.low, vr.high
    newest = plan.scenario.engine_version
    if not vr.starts_in and high.kv_cache_tokens == 0:
        return f"it does not fit in any vLLM version from {vr.versions[0].version} on (no room for one KV block)"
    if low.kv_cache_bytes == high.kv_cache_bytes:
        return f"the same {low.kv_cache_tokens:,} tokens in every vLLM version from {vr.versions[0].version} on"
    text = (
        f"between {low.kv_cache_tokens:,} and {high.kv_cache_tokens:,} tokens "
        f"({display.gib(low.kv_cache_bytes, unit=False)}–{display.gib(high.kv_cache_bytes)} of KV cache per GPU, "
        f"{low.max_concurrency:.2f}x–{high.max_concurrency:.2f}x at {plan.max_model_len:,}) depending on the vLLM "
        f"version: {low.version} sets the low end, {high.version} the high end; the figures above are {newest}'s"
    )
    if vr.fits_in_some:
        text += f". It starts only in {', '.join(vr.starts_in)}"
    return text


def _same_but_version(a: Scenario, b: Scenario) -> bool:
    return all(getattr(a, f.name) == getattr(b, f.name) for f in fields(Scenario) if f.name not in ("engine_version",))


_SAMPLER_WORDS = {
    "v0_sort": "V0's sampler sorts the vocabulary",
    "v1_sort": "the V1 sampler sorts the vocabulary",
    "v1_flashinfer": "FlashInfer's top-k/top-p kernel",
    "v1_triton": "the in-place Triton top-k/top-p",
    "v2": "the V2 model runner's fp32 copy and Gumbel kernel",
}


def _sampler_words(profile: VLLMProfile, runner: str) -> str:
    """The dummy sampler run's code path in words."""
    return _SAMPLER_WORDS["v2" if runner == "v2" else profile.sampler_path]


def compare_versions(first: Plan, second: Plan) -> VersionChange | None:
    """What changed between two vLLM versions of one scenario, and what it did to the figures.

    Args:
        first / second: plans of the same scenario (every field but ``engine_version`` equal) under two vLLM
            versions, in either order.

    Returns:
        The change, older version first; None when the plans are not two vLLM versions of one scenario, or the two
        versions share one accounting profile.
    """
    if first.kv_layout is None or second.kv_layout is None or first.refused or second.refused:
        return None
    if not _same_but_version(first.scenario, second.scenario) or first.model_id != second.model_id:
        return None
    old_profile, new_profile = profile_for(first.scenario.engine_version), profile_for(second.scenario.engine_version)
    old, new = first, second
    if old_profile.since > new_profile.since:
        old, new, old_profile, new_profile = second, first, new_profile, old_profile
    a, b = old.kv_layout, new.kv_layout
    if old_profile == new_profile or a is None or b is None:
        return None
    va, vb = f"vLLM {a.engine_version}", f"vLLM {b.engine_version}"
    lines: list[str] = []
    if old_profile.arch != new_profile.arch:
        lines.append(
            f"{va} runs the V0 engine, {vb} V1: V1 keeps the larger of the forward and sampler warm-up peaks (V0 adds "
            "them) and lays the KV cache out in KV-cache groups."
        )
    if old_profile.hybrid_kv != new_profile.hybrid_kv:
        windowed = (
            b.layers_cached_as_full
            or a.layers_cached_as_full
            or sum(g.num_layers for g in b.group_types if g.window_tokens is not None)
        )
        if windowed:
            ratio = new.max_concurrency / old.max_concurrency if old.max_concurrency else float("inf")
            same_tokens = old.kv_cache_tokens == new.kv_cache_tokens
            same_kv = "the same " if old.per_gpu.kv_cache_bytes == new.per_gpu.kv_cache_bytes else ""
            old_blocks, new_blocks = old.num_gpu_blocks or 0, new.num_gpu_blocks or 0
            lines.append(
                f"The hybrid KV-cache manager landed (vLLM v0.10 in the planner's profiles): in {vb} the {windowed} "
                f"sliding-window layers keep only their window and a prefill chunk, in groups of their own "
                f"({b.num_kv_cache_groups} KV-cache groups of {b.group_size_layers} layers, against "
                f"{a.num_kv_cache_groups} of {a.group_size_layers} in {va}, where they are cached as full attention). "
                f"A block id spans fewer layers ({a.block_bytes:,} → {b.block_bytes:,} B), so {same_kv}"
                f"{display.gib(new.per_gpu.kv_cache_bytes)} makes {old_blocks:,} → {new_blocks:,} blocks; a request of "
                f"{new.max_model_len:,} tokens takes {a.blocks_per_request:,} → "
                f"{b.blocks_per_request:,} of them, and concurrency goes {old.max_concurrency:.2f}x → "
                f"{new.max_concurrency:.2f}x ({ratio:.1f}×)."
                + (
                    f' "GPU KV cache size" stays {new.kv_cache_tokens:,} tokens: blocks // groups × block size counts '
                    "one slot in every group, window or not."
                    if same_tokens
                    else ""
                )
            )
        else:
            lines.append(f"The hybrid KV-cache manager of {vb} changes nothing here: every layer is full attention.")
    if old_profile.tokens_from_concurrency != new_profile.tokens_from_concurrency:
        lines.append(
            f'"GPU KV cache size" is printed as int(max_concurrency × max_model_len) in {vb} (vLLM 0.24.0 '
            "kv_cache_utils.py) instead of num_blocks // groups × block size: "
            f"{old.kv_cache_tokens:,} → {new.kv_cache_tokens:,} tokens."
        )
    if old.per_gpu.activation_bytes != new.per_gpu.activation_bytes:
        old_runner, new_runner = old.model_runner or "v1", new.model_runner or "v1"
        lines.append(
            f"The activation peak moves {display.gib(old.per_gpu.activation_bytes)} → "
            f"{display.gib(new.per_gpu.activation_bytes)} per GPU (the dummy sampler run: "
            f"{_sampler_words(old_profile, old_runner)} → {_sampler_words(new_profile, new_runner)}; the larger of it "
            "and the forward pass is the peak)."
        )
    if (old.max_num_seqs, old.max_num_batched_tokens) != (new.max_num_seqs, new.max_num_batched_tokens):
        lines.append(
            f"Default max_num_seqs / max_num_batched_tokens: {old.max_num_seqs:,} / {old.max_num_batched_tokens:,} → "
            f"{new.max_num_seqs:,} / {new.max_num_batched_tokens:,} (EngineArgs._set_default_args); a sliding window "
            "keeps window − 1 + max_num_batched_tokens tokens of a request."
        )
    if old.per_gpu.non_torch_bytes != new.per_gpu.non_torch_bytes:
        lines.append(
            f"Non-torch memory (CUDA context, NCCL buffers): {display.gib(old.per_gpu.non_torch_bytes)} → "
            f"{display.gib(new.per_gpu.non_torch_bytes)} per GPU ({new_profile.source})."
        )
    if old.per_gpu.cuda_graph_bytes != new.per_gpu.cuda_graph_bytes:
        lines.append(
            f"The CUDA-graph estimate taken out of the KV budget (PR #30515, v0.21+; none on vLLM's V2 model runner): "
            f"{display.gib(old.per_gpu.cuda_graph_bytes)} → {display.gib(new.per_gpu.cuda_graph_bytes)} per GPU."
        )
    figures = (
        FigureChange(
            "KV cache per GPU", display.gib(old.per_gpu.kv_cache_bytes), display.gib(new.per_gpu.kv_cache_bytes)
        ),
        FigureChange("KV-cache groups", f"{a.num_kv_cache_groups:,}", f"{b.num_kv_cache_groups:,}"),
        FigureChange("KV blocks per GPU", f"{old.num_gpu_blocks or 0:,}", f"{new.num_gpu_blocks or 0:,}"),
        FigureChange("Blocks per request", f"{a.blocks_per_request:,}", f"{b.blocks_per_request:,}"),
        FigureChange("GPU KV cache size (tokens)", f"{old.kv_cache_tokens:,}", f"{new.kv_cache_tokens:,}"),
        FigureChange(
            f"Concurrency @ {new.max_model_len:,}", f"{old.max_concurrency:.2f}x", f"{new.max_concurrency:.2f}x"
        ),
    )
    return VersionChange(a.engine_version, b.engine_version, tuple(lines), figures)


def version_changes(plans: Sequence[Plan | None]) -> list[tuple[int, int, VersionChange]]:
    """Every pair of ``plans`` that is two vLLM versions of one scenario, with what changed.

    Args:
        plans: the plans of a page's scenarios, None where a scenario has no plan.

    Returns:
        ``(i, j, change)`` for each pair ``i < j`` (0-based positions) that :func:`compare_versions` compares.
    """
    out = []
    for i, first in enumerate(plans):
        for j in range(i + 1, len(plans)):
            second = plans[j]
            change = None if first is None or second is None else compare_versions(first, second)
            if change is not None:
                out.append((i, j, change))
    return out
