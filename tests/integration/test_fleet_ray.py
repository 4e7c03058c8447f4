"""Fleet simulations as Ray tasks (``python -m planner fleet --ray-address``): the same runs as in this process."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-ray.txt)")

from planner.fleet.on_ray import LOCAL, simulate_on_ray  # noqa: E402
from planner.fleet.simulation import simulate_fleet  # noqa: E402
from tests.unit.fleet.test_simulation import _conversation_and_two_requests  # noqa: E402
from tests.unit.predict.conftest import TEN_MS, tiny_shape  # noqa: E402


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_policies_on_ray_match_the_same_runs_here(local_ray) -> None:
    shape, requests = tiny_shape(), _conversation_and_two_requests()
    jobs = [{"replicas": 2, "router": r, "coefficients": TEN_MS} for r in ("round_robin", "prefix_aware")]
    remote = simulate_on_ray(shape, requests, jobs, address=LOCAL)
    here = [simulate_fleet(shape, requests, **job) for job in jobs]
    for a, b in zip(remote, here, strict=True):
        assert a.router == b.router
        assert np.array_equal(a.replica_of, b.replica_of)
        assert np.allclose(a.ttft_s, b.ttft_s) and np.array_equal(a.hit_tokens, b.hit_tokens)
