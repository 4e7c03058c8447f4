"""planner.sizing.options: a configuration's label and scenario, an option's totals and CLI keys, and the result's
ranking, on options built by hand (no search)."""

from __future__ import annotations

import pytest

from planner.metrics.benchmark import metrics_from_samples
from planner.metrics.slo import parse_slos
from planner.sizing.estimate import SloEnds
from planner.sizing.options import VERDICTS, Configuration, SizingOption, SizingResult
from planner.sizing.prices import GpuPrice
from planner.sizing.probe import Probe
from planner.sizing.settings import SizingSettings

H100 = Configuration("h100-sxm-80gb", "NVIDIA H100 80GB SXM5", "meta-llama/Llama-3.1-8B-Instruct", "fp8", "fp8", 2)
AWQ = Configuration("a10", "NVIDIA A10", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "none", "auto",
                    checkpoint_scheme="awq")  # fmt: skip
SLOS = parse_slos(["ttft_p99_ms=1000,tpot_p99_ms=50"])


def _probe(rate: float, ttft_s: float, tpot_s: float) -> Probe:
    """100 identical requests of 11 output tokens: every percentile is the value given."""
    metrics = metrics_from_samples(ttft_s=[ttft_s] * 100, e2e_s=[ttft_s + 10 * tpot_s] * 100, output_tokens=[11] * 100,
                                   input_tokens=[100] * 100, itl_s=[tpot_s] * 1000, duration_s=100 / rate)  # fmt: skip
    return Probe(rate, 0, 100, metrics, 0, False, 4.0)


def test_configuration_words() -> None:
    assert H100.num_gpus == 2 and H100.weights == "fp8"
    assert H100.label == "H100 80GB SXM5 · TP 2 · fp8 · KV fp8"  # "NVIDIA " dropped
    assert AWQ.weights == "checkpoint (awq)" and AWQ.label == "A10 · TP 1 · checkpoint (awq) · KV auto"
    pp = Configuration("b200", "NVIDIA B200", "m", "none", "auto", 2, 2)
    assert (pp.num_gpus, pp.label) == (4, "B200 · TP 2 PP 2 · checkpoint · KV auto")


def test_configuration_scenario_under_the_settings() -> None:
    s = H100.scenario(SizingSettings(gpu_memory_utilization=0.85, max_model_len=8192))
    assert (s.engine, s.model, s.gpu, s.tensor_parallel_size, s.quantization, s.kv_cache_dtype) == (
        "vllm",
        "meta-llama/Llama-3.1-8B-Instruct",
        "h100-sxm-80gb",
        2,
        "fp8",
        "fp8",
    )
    assert (s.gpu_memory_utilization, s.max_model_len) == (0.85, 8192)
    assert AWQ.scenario(SizingSettings()).quantization is None  # the checkpoint's own scheme


def _meets() -> SizingOption:
    ends = SloEnds(estimate="pessimistic", slos=SLOS, high=(1.5, 1.2), throughput_low=0.9)
    passed, missed = _probe(6.0, 0.400, 0.030), _probe(9.0, 0.900, 0.045)
    return SizingOption(
        H100, "meets", None, GpuPrice(2.99, "Lambda"), ends=ends, replicas=4, replica_rate=6.0,
        replica_rate_limit=9.0, at_size=_probe(5.0, 0.300, 0.025), probes=((passed, True), (missed, False)), rank=1,
        usd_per_hour=4 * 2 * 2.99, usd_per_million_output_tokens=1.23,
    )  # fmt: skip


def test_an_options_totals_and_figures() -> None:
    option = _meets()
    assert option.meets_slo and option.num_gpus == 8  # 4 replicas × TP 2
    assert (option.at_size_ms("ttft", "p99"), option.at_size_ms("tpot", "p50")) == pytest.approx((300.0, 25.0))
    assert SizingOption(AWQ, "no_price", "no price", GpuPrice(None)).num_gpus is None
    assert SizingOption(AWQ, "no_price", "x", GpuPrice(None)).at_size_ms("ttft", "p99") is None
    # the checks that decided it: the fastest simulation that passed (6 req/s), at the band's high ratios
    ttft, tpot = option.checked
    assert (ttft.value_s, tpot.value_s) == (pytest.approx(0.400 * 1.5), pytest.approx(0.030 * 1.2))


def test_to_json_keys() -> None:
    data = _meets().to_json()
    assert (data["rank"], data["gpu"], data["quantization"], data["replicas"], data["num_gpus"]) == (
        1,
        "h100-sxm-80gb",
        "fp8",
        4,
        8,
    )
    assert (data["usd_per_gpu_hour"], data["usd_per_hour"], data["meets_slo"], data["verdict"]) == (
        2.99,
        pytest.approx(23.92),
        True,
        "meets",
    )
    assert (data["replica_request_rate"], data["replica_request_rate_limit"]) == (6.0, 9.0)
    assert data["p99_ttft_ms"] == pytest.approx(300.0) and data["p99_tpot_ms"] == pytest.approx(25.0)
    assert data["slo_checks"][0] == {
        "slo": "ttft_p99_ms",
        "limit_ms": 1000.0,
        "predicted_ms": pytest.approx(400.0),
        "band_ratio": 1.5,
        "checked_ms": pytest.approx(600.0),
        "met": True,
    }
    assert data["launch_command"] is None  # no plan was kept
    assert SizingOption(AWQ, "no_price", "x", GpuPrice(None)).to_json()["quantization"] is None


def test_result_ranks_and_counts() -> None:
    costly = SizingOption(AWQ, "costs_more", "costs $5 more", GpuPrice(0.75))
    result = SizingResult(SizingSettings(), (_meets(), costly), "4 × H100")
    assert result.ranked == (result.options[0],) and result.best is result.options[0]
    counts = result.counts()
    assert list(counts) == list(VERDICTS) and (counts["meets"], counts["costs_more"], sum(counts.values())) == (1, 1, 2)
    assert [row["slo_estimate"] for row in result.to_json()] == ["pessimistic", "pessimistic"]
    assert SizingResult(SizingSettings(), (costly,), "nothing").best is None
