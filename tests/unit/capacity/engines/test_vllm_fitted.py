"""The fitted constants: every sample is what its log implies (recomputed here from the public log), and
:func:`leave_out` refits without one record (the cross-validation of bench/capacity_accuracy.py).

Logs: ``bench/data/vllm_capacity_logs.json`` (public start-up logs, each with its URL). The sampler
rule: (logged activation − T·h·2 B of hidden states) / (rows × vocab), rows = min(max_num_seqs, T): 1024 rows and
T = 8192 on an H100 in V1 from v0.10 (EngineArgs.get_batch_defaults); V0 256 rows (or the log's max_num_seqs) and
T = max(max_model_len, 2048).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.capacity.engines.vllm_fitted import CONSTANTS, fitted, leave_out
from planner.catalog.hub import resolve_model
from planner.units import GIB

ROOT = Path(__file__).resolve().parents[4]
LOGS = {r["id"]: r for r in json.loads((ROOT / "bench/data/vllm_capacity_logs.json").read_text())}
MODELS = {
    3: "meta-llama/Meta-Llama-3-8B",
    28: "openai/gpt-oss-20b",
    30: "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    32: "meta-llama/Llama-3.1-8B-Instruct",
    33: "Qwen/Qwen3-0.6B",
    35: "Qwen/Qwen3-32B",
    36: "Qwen/Qwen3-32B",
    38: "meta-llama/Llama-3.1-8B-Instruct",
    43: "Qwen/Qwen2.5-7B-Instruct",
    50: "Qwen/Qwen3-14B",
    51: "Qwen/Qwen3-14B",
    52: "Qwen/Qwen3-14B",
    54: "google/gemma-2-9b-it",
    55: "kaitchup/Phi-4-AutoRound-GPTQ-4bit",
    56: "microsoft/phi-4",
}
#: (rows, batched tokens) of each log's dummy sampler run and forward.
SHAPES = {3: (256, 8192), 55: (256, 2048), 56: (320, 2048)}


def _implied_bytes_per_logit(log_id: int) -> float:
    rows, tokens = SHAPES.get(log_id, (1024, 8192))
    spec = resolve_model(MODELS[log_id]).spec
    activation = LOGS[log_id]["activation_memory_gib"] * GIB
    return (activation - tokens * spec.hidden_size * 2) / (rows * spec.vocab_size)


@pytest.mark.parametrize("name", ["sampler_bytes_v0", "sampler_bytes_v1_sort", "sampler_bytes_v1_triton"])
def test_sampler_samples_are_what_the_logs_imply(name: str) -> None:
    for record, value in CONSTANTS[name].samples:
        assert _implied_bytes_per_logit(int(record.split(":")[1])) == pytest.approx(value, abs=0.01), record


@pytest.mark.parametrize("name", ["non_torch_tp1_v063", "non_torch_tp1_v0", "non_torch_tp1_v1", "non_torch_tp1_v018"])
def test_non_torch_samples_are_the_logged_figures(name: str) -> None:
    for record, value in CONSTANTS[name].samples:
        assert value == LOGS[int(record.split(":")[1])]["non_torch_memory_gib"] * GIB, record


def test_nvls_surplus_is_the_logged_non_torch_less_base_and_ring() -> None:
    # 0.25 GiB at TP 1 (v0.19) and 24 channels x 2 x 9,633,792 B of NCCL ring; logs 39, 40, 44, 45
    ring = 24 * 2 * 9_633_792 / GIB
    for record, value in CONSTANTS["nvls_extra_v018"].samples:
        logged = LOGS[int(record.split(":")[1])]["non_torch_memory_gib"]
        assert value / GIB == pytest.approx(logged - 0.25 - ring, abs=0.005), record


def test_cuda_graph_samples_are_the_logged_estimates_over_layers_and_graphs() -> None:
    # log 53: gemma-3-12b 48 layers, log 54: gemma-2-9b 42 layers; 102 graphs at 1024 sequences (51 + 51)
    samples = dict(CONSTANTS["graph_bytes_per_layer_graph_v021"].samples)
    assert samples["log:53"] == pytest.approx(LOGS[53]["cuda_graph_estimated_gib"] * GIB / (48 * 102))
    assert samples["log:54"] == pytest.approx(LOGS[54]["cuda_graph_estimated_gib"] * GIB / (42 * 102))


def test_leave_out_refits_without_the_record() -> None:
    # sampler_bytes_v1_triton: logs 38 (14.94), 43 (14.86), 51 (14.85), 52 (14.85), 54 (14.73)
    assert fitted("sampler_bytes_v1_triton") == pytest.approx((14.94 + 14.86 + 14.85 + 14.85 + 14.73) / 5)
    with leave_out("log:38"):
        assert fitted("sampler_bytes_v1_triton") == pytest.approx((14.86 + 14.85 + 14.85 + 14.73) / 4)
        assert fitted("sampler_bytes_v0") == pytest.approx(CONSTANTS["sampler_bytes_v0"].value)  # not one of its
    assert fitted("sampler_bytes_v1_triton") == pytest.approx(14.846)  # back after the block


def test_a_constant_of_one_record_keeps_its_value_when_that_record_is_left_out() -> None:
    # nothing to refit from: the bench then scores that record in sample, and says so by an equal cv error
    with leave_out("log:4"):
        assert fitted("nvlink_extra_v0") == CONSTANTS["nvlink_extra_v0"].value


def test_every_constant_names_its_records_and_rule() -> None:
    for constant in CONSTANTS.values():
        assert constant.samples and constant.rule
        assert all(r.startswith(("log:", "h200:")) for r in constant.records)
