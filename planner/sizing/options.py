"""What a sizing search says about each configuration: the configuration itself, its verdict, replicas, cost and
predicted figures (:class:`SizingOption`), and the search's answer (:class:`SizingResult`), as
:func:`planner.sizing.search.size` returns them; ``to_json`` gives the CLI's keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.capacity.launch import vllm_command
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario
from planner.deploy.files import TARGETS, deployment_files
from planner.deploy.manifests import Pool
from planner.errors import InvalidParameterError
from planner.metrics.slo import SloCheck
from planner.predict.api import DEFAULT_SOURCE
from planner.predict.shape import StepShape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients
from planner.sizing.bounds import Bounds
from planner.sizing.estimate import SloEnds
from planner.sizing.prices import GpuPrice
from planner.sizing.probe import Probe
from planner.sizing.settings import SizingSettings

__all__ = ["MODES", "VERDICTS", "Configuration", "PoolSize", "SizingOption", "SizingResult"]

#: What became of a configuration, best first (the table's order after the ranked options).
VERDICTS: tuple[str, ...] = (
    "meets",
    "costs_more",
    "not_searched",
    "misses_slo",
    "no_price",
    "not_predicted",
    "does_not_fit",
)


#: How an option serves: one kind of replica doing prefill and decode (``aggregated``), or a prefill pool and a decode
#: pool joined by a KV transfer (``disaggregated``, :mod:`planner.sizing.disaggregated`).
MODES: tuple[str, ...] = ("aggregated", "disaggregated")


@dataclass(frozen=True)
class Configuration:
    """One deployment of one replica: a GPU, its parallelism, the checkpoint and its quantization, the KV dtype.

    Attributes:
        gpu_id / gpu_name: the catalog GPU.
        model: the checkpoint served (the model, or its quantized export).
        quantization: ``none`` (the checkpoint as published), ``fp8`` (vLLM's ``--quantization fp8``) or the
            export's scheme (``awq``, ``gptq``, ``int8``, ``mxfp4``).
        kv_cache_dtype: vLLM's ``--kv-cache-dtype``.
        tensor_parallel_size / pipeline_parallel_size: the parallelism; GPUs = their product.
        checkpoint_scheme: the served checkpoint's own quantization (``none`` for 16-bit weights).
    """

    gpu_id: str
    gpu_name: str
    model: str
    quantization: str
    kv_cache_dtype: str
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    checkpoint_scheme: str = "none"

    @property
    def num_gpus(self) -> int:
        """GPUs of one replica: TP · PP."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def weights(self) -> str:
        """The weights in words: ``checkpoint``, ``checkpoint (awq)`` for a quantized one as published, ``fp8``, or
        the export's scheme."""
        if self.quantization != "none":
            return self.quantization
        return "checkpoint" if self.checkpoint_scheme == "none" else f"checkpoint ({self.checkpoint_scheme})"

    @property
    def label(self) -> str:
        """``H100 80GB SXM5 · TP 2 · fp8 · KV fp8``."""
        parts = [self.gpu_name.removeprefix("NVIDIA ").removeprefix("AMD ").removeprefix("Intel ")]
        parts.append(
            f"TP {self.tensor_parallel_size}"
            + (f" PP {self.pipeline_parallel_size}" * (self.pipeline_parallel_size > 1))
        )
        parts.append(self.weights)
        parts.append(f"KV {self.kv_cache_dtype}")
        return " · ".join(parts)

    def scenario(self, settings: SizingSettings) -> Scenario:
        """The capacity scenario of this configuration under ``settings``' engine settings."""
        return Scenario(
            engine="vllm",
            model=self.model,
            gpu=self.gpu_id,
            tensor_parallel_size=self.tensor_parallel_size,
            pipeline_parallel_size=self.pipeline_parallel_size,
            quantization="fp8" if self.quantization == "fp8" else None,
            kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            max_model_len=settings.served_max_model_len,
        )


@dataclass(frozen=True)
class PoolSize:
    """One pool of a prefill/decode option: its configuration, instances, price and plan.

    Attributes:
        config: the configuration of one instance.
        replicas: instances.
        price: its GPU's price.
        plan: one instance's capacity plan.
    """

    config: Configuration
    replicas: int
    price: GpuPrice
    plan: Plan | None = field(default=None, repr=False, compare=False)

    @property
    def num_gpus(self) -> int:
        """GPUs of the pool."""
        return self.replicas * self.config.num_gpus

    @property
    def usd_per_hour(self) -> float:
        """The pool's cost per hour (0 without a price)."""
        return self.num_gpus * (self.price.usd_per_hour or 0.0)

    def to_json(self) -> dict[str, object]:
        """``{"gpu", "tensor_parallel_size", "replicas"}`` (and the configuration's other keys)."""
        c = self.config
        return {
            "gpu": c.gpu_id,
            "tensor_parallel_size": c.tensor_parallel_size,
            "pipeline_parallel_size": c.pipeline_parallel_size,
            "replicas": self.replicas,
            "gpus_per_replica": c.num_gpus,
            "usd_per_gpu_hour": self.price.usd_per_hour,
        }


@dataclass(frozen=True)
class SizingOption:
    """What the search found for one configuration.

    Attributes:
        config: the configuration.
        verdict: one of :data:`VERDICTS`.
        reason: one line: why it does not fit, misses an SLO, costs more than the options above it, or what it
            needs; None for the cheapest.
        price: its GPU's price.
        plan: its capacity plan (None when it could not be planned).
        shape: its step shape (None unless it fits, can be predicted and has a price).
        bounds: its analytic figures (None unless it fits and can be predicted).
        ends: the ends of the error band its SLOs are checked at (None unless it fits and can be predicted).
        replicas: replicas it needs (resolved options only).
        replica_rate: per-replica capacity: the highest rate simulated to meet the SLOs, req/s.
        replica_rate_limit: the lowest rate simulated to miss them (or the fluid bound), req/s: capacity is below.
        at_size: the simulation at ``target_rate / replicas`` (the predicted service figures).
        probes: every simulation of this configuration, with whether it met the SLOs.
        least_usd_per_hour: the least it could cost by the bound (options not resolved).
        least_replicas: the fewest replicas it could need by the bound (or by the replicas simulated to miss).
        rank: 1 = the cheapest that meets the SLOs; None for the others.
        usd_per_hour / usd_per_million_output_tokens: cost of the resolved option at the target load.
        mode: ``aggregated`` or ``disaggregated`` (:data:`MODES`).
        prefill / decode: the pools of a disaggregated option (``config`` is the decode pool's; ``replicas`` all
            instances); None for an aggregated one.
        kv_transfer_s: a disaggregated option's mean KV transfer, seconds.
    """

    config: Configuration
    verdict: str
    reason: str | None
    price: GpuPrice
    plan: Plan | None = field(default=None, repr=False, compare=False)
    shape: StepShape | None = field(default=None, repr=False, compare=False)
    bounds: Bounds | None = None
    ends: SloEnds | None = field(default=None, repr=False)
    replicas: int | None = None
    replica_rate: float | None = None
    replica_rate_limit: float | None = None
    at_size: Probe | None = None
    probes: tuple[tuple[Probe, bool], ...] = field(default=(), repr=False)
    least_usd_per_hour: float | None = None
    least_replicas: int | None = None
    rank: int | None = None
    usd_per_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    mode: str = "aggregated"
    prefill: PoolSize | None = None
    decode: PoolSize | None = None
    kv_transfer_s: float | None = None

    @property
    def layout(self) -> str:
        """``aggregated``, or ``xPyD``: x prefill and y decode instances."""
        if self.prefill is None or self.decode is None:
            return "aggregated"
        return f"{self.prefill.replicas}P{self.decode.replicas}D"

    @property
    def label(self) -> str:
        """The configuration, with both pools' for a disaggregated option (``prefill H100 · TP 1 … / decode L40S
        …``)."""
        if self.prefill is None or self.decode is None:
            return self.config.label
        return f"prefill {self.prefill.config.label} / decode {self.decode.config.label}"

    @property
    def fleet_text(self) -> str:
        """What the option runs and at what price: ``2 × 1 GPU(s) at $2.99``, or for prefill/decode ``2P × 1 GPU(s)
        at $2.99 + 3D × 1 at $0.80``."""
        if self.prefill is None or self.decode is None:
            return f"{self.replicas} × {self.config.num_gpus} GPU(s) at ${self.price.usd_per_hour or 0:,.2f}"
        p, d = self.prefill, self.decode
        return (
            f"{p.replicas}P × {p.config.num_gpus} GPU(s) at ${p.price.usd_per_hour or 0:,.2f} + {d.replicas}D × "
            f"{d.config.num_gpus} at ${d.price.usd_per_hour or 0:,.2f}"
        )

    @property
    def summary(self) -> str:
        """The option in a few words: ``2 × H100 80GB SXM5 · TP 1 · …`` or ``1P2D: prefill … / decode …``."""
        if self.prefill is not None:
            return f"{self.layout}: {self.label}"
        return f"{self.replicas} × {self.config.label}"

    @property
    def deployment_targets(self) -> tuple[str, ...]:
        """The targets :meth:`deployment_files` writes for this option (production-stack's values describe no
        prefill/decode pools here)."""
        return TARGETS if self.prefill is None else tuple(t for t in TARGETS if t != "production-stack")

    def deployment_files(self, target: str) -> dict[str, str]:
        """File name → YAML of what runs this option (:func:`planner.deploy.files.deployment_files`): its replicas,
        or its prefill and decode pools.

        Raises:
            InvalidParameterError: an option that is not resolved, an unknown target, production-stack values for
                prefill/decode pools.
        """
        if self.prefill is not None and self.decode is not None and self.prefill.plan and self.decode.plan:
            decode = Pool(self.decode.plan, self.decode.replicas)
            return deployment_files(decode, target, prefill=Pool(self.prefill.plan, self.prefill.replicas))
        if self.plan is None or self.replicas is None:
            raise InvalidParameterError("option", self.config.label, "an option that meets the SLOs")
        return deployment_files(Pool(self.plan, self.replicas), target)

    @property
    def meets_slo(self) -> bool:
        """The option meets every SLO at its size (a resolved option)."""
        return self.verdict == "meets"

    @property
    def num_gpus(self) -> int | None:
        """GPUs in total: replicas × GPUs per replica (both pools' for a disaggregated option); None when not
        resolved."""
        if self.prefill is not None and self.decode is not None:
            return self.prefill.num_gpus + self.decode.num_gpus
        return None if self.replicas is None else self.replicas * self.config.num_gpus

    @property
    def launch_command(self) -> str | None:
        """The ``vllm serve`` command of one replica (of each pool, with vLLM's NIXL KV connector, for a
        disaggregated option); None without a plan."""
        if self.prefill is not None and self.decode is not None:
            if self.prefill.plan is None or self.decode.plan is None:
                return None
            kv = ' --kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\''
            return (
                f"# prefill ({self.prefill.replicas} instance(s))\n{vllm_command(self.prefill.plan)}{kv}\n"
                f"# decode ({self.decode.replicas} instance(s))\n{vllm_command(self.decode.plan)}{kv}"
            )
        return None if self.plan is None else vllm_command(self.plan)

    def at_size_ms(self, metric: str, stat: str) -> float | None:
        """A figure of the simulation at the chosen size in ms (``("ttft", "p99")``); None when not simulated."""
        if self.at_size is None:
            return None
        dist = getattr(self.at_size.metrics, metric)
        value = None if dist is None else getattr(dist, {"p50": "median_s", "p99": "p99_s", "p90": "p90_s"}[stat])
        return None if value is None else value * 1e3

    @property
    def checked(self) -> tuple[SloCheck, ...]:
        """The SLO checks that decided its replicas: those of the simulation at its share of ``target_rate · (1 +
        headroom)``, each value at the chosen end of the band; () when it was not resolved."""
        passed = [p for p, met in self.probes if met]
        if self.ends is None or self.replicas is None or not passed:
            return ()
        return self.ends.checks(max(passed, key=lambda p: p.rate).metrics)

    def to_json(self) -> dict[str, object]:
        """The option under the CLI's ``--json`` keys (vLLM's flag names; ``None`` where not known). ``slo_checks``
        lists the checks that decided its replicas: per SLO its limit, the predicted value, the band's ratio and the
        value checked (their product), in ms."""
        c = self.config
        pools: dict[str, object] = {}
        if self.prefill is not None and self.decode is not None:
            pools = {
                "prefill": self.prefill.to_json(),
                "decode": self.decode.to_json(),
                "kv_transfer_ms": None if self.kv_transfer_s is None else self.kv_transfer_s * 1e3,
            }
        return {
            "rank": self.rank,
            "mode": self.mode,
            "gpu": c.gpu_id,
            "model": c.model,
            "tensor_parallel_size": c.tensor_parallel_size,
            "pipeline_parallel_size": c.pipeline_parallel_size,
            "quantization": None if c.quantization == "none" else c.quantization,
            "kv_cache_dtype": c.kv_cache_dtype,
            "replicas": self.replicas,
            "gpus_per_replica": c.num_gpus,
            "num_gpus": self.num_gpus,
            "usd_per_gpu_hour": self.price.usd_per_hour,
            "price_source": self.price.source,
            "usd_per_hour": self.usd_per_hour,
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "replica_request_rate": self.replica_rate,
            "replica_request_rate_limit": self.replica_rate_limit,
            "p50_ttft_ms": self.at_size_ms("ttft", "p50"),
            "p99_ttft_ms": self.at_size_ms("ttft", "p99"),
            "p50_tpot_ms": self.at_size_ms("tpot", "p50"),
            "p99_tpot_ms": self.at_size_ms("tpot", "p99"),
            "meets_slo": self.meets_slo,
            "slo_checks": [self._check_json(check) for check in self.checked],
            "verdict": self.verdict,
            "reason": self.reason,
            "least_usd_per_hour": self.least_usd_per_hour,
            "launch_command": self.launch_command if self.verdict == "meets" else None,
            **pools,
        }

    def _check_json(self, check: SloCheck) -> dict[str, object]:
        assert self.ends is not None and check.value_s is not None  # checked() gives only simulated checks
        ratio = self.ends.ratio(check.slo)
        return {
            "slo": check.slo.key,
            "limit_ms": check.slo.limit_ms,
            "predicted_ms": check.value_s / ratio * 1e3,
            "band_ratio": ratio,
            "checked_ms": check.value_s * 1e3,
            "met": check.ok,
        }


@dataclass(frozen=True)
class SizingResult:
    """The answer to a sizing question.

    Attributes:
        settings: the question.
        options: every configuration: the ones that meet the SLOs cheapest first, then the others by
            :data:`VERDICTS` order (each with its reason).
        answer: the headline, one line: the cheapest option, or that nothing meets the SLOs and what comes closest.
        closest: when nothing meets the SLOs, the option that comes closest and its binding SLO check; else None.
        calibration: where the step model's coefficients come from, in words.
        coefficients: the coefficients every simulation used.
        notes: what a reader of the figures must know.
        probes_run: simulations run (cached ones included).
        elapsed_s: wall time of the search, seconds.
    """

    settings: SizingSettings
    options: tuple[SizingOption, ...]
    answer: str
    closest: tuple[SizingOption, SloCheck] | None = None
    calibration: str = DEFAULT_SOURCE
    coefficients: StepCoefficients = DEFAULT_COEFFICIENTS
    notes: tuple[str, ...] = ()
    probes_run: int = 0
    elapsed_s: float = 0.0

    @property
    def ranked(self) -> tuple[SizingOption, ...]:
        """The options that meet the SLOs, cheapest first."""
        return tuple(o for o in self.options if o.verdict == "meets")

    @property
    def best(self) -> SizingOption | None:
        """The cheapest option that meets the SLOs; None when none does."""
        return next(iter(self.ranked), None)

    def to_json(self) -> list[dict[str, object]]:
        """The CLI's ``--json``: every option (:meth:`SizingOption.to_json`) with the search's ``slo_estimate``."""
        return [{**o.to_json(), "slo_estimate": self.settings.slo_estimate} for o in self.options]

    def counts(self) -> dict[str, int]:
        """Configurations per verdict."""
        out = dict.fromkeys(VERDICTS, 0)
        for o in self.options:
            out[o.verdict] += 1
        return out
