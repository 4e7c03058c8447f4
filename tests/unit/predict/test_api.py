"""predict() and the Budget page's outlook."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.capacity.speculative import parse_speculative_config
from planner.errors import InvalidParameterError
from planner.loadtest.settings import LoadSettings
from planner.predict.api import OUTLOOK_OUTPUT_LEN, outlook, predict, predicted_run

H200_8B = Scenario(
    model="meta-llama/Llama-3.1-8B-Instruct",
    gpu="h200-sxm-141gb",
    max_model_len=8192,
    max_num_seqs=256,
    max_num_batched_tokens=8192,
)


def test_predict_matches_the_shared_h200_figures() -> None:
    # tests/data/h200_llama-3.1-8b_vllm-0.24.0.md: vLLM 0.24.0, Llama-3.1-8B, 529-token prompts, 128 output tokens:
    # concurrency 1 TPOT 4.80 ms and 199 output tok/s; concurrency 16 TPOT 5.3 ms and 2,311-2,325 tok/s
    # (the defaults were fitted to these among 93 runs of eleven models, so this checks the plumbing end to end, not
    # the accuracy). c=16 comes out 12% long on TPOT and 1% short on throughput (a closed loop's waves of 529-token
    # prefills, bench/prediction_accuracy.py); what the product promises there is that the measurement lies inside
    # the band it shows beside the prediction.
    one = predict(H200_8B, LoadSettings(num_prompts=8, max_concurrency=1, input_len=529, output_len=128))
    assert one.run.metrics.tpot.median_s == pytest.approx(4.80e-3, rel=0.03)
    assert one.run.metrics.output_throughput == pytest.approx(199, rel=0.03)
    sixteen = predict(H200_8B, LoadSettings(num_prompts=64, max_concurrency=16, input_len=529, output_len=128))
    assert sixteen.run.metrics.tpot.median_s == pytest.approx(5.3e-3, rel=0.15)
    assert sixteen.run.metrics.output_throughput == pytest.approx(2318, rel=0.15)
    assert sixteen.band is not None
    assert sixteen.band.contains("median_tpot", 5.3e-3)
    assert sixteen.band.contains("output_throughput", 2311) and sixteen.band.contains("output_throughput", 2325)
    saved = predicted_run(sixteen)
    assert saved.source == "predicted"
    assert saved.max_concurrency == 16
    assert saved.metrics.completed == 64


def test_predict_refuses_what_it_cannot_model() -> None:
    with pytest.raises(InvalidParameterError, match="engine"):
        predict(Scenario(engine="tgi"), LoadSettings())
    with pytest.raises(InvalidParameterError, match="fits"):
        predict(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="rtx-4090"), LoadSettings())


def test_outlook_at_one_request_and_at_full_load() -> None:
    result = plan(replace(H200_8B, target_context=4096))
    o = outlook(result)
    assert o is not None
    assert (o.input_len, o.output_len) == (4096 - OUTLOOK_OUTPUT_LEN, OUTLOOK_OUTPUT_LEN)
    # what the KV cache holds at 4,096 tokens: the server of bench/data/h200_sweeps logged 896,912 tokens = 56,057
    # blocks of 16, and 4,096 tokens take 256 blocks: 56,057 / 256 = 218.97 → 218 requests, within max_num_seqs
    # 256; the plan's pool is within 0.3 % of that log, so one request more at most
    assert o.full_concurrency in (218, 219)
    # a smaller max_num_seqs binds first
    assert outlook(plan(replace(H200_8B, target_context=4096, max_num_seqs=64))).full_concurrency == 64
    assert o.full.run.metrics.tpot.median_s > o.single.run.metrics.tpot.median_s
    table = o.table()
    assert list(table["load"]) == ["1 request", f"{o.full_concurrency:,} requests (full)"]
    assert outlook(plan(Scenario(engine="tgi"))) is None


def _numbers(cell: str) -> tuple[float, float, float]:
    """``"7.2 (5.8–8.0)"`` → ``(7.2, 5.8, 8.0)``."""
    value, band = cell.removesuffix(")").split(" (")
    low, high = band.split("–")
    return tuple(float(x.replace(",", "")) for x in (value, low, high))


def test_outlook_figures_carry_their_band() -> None:
    o = outlook(plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", max_model_len=8192)))
    assert o is not None
    single, full = o.table().to_dict("records")
    for row in (single, full):
        for column in ("TTFT p50 (ms)", "TPOT p50 (ms)", "output tok/s", "tok/s per request"):
            value, low, high = _numbers(row[column])
            assert low <= value <= high and low < high, (column, row[column])
    # the one-request row's TPOT and its band are the prediction's, in ms with one decimal
    tpot = o.single.run.metrics.tpot.median_s
    low, high = o.single.band.get("median_tpot")
    assert single["TPOT p50 (ms)"] == f"{tpot * 1e3:,.1f} ({low * 1e3:,.1f}–{high * 1e3:,.1f})"
    # tokens/s per request is 1 / TPOT: its band is 1 / the TPOT band's high to 1 / its low
    assert single["tok/s per request"] == f"{1 / tpot:,.0f} ({1 / high:,.0f}–{1 / low:,.0f})"
    assert o.band_line is not None and o.band_line.startswith("the predictor's error band for dense models by load")


# A scenario that carries vLLM's speculative_config is predicted with it (planner.predict.api.predict).
_EAGLE3 = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'


def _llama_h200(config: str | None) -> Scenario:
    spec_config = None if config is None else parse_speculative_config(config)
    return Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h200-sxm-141gb", speculative_config=spec_config)


def test_a_scenario_with_eagle3_is_predicted_with_it_near_the_h200_run():
    # Measured: vLLM 0.24.0 on one H200 with this EAGLE-3 head, k = 3, 512 in / 128 out, concurrency 1: median TPOT
    # 2.28 ms against 4.91 ms without it (bench/data/h200_sweeps/llama-3.1-8b-eagle3/in512_c1.json and
    # llama-3.1-8b/in512_c1.json). Predicted with the method's published 80% acceptance: within 15% of both.
    work = LoadSettings(num_prompts=4, max_concurrency=1, input_len=512, output_len=128)
    with_it = predict(_llama_h200(_EAGLE3), work)
    without = predict(_llama_h200(None), work)
    assert with_it.run.metrics.tpot.median_s == pytest.approx(2.28e-3, rel=0.15)
    assert without.run.metrics.tpot.median_s == pytest.approx(4.91e-3, rel=0.15)
    assert any("EAGLE-3 head" in n and "80%" in n for n in with_it.notes)
    # the draft's layers share every KV block: fewer blocks than the same plan without the head
    assert with_it.run.num_gpu_blocks < without.run.num_gpu_blocks


def test_ngram_without_rates_is_left_out_with_a_note():
    work = LoadSettings(num_prompts=2, max_concurrency=1, input_len=128, output_len=16)
    pred = predict(_llama_h200('{"method": "ngram", "num_speculative_tokens": 3}'), work)
    assert any("ngram" in n and "not simulated" in n for n in pred.notes)
