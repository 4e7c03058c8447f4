"""The Load Test settings: the goodput SLO format and the run spec the settings describe."""

from __future__ import annotations

import pytest

from planner.links.rules import BadValue
from planner.loadtest.settings import LoadSettings, parse_goodput, to_spec


def test_parse_goodput():
    assert parse_goodput("ttft:500 tpot:50") == (("ttft", 500.0), ("tpot", 50.0))
    assert parse_goodput("") == ()
    with pytest.raises(BadValue):
        parse_goodput("ttft")


def test_to_spec_carries_every_setting():
    settings = LoadSettings(
        num_prompts=5, max_concurrency=3, request_rate=4.0, output_len=9, goodput_ms=(("tpot", 50.0),)
    )
    spec = to_spec(settings, ("hello",))
    assert (spec.num_prompts, spec.max_concurrency, spec.request_rate, spec.output_len) == (5, 3, 4.0, 9)
    assert spec.prompts == ("hello",)
    assert spec.slo_ms == (("tpot", 50.0),)
    assert to_spec(settings, max_concurrency=16).max_concurrency == 16
