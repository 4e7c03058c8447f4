"""Where a deployment's GPUs sit: how many nodes its TP and PP groups need, and what the engine needs for that.

vLLM numbers its ranks pipeline stage by stage, each stage's ``tensor_parallel_size`` ranks consecutive
(``vllm/distributed/parallel_state.py::initialize_model_parallel``, v0.24.0), and fills a node's GPUs in order, so
rank ``r`` sits on node ``r // gpus_per_node``. A TP group whose ranks sit on two nodes all-reduces every layer over
the network: vLLM turns its custom all-reduce off there ("this process group spans across nodes",
``custom_all_reduce.py``) and NCCL goes through the NICs. A pipeline split across nodes only sends one stage's
activations over the network per step.

Starting more than one node needs either Ray (``--distributed-executor-backend ray`` on a Ray cluster spanning the
nodes) or vLLM's multiprocessing launcher on every node (``--nnodes N --node-rank R --master-addr HOST``; the world
size must divide by the node count, ``vllm/engine/arg_utils.py``, v0.24.0).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.gpus import GPU
from planner.units import ceil_div

__all__ = ["Topology", "place"]


@dataclass(frozen=True)
class Topology:
    """The placement of a TP × PP deployment on nodes.

    Attributes:
        num_gpus: TP · PP.
        gpus_per_node: GPUs of one node (``GPU.gpus_per_node``), ``None`` when unknown (custom GPU).
        nodes: nodes the deployment needs (1 when ``gpus_per_node`` is unknown).
        tp_spans_nodes: some TP group has ranks on two nodes.
        link: ``GPU.link`` within a node, ``None`` when unknown.
        all_reduce: how the TP group all-reduces, in words (``None`` at TP 1 or for engines that do not say).
        warning: what to know and do when the deployment does not fit one node; ``None`` when it does.
        needs: the ways vLLM launches it, each with its flags ("Ray: ...", "multiprocessing: ..."); empty on one
            node.
    """

    num_gpus: int
    gpus_per_node: int | None
    nodes: int
    tp_spans_nodes: bool
    link: str | None
    all_reduce: str | None = None
    warning: str | None = None
    needs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """JSON-ready form, keys as the attributes."""
        return {
            "num_gpus": self.num_gpus,
            "gpus_per_node": self.gpus_per_node,
            "nodes": self.nodes,
            "tp_spans_nodes": self.tp_spans_nodes,
            "link": self.link,
            "all_reduce": self.all_reduce,
            "warning": self.warning,
            "needs": list(self.needs),
        }


def place(tp: int, pp: int, gpu: GPU, *, engine: str = "vllm", all_reduce: str | None = None) -> Topology:
    """Place ``tp × pp`` GPUs of ``gpu`` on nodes of ``gpu.gpus_per_node``.

    Args:
        tp / pp: tensor and pipeline parallel sizes.
        gpu: the GPU; its ``gpus_per_node`` and ``link``.
        engine: ``vllm`` (multi-node with Ray or ``--nnodes``) or ``tgi`` (shards within one node only).
        all_reduce: the engine's all-reduce path, in words, kept as given.

    Returns:
        The placement; ``warning`` says what spans nodes and what the engine needs for it.
    """
    gpus = tp * pp
    per_node = gpu.gpus_per_node
    if not per_node or gpus <= per_node:
        return Topology(gpus, per_node, 1, False, gpu.link, all_reduce)
    nodes = ceil_div(gpus, per_node)
    tp_spans = any((stage * tp) // per_node != (stage * tp + tp - 1) // per_node for stage in range(pp))
    launch = (
        f"Ray: --distributed-executor-backend ray on a Ray cluster of the {nodes} nodes",
        f"multiprocessing: --nnodes {nodes} --node-rank <0..{nodes - 1}> --master-addr <node 0> on every node"
        + ("" if gpus % nodes == 0 else f" (needs TP × PP = {gpus} divisible by {nodes} nodes)"),
    )
    where = f"{gpus} GPUs ({tp} TP × {pp} PP) need {nodes} nodes of {per_node} {gpu.name}"
    if engine == "tgi":
        warning = f"{where}: TGI shards a model within one node only (--num-shard); it cannot serve this"
        return Topology(gpus, per_node, nodes, tp_spans, gpu.link, all_reduce, warning, ())
    if tp_spans:
        fix = (
            f"--tensor-parallel-size {per_node} --pipeline-parallel-size {ceil_div(gpus, per_node)}"
            if gpus % per_node == 0
            else "a TP size that divides the node's GPUs, with PP across nodes"
        )
        warning = (
            f"{where}, and a tensor-parallel group spans nodes: every layer's all-reduce crosses the network (vLLM "
            f"turns its custom all-reduce off for groups across nodes). Keep TP within a node and put the pipeline "
            f"across nodes instead ({fix})"
        )
    else:
        warning = (
            f"{where}: each pipeline stage's TP group stays in one node and only the stages' activations cross the "
            "network"
        )
    return Topology(gpus, per_node, nodes, tp_spans, gpu.link, all_reduce, warning, launch)
