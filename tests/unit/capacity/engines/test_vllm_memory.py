"""Golden values of the memory mechanisms in planner/capacity/engines/vllm_memory.py, worked out by hand.

Sources: NCCL ``src/include/device.h`` (protocol buffer sizes) and ``src/init.cc`` (``DEFAULT_BUFFSIZE``); vLLM 0.24.0
``vllm/distributed/device_communicators/custom_all_reduce.py``, ``vllm/model_executor/layers/fused_moe/experts/
triton_moe.py``, ``vllm/config/vllm.py::_set_cudagraph_sizes``, ``vllm/v1/worker/gpu/sample/sampler.py``; public
startup logs (``bench/data/vllm_capacity_logs.json``, ids cited). Model shapes are the catalog's config.json.
"""

from __future__ import annotations

import pytest

from planner.capacity.engines.vllm_memory import (
    CUSTOM_ALL_REDUCE_BUFFER_BYTES,
    NCCL_CONNECTION_BYTES,
    cuda_graph_sizes,
    custom_all_reduce,
    dense_forward_bytes,
    moe_workspace_bytes,
    nccl_buffer_bytes,
    non_torch,
    sampler_bytes_per_logit,
)
from planner.catalog.gpus import get_gpu
from planner.catalog.hub import resolve_model
from planner.units import GIB, MIB


def test_one_nccl_connection_holds_the_three_protocols_buffers() -> None:
    # SIMPLE 1 << 22 = 4,194,304; LL 8 lines x 512 threads x 8 steps x 16 B = 524,288;
    # LL128 120 elems x 640 threads x 8 steps x 8 B = 4,915,200; sum 9,633,792 B = 9.19 MiB
    connection = NCCL_CONNECTION_BYTES
    assert connection == 4_194_304 + 524_288 + 4_915_200 == 9_633_792
    assert connection / MIB == pytest.approx(9.19, abs=0.005)


@pytest.mark.parametrize(
    ("tp", "link", "expected"),
    [
        (1, "nvswitch", 0),
        (2, "nvswitch", 24 * 2 * 9_633_792),  # 462,422,016 B = 0.43 GiB
        (4, "nvswitch", 24 * 2 * 9_633_792),  # a ring: one peer each way at any TP
        (2, "nvlink", 12 * 2 * 9_633_792),
        (2, "pcie", 2 * 2 * 9_633_792),  # 38,535,168 B = 0.036 GiB
        (2, None, 2 * 2 * 9_633_792),  # unknown link: planned as PCIe
    ],
)
def test_nccl_ring_buffers_by_link(tp: int, link: str | None, expected: int) -> None:
    assert nccl_buffer_bytes(tp, link) == expected


def test_nccl_ring_on_nvswitch_reproduces_v011_tp2_non_torch_without_fitting() -> None:
    # v0.11 on H100 SXM: 0.13 GiB at TP 1 (ids 32, 33) and 0.55 / 0.54 GiB at TP 2 (ids 30, 36).
    # 0.133 GiB (the TP-1 mean) + 462,422,016 B (0.4307 GiB) = 0.564 GiB, nothing fitted on the TP-2 logs.
    h100 = get_gpu("h100-sxm-80gb")
    nt = non_torch(base="non_torch_tp1_v1", tp=2, pp=1, gpu=h100, v0_init_buffers=False, nvls_extra=False)
    assert nt.total_bytes / GIB == pytest.approx(0.55, abs=0.02)
    assert nt.total_bytes / GIB == pytest.approx(0.54, abs=0.03)


def test_non_torch_from_v018_on_nvswitch_and_on_pcie() -> None:
    # v0.19 on H100 SXM TP 2: 0.248 + 0.4307 + 1.42 (NVLS surplus, fitted on ids 39, 40, 44, 45) = 2.10 GiB against
    # 2.07 (id 39) and 2.06 (id 44) logged. On PCIe L40S no NVLink SHARP: 0.248 + 0.0359 = 0.28 GiB.
    kwargs = {"base": "non_torch_tp1_v018", "tp": 2, "pp": 1, "v0_init_buffers": False, "nvls_extra": True}
    h100 = non_torch(gpu=get_gpu("h100-sxm-80gb"), **kwargs)
    l40s = non_torch(gpu=get_gpu("l40s"), **kwargs)
    assert h100.total_bytes / GIB == pytest.approx(2.07, abs=0.05)
    assert l40s.total_bytes / GIB == pytest.approx(0.248 + 38_535_168 / GIB, abs=0.001)
    assert [what for what, _ in h100.parts][-1].startswith("NVLink SHARP")
    assert len(l40s.parts) == 2  # base + NCCL ring, no NVLS surplus


def test_pipeline_rank_non_torch() -> None:
    # ids 41, 42 (v0.19, PP 2 and 4 at TP 1): 0.07 GiB
    nt = non_torch(base="non_torch_tp1_v018", tp=1, pp=2, gpu=get_gpu("h100"), v0_init_buffers=False, nvls_extra=True)
    assert nt.total_bytes / GIB == pytest.approx(0.07, abs=1e-9)


@pytest.mark.parametrize(
    ("tp", "gpu", "spans", "enabled", "why"),
    [
        (1, "h100-sxm-80gb", False, False, "TP 1"),
        (2, "h100-sxm-80gb", False, True, "peer-to-peer over nvswitch"),
        (8, "h100-sxm-80gb", False, True, "peer-to-peer over nvswitch"),
        (3, "h100-sxm-80gb", False, False, "world size 3"),  # _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]
        (2, "rtx-4090", False, False, "peer-to-peer"),  # GeForce: no P2P (_can_p2p)
        (2, "l40s", False, True, "pcie"),  # two PCIe GPUs with P2P: allowed
        (4, "l40s", False, False, "without NVLink between every pair"),  # "more than two PCIe-only GPUs"
        (8, "h100-sxm-80gb", True, False, "spans nodes"),  # in_the_same_node_as
    ],
)
def test_custom_all_reduce_rules(tp: int, gpu: str, spans: bool, enabled: bool, why: str) -> None:
    decision = custom_all_reduce(tp, get_gpu(gpu), spans_nodes=spans)
    assert decision.enabled is enabled and why in decision.reason
    assert decision.buffer_bytes == (CUSTOM_ALL_REDUCE_BUFFER_BYTES if enabled else 0)


def test_custom_all_reduce_buffers() -> None:
    # meta + 8 MiB scratch, the 8 MiB IPC buffer, 8 MiB rank_data (custom_all_reduce.py, max_size=8192 * 1024)
    assert CUSTOM_ALL_REDUCE_BUFFER_BYTES == 24 * MIB


def test_sampler_bytes_per_logit_by_path() -> None:
    # V2 runner (0.24.0 gpu/sample/sampler.py): bf16 logits 2 + fp32 copy 4 = 6 B;
    # FlashInfer (v0.10): + masked logits 4 + probabilities 4 = 14 B
    assert sampler_bytes_per_logit("v2", 2) == 6
    assert sampler_bytes_per_logit("v2", 4) == 8  # --dtype float32: fp32 logits and their fp32 copy
    assert sampler_bytes_per_logit("v1_flashinfer", 2) == 14
    # fitted: the mean of what each log implies (vllm_fitted.py): V0 38.59, V1 sort 38.37, V1 Triton 14.85
    assert sampler_bytes_per_logit("v0_sort", 2) == pytest.approx((39.16 + 38.47 + 38.13) / 3)
    assert sampler_bytes_per_logit("v1_sort", 2) == pytest.approx(38.37, abs=0.01)
    assert sampler_bytes_per_logit("v1_triton", 2) == pytest.approx(14.85, abs=0.01)


def test_dense_forward_of_llama_3_1_8b() -> None:
    # h 4096, i 14336, 32 heads + 2 x 8 KV heads of 128: 8192 x (2·4096 + 3·14336 + 48·128) x 2 B
    spec = resolve_model("meta-llama/Llama-3.1-8B-Instruct").spec
    assert dense_forward_bytes(spec, 8192, 1, 2) == 8192 * (8192 + 43_008 + 6_144) * 2 == 939_524_096
    # TP 2 splits the MLP and the QKV projection, not the residual stream: 8192 x (8192 + 49,152 / 2) x 2
    assert dense_forward_bytes(spec, 8192, 2, 2) == 8192 * (8192 + 24_576) * 2


def test_moe_workspaces_of_qwen3_30b_a3b_do_not_shrink_with_tp() -> None:
    # hidden K 2048, moe_intermediate 768, top-8: N = 2·768/tp; workspace13 M·8·max(N/2, K), workspace2 M·8·max(N, K)
    spec = resolve_model("Qwen/Qwen3-30B-A3B-Instruct-2507").spec
    tp1 = moe_workspace_bytes(spec, 8192, 1, 2, fp8_activations=False)
    assert tp1 == 8192 * 8 * (2048 + 2048) * 2 == 512 * MIB  # max(768, 2048) + max(1536, 2048)
    assert moe_workspace_bytes(spec, 8192, 4, 2, fp8_activations=False) == tp1  # K = hidden is not split
    # block-FP8 (Qwen3-Coder-30B-A3B-FP8 has the same shape): + M·K + M·8·N/2 bytes of FP8 activations
    fp8 = moe_workspace_bytes(spec, 8192, 1, 2, fp8_activations=True)
    assert fp8 - tp1 == 8192 * (2048 + 8 * 768)


def test_moe_workspaces_include_shared_experts() -> None:
    # DeepSeek-V2-Lite: hidden 2048, moe_intermediate 1408, top-6, 2 shared experts (2,816 intermediate)
    spec = resolve_model("deepseek-ai/DeepSeek-V2-Lite-Chat").spec
    got = moe_workspace_bytes(spec, 8192, 1, 2, fp8_activations=False)
    assert got == 8192 * 6 * (2048 + 2816) * 2 + 8192 * 3 * 2816 * 2


@pytest.mark.parametrize(
    ("seqs", "batched", "piecewise", "full"),
    [
        (256, 8192, 51, 35),  # vLLM 0.24.0 logs "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
        (1024, 8192, 51, 51),  # largest min(2048, 512) = 512: 1, 2, 4, 8..248 (31), 256..512 (17)
        (8, 8192, 5, 4),  # largest 16: 1, 2, 4, 8, 16; FULL up to 8
        (256, 128, 19, 19),  # capped by max_num_batched_tokens 128: 1, 2, 4, 8..128 by 8 (16) = 19
    ],
)
def test_cuda_graph_capture_sizes(seqs: int, batched: int, piecewise: int, full: int) -> None:
    sizes_piecewise, sizes_full = cuda_graph_sizes(seqs, batched)
    assert (len(sizes_piecewise), len(sizes_full)) == (piecewise, full)
    assert max(sizes_piecewise) <= min(2 * seqs, 512, batched)
