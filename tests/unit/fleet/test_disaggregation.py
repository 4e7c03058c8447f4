"""Prefill/decode disaggregation: the KV transfer's time, the xPyD rate match and a pair of pools by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.catalog.gpus import get_gpu
from planner.errors import InvalidParameterError
from planner.fleet.disaggregation import KvTransfer, kv_bytes, kv_transfer, rate_match, simulate_disaggregated
from planner.fleet.workload import FleetRequest
from planner.predict.shape import AttentionGroup
from tests.unit.predict.conftest import TEN_MS, tiny_shape

#: Llama-3.1-8B's KV at TP 1, bf16: 32 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 bytes = 131,072 B a token
#: (4,096 B per layer), its config.json.
LLAMA_8B_LAYERS = (AttentionGroup("full", None, 32, 4096.0),)


def test_kv_bytes_of_a_prompt() -> None:
    shape = replace(tiny_shape(), groups=LLAMA_8B_LAYERS)
    assert kv_bytes(shape, 1000) == 131_072_000
    # TP 2: each rank holds half the heads (2,048 B per layer); the two shares are the same 131 MB in all
    tp2 = replace(shape, tensor_parallel_size=2, groups=(AttentionGroup("full", None, 32, 2048.0),))
    assert kv_bytes(tp2, 1000) == 131_072_000
    # a sliding-window group keeps at most its window: 4,096 of 10,000 tokens in 16 of the 32 layers
    halves = (AttentionGroup("full", None, 16, 4096.0), AttentionGroup("sliding", 4096, 16, 4096.0))
    mixed = replace(shape, groups=halves)
    assert kv_bytes(mixed, 10_000) == 16 * 4096 * 10_000 + 16 * 4096 * 4096


@pytest.mark.parametrize(
    ("pools", "bandwidth", "link"),
    [
        # both pools H200 on one 8-GPU NVSwitch node: NVLink 4, 450 GB/s per direction (the catalog's interconnect)
        (("h200-sxm-141gb", 1, 1, "h200-sxm-141gb", 1, 1), 450e9, "NVLink 4"),
        # 4 + 6 GPUs do not fit one node: the network, a 400 Gb/s NIC per GPU = 50 GB/s
        (("h200-sxm-141gb", 2, 2, "h200-sxm-141gb", 1, 6), 50e9, "network"),
        # an H100 and an L40S: the network, bounded by the L40S's PCIe Gen4 x16 link, 32 GB/s
        (("h100-sxm-80gb", 1, 1, "l40s", 1, 1), 32e9, "network"),
    ],
)
def test_the_link_between_the_pools(pools: tuple, bandwidth: float, link: str) -> None:
    p_gpu, p_tp, p_n, d_gpu, d_tp, d_n = pools
    t = kv_transfer(get_gpu(p_gpu), p_tp, p_n, get_gpu(d_gpu), d_tp, d_n)
    assert t.bandwidth_bytes_per_s == pytest.approx(bandwidth)
    assert link in t.link
    assert t.pairs == min(p_tp, d_tp)


def test_transfer_time_from_bytes_and_bandwidth() -> None:
    # 1,000 tokens of Llama-3.1-8B KV = 131,072,000 B. Over NVLink 4 (450 GB/s): 0.291 ms + 1 ms latency; over a
    # 50 GB/s NIC: 2.621 ms + 1 ms; with TP 2 on both sides two pairs send at once: half the time on the wire.
    size = 131_072_000
    assert KvTransfer(450e9, 1e-3).seconds(size) == pytest.approx(size / 450e9 + 1e-3, rel=1e-12)
    assert KvTransfer(450e9, 1e-3).seconds(size) == pytest.approx(1.2913e-3, abs=1e-7)
    assert KvTransfer(50e9, 1e-3).seconds(size) == pytest.approx(3.6214e-3, abs=1e-7)
    assert KvTransfer(50e9, 1e-3, pairs=2).seconds(size) == pytest.approx(2.3107e-3, abs=1e-7)
    given = kv_transfer(get_gpu("h100"), 1, 1, get_gpu("h100"), 1, 1, bandwidth_gb_per_s=25, latency_ms=0)
    assert given.seconds(size) == pytest.approx(size / 25e9)


def test_xpyd_rate_match() -> None:
    # One prefill instance sustains 10 req/s of the workload's prompts, one decode instance 4 req/s within the TPOT
    # SLO: 24 req/s needs ⌈24/10⌉ = 3 prefill and ⌈24/4⌉ = 6 decode instances (3P6D); 20 req/s exactly 2P5D.
    assert rate_match(24.0, 10.0, 4.0) == (3, 6)
    assert rate_match(20.0, 10.0, 4.0) == (2, 5)
    with pytest.raises(InvalidParameterError):
        rate_match(20.0, 0.0, 4.0)


def test_one_request_through_a_prefill_and_a_decode_instance() -> None:
    # 10 + 5 tokens, every step 10 ms, a 25 ms transfer. Prefill instance: step [0, 10] ms prefills and samples
    # the one token it makes. The router has it at 10 ms; the KV lands at 35 ms; the decode instance's step
    # [35, 45] computes the last prompt token (the other 9 arrived) and samples the first token: TTFT 45 ms; four
    # more steps: last token at 85 ms (E2E 85 ms, TPOT (85 − 45) / 4 = 10 ms).
    shape = tiny_shape()
    request = FleetRequest((("r0", 10),), 5, "o0", 0.0)
    run = simulate_disaggregated(shape, 1, shape, 1, [request], transfer=KvTransfer(1e15, 0.025), coefficients=TEN_MS)
    assert run.ttft_s.tolist() == pytest.approx([0.045], abs=1e-9)
    assert run.e2e_s.tolist() == pytest.approx([0.085], abs=1e-9)
    assert run.metrics.tpot.median_s == pytest.approx(0.010, abs=1e-9)
    assert run.kv_transfer_ms == pytest.approx(25.0, abs=1e-6)
    assert (run.prefill_requests, run.decode_requests) == ((1,), (1,))


def test_the_decode_pool_holds_the_transferred_kv() -> None:
    # Decode instances of 3 blocks of 16 tokens: a request of 40 prompt + 8 output tokens needs 3 blocks there,
    # so two such requests cannot decode at once on one instance: the second waits for the first's blocks.
    shape = tiny_shape()
    small = tiny_shape(blocks=3)
    requests = [FleetRequest(((f"r{i}", 40),), 8, f"o{i}", 0.0) for i in range(2)]
    run = simulate_disaggregated(shape, 1, small, 1, requests, transfer=KvTransfer(1e15, 0.0), coefficients=TEN_MS)
    # Prefill: both prompts in step [0, 10]; both land at 10 ms. Decode: one admitted (3 blocks), first token at
    # 20 ms, 8th at 90 ms; the other admitted at 90 ms: first token at 100 ms, last at 170 ms.
    assert sorted(run.ttft_s.tolist()) == pytest.approx([0.020, 0.100], abs=1e-9)
    assert run.decode_peak_kv_blocks == 3
