"""Placement of TP × PP groups on nodes (planner/capacity/topology.py): vLLM numbers ranks stage by stage, each
stage's TP ranks consecutive (``vllm/distributed/parallel_state.py``, v0.24.0), so rank r sits on node
r // gpus_per_node; multi-node needs Ray or ``--nnodes/--node-rank/--master-addr`` (``vllm/engine/arg_utils.py``).
GPUs per node from the catalog (HGX boards: 8; GB200 NVL72 compute trays: 4)."""

from __future__ import annotations

import pytest

from planner.capacity.plan import plan
from planner.capacity.scenario import Scenario
from planner.capacity.topology import place
from planner.catalog.gpus import custom_gpu, get_gpu

H100 = get_gpu("h100-sxm-80gb")


def test_one_node_says_nothing() -> None:
    top = place(8, 1, H100)
    assert (top.nodes, top.tp_spans_nodes, top.warning, top.needs) == (1, False, None, ())


def test_tp16_spans_two_nodes_and_says_what_to_do() -> None:
    top = place(16, 1, H100)
    assert (top.num_gpus, top.nodes, top.tp_spans_nodes) == (16, 2, True)
    assert "a tensor-parallel group spans nodes" in top.warning
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in top.warning
    assert top.needs[0].startswith("Ray: --distributed-executor-backend ray")
    assert "--nnodes 2 --node-rank <0..1>" in top.needs[1]


def test_pipeline_across_nodes_keeps_tp_in_a_node() -> None:
    top = place(8, 2, H100)  # stage 0 on ranks 0-7 (node 0), stage 1 on 8-15 (node 1)
    assert (top.nodes, top.tp_spans_nodes) == (2, False)
    assert "only the stages' activations cross the network" in top.warning


def test_a_tp_that_does_not_divide_the_node_spans_it() -> None:
    top = place(3, 3, H100)  # ranks 6, 7 on node 0 and 8 on node 1 form stage 2's TP group
    assert (top.nodes, top.tp_spans_nodes) == (2, True)
    assert "(needs TP × PP = 9 divisible by 2 nodes)" in top.needs[1]


def test_gb200_trays_hold_four() -> None:
    assert place(8, 1, get_gpu("gb200")).nodes == 2


def test_custom_gpu_has_no_node_size() -> None:
    top = place(16, 1, custom_gpu(memory_gib=80))
    assert (top.gpus_per_node, top.nodes, top.warning) == (None, 1, None)


def test_tgi_cannot_shard_across_nodes() -> None:
    top = place(16, 1, H100, engine="tgi")
    assert "TGI shards a model within one node only" in top.warning and top.needs == ()


def test_the_vllm_plan_carries_and_flags_it() -> None:
    result = plan(
        Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100", tensor_parallel_size=16, max_model_len=8192),
        advise=False,
    )
    assert result.topology.nodes == 2 and result.topology.tp_spans_nodes
    assert any("need 2 nodes of 8" in note for note in result.notes)
    assert "custom all-reduce off (the TP group spans nodes" in result.topology.all_reduce
    assert result.to_json()["topology"]["nodes"] == 2


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_within_a_node_no_warning(tp: int) -> None:
    result = plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", tensor_parallel_size=tp), advise=False)
    assert result.topology.nodes == 1 and result.topology.warning is None
