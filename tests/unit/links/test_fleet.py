"""The Fleet page's link codec: only what differs from the defaults, round trips, one warning per bad value."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.fleet.settings import DEFAULT, DEFAULT_WORKLOAD
from planner.links import fleet as links


def test_defaults_write_nothing() -> None:
    assert links.encode(DEFAULT_WORKLOAD, DEFAULT) == {}


def test_round_trip() -> None:
    workload = replace(DEFAULT_WORKLOAD, dataset_name="prefix_repetition", num_prompts=120, num_prefixes=4)
    fleet = replace(DEFAULT, replicas=16, routers=("prefix_aware", "round_robin"), router_refresh_s=2.5)
    query = links.encode(workload, fleet)
    assert query == {
        "dataset_name": "prefix_repetition",
        "num_prompts": "120",
        "num_prefixes": "4",
        "replicas": "16",
        "router": "prefix_aware,round_robin",
        "router_refresh_s": "2.5",
    }
    decoded = links.decode(query)
    assert decoded.warnings == ()
    assert (decoded.workload, decoded.fleet) == (workload, fleet)


@pytest.mark.parametrize(
    ("key", "value"),
    [("replicas", "2000"), ("router", "fastest"), ("router_refresh_s", "-1"), ("dataset_name", "sharegpt")],
)
def test_bad_values_warn_once_and_keep_the_default(key: str, value: str) -> None:
    decoded = links.decode({key: value})
    (line,) = decoded.warnings
    assert line.startswith(f"{key}=")
    assert (decoded.workload, decoded.fleet) == (DEFAULT_WORKLOAD, DEFAULT)


def test_the_scenario_codec_reads_the_rest_of_the_link() -> None:
    whole = links.decode_link({"gpu": "h200", "replicas": "8", "nonsense": "1"})
    assert whole.fleet.fleet.replicas == 8
    assert whole.state.scenarios[0].gpu == "h200-sxm-141gb"  # the catalog id of "h200"
    assert any("nonsense" in w for w in whole.warnings)
