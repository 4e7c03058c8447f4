"""Ray workers against an address nothing answers on (the in-process tests are in tests/unit/loadtest/)."""

from __future__ import annotations

import pytest


def test_an_address_nothing_answers_on_fails_at_once_in_one_line(closed_port_url):
    pytest.importorskip("ray", reason="Ray is not installed")
    from planner.errors import RayUnavailableError
    from planner.loadtest.ray_workers import start_ray

    address = closed_port_url.removeprefix("http://")
    with pytest.raises(RayUnavailableError, match=f"the Ray cluster at ray://{address} cannot be reached"):
        start_ray(2, f"ray://{address}")
