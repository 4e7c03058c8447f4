"""Concurrency sweeps: levels, per-level specs, the Kneedle knee on hand-built curves, runs against the timed server
and a short real sweep against llama.cpp."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings, SweepSettings
from planner.loadtest.sweep import SweepPoint, SweepSpec, find_knee, sweep_levels
from planner.loadtest.worker import JobQueue, plan_jobs
from planner.serving.endpoints import Endpoint

FAST = "sweep [ttft_ms=20] [itl_ms=5] [tokens=4]"
# Long enough that client and scheduling overheads on a busy machine stay small next to each request's time.
STEADY = "sweep [ttft_ms=100] [itl_ms=20] [tokens=4]"


def _ep(url: str, kind: str = "vllm") -> Endpoint:
    return Endpoint(name="t", kind=kind, base_url=url)


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


# --- runs against the timed server (through the job queue the page and the CLI use) --------------------------------
def _sweep(endpoint: Endpoint, settings: LoadSettings) -> tuple[list, list]:
    """Run a sweep as the page and the CLI do; returns (outcomes, emitted messages)."""
    messages: list[tuple] = []
    jobs = plan_jobs([endpoint], settings, settings.prompts)
    queue = JobQueue(jobs, started=datetime(2026, 12, 1), scrape=False, emit=lambda *m: messages.append(m))
    return list(asyncio.run(queue.run())), messages


def test_sweep_runs_each_level_at_its_concurrency(timed_server):
    sweep = SweepSettings(sweep_max=4, prompts_per_level=4)
    settings = LoadSettings(mode="sweep", sweep=sweep, prompts=(STEADY,), dataset_name="custom", output_len=4)
    outcomes, messages = _sweep(_ep(timed_server.url), settings)
    points = [SweepPoint.of(o.job.level, o.result) for o in outcomes]
    assert [p.concurrency for p in points] == [1, 2, 4]
    assert [o.result.max_in_flight for o in outcomes] == [1, 2, 4]
    assert all((p.completed, p.failed) == (4, 0) for p in points)
    level, seen = 0, []
    for kind, *payload in messages:
        if kind == "job":
            level = outcomes[payload[0]].job.level
        elif kind == "progress":
            seen.append((level, payload[0].completed))
    assert seen == [(c, k) for c in (1, 2, 4) for k in range(1, 5)]
    # the timed server has no capacity limit: every doubling doubles the throughput, so there is no knee
    rates = [p.output_throughput for p in points]
    assert (
        rates[0] < rates[1] < rates[2]
        and find_knee([(p.concurrency, r) for p, r in zip(points, rates, strict=True)]) is None
    )
    assert all(o.result.stopped is None for o in outcomes)
    assert all(p.ttft_median_s >= 0.1 and p.tpot_median_s is not None for p in points)


# --- a short real sweep --------------------------------------------------------------------------------------------
def test_llamacpp_sweep_with_exact_input_lengths(llama_url):
    # every level (no stop at saturation: llama-cpp-python serves one request at a time, saturated at 1)
    sweep = SweepSettings(sweep_max=4, sweep_stop=False, prompts_per_level=2)
    settings = LoadSettings(mode="sweep", sweep=sweep, input_len=24, output_len=8, timeout_s=60)
    outcomes, _ = _sweep(_ep(llama_url, "llamacpp"), settings)
    points = [SweepPoint.of(o.job.level, o.result) for o in outcomes]
    assert [(p.concurrency, p.completed, p.failed) for p in points] == [(1, 2, 0), (2, 2, 0), (4, 2, 0)]
    for level in (o.result for o in outcomes):
        assert 0 < level.metrics.total_output_tokens <= 2 * 8
        # llama-cpp-python's /extras/tokenize counted every prompt (and the warm-up's): exactly 24 tokens each
        cal = level.input_calibration
        assert (cal.method, cal.total, cal.counted, cal.exact) == ("exact", 3, 3, 3)
        # llama-cpp-python streams no usage, so the run's input tokens are those counts (its text-only count; the
        # gemma chat template adds 8 more to the server's usage.prompt_tokens, measured with a non-streamed call)
        assert [r.prompt_tokens for r in level.records] == [None, None] and level.input_tokens == (24, 24)


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


def test_sweep_against_a_server_saturated_at_8_stops_within_one_level(monkeypatch):
    """The demo server with ``--max-num-seqs 8`` (and a decode step that does not grow with the batch) serves at most
    8 requests at once: throughput grows to concurrency 8 and is flat after it, while the 9th and later requests wait
    for a slot (their TTFT includes a whole answer). A sweep to 64 stops at 16, one level past the saturation point,
    and the refinement adds 11; 32 and 64 are never run."""
    from tests.servers.timed_sse import TimedServer

    settings = LoadSettings(
        mode="sweep",
        sweep=SweepSettings(sweep_max=64, sweep_refine=True),
        prompts=("sat [ttft_ms=100] [itl_ms=20] [tokens=8]",),  # long enough that a busy client barely shows
        dataset_name="custom",
        output_len=8,
    )
    with TimedServer(max_num_seqs=8) as server:
        outcomes, messages = _sweep(_ep(server.url), settings)
    levels = [o.job.level for o in outcomes]
    assert levels == [1, 2, 4, 8, 16, 11]
    (stop,) = [m for m in messages if m[0] == "sweep_stopped"]
    assert stop[2].startswith("concurrency 16:") and "median TTFT rose" in stop[2]
    points = {o.job.level: SweepPoint.of(o.job.level, o.result) for o in outcomes}
    # at 16, half the requests wait one answer (100 + 7 × 20 ms) for a slot; throughput no higher than at 8
    assert points[16].output_throughput < 1.1 * points[8].output_throughput
    assert points[8].output_throughput > 1.6 * points[4].output_throughput
