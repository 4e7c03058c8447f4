"""The run's schedule: arrival times as vLLM's ``get_request`` draws them (``vllm/benchmarks/serve.py``), lengths,
and the :class:`~planner.loadtest.schedule.Schedule` value.
"""

from __future__ import annotations

import math
import statistics

import pytest

from planner.loadtest.runner import (
    arrival_times,
)
from planner.loadtest.settings import LoadSettings


# --- schedule and lengths (pure) -------------------------------------------------------------------------------------
def test_burst_sends_everything_at_zero():
    assert arrival_times(LoadSettings(num_prompts=5)) == (0.0,) * 5


@pytest.mark.parametrize(("burstiness", "cv"), [(1.0, 1.0), (4.0, 0.5), (0.25, 2.0)])
def test_rate_schedule_spans_n_over_rate_with_gamma_gaps(burstiness, cv):
    spec = LoadSettings(num_prompts=4000, request_rate=50.0, burstiness=burstiness, seed=7)
    times = arrival_times(spec)
    # rescaled so the last send is exactly N / rate = 4000 / 50 = 80 s, hence mean gap = 1/rate = 20 ms
    assert times[-1] == pytest.approx(80.0)
    gaps = [b - a for a, b in zip((0.0, *times), times, strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(0.02)
    # gamma(shape k) has coefficient of variation 1/sqrt(k): 1 (Poisson), 0.5, 2
    assert statistics.pstdev(gaps) / statistics.fmean(gaps) == pytest.approx(cv, rel=0.1)
    assert arrival_times(spec) == times  # seeded


def test_constant_spacing_with_infinite_burstiness():
    assert arrival_times(LoadSettings(num_prompts=4, request_rate=2.0, burstiness=math.inf)) == pytest.approx(
        (0.5, 1.0, 1.5, 2.0)
    )
