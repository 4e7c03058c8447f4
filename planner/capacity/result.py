"""The result of planning one scenario."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.capacity.kv_cache import KVPool
from planner.capacity.kv_layout import KvLayout
from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario
from planner.capacity.topology import Topology
from planner.units import GIB

__all__ = ["Advice", "Formula", "MemoryTerms", "Plan", "VersionFigures", "VersionRange"]


@dataclass(frozen=True)
class MemoryTerms:
    """Memory of one GPU (the rank that limits the KV cache), in bytes.

    ``total_bytes = weights + activation + non_torch + cuda_graph + kv_cache + unused``: ``unused`` is
    what the engine leaves free (the ``1 − gpu_memory_utilization`` headroom, or TGI's wiggle room).
    ``None`` marks a term the engine does not model (the article engine has no activation term).
    """

    total_bytes: float
    budget_bytes: float
    weights_bytes: float
    activation_bytes: float | None
    non_torch_bytes: float | None
    cuda_graph_bytes: float | None
    kv_cache_bytes: float
    unused_bytes: float

    def as_gib(self) -> dict[str, float | None]:
        """Every term in GiB (2**30 bytes), keyed ``<term>_gib``."""
        return {
            name.replace("_bytes", "_gib"): (None if value is None else value / GIB)
            for name, value in self.__dict__.items()
        }


@dataclass(frozen=True)
class Formula:
    """One line of the derivation, with the user's numbers filled in.

    Attributes:
        label: what is computed, e.g. "KV cache memory".
        expression: the formula with numbers, e.g. "79.19 GiB × 0.90 − 14.99 GiB − ... ".
        value: the result as displayed, with its unit.
        source: engine file and version, or paper, the formula comes from.
    """

    label: str
    expression: str
    value: str
    source: str = ""


@dataclass(frozen=True)
class Advice:
    """A change that makes a scenario fit, proven by re-planning.

    Attributes:
        change: what to change, in words ("--kv-cache-dtype fp8").
        scenario: the changed scenario.
        max_concurrency: its concurrency at ``max_model_len`` once changed.
        num_gpus: GPUs it needs.
    """

    change: str
    scenario: Scenario
    max_concurrency: float
    num_gpus: int


@dataclass(frozen=True)
class VersionFigures:
    """One vLLM version's figures for a scenario.

    Attributes:
        version: the vLLM version planned (``0.17.0``).
        kv_cache_bytes: KV memory per GPU, bytes.
        kv_cache_tokens: "GPU KV cache size" as that version prints it.
        max_concurrency: requests of ``max_model_len`` that fit.
        fits: that version starts and serves one full-length request.
    """

    version: str
    kv_cache_bytes: float
    kv_cache_tokens: int
    max_concurrency: float
    fits: bool

    def to_json(self) -> dict[str, object]:
        """JSON-ready form (``kv_cache_memory_gib`` in GiB)."""
        return {
            "version": self.version,
            "kv_cache_memory_gib": self.kv_cache_bytes / GIB,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "fits": self.fits,
        }


@dataclass(frozen=True)
class VersionRange:
    """A scenario's figures over the vLLM versions still in use, for when the version is not known.

    Attributes:
        versions: each version's figures, oldest first.
        low / high: the versions with the least and the most concurrency at ``max_model_len`` (ties: the newer).
        low_pool / high_pool: their KV pools, for concurrency at any context (``None`` for a refused plan).
    """

    versions: tuple[VersionFigures, ...]
    low: VersionFigures
    high: VersionFigures
    low_pool: KVPool | None = field(default=None, compare=False)
    high_pool: KVPool | None = field(default=None, compare=False)

    @property
    def starts_in(self) -> tuple[str, ...]:
        """The versions that start the scenario and serve one full-length request, oldest first."""
        return tuple(v.version for v in self.versions if v.fits)

    @property
    def refused_by(self) -> tuple[str, ...]:
        """The versions that would not start it (or not serve one full-length request), oldest first."""
        return tuple(v.version for v in self.versions if not v.fits)

    @property
    def fits_in_some(self) -> bool:
        """Some versions fit and others do not."""
        return any(v.fits for v in self.versions) and not all(v.fits for v in self.versions)

    def concurrency_band(self, context_tokens: int) -> tuple[float, float] | None:
        """``(lowest, highest)`` concurrency at ``context_tokens`` over the two ends, ``None`` without pools."""
        if self.low_pool is None or self.high_pool is None or not self.low_pool.num_blocks:
            return None
        values = (self.low_pool.concurrency_at(context_tokens), self.high_pool.concurrency_at(context_tokens))
        return min(values), max(values)

    def to_json(self) -> dict[str, object]:
        """JSON-ready form: ``low`` / ``high`` and every version."""
        return {
            "low": self.low.to_json(),
            "high": self.high.to_json(),
            "versions": [v.to_json() for v in self.versions],
        }


@dataclass(frozen=True)
class Plan:
    """The plan of one scenario.

    Attributes:
        scenario: the input, with engine defaults resolved.
        engine_label: engine and version as shown ("vLLM 0.28 (V1)").
        model_id / gpu_name: what was planned.
        num_gpus: TP·PP.
        per_gpu: memory of the limiting GPU.
        weights_total_bytes: weights summed over all GPUs.
        kv_cache_total_bytes: KV memory summed over all GPUs.
        kv_bytes_per_token: KV bytes one token adds on the limiting GPU (per GPU), all its layers counted as if each
            kept every token.
        kv_bytes_per_token_model: KV bytes per token for the whole model (all GPUs), each distinct K/V counted
            once (heads replicated past TP = KV heads are not counted twice).
        block_size: tokens per block (1 for engines without paging).
        num_gpu_blocks: blocks per GPU (``None`` where the engine reports none).
        kv_cache_tokens: the engine's "GPU KV cache size" (vLLM) or ``max_batch_total_tokens`` (TGI).
        max_model_len: context limit per request, tokens (``--max-model-len auto`` resolved to its number; the
            scenario keeps :data:`~planner.capacity.scenario.MAX_MODEL_LEN_AUTO`).
        max_concurrency: requests of ``max_model_len`` tokens that fit at once.
        max_concurrency_at_target: the same at ``scenario.target_context``, if set; ``None`` ("n/a") when the target
            is beyond the model's own limit (``model_max_position_embeddings``), with a note saying so.
        estimated_max_model_len: the longest context one request could have (vLLM's estimate).
        fits: whether the engine would start and serve one full-length request.
        reason: why not, in plain words (``None`` when it fits).
        refused: the engine refuses the configuration itself (e.g. tensor parallelism that does not divide the
            attention heads) before any memory is accounted: the memory figures describe no real start-up.
        kv_needed_for_max_len_bytes: KV memory one request of ``max_model_len`` needs on the limiting
            GPU (vLLM's "X GiB KV cache is needed" start-up check).
        model_max_position_embeddings: the longest context the model itself supports, tokens (``None``
            for the article engine's hand-typed sizes).
        max_num_seqs / max_num_batched_tokens: the scheduler limits in force (defaults resolved);
            ``None`` for engines without them.
        advice: cheapest changes that make it fit, each proven by a re-plan.
        formulas: the derivation with numbers.
        notes: assumptions and caveats.
        pool: the paged layout, for concurrency at other context lengths (``None`` for engines
            without one).
        kv_layout: the KV-cache groups, pages and per-request blocks behind the figures, in vLLM's terms (``None``
            for engines other than vLLM); :func:`planner.capacity.explain.explain` puts it in words.
        model_runner: vLLM's model runner for this model and version, ``v0``, ``v1`` or ``v2`` (``None`` for other
            engines).
        topology: the nodes the TP × PP groups need and how they all-reduce (``None`` for the article engine).
        version_range: with no ``engine_version`` (vLLM), the figures over the versions still in use
            (:func:`planner.capacity.version_range.version_range`); ``None`` otherwise.
    """

    scenario: Scenario
    engine_label: str
    model_id: str
    gpu_name: str
    num_gpus: int
    per_gpu: MemoryTerms
    weights_total_bytes: float
    kv_cache_total_bytes: float
    kv_bytes_per_token: float
    kv_bytes_per_token_model: float
    block_size: int
    num_gpu_blocks: int | None
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float
    max_concurrency_at_target: float | None
    estimated_max_model_len: int | None
    fits: bool
    reason: str | None
    kv_needed_for_max_len_bytes: float | None = None
    model_max_position_embeddings: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    advice: tuple[Advice, ...] = ()
    formulas: tuple[Formula, ...] = ()
    notes: tuple[str, ...] = ()
    pool: KVPool | None = field(default=None, compare=False)
    refused: bool = False
    kv_layout: KvLayout | None = field(default=None, compare=False)
    model_runner: str | None = None
    topology: Topology | None = None
    version_range: VersionRange | None = field(default=None, compare=False)

    @property
    def max_model_len_auto(self) -> bool:
        """The scenario asked for ``--max-model-len auto``: :attr:`max_model_len` is what it resolved to."""
        return self.scenario.max_model_len == MAX_MODEL_LEN_AUTO

    def concurrency_at(self, context_tokens: int) -> float:
        """Concurrent requests of ``context_tokens`` each that fit in the KV cache.

        Uses the engine's own block accounting where it has one (vLLM), otherwise
        ``kv_cache_tokens / context_tokens``.
        """
        if self.pool is not None:
            return self.pool.concurrency_at(context_tokens)
        return self.kv_cache_tokens / context_tokens

    def to_json(self) -> dict[str, object]:
        """The plan as a JSON-ready dict; keys follow vLLM's log and flag names with units."""
        terms = self.per_gpu.as_gib()
        return {
            "engine": self.scenario.engine,
            "engine_label": self.engine_label,
            "model": self.model_id,
            "gpu": self.gpu_name,
            "tensor_parallel_size": self.scenario.tensor_parallel_size,
            "pipeline_parallel_size": self.scenario.pipeline_parallel_size,
            "num_gpus": self.num_gpus,
            "total_gpu_memory_gib": terms["total_gib"],
            "requested_memory_gib": terms["budget_gib"],
            "weights_memory_gib": terms["weights_gib"],
            "activation_memory_gib": terms["activation_gib"],
            "non_torch_memory_gib": terms["non_torch_gib"],
            "cuda_graph_memory_gib": terms["cuda_graph_gib"],
            "kv_cache_memory_gib": terms["kv_cache_gib"],
            "unused_memory_gib": terms["unused_gib"],
            "weights_total_gib": self.weights_total_bytes / GIB,
            "kv_cache_total_gib": self.kv_cache_total_bytes / GIB,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_token_model": self.kv_bytes_per_token_model,
            "block_size": self.block_size,
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "num_gpu_blocks": self.num_gpu_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_model_len": self.max_model_len,
            "max_model_len_auto": self.max_model_len_auto,
            "model_max_position_embeddings": self.model_max_position_embeddings,
            "max_concurrency": self.max_concurrency,
            "max_concurrency_at_target": self.max_concurrency_at_target,
            "target_context": self.scenario.target_context,
            "speculative_config": (
                None if self.scenario.speculative_config is None else self.scenario.speculative_config.to_json()
            ),
            "kv_compression_ratio": self.scenario.kv_compression_ratio,
            "estimated_max_model_len": self.estimated_max_model_len,
            "kv_needed_for_max_len_gib": (
                None if self.kv_needed_for_max_len_bytes is None else self.kv_needed_for_max_len_bytes / GIB
            ),
            "fits": self.fits,
            "refused": self.refused,
            "reason": self.reason,
            "advice": [
                {"change": a.change, "max_concurrency": a.max_concurrency, "num_gpus": a.num_gpus} for a in self.advice
            ],
            "notes": list(self.notes),
            "kv_layout": None if self.kv_layout is None else self.kv_layout.to_json(),
            "model_runner": self.model_runner,
            "topology": None if self.topology is None else self.topology.to_json(),
            "version_range": None if self.version_range is None else self.version_range.to_json(),
        }
