"""The Sizing page's view (planner/views/sizing.py): the widgets' values of a settings and the settings of the
widgets (a round trip), and the prices typed into the price table. Values worked by hand."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from planner.catalog.gpus import get_gpu
from planner.metrics.slo import parse_slos
from planner.sizing.settings import DEFAULT
from planner.views import sizing as view

CATALOG = ("h100-sxm-80gb", "l4")


def test_widgets_and_settings_round_trip():
    settings = replace(
        DEFAULT,
        target_rate=6.0,
        slos=parse_slos(["ttft_p90_ms=500"]),
        gpus=("h100-sxm-80gb", "l4"),
        node_gpus=(("h100-sxm-80gb", 4), ("l4", 4)),
        quantizations=("none",),
    )
    values = view.widget_values(settings, CATALOG)
    assert (values["slos"], values["gpus"], values["node_gpus"]) == ("ttft_p90_ms=500", ["h100-sxm-80gb", "l4"], 4)
    slo_text, node = values.pop("slos"), values.pop("node_gpus")
    built = view.build_settings(values, slo_text, node)
    assert built.problem is None and built.settings == settings


def test_the_default_node_size_writes_none_and_a_bad_slo_is_named():
    values = view.widget_values(DEFAULT, CATALOG)
    slo_text, node = values.pop("slos"), values.pop("node_gpus")
    assert view.build_settings(values | {"gpus": ["l4"]}, slo_text, node).settings.node_gpus == ()
    bad = view.build_settings(values, "ttft_p99_ms=fast", node)
    assert bad.settings is None and bad.problem.startswith("slo='ttft_p99_ms=fast' is not valid")
    empty = view.build_settings(values, "  ", node)  # was "slos=() is not valid": the field's empty tuple
    assert empty.settings is None and empty.problem.startswith("the SLOs box is empty: type at least one SLO")


def test_typed_prices_are_those_not_the_catalogs():
    h100, l4 = get_gpu("h100-sxm-80gb"), get_gpu("l4")
    listed = h100.price_usd_per_hour
    edited = pd.DataFrame(
        {"gpu": ["h100-sxm-80gb", "l4"], "USD per GPU-hour": [listed, 0.8], "source": ["", ""], "date": ["", ""]}
    )
    # the H100's catalog price is no typed price; the L4's 0.8 is; a price kept for a GPU not listed stays
    kept = (("a100-sxm4-80gb", 1.5), ("l4", 0.5))
    assert view.typed_prices(edited, [h100, l4], kept) == (("a100-sxm4-80gb", 1.5), ("l4", 0.8))
