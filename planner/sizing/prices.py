"""GPU prices per hour: the catalog's public on-demand prices (each with its source) or the user's own.

The catalog (``planner/catalog/data/gpus.json``) holds a price only where a public one was found, with where it
was seen; no price is invented. A price the user types replaces the catalog's (or gives one where it has none) and
is marked as theirs with today's date. A GPU with no price at all cannot be ranked by cost: the search says so and
asks for one.

Cost per million output tokens at a deployment serving ``rate`` requests/s of ``output_len`` tokens each:
``usd_per_hour / (rate · output_len · 3600) · 10⁶``: what the GPUs cost per token they deliver at the target load
(headroom included, since it is paid for).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from planner.catalog.gpus import GPU

__all__ = ["GpuPrice", "price_of", "usd_per_million_output_tokens"]


@dataclass(frozen=True)
class GpuPrice:
    """The price of one GPU-hour and where it comes from.

    Attributes:
        usd_per_hour: USD per GPU-hour; None when neither the catalog nor the user gives one.
        source: where the price was seen (the catalog's text), ``"your price"``, or None without a price.
        date: when: today's ISO date for a price the user typed; None for a catalog price whose source is undated
            (the source text says what is known), and without a price.
        edited: the user typed this price.
    """

    usd_per_hour: float | None
    source: str | None = None
    date: str | None = None
    edited: bool = False


def price_of(gpu: GPU, override: float | None = None) -> GpuPrice:
    """The price of ``gpu``: ``override`` (the user's) when given, else the catalog's.

    Args:
        gpu: a catalog GPU.
        override: USD per GPU-hour the user typed, or None.
    """
    if override is not None:
        return GpuPrice(float(override), "your price", date.today().isoformat(), True)
    if gpu.price_usd_per_hour is None:
        return GpuPrice(None)
    return GpuPrice(gpu.price_usd_per_hour, gpu.price_source)


def usd_per_million_output_tokens(usd_per_hour: float, rate: float, output_len: int) -> float:
    """USD per 10⁶ output tokens of a deployment costing ``usd_per_hour`` that serves ``rate`` requests/s of
    ``output_len`` output tokens each: ``usd_per_hour / (rate · output_len · 3600) · 10⁶``.

    Example: 4 GPUs at $2.50 serving 20 req/s of 300 tokens: $10/h over 21.6 M tokens/h = $0.463 per million.
    """
    return usd_per_hour / (rate * output_len * 3600.0) * 1e6
