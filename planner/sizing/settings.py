"""The settings of a sizing search: what the Sizing page's widgets hold, a link restores and ``python -m planner size``
reads.

:class:`SizingSettings` is the one description of a sizing question: the model, the target load (request rate and
the workload of each request), the percentile SLOs, which GPUs and how many per replica, prices, headroom, and the
weight quantizations and KV-cache dtypes to consider. The text rules of its list fields (``--gpus``, ``--price``,
``--quantization``, ``--kv-cache-dtype``) live here once, for the CLI and the link codec
(:mod:`planner.links.sizing`) alike; each raises :class:`~planner.links.rules.BadValue` naming what is accepted.

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
from dataclasses import Field, dataclass, field, fields

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.errors import InvalidParameterError
from planner.links.rules import BadValue, format_value, parse_number
from planner.metrics.slo import Slo
from planner.sizing.estimate import SLO_ESTIMATES

__all__ = [
    "CHOICE_SETTINGS",
    "DEFAULT",
    "DEFAULT_NODE_GPUS",
    "LIMITS",
    "MAX_PRICE_USD_PER_HOUR",
    "QUANTIZATIONS",
    "ChoiceSetting",
    "SizingSettings",
    "choice_setting",
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
#: Highest price a user may type, USD per GPU-hour.
MAX_PRICE_USD_PER_HOUR = 1000.0
#: Accepted ranges of the numeric fields.
LIMITS: dict[str, tuple[float, float]] = {
    "target_rate": (0.001, 100_000.0),  # req/s
    "input_len": (1, 131_072),
    "output_len": (1, 32_768),
    "burstiness": (0.01, 100.0),
    "max_gpus": (1, 64),
    "headroom": (0.0, 1.0),
    "max_model_len": (16, 10_485_760),
    "gpu_memory_utilization": (0.01, 1.0),
}
_GPU_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Most GPUs one list names.
_MAX_GPUS_LISTED = 64


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
        slo_estimate: what the SLOs are checked against: ``pessimistic``, the predictor's error band's worse end of
            each predicted figure, or ``point``, the prediction itself (:mod:`planner.sizing.estimate`).

    A setting with a fixed set of values declares them, its label and its help in its field's metadata
    (:class:`ChoiceSetting`): validation, the CLI flag, the link key and the page's widget derive from it.

    Raises:
        InvalidParameterError: a value outside what is accepted, naming it.
    """

    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    target_rate: float = 20.0
    input_len: int = 2048
    output_len: int = 300
    burstiness: float = 1.0
    slos: tuple[Slo, ...] = (Slo("ttft", "p99", 1.0), Slo("tpot", "p99", 0.05))
    gpus: tuple[str, ...] = ()
    node_gpus: tuple[tuple[str, int], ...] = ()
    max_gpus: int = 8
    prices: tuple[tuple[str, float], ...] = ()
    headroom: float = 0.2
    quantizations: tuple[str, ...] = ("none", "fp8")
    kv_cache_dtypes: tuple[str, ...] = ("auto", "fp8")
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    slo_estimate: str = field(
        default="pessimistic",
        metadata={
            "choices": SLO_ESTIMATES,
            "label": "SLOs checked at",
            "help": "pessimistic: each SLO against the worse end of the predictor's error band (an interval from its "
            "errors on models it had not seen); point: against the prediction itself",
        },
    )

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip() or len(self.model) > 200:
            raise InvalidParameterError("model", self.model, "a non-empty model id of at most 200 characters")
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if value is None and name == "max_model_len":
                continue
            integer = name in ("input_len", "output_len", "max_gpus", "max_model_len")
            ok = not isinstance(value, bool) and isinstance(value, int if integer else int | float)
            ok = ok and math.isfinite(value) and low <= value <= high
            if not ok:
                kind = "an integer" if integer else "a number"
                raise InvalidParameterError(name, value, f"{kind} in [{low:g}, {high:g}]")
        object.__setattr__(self, "slos", tuple(self.slos))
        if not self.slos or not all(isinstance(s, Slo) for s in self.slos):
            raise InvalidParameterError("slos", self.slos, "at least one SLO, e.g. ttft_p99_ms=1000")
        for name in ("gpus", "node_gpus", "prices", "quantizations", "kv_cache_dtypes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if len(self.gpus) > _MAX_GPUS_LISTED or any(not _GPU_ID.match(str(g)) for g in self.gpus):
            raise InvalidParameterError("gpus", self.gpus, "catalog GPU ids (python -m planner gpus)")
        for gpu, count in self.node_gpus:
            if not _GPU_ID.match(str(gpu)) or isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InvalidParameterError("gpus", f"{gpu}:{count}", "GPU ids with an optional :GPUS_PER_NODE ≥ 1")
        for gpu, usd in self.prices:
            if not _GPU_ID.match(str(gpu)) or not _price_ok(usd):
                raise InvalidParameterError("price", f"{gpu}={usd}", _PRICE_ACCEPTED)
        if not self.quantizations or any(q not in QUANTIZATIONS for q in self.quantizations):
            raise InvalidParameterError(
                "quantization", self.quantizations, "one or more of " + ", ".join(QUANTIZATIONS)
            )
        if not self.kv_cache_dtypes or any(k not in KV_CACHE_DTYPES for k in self.kv_cache_dtypes):
            raise InvalidParameterError(
                "kv_cache_dtype", self.kv_cache_dtypes, "one or more of " + ", ".join(KV_CACHE_DTYPES)
            )
        for choice in CHOICE_SETTINGS:
            if getattr(self, choice.name) not in choice.choices:
                raise InvalidParameterError(choice.name, getattr(self, choice.name), choice.accepted)

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


@dataclass(frozen=True)
class ChoiceSetting:
    """A setting of :class:`SizingSettings` with a fixed set of values, as its field's metadata declares it: the one
    source of its validation, CLI flag, link key and page widget.

    Attributes:
        name: the field's name, which is also its link key (``slo_estimate``).
        choices: its values, the default first.
        default: its default.
        label: the widget's label.
        help: what each value means (the flag's and the widget's help).
    """

    name: str
    choices: tuple[str, ...]
    default: str
    label: str
    help: str

    @classmethod
    def of(cls, f: Field) -> ChoiceSetting:
        """The setting a field's metadata declares."""
        return cls(f.name, tuple(f.metadata["choices"]), f.default, f.metadata["label"], f.metadata["help"])

    @property
    def flag(self) -> str:
        """Its CLI flag, in vLLM's spelling: ``--slo-estimate``."""
        return "--" + self.name.replace("_", "-")

    @property
    def accepted(self) -> str:
        """What it accepts, for error lines."""
        return "one of " + ", ".join(self.choices)


#: The settings with a fixed set of values, in field order.
CHOICE_SETTINGS: tuple[ChoiceSetting, ...] = tuple(
    ChoiceSetting.of(f) for f in fields(SizingSettings) if "choices" in f.metadata
)


def choice_setting(name: str) -> ChoiceSetting:
    """The setting of :data:`CHOICE_SETTINGS` named ``name``.

    Raises:
        KeyError: no such setting.
    """
    found = next((c for c in CHOICE_SETTINGS if c.name == name), None)
    if found is None:
        raise KeyError(name)
    return found


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


_PRICE_ACCEPTED = f"GPU_ID=USD_PER_HOUR with 0 < USD ≤ {MAX_PRICE_USD_PER_HOUR:g}, e.g. h100-sxm-80gb=2.49"


def _price_ok(usd: object) -> bool:
    return (
        not isinstance(usd, bool)
        and isinstance(usd, int | float)
        and math.isfinite(usd)
        and 0 < usd <= MAX_PRICE_USD_PER_HOUR
    )


def parse_gpus(text: str) -> tuple[tuple[str, int | None], ...]:
    """GPU ids with an optional GPUs-per-node count: ``"h100-sxm-80gb:8,l4"`` → ``(("h100-sxm-80gb", 8), ("l4",
    None))``; commas or spaces between; duplicates dropped (the last count wins). The ids are checked against the
    catalog by the search, which names an unknown one.

    Raises:
        BadValue: a part that is not ``ID`` or ``ID:N`` (N an integer 1–64), or more than 64 GPUs.
    """
    accepted = "catalog GPU ids, comma separated, each with an optional :GPUS_PER_NODE (1–64), e.g. h100-sxm-80gb:8,l4"
    out: dict[str, int | None] = {}
    for part in (p for p in re.split(r"[,\s]+", text.strip()) if p):
        gpu, sep, count = part.partition(":")
        gpu = gpu.strip().lower()
        if not _GPU_ID.match(gpu):
            raise BadValue(accepted)
        if sep:
            try:
                out[gpu] = int(parse_number(count, 1, 64, integer=True))  # type: ignore[arg-type]
            except BadValue:
                raise BadValue(accepted) from None
        else:
            out.setdefault(gpu, None)
    if len(out) > _MAX_GPUS_LISTED:
        raise BadValue(accepted)
    return tuple(out.items())


def format_gpus(gpus: Sequence[str], node_gpus: Sequence[tuple[str, int]] = ()) -> str:
    """The inverse of :func:`parse_gpus`: ``"h100-sxm-80gb:8,l4"`` (node sizes written where given)."""
    sizes = dict(node_gpus)
    return ",".join(f"{g}:{sizes[g]}" if g in sizes else g for g in gpus)


def parse_prices(items: Iterable[str]) -> tuple[tuple[str, float], ...]:
    """Prices from texts ``GPU_ID=USD`` (each text may hold several, comma or space separated; ``:`` works for
    ``=``); the last price of a GPU wins.

    Raises:
        BadValue: a part that is not ``ID=USD`` with 0 < USD ≤ :data:`MAX_PRICE_USD_PER_HOUR`.
    """
    out: dict[str, float] = {}
    for item in items:
        for part in (p for p in re.split(r"[,\s]+", str(item).strip()) if p):
            gpu, sep, usd = part.replace(":", "=", 1).partition("=")
            gpu = gpu.strip().lower()
            if not sep or not _GPU_ID.match(gpu):
                raise BadValue(_PRICE_ACCEPTED)
            try:
                out[gpu] = float(parse_number(usd, 0, MAX_PRICE_USD_PER_HOUR, low_open=True))  # type: ignore[arg-type]
            except BadValue:
                raise BadValue(_PRICE_ACCEPTED) from None
    return tuple(out.items())


def format_prices(prices: Sequence[tuple[str, float]]) -> str:
    """The inverse of :func:`parse_prices`: ``"h100-sxm-80gb=2.49,l4=0.8"``."""
    return ",".join(f"{gpu}={format_value(float(usd))}" for gpu, usd in prices)


def parse_choices(text: str, choices: Sequence[str]) -> tuple[str, ...]:
    """A comma- or space-separated subset of ``choices`` (at least one, duplicates dropped, in the order given).

    Raises:
        BadValue: an empty list or a part that is not one of ``choices``.
    """
    parts = [p.strip().lower() for p in re.split(r"[,\s]+", text.strip()) if p.strip()]
    if not parts or any(p not in choices for p in parts):
        raise BadValue("one or more of " + ", ".join(choices) + ", comma separated")
    return tuple(dict.fromkeys(parts))
