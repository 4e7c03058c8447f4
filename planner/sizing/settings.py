"""The settings of a sizing search: what the Sizing page's widgets hold, a link restores and ``python -m planner size``
reads.

:class:`SizingSettings` is the one description of a sizing question: the model, the target load (request rate and
the workload of each request), the percentile SLOs, which GPUs and how many per replica, prices, headroom, and the
weight quantizations and KV-cache dtypes to consider. Each field declares once its range, link key, ``size`` flag,
help and widget label (:mod:`planner.fields`); the link codec (:mod:`planner.links.sizing`), the CLI's options and
the page's widgets are derived from it. The text rules of its list fields (``--gpus``, ``--price``,
``--quantization``, ``--kv-cache-dtype``) live here once; each raises :class:`~planner.errors.BadValue` naming what
is accepted.

Example:
    >>> parse_gpus("h100-sxm-80gb:8, l4:4")
    (('h100-sxm-80gb', 8), ('l4', 4))
    >>> parse_prices(["h100-sxm-80gb=2.5"])
    (('h100-sxm-80gb', 2.5),)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.catalog.gpus import get_gpu
from planner.catalog.hub import parse_model
from planner.errors import BadValue, InvalidParameterError, UnknownGPUError
from planner.fields import Choice, Number, Text, setting, validate
from planner.metrics.slo import Slo, format_slos, read_slos
from planner.sizing.estimate import SLO_ESTIMATES
from planner.values import format_value, parse_list, parse_number, split_list

__all__ = [
    "DEFAULT",
    "DEFAULT_NODE_GPUS",
    "DISAGGREGATION",
    "MAX_NODE_GPUS",
    "MAX_PRICE_USD_PER_HOUR",
    "QUANTIZATIONS",
    "SizingSettings",
    "default_max_model_len",
    "format_gpus",
    "format_prices",
    "parse_choices",
    "parse_gpus",
    "parse_prices",
]

#: Weight quantizations a search may consider: ``none`` = the checkpoint as published; ``fp8`` = vLLM's
#: ``--quantization fp8`` applied while loading; ``awq``, ``gptq``, ``int8``, ``mxfp4`` = the catalog's export of the
#: model in that scheme (its own checkpoint id), when there is one.
QUANTIZATIONS: tuple[str, ...] = ("none", "fp8", "awq", "gptq", "int8", "mxfp4")
#: GPUs of one node when the GPU list says nothing (an 8-GPU server, as HGX/DGX nodes are).
DEFAULT_NODE_GPUS = 8
#: Most GPUs of one node (and of one replica).
MAX_NODE_GPUS = 64
#: Highest price a user may type, USD per GPU-hour.
MAX_PRICE_USD_PER_HOUR = 1000.0
#: Prefill/decode disaggregation: ``off`` (aggregated replicas only), ``on`` (prefill and decode pools only),
#: ``both`` (ranked together), :mod:`planner.sizing.disaggregated`.
DISAGGREGATION: tuple[str, ...] = ("off", "on", "both")
_GPU_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Most GPUs one list names.
_MAX_GPUS_LISTED = 64
_PRICE_ACCEPTED = f"GPU_ID=USD_PER_HOUR with 0 < USD ≤ {MAX_PRICE_USD_PER_HOUR:g}, e.g. h100-sxm-80gb=2.49"


def parse_gpus(text: str) -> tuple[tuple[str, int | None], ...]:
    """GPU ids with an optional GPUs-per-node count: ``"h100-sxm-80gb:8,l4"`` → ``(("h100-sxm-80gb", 8), ("l4",
    None))``; commas or spaces between; a GPU's name or alias read as its catalog id (``h100`` →
    ``h100-sxm-80gb``); duplicates dropped (the last count wins).

    Raises:
        BadValue: a part that is not ``ID`` or ``ID:N`` (N an integer 1–64), an id the catalog does not know (the
            message names the closest ids), or more than 64 GPUs.
    """
    accepted = (
        f"catalog GPU ids, comma separated, each with an optional :GPUS_PER_NODE (1–{MAX_NODE_GPUS}), e.g. "
        "h100-sxm-80gb:8,l4"
    )

    def gpu(part: str) -> tuple[str, int | None]:
        name, sep, count = part.partition(":")
        name = name.strip().lower()
        if not _GPU_ID.match(name):
            raise BadValue(accepted)
        return name, (int(parse_number(count, 1, MAX_NODE_GPUS, integer=True)) if sep else None)  # type: ignore[arg-type]

    out: dict[str, int | None] = {}
    for name, count in parse_list(text, gpu, accepted=accepted):
        out[name] = count if count is not None else out.get(name)
    if len(out) > _MAX_GPUS_LISTED:
        raise BadValue(accepted)
    known: dict[str, int | None] = {}
    for name, count in out.items():
        gpu_id = _catalog_id(name, accepted)
        known[gpu_id] = count if count is not None else known.get(gpu_id)
    return tuple(known.items())


def _catalog_id(name: str, accepted: str) -> str:
    """The catalog id of a GPU id or name (``h100`` → ``h100-sxm-80gb``), checked here rather than in the search: a
    link naming an unknown GPU then warns and keeps its other values, the page's GPU picker shows every GPU the link
    names, and the CLI stops before any work.

    Raises:
        BadValue: ``accepted``, then the catalog's closest ids (:func:`planner.catalog.gpus.get_gpu`'s message).
    """
    try:
        return get_gpu(name).id
    except UnknownGPUError as exc:
        raise BadValue(f"{accepted} ({exc})") from None


def format_gpus(gpus: Sequence[str], node_gpus: Sequence[tuple[str, int]] = ()) -> str:
    """The inverse of :func:`parse_gpus`: ``"h100-sxm-80gb:8,l4"`` (node sizes written where given)."""
    sizes = dict(node_gpus)
    return ",".join(f"{g}:{sizes[g]}" if g in sizes else g for g in gpus)


def parse_prices(items: Iterable[str]) -> tuple[tuple[str, float], ...]:
    """Prices from texts ``GPU_ID=USD`` (each text may hold several, comma or space separated; ``:`` works for
    ``=``); a GPU's name or alias read as its catalog id; the last price of a GPU wins.

    Raises:
        BadValue: a part that is not ``ID=USD`` with 0 < USD ≤ :data:`MAX_PRICE_USD_PER_HOUR`.
    """

    def price(part: str) -> tuple[str, float]:
        name, sep, usd = part.replace(":", "=", 1).partition("=")
        name = name.strip().lower()
        if not sep or not _GPU_ID.match(name):
            raise BadValue(_PRICE_ACCEPTED)
        return name, float(parse_number(usd, 0, MAX_PRICE_USD_PER_HOUR, low_open=True))  # type: ignore[arg-type]

    prices = dict(parse_list(" ".join(str(i) for i in items), price, accepted=_PRICE_ACCEPTED))
    return tuple({_catalog_id(name, _PRICE_ACCEPTED): usd for name, usd in prices.items()}.items())


def format_prices(prices: Sequence[tuple[str, float]]) -> str:
    """The inverse of :func:`parse_prices`: ``"h100-sxm-80gb=2.49,l4=0.8"``."""
    return ",".join(f"{gpu}={format_value(float(usd))}" for gpu, usd in prices)


def parse_choices(text: str, choices: Sequence[str]) -> tuple[str, ...]:
    """A comma- or space-separated subset of ``choices`` (at least one, duplicates dropped, in the order given).

    Raises:
        BadValue: an empty list or a part that is not one of ``choices``.
    """
    parts = [p.lower() for p in split_list(text)]
    if not parts or any(p not in choices for p in parts):
        raise BadValue("one or more of " + ", ".join(choices) + ", comma separated")
    return tuple(dict.fromkeys(parts))


def _read_model(text: str) -> str:
    return parse_model(text.strip())  # the scenario links' rule: a catalog id or a Hub repo id


def _read_gpus(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """``(gpus, node_gpus)`` of a GPU list (:func:`parse_gpus`)."""
    pairs = parse_gpus(text)
    return tuple(g for g, _ in pairs), tuple((g, n) for g, n in pairs if n is not None)


def _price_ok(usd: object) -> bool:
    return (
        not isinstance(usd, bool)
        and isinstance(usd, int | float)
        and math.isfinite(usd)
        and 0 < usd <= MAX_PRICE_USD_PER_HOUR
    )


@dataclass(frozen=True)
class SizingSettings:
    """One sizing question. Lengths in tokens, rates in requests/s, prices in USD per GPU-hour.

    Attributes:
        model: catalog model id or Hugging Face repo id.
        target_rate: requests per second the whole deployment must serve (0.001 to 100,000).
        input_len / output_len: prompt and output tokens of every request (the model always generates
            ``output_len``, as with ``ignore_eos``).
        burstiness: gamma shape of the arrival gaps (1 = Poisson, as ``vllm bench serve``).
        slos: percentile SLOs every replica must meet at its share of the load (:mod:`planner.metrics.slo`).
        slo_estimate: what the SLOs are checked against: ``pessimistic``, the predictor's error band's worse end of
            each predicted figure, or ``point``, the prediction itself (:mod:`planner.sizing.estimate`).
        gpus: catalog GPU ids to consider; () = every catalog GPU.
        node_gpus: ``(gpu id, GPUs per node)`` for GPUs whose nodes are not :data:`DEFAULT_NODE_GPUS` GPUs: tensor
            parallelism stays within a node.
        max_gpus: most GPUs of one replica (tensor × pipeline parallel size).
        prices: ``(gpu id, USD per GPU-hour)`` that replace the catalog's price (or give one where it has none).
        headroom: spare capacity asked for, a fraction: replicas = ⌈target_rate · (1 + headroom) / per-replica
            capacity⌉.
        quantizations: weight quantizations to consider (:data:`QUANTIZATIONS`).
        kv_cache_dtypes: KV-cache dtypes to consider (vLLM's ``--kv-cache-dtype`` values).
        max_model_len: the deployments' ``--max-model-len``; None = :func:`default_max_model_len` of the workload.
        gpu_memory_utilization: vLLM's ``--gpu-memory-utilization`` of every deployment.
        disaggregation: also (``both``) or only (``on``) prefill/decode pools (xPyD, possibly of different GPUs) joined
            by a KV transfer, ranked with the aggregated replicas by cost (:data:`DISAGGREGATION`).
        kv_transfer_gb_per_s / kv_transfer_latency_ms: the KV transfer's bandwidth per GPU pair (GB/s) and fixed
            latency (ms) between the pools; None = from the GPU catalog's interconnect and the default latency
            (:func:`planner.fleet.disaggregation.kv_transfer`).

    Each field's range, link key, flag, help and widget label are in its metadata (:mod:`planner.fields`).

    Raises:
        InvalidParameterError: a value outside what is accepted, naming it.
    """

    model: str = setting(
        "meta-llama/Llama-3.1-8B-Instruct",
        Text(
            read=_read_model,
            flags=("--model",),
            required=True,
            label="Model",
            help="a catalog model or any Hugging Face repo id",
        ),
    )
    target_rate: float = setting(
        20.0,
        Number(
            low=0.001,
            high=100_000.0,
            flags=("--target-rate",),
            required=True,
            label="target rate (req/s)",
            help="requests/s the whole deployment must serve",
        ),
    )
    input_len: int = setting(
        2048, Number(low=1, high=131_072, integer=True, flags=("--input-len",), help="prompt tokens per request")
    )
    output_len: int = setting(
        300,
        Number(
            low=1,
            high=32_768,
            integer=True,
            flags=("--output-len",),
            help="output tokens per request (generated to the end, as with ignore_eos)",
        ),
    )
    burstiness: float = setting(
        1.0,
        Number(low=0.01, high=100.0, flags=("--burstiness",), help="gamma shape of the arrivals: 1 = Poisson"),
    )
    slos: tuple[Slo, ...] = setting(
        (Slo("ttft", "p99", 1.0), Slo("tpot", "p99", 0.05)),
        Text(
            key="slo",
            read=read_slos,
            write=format_slos,
            valid=lambda slos: bool(slos) and all(isinstance(s, Slo) for s in slos),
            accepted="at least one SLO, e.g. ttft_p99_ms=1000",
            flags=("--slo",),
            nargs="append",
            metavar="METRIC_STAT_ms=LIMIT",
            label="SLOs (percentiles)",
            help="percentile SLOs METRIC_STAT_ms=LIMIT, comma separated or the flag repeated (METRIC ttft, tpot, "
            "itl or e2el; STAT p50, p90, p99 or mean), e.g. ttft_p99_ms=1000: every replica must meet them at its "
            "share of the load (percentiles over the simulated requests)",
        ),
    )
    slo_estimate: str = setting(
        "pessimistic",
        Choice(
            choices=SLO_ESTIMATES,
            radio=True,
            flags=("--slo-estimate",),
            label="SLOs checked at",
            help="pessimistic: each SLO against the worse end of the predictor's error band (an interval from its "
            "errors on models it had not seen); point: against the prediction itself",
        ),
    )
    gpus: tuple[str, ...] = setting(
        (),
        Text(
            read=_read_gpus,
            write=lambda gpus, node_gpus: format_gpus(gpus, node_gpus) or None,  # node sizes go with their GPUs
            carries=("node_gpus",),
            valid=lambda gpus: len(gpus) <= _MAX_GPUS_LISTED and all(_GPU_ID.match(str(g)) for g in gpus),
            accepted="catalog GPU ids (python -m planner gpus)",
            flags=("--gpus",),
            metavar="ID[:N],...",
            label="GPUs to consider (none = the whole catalog)",
            help=f"catalog GPU ids, each with GPUs per node (default: all, {DEFAULT_NODE_GPUS})",
        ),
    )
    node_gpus: tuple[tuple[str, int], ...] = setting((), Text(linked=False))
    max_gpus: int = setting(
        8,
        Number(
            low=1,
            high=MAX_NODE_GPUS,
            integer=True,
            flags=("--max-gpus",),
            label="max GPUs per replica",
            help="most GPUs of one replica, tensor × pipeline parallel",
        ),
    )
    prices: tuple[tuple[str, float], ...] = setting(
        (),
        Text(
            key="price",
            read=lambda text: parse_prices([text]),
            write=format_prices,
            flags=("--price",),
            nargs="append",
            metavar="ID=USD_PER_HOUR",
            help="a GPU's price per hour (repeat the flag)",
        ),
    )
    headroom: float = setting(
        0.2,
        Number(
            low=0.0,
            high=1.0,
            flags=("--headroom",),
            help="spare capacity, a fraction: replicas = ⌈target rate × (1 + headroom) / capacity of one replica⌉",
        ),
    )
    quantizations: tuple[str, ...] = setting(
        ("none", "fp8"),
        Text(
            key="quantization",
            read=partial(parse_choices, choices=QUANTIZATIONS),
            write=",".join,
            valid=lambda chosen: bool(chosen) and all(q in QUANTIZATIONS for q in chosen),
            accepted="one or more of " + ", ".join(QUANTIZATIONS),
            flags=("--quantization",),
            metavar="QUANT,...",
            label="weight quantizations",
            help="weight quantizations to consider: none (the checkpoint as published), fp8 (vLLM's --quantization "
            "fp8), awq, gptq, int8, mxfp4 (the catalog's export of the model in that scheme, when there is one)",
        ),
    )
    kv_cache_dtypes: tuple[str, ...] = setting(
        ("auto", "fp8"),
        Text(
            key="kv_cache_dtype",
            read=partial(parse_choices, choices=KV_CACHE_DTYPES),
            write=",".join,
            valid=lambda chosen: bool(chosen) and all(k in KV_CACHE_DTYPES for k in chosen),
            accepted="one or more of " + ", ".join(KV_CACHE_DTYPES),
            flags=("--kv-cache-dtype",),
            metavar="DTYPE,...",
            label="KV-cache dtypes",
            help="KV-cache dtypes to consider (--kv-cache-dtype)",
        ),
    )
    max_model_len: int | None = setting(
        None,
        Number(
            low=16,
            high=10_485_760,
            integer=True,
            optional=True,
            flags=("--max-model-len",),
            help="--max-model-len of the deployments; none: the next power of two at or above input_len + output_len, "
            "at least 2,048",
        ),
    )
    gpu_memory_utilization: float = setting(
        0.9, Number(low=0.01, high=1.0, flags=("--gpu-memory-utilization",), help="vLLM's --gpu-memory-utilization")
    )
    disaggregation: str = setting(
        "off",
        Choice(
            choices=DISAGGREGATION,
            radio=True,
            flags=("--disaggregation",),
            label="Prefill/decode disaggregation",
            help="off: aggregated replicas only; on: prefill and decode pools (xPyD, GPUs may differ) joined by a KV "
            "transfer, only; both: ranked together by cost",
        ),
    )
    kv_transfer_gb_per_s: float | None = setting(
        None,
        Number(
            low=0.01,
            high=100_000.0,
            optional=True,
            flags=("--kv-transfer-gb-per-s",),
            help="disaggregation: KV transfer bandwidth per GPU pair, GB/s; none: from the GPUs' interconnect",
        ),
    )
    kv_transfer_latency_ms: float | None = setting(
        None,
        Number(
            low=0.0,
            high=10_000.0,
            optional=True,
            flags=("--kv-transfer-latency-ms",),
            help="disaggregation: fixed time of one KV transfer, ms; none: 1 ms",
        ),
    )

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip() or len(self.model) > 200:
            raise InvalidParameterError("model", self.model, "a non-empty model id of at most 200 characters")
        for name in ("slos", "gpus", "node_gpus", "prices", "quantizations", "kv_cache_dtypes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        validate(self)
        for gpu, count in self.node_gpus:
            if not _GPU_ID.match(str(gpu)) or isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InvalidParameterError("gpus", f"{gpu}:{count}", "GPU ids with an optional :GPUS_PER_NODE ≥ 1")
        for gpu, usd in self.prices:
            if not _GPU_ID.match(str(gpu)) or not _price_ok(usd):
                raise InvalidParameterError("price", f"{gpu}={usd}", _PRICE_ACCEPTED)

    @property
    def deployment_rate(self) -> float:
        """Requests per second the replicas are sized for: ``target_rate · (1 + headroom)``."""
        return self.target_rate * (1.0 + self.headroom)

    @property
    def served_max_model_len(self) -> int:
        """The ``--max-model-len`` of every deployment: :attr:`max_model_len`, or the workload's default."""
        return self.max_model_len or default_max_model_len(self.input_len + self.output_len)

    def node_size(self, gpu_id: str) -> int:
        """GPUs per node of ``gpu_id`` (:attr:`node_gpus`, else :data:`DEFAULT_NODE_GPUS`)."""
        return dict(self.node_gpus).get(gpu_id, DEFAULT_NODE_GPUS)

    def price_override(self, gpu_id: str) -> float | None:
        """The price the user gave for ``gpu_id``, USD per GPU-hour; None when they gave none."""
        return dict(self.prices).get(gpu_id)


#: The settings of the Sizing page opened without a link (the issue's example: 20 req/s of 2k-in / 300-out under
#: p99 TTFT 1 s and p99 TPOT 50 ms).
DEFAULT = SizingSettings()


def default_max_model_len(tokens: int) -> int:
    """The ``--max-model-len`` a deployment of requests of ``tokens`` tokens gets when none is given: the next power
    of two at or above ``tokens``, at least 2,048 (room for requests a little longer than the workload's).

    Example:
        >>> default_max_model_len(2348)
        4096
    """
    return max(2048, 1 << max(0, math.ceil(math.log2(max(1, tokens)))))
