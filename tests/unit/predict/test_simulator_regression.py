"""The simulator's per-request results, locked against a frozen copy of what it gave before it was split and sped up.

This is a **regression lock, not a correctness golden**: ``data/simulator_golden.npz`` holds what
:func:`planner.predict.simulator.simulate` gave on the workloads below at commit ``ef6077c`` (the 859-line
``planner/predict/simulator.py``, before the split by concern and the event-driven decode path of issues 25 and 26),
written ONCE by running this module (``python -m tests.unit.predict.test_simulator_regression --write`` on that
commit) and never since. The correctness of those numbers is tested elsewhere, against schedules worked by hand
(``test_simulator.py``); this test only says the rewritten simulator computes the same thing.

Each workload stores its deployment (the :class:`~planner.predict.shape.StepShape` fields), its coefficients and
its token lengths, so a change to the capacity plan, the catalog or the default coefficients does not move it.

Tolerance: the simulator's clock runs to hundreds of seconds, and a TTFT or an E2E is the difference of two clock
readings. The old code summed each stretch of decode steps with ``numpy.cumsum`` from the stretch's start and the new
one sums step by step, so the clock may differ in its last bits (1 ulp = 5.7e-14 s at 300 s). The clock readings
(first token, last token) are compared at 1e-12 relative; TTFT, E2E and TPOT at 1e-12 relative to the run's
duration, i.e. the clock's scale (5e-10 s at 500 s, a millionth of a step). Counts (steps, preemptions, blocks) are
exact.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np
import pytest

from planner.loadtest.settings import LoadSettings
from planner.predict.shape import AttentionGroup, StepShape
from planner.predict.simulator import simulate
from planner.predict.speculative import SpecDecodeConfig, layer_head_shape
from planner.predict.step_time import DEFAULT_COEFFICIENTS, StepCoefficients

GOLDEN = Path(__file__).parent / "data" / "simulator_golden.npz"

#: Per-request arrays compared (seconds; the feature arrays in the step model's nominal units).
_ARRAYS = ("sent_s", "ttft_s", "e2e_s")


def _settings(n: int, *, cap: int | None = None, rate: float = math.inf, **more: object) -> LoadSettings:
    return LoadSettings(num_prompts=n, max_concurrency=cap, request_rate=rate, duration_s=None, **more)


def _workloads(base: StepShape, moe: StepShape) -> dict[str, dict]:
    """name -> simulate's arguments. ``base`` is Llama-3.1-8B on one H200, ``moe`` Qwen3-30B-A3B on one H200."""
    window = replace(
        base,
        groups=(
            AttentionGroup("full", None, 16, base.groups[0].kv_bytes_per_token_layer),
            AttentionGroup("sliding", 1024, 16, base.groups[0].kv_bytes_per_token_layer),
        ),
        num_gpu_blocks=3000,
    )
    tp = replace(
        base, tensor_parallel_size=2, allreduces_per_step=64, allreduce_bytes_per_token=8192.0, link_bytes_per_s=450e9
    )
    tight = replace(base, num_gpu_blocks=420, max_num_batched_tokens=2048)
    eagle = SpecDecodeConfig("eagle", 3, (0.7, 0.6, 0.5), layer_head_shape(base))
    ngram = SpecDecodeConfig("ngram", 2, (0.4,))
    return {
        "closed_c16": dict(shape=base, settings=_settings(200, cap=16, input_len=512, output_len=128)),
        "closed_c256_ranged": dict(
            shape=base, settings=_settings(400, cap=256, input_len=512, output_len=128, range_ratio=0.5, seed=3)
        ),
        "open_20_poisson": dict(shape=base, settings=_settings(300, rate=20.0, input_len=512, output_len=128)),
        "open_60_gamma": dict(
            shape=base, settings=_settings(300, rate=60.0, burstiness=0.5, input_len=1024, output_len=200, seed=7)
        ),
        "open_2_idle": dict(shape=base, settings=_settings(60, rate=2.0, input_len=300, output_len=50)),
        "burst_all": dict(shape=base, settings=_settings(200, input_len=700, output_len=90, range_ratio=0.3)),
        "synchronous": dict(
            shape=replace(base, async_scheduling=False),
            settings=_settings(200, rate=30.0, input_len=512, output_len=128, range_ratio=0.2),
        ),
        "preemption_chunked": dict(
            shape=tight, settings=_settings(150, cap=24, input_len=1500, output_len=300, range_ratio=0.4, seed=1)
        ),
        "preemption_open": dict(
            shape=tight, settings=_settings(150, rate=6.0, input_len=1200, output_len=400, range_ratio=0.5, seed=2)
        ),
        "sliding_window": dict(
            shape=window, settings=_settings(150, rate=8.0, input_len=1500, output_len=300, range_ratio=0.5, seed=4)
        ),
        "sliding_window_closed": dict(
            shape=window, settings=_settings(150, cap=40, input_len=900, output_len=200, range_ratio=0.5, seed=5)
        ),
        "tensor_parallel": dict(shape=tp, settings=_settings(150, rate=25.0, input_len=512, output_len=128)),
        "moe_eager_prefill": dict(
            shape=moe, settings=_settings(120, rate=8.0, input_len=2048, output_len=64, range_ratio=0.25, seed=6)
        ),
        "static_batches": dict(
            shape=base,
            settings=_settings(120, cap=16, rate=10.0, input_len=512, output_len=128, range_ratio=0.5),
            mode="static",
        ),
        "speculative_eagle": dict(
            shape=base, settings=_settings(120, cap=8, input_len=512, output_len=128), speculative=eagle
        ),
        "speculative_ngram_open": dict(
            shape=base, settings=_settings(120, rate=10.0, input_len=512, output_len=128), speculative=ngram
        ),
        "prefix_cached": dict(
            shape=base,
            settings=_settings(150, rate=20.0, input_len=2048, output_len=100, range_ratio=0.3),
            cached_tokens="half",
        ),
        "raw_vector_overhead": dict(
            shape=base,
            settings=_settings(150, cap=32, input_len=512, output_len=128),
            coefficients="vector",
            request_overhead_s=0.01,
        ),
    }


def _shape_dict(shape: StepShape) -> dict:
    data = {f.name: getattr(shape, f.name) for f in fields(shape)}
    data["groups"] = [asdict(g) for g in shape.groups]
    return data


def _shape_of(data: dict) -> StepShape:
    data = dict(data)
    data["groups"] = tuple(AttentionGroup(**g) for g in data["groups"])
    return StepShape(**data)


def _call(spec: dict, lengths: list[tuple[int, int]], coefficients: StepCoefficients):
    kwargs = {k: v for k, v in spec.items() if k in ("mode", "speculative", "request_overhead_s")}
    coef = coefficients.vector() if spec.get("coefficients") == "vector" else coefficients
    cached = [a // 2 for a, _ in lengths] if spec.get("cached_tokens") == "half" else None
    return simulate(spec["shape"], spec["settings"], coef, lengths=lengths, cached_tokens=cached, **kwargs)


def _write() -> None:  # pragma: no cover - run once, by hand, on the commit the docstring names
    from planner.capacity.plan import plan
    from planner.capacity.scenario import Scenario
    from planner.loadtest.schedule import draw_lengths
    from planner.predict.shape import step_shape

    def shape_of(model: str) -> StepShape:
        scenario = Scenario(model=model, gpu="h200-sxm-141gb", max_model_len=8192, max_num_seqs=256)
        return step_shape(plan(scenario, advise=False))

    work = _workloads(shape_of("meta-llama/Llama-3.1-8B-Instruct"), shape_of("Qwen/Qwen3-30B-A3B"))
    out: dict[str, np.ndarray] = {"coefficients": np.array(json.dumps(asdict(DEFAULT_COEFFICIENTS)))}
    shapes, metrics = {}, {}
    for name, spec in work.items():
        settings = spec["settings"]
        lengths = [(a, b) for a, b, _ in draw_lengths(settings, settings.num_prompts, 0)]
        run = _call(spec, lengths, DEFAULT_COEFFICIENTS)
        shapes[name] = _shape_dict(spec["shape"])
        out[f"{name}/lengths"] = np.array(lengths, dtype=np.int32)
        for key in _ARRAYS:
            out[f"{name}/{key}"] = getattr(run, key)
        # the step terms each request's TTFT and TPOT covered, as seconds (their product with the coefficients) and
        # as column sums over the requests (the full per-request matrices would make the file ten times larger)
        coef = DEFAULT_COEFFICIENTS.vector()
        for key in ("ttft_features", "tpot_features"):
            out[f"{name}/{key}@coef"] = getattr(run, key) @ coef
            out[f"{name}/{key}.sum"] = getattr(run, key).sum(axis=0)
        out[f"{name}/median_itl_features"] = run.median_itl_features
        out[f"{name}/counts"] = np.array([run.num_steps, run.preemptions, run.peak_kv_blocks], dtype=np.int64)
        out[f"{name}/mean_running"] = np.array(run.mean_running)
        metrics[name] = run.metrics.to_vllm_json()
    out["shapes"] = np.array(json.dumps(shapes))
    out["metrics"] = np.array(json.dumps(metrics))
    GOLDEN.parent.mkdir(exist_ok=True)
    np.savez_compressed(GOLDEN, **out)


#: The workloads the file holds (those of :func:`_workloads`).
NAMES = (
    "closed_c16",
    "closed_c256_ranged",
    "open_20_poisson",
    "open_60_gamma",
    "open_2_idle",
    "burst_all",
    "synchronous",
    "preemption_chunked",
    "preemption_open",
    "sliding_window",
    "sliding_window_closed",
    "tensor_parallel",
    "moe_eager_prefill",
    "static_batches",
    "speculative_eagle",
    "speculative_ngram_open",
    "prefix_cached",
    "raw_vector_overhead",
)


def test_the_file_holds_every_workload() -> None:
    stored = {k.split("/")[0] for k in np.load(GOLDEN).files if "/" in k}
    assert stored == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_simulator_matches_its_frozen_results(name: str) -> None:
    golden = np.load(GOLDEN)
    coefficients = StepCoefficients(**json.loads(str(golden["coefficients"])))
    shape = _shape_of(json.loads(str(golden["shapes"]))[name])
    # the workload's other arguments come from the definitions above (an EAGLE head derived from the deployment, as
    # when the file was written); its deployment from the file
    spec = {**_workloads(shape, shape)[name], "shape": shape}
    lengths = [(int(a), int(b)) for a, b in golden[f"{name}/lengths"]]
    run = _call(spec, lengths, coefficients)

    steps, preemptions, peak = golden[f"{name}/counts"].tolist()
    assert (run.num_steps, run.preemptions, run.peak_kv_blocks) == (steps, preemptions, peak)
    assert run.mean_running == pytest.approx(float(golden[f"{name}/mean_running"]), rel=1e-12)

    sent = golden[f"{name}/sent_s"]
    duration = float(np.nanmax(sent + golden[f"{name}/e2e_s"]))
    clock = 1e-12 * max(duration, 1.0)
    np.testing.assert_allclose(run.sent_s, sent, rtol=1e-12, atol=0)
    for key in ("ttft_s", "e2e_s"):  # the clock readings of the first and the last token, then their differences
        np.testing.assert_allclose(run.sent_s + getattr(run, key), sent + golden[f"{name}/{key}"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(getattr(run, key), golden[f"{name}/{key}"], rtol=0, atol=clock)
    out = np.array([b for _, b in lengths], dtype=float)
    tpot = (run.e2e_s - run.ttft_s) / np.maximum(out - 1, 1)
    old_tpot = (golden[f"{name}/e2e_s"] - golden[f"{name}/ttft_s"]) / np.maximum(out - 1, 1)
    np.testing.assert_allclose(tpot, old_tpot, rtol=0, atol=2 * clock)
    coef = coefficients.vector()
    for key in ("ttft_features", "tpot_features"):
        # seconds: the TTFT's share of the step under way at arrival is a difference of clock readings too
        np.testing.assert_allclose(getattr(run, key) @ coef, golden[f"{name}/{key}@coef"], rtol=1e-12, atol=clock)
        np.testing.assert_allclose(getattr(run, key).sum(axis=0), golden[f"{name}/{key}.sum"], rtol=1e-12)
    # the rest of TTFT: outside the steps (the way in and out, the wait at the API server, idle engine time)
    fixed = golden[f"{name}/ttft_s"] - golden[f"{name}/ttft_features@coef"] - (spec.get("request_overhead_s") or 0)
    if spec.get("coefficients") != "vector":
        fixed = fixed - coefficients.request_overhead_s
    np.testing.assert_allclose(run.ttft_fixed_s, fixed, rtol=0, atol=4 * clock)
    np.testing.assert_allclose(run.median_itl_features, golden[f"{name}/median_itl_features"], rtol=1e-12)

    metrics = run.metrics.to_vllm_json()
    for key, value in json.loads(str(golden["metrics"]))[name].items():
        if isinstance(value, float):
            assert metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
        else:
            assert metrics[key] == value, key


if __name__ == "__main__":  # pragma: no cover
    import sys

    if "--write" in sys.argv:
        _write()
