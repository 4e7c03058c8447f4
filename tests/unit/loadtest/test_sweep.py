"""Concurrency sweeps: levels, per-level specs, the Kneedle knee on hand-built curves, runs against the timed server
and a short real sweep against llama.cpp."""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.loadtest.sweep import SweepPoint, SweepSpec, find_knee, sweep_levels


# --- levels and specs ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "levels"), [(1, (1,)), (2, (1, 2)), (8, (1, 2, 4, 8)), (12, (1, 2, 4, 8, 12)), (3, (1, 2, 3))]
)
def test_doubling_levels_end_at_n(n, levels):
    assert sweep_levels(n) == levels


@pytest.mark.parametrize("bad", [0, -4, 5000, 2.0, True])
def test_bad_max_concurrency(bad):
    with pytest.raises(InvalidParameterError, match="max_concurrency"):
        sweep_levels(bad)


def test_prompts_and_time_per_level():
    base = LoadSettings(num_prompts=10, duration_s=30.0)
    spec = SweepSpec(base, (1, 2, 4, 8))
    # default: max(base.num_prompts, 4 x level)
    assert [spec.num_prompts(c) for c in spec.levels] == [10, 10, 16, 32]
    level = spec.level_spec(8)
    assert (level.max_concurrency, level.num_prompts, level.duration_s) == (8, 32, 30.0)  # min(30, 120)
    assert level.num_warmups == 1  # at least one warm-up per level by default
    assert SweepSpec(LoadSettings(num_warmups=3), (1,)).level_spec(1).num_warmups == 3
    fixed = SweepSpec(LoadSettings(), (1, 2), prompts_per_level=2, level_duration_s=5.0)
    assert fixed.level_spec(2).num_prompts == 2 and fixed.level_spec(2).duration_s == 5.0  # base has no cap
    assert SweepSpec.doubling(base, 5).levels == (1, 2, 4, 5)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"levels": ()}, "levels"),
        ({"levels": (1, 4, 2)}, "levels"),
        ({"levels": (1, 1)}, "levels"),
        ({"levels": (0, 1)}, "levels"),
        ({"prompts_per_level": 0}, "prompts_per_level"),
        ({"rounds": 0}, "rounds"),
        ({"level_duration_s": float("inf")}, "level_duration_s"),
        ({"warmups_per_level": -1}, "warmups_per_level"),
    ],
)
def test_spec_validation(kwargs, name):
    with pytest.raises(InvalidParameterError) as info:
        SweepSpec(**{"base": LoadSettings(), "levels": (1, 2), **kwargs})
    assert info.value.name == name


# --- the knee (Kneedle, Satopää et al. 2011) on hand-built curves ----------------------------------------------------
def test_knee_of_a_saturating_curve():
    # x = log2(c) normalised: 0, .2, .4, .6, .8, 1; y normalised (y - 100) / 720: 0, .139, .417, .833, .972, 1
    # difference y_n - x_n: 0, -.061, .017, .233, .172, 0 -> largest at c = 8
    curve = [(1, 100.0), (2, 200.0), (4, 400.0), (8, 700.0), (16, 800.0), (32, 820.0)]
    assert find_knee(curve) == 8
    assert find_knee(list(reversed(curve))) == 8  # order does not matter


def test_knee_when_throughput_falls_after_overload():
    # y_n = (y - 100) / 300: 0, .333, .933, 1, .667; x_n = 0, .25, .5, .75, 1; d = 0, .083, .433, .25, -.333
    assert find_knee([(1, 100.0), (2, 200.0), (4, 380.0), (8, 400.0), (16, 300.0)]) == 4


@pytest.mark.parametrize(
    "curve",
    [
        [(1, 100.0), (2, 200.0), (4, 400.0), (8, 800.0), (16, 1600.0)],  # linear scaling: convex on log2 x, d < 0
        [(1, 100.0), (2, 200.0), (4, 300.0), (8, 400.0)],  # the same gain per doubling: d = 0 everywhere
        [(1, 500.0), (2, 500.0), (4, 500.0)],  # flat
        [(1, 100.0), (2, 180.0)],  # two points
        [(1, 100.0)],
        [],
        [(1, 100.0), (2, None), (4, 300.0)],  # two usable points
        # measured noise (a cold first level, a slow third one; the timed server has no capacity limit): Kneedle
        # alone picks c = 2 (d = .4 - .333), but c = 8 still gains (433 / 202.6) ** (1/2) - 1 = 46 % per doubling
        [(1, 47.7), (2, 202.6), (4, 133.4), (8, 433.0)],
    ],
)
def test_no_knee(curve):
    assert find_knee(curve) is None


def test_min_gain_rejects_a_mild_bend():
    curve = [(1, 100.0), (2, 200.0), (4, 400.0), (8, 700.0), (16, 800.0), (32, 820.0)]
    assert find_knee(curve, min_gain=0.3) is None  # largest difference is 0.233
    # after c = 8 the gains are 800 / 700 = 14 % (one doubling) and (820 / 700) ** (1/2) = 8 % per doubling
    assert find_knee(curve, max_gain_after=0.15) == 8 and find_knee(curve, max_gain_after=0.10) is None


# --- saturation: when a sweep stops ----------------------------------------------------------------------------------
def _point(c: int, out_tok_s: float, ttft_s: float, e2el_s: float | None = None, completed: int = 10) -> SweepPoint:
    return SweepPoint(c, completed, 0, out_tok_s / 10, out_tok_s, ttft_s, ttft_s, 0.02, e2el_s or ttft_s + 1)


def test_saturation_needs_flat_throughput_and_rising_latency():
    from planner.loadtest.sweep import saturation

    # throughput doubles to c=8, then +4% at 16 while median TTFT goes 0.2 -> 0.5 s (+150%): saturated at 16
    points = [_point(1, 100, 0.2), _point(2, 200, 0.2), _point(4, 400, 0.2), _point(8, 790, 0.2), _point(16, 820, 0.5)]
    stop = saturation(points)
    assert (stop.level, stop.last_growing) == (16, 8)
    assert "+3.8%" in stop.reason and "median TTFT rose +150%" in stop.reason
    # flat throughput but latency steady (a noisy level): not saturated
    assert saturation([*points[:4], _point(16, 800, 0.21, 1.22)]) is None
    # latency rising while throughput still grows 20%: not saturated (a batching server's normal climb)
    assert saturation([*points[:4], _point(16, 950, 0.6)]) is None
    # E2E latency rising counts as queueing too
    assert saturation([*points[:4], _point(16, 800, 0.2, 2.5)]).level == 16
    # a level with no completed request is saturated outright
    assert saturation([*points[:2], _point(4, 0, 0, completed=0)]).reason == "concurrency 4: no request completed"


def test_refine_levels():
    from planner.loadtest.sweep import refine_levels

    assert refine_levels(8, 16) == (11,)  # √128 = 11.3
    assert refine_levels(1, 2) == ()  # no integer level between
    assert refine_levels(8, 16, done=(11,)) == ()
