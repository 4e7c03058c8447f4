"""planner.sizing.prices: the catalog's public prices with their source, the user's own, and cost per token."""

from __future__ import annotations

from datetime import date

import pytest

from planner.catalog.gpus import get_gpu
from planner.sizing.prices import GpuPrice, price_of, usd_per_million_output_tokens


def test_a_catalog_price_keeps_its_source() -> None:
    # Lambda's on-demand 8× H100 SXM5 at $23.92/h = $2.99 per GPU-hour, the source the catalog quotes
    price = price_of(get_gpu("h100"))
    assert price.usd_per_hour == 2.99 and price.source.startswith("Lambda on-demand gpu_8x_h100_sxm5 $23.92/h / 8")
    assert (price.date, price.edited) == (None, False)


def test_no_price_is_invented() -> None:
    assert price_of(get_gpu("h200")) == GpuPrice(None)


def test_the_users_price_replaces_the_catalogs() -> None:
    price = price_of(get_gpu("h200"), 3.5)
    assert price == GpuPrice(3.5, "your price", date.today().isoformat(), True)


def test_cost_per_million_output_tokens() -> None:
    # the docstring's example: 4 GPUs at $2.50 = $10/h serving 20 req/s of 300 tokens = 21.6 M tokens/h: $0.463/M
    assert usd_per_million_output_tokens(4 * 2.50, 20.0, 300) == pytest.approx(10 / 21.6)
    assert usd_per_million_output_tokens(2.99, 1.0, 1000) == pytest.approx(2.99 / 3.6)  # 3.6 M tokens an hour
