"""The Sizing page's link: :class:`~planner.sizing.settings.SizingSettings` through the one settings codec, and the
rank of the option whose launch command is shown.

Every key, range and format is the field's own declaration (:mod:`planner.sizing.settings`, read by
:class:`~planner.links.codec.SettingsCodec`); the SLO format is :mod:`planner.metrics.slo`'s. Keys follow ``python -m
planner size``'s flags (``--target-rate`` → ``target_rate``) and the Load Test's names where they mean the same
(``input_len``, ``output_len``, ``burstiness``); every key is optional and only values that differ from
:data:`~planner.sizing.settings.DEFAULT` are written:

* ``model`` (a catalog id or a Hugging Face repo id, the scenario links' rule); ``target_rate`` (req/s,
  0.001–100000); ``input_len`` (1–131072), ``output_len`` (1–32768), ``burstiness`` (0.01–100);
* ``slo``: percentile SLOs, ``ttft_p99_ms=1000,tpot_p99_ms=50``; ``slo_estimate`` (``pessimistic`` or ``point``:
  what the SLOs are checked against);
* ``gpus``: catalog GPU ids with an optional GPUs per node, ``h100-sxm-80gb:8,l4`` (none = the whole catalog);
  ``max_gpus`` (per replica, 1–64);
* ``price``: the user's prices, ``h100-sxm-80gb=2.49,l4=0.8`` (USD per GPU-hour);
* ``headroom`` (0–1); ``quantization`` (``none,fp8,awq,...``); ``kv_cache_dtype`` (``auto,fp8``);
  ``max_model_len`` (16–10485760 or none), ``gpu_memory_utilization`` (0.01–1);
* ``row``: the rank of the option whose launch command is shown (1 = the cheapest).

The link carries no scenario, so a key that is not one of these is named in a warning. :func:`decode` never raises
(the rules of :mod:`planner.links.rules`): a bad value warns, naming the key, its value and what is accepted, and the
default is used.

Example:
    >>> encode(DEFAULT, row=2)
    {'row': '2'}
    >>> decode({"target_rate": "5", "slo": "tpot_p99_ms=40"}).settings.target_rate
    5.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.fields import Number
from planner.links.codec import SettingsCodec
from planner.sizing.settings import DEFAULT, SizingSettings

__all__ = ["CODEC", "KEYS", "MAX_ROW", "DecodedSizing", "decode", "encode", "parse_field"]

#: Highest ``row`` a link may ask for.
MAX_ROW = 1000
#: The Sizing page's codec: the settings, then the chosen row.
CODEC: SettingsCodec[SizingSettings] = SettingsCodec(
    DEFAULT, extra={"row": (Number(low=1, high=MAX_ROW, integer=True), 1)}, shared=False
)
#: Query keys, in the order they are written.
KEYS: tuple[str, ...] = tuple(CODEC.keys.values())
parse_field = CODEC.parse_field


@dataclass(frozen=True)
class DecodedSizing:
    """What a query string holds.

    Attributes:
        settings: the settings (defaults where the link is silent or wrong).
        row: the rank of the option whose launch command is shown.
        warnings: one line per bad parameter.
    """

    settings: SizingSettings = DEFAULT
    row: int = 1
    warnings: tuple[str, ...] = ()


def decode(query: Mapping[str, str | Sequence[str]]) -> DecodedSizing:
    """The settings and the chosen row from query parameters; never raises.

    Args:
        query: parameter name to its value or to all its values (a repeated key warns; its last value is used).
    """
    decoded = CODEC.decode(query)
    return DecodedSizing(decoded.settings, int(decoded.extras["row"]), decoded.warnings)


def encode(settings: SizingSettings, *, row: int = 1) -> dict[str, str]:
    """Query parameters of ``settings`` and the chosen ``row``: only what differs from the defaults."""
    return CODEC.encode(settings, row=row)
