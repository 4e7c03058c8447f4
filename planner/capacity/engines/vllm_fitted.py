"""The few constants of the vLLM model that are fitted to start-up logs, each with the records it was fitted on.

Everything else in :mod:`planner.capacity.engines.vllm_memory` is counted from vLLM's source. What remains here is
what the source cannot give: how many bytes per logit a sampler implementation peaks at where the code path of a
version is not certain (or allocates inside a library), the non-torch memory CUDA's lazy module loading and the
cuBLAS workspaces add at tensor parallelism 1, the extra non-torch memory NVLink SHARP systems show at TP > 1, and
the CUDA-graph pool per captured graph and layer.

Each :class:`FittedConstant` keeps the value every record implies (``samples``); its value is their mean. A record
is named ``log:<id>`` (``bench/data/vllm_capacity_logs.json``, also ``shared/reference/vllm_capacity_logs.json``) or
``h200:<case>`` (``bench/data/h200_startups/`` and ``bench/data/h200_sweeps/``). :func:`leave_out` re-fits every
constant without one record, so ``bench/capacity_accuracy.py`` can score each record with constants that never saw
it (leave-one-out cross-validation).
"""

from __future__ import annotations

import contextvars
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from planner.units import GIB

__all__ = [
    "CONSTANTS",
    "FittedConstant",
    "fitted",
    "leave_out",
]


@dataclass(frozen=True)
class FittedConstant:
    """A constant fitted to start-up logs: the mean of what each record implies.

    Attributes:
        name: key of :data:`CONSTANTS`.
        unit: ``bytes`` or ``bytes per logit`` (per element of the ``rows × vocab`` logits).
        samples: ``(record, implied value)`` pairs, in ``unit``.
        rule: how a record implies its value, with the numbers it takes from the log.
    """

    name: str
    unit: str
    samples: tuple[tuple[str, float], ...]
    rule: str

    @property
    def value(self) -> float:
        """The mean of the samples."""
        return statistics.fmean(v for _, v in self.samples)

    def value_without(self, record: str) -> float:
        """The mean without ``record``'s sample; the full mean when it has none or is the only one."""
        rest = [v for key, v in self.samples if key != record]
        return statistics.fmean(rest) if rest else self.value

    @property
    def records(self) -> tuple[str, ...]:
        """The records fitted on."""
        return tuple(key for key, _ in self.samples)


def _gib(pairs: dict[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple((key, value * GIB) for key, value in pairs.items())


#: NCCL's ring buffers on an NVSwitch node, GiB: 24 channels × 2 connectors × 9,633,792 B
#: (:func:`planner.capacity.engines.vllm_memory.nccl_buffer_bytes`).
_NVSWITCH_RING_GIB = 24 * 2 * 9_633_792 / GIB


_CONSTANT_LIST = (
    FittedConstant(
        "sampler_bytes_v0",
        "bytes per logit",
        (("log:3", 39.16), ("log:55", 38.47), ("log:56", 38.13)),
        "V0 profile run (vllm/worker/model_runner.py::profile_run, top_p 0.99, top_k vocab - 1): (logged activation "
        "- T·h·2 B of hidden states) / (rows × vocab); log 3: (1.26 GiB - 8192·4096·2) / (256 · 128,256); log 55: "
        "(0.94 GiB - 2048·5120·2) / (256 · 100,352); log 56: (1.16 GiB - 2048·5120·2) / (320 · 100,352). Counted "
        "from vllm/model_executor/layers/sampler.py (V0): model-dtype logits 2, fp32 logits 4, sorted values 4 and "
        "int64 indices 8, top-k and top-p masks 1 + 1, sorted probabilities 4 and their cumulative sum 4, re-sorted "
        "logits 4 = 32 B, 40 B in releases that gather through an inverse index",
    ),
    FittedConstant(
        "sampler_bytes_v1_sort",
        "bytes per logit",
        (
            ("log:28", 38.25),
            ("log:30", 38.55),
            ("log:32", 38.41),
            ("log:33", 38.26),
            ("log:35", 38.38),
            ("log:36", 38.38),
            ("log:50", 38.38),
        ),
        "V1 _dummy_sampler_run through the PyTorch sort path of vllm/v1/sample/ops/topk_topp_sampler.py (v0.11.0, "
        "v0.15.0 on H100, 1024 rows): (logged activation - 8192·h·2 B) / (1024 · vocab); e.g. log 32: (4.76 GiB - "
        "8192·4096·2) / (1024 · 128,256). The sort path holds the same tensors as V0's sampler",
    ),
    FittedConstant(
        "sampler_bytes_v1_triton",
        "bytes per logit",
        (("log:38", 14.94), ("log:43", 14.86), ("log:51", 14.85), ("log:52", 14.85), ("log:54", 14.73)),
        "V1 _dummy_sampler_run from v0.17 (Triton top-k/top-p in place; from about v0.20 FlashInfer first, then the "
        "native path again, vLLM PR #41375): (logged activation - 8192·h·2 B) / (1024 · vocab); e.g. log 38: "
        "(1.89 GiB - 8192·4096·2) / (1024 · 128,256). Counted from vllm/v1/sample/sampler.py and "
        "topk_topp_sampler.py (v0.24.0): model-dtype logits 2, fp32 logits 4, softmax probabilities 4, exponential "
        "noise 4 = 14 B",
    ),
    FittedConstant(
        "non_torch_tp1_v063",
        "bytes",
        _gib({"log:1": 0.35, "log:2": 0.35}),
        "V0 v0.6.3/0.6.4 'Memory profiling results: ... non_torch_memory=0.35GiB' (device used - torch allocated)",
    ),
    FittedConstant(
        "non_torch_tp1_v0",
        "bytes",
        _gib({"log:16": 0.16, "log:55": 0.26, "log:56": 0.09}),
        "V0 memory_profiling (PR #10511/#12126) 'non_torch_memory takes X GiB' at TP 1",
    ),
    FittedConstant(
        "non_torch_tp1_v1",
        "bytes",
        _gib(
            {
                "log:28": 0.13,
                "log:32": 0.13,
                "log:33": 0.13,
                "log:35": 0.14,
                "log:37": 0.14,
                "log:50": 0.13,
                "log:51": 0.13,
            }
        ),
        "V1 'non-torch forward increase memory' at TP 1, v0.11-v0.17 (H100): CUDA modules loaded lazily by the "
        "first forward, cuBLAS/cuBLASLt workspaces outside torch's allocator",
    ),
    FittedConstant(
        "non_torch_tp1_v018",
        "bytes",
        _gib({"log:38": 0.25, "log:43": 0.24, "log:52": 0.25, "log:53": 0.25, "log:54": 0.25}),
        "V1 'non-torch forward increase memory' at TP 1 from v0.18 (v0.18/v0.19 on H100)",
    ),
    FittedConstant(
        "non_torch_pp_v018",
        "bytes",
        _gib({"log:41": 0.07, "log:42": 0.07}),
        "V1 non-torch of a pipeline-parallel rank at TP 1 (v0.19, H100, PP 2 and 4): no TP all-reduce buffers",
    ),
    FittedConstant(
        "nvls_extra_v018",
        "bytes",
        _gib(
            {
                f"log:{i}": logged - 0.25 - _NVSWITCH_RING_GIB
                for i, logged in ((39, 2.07), (40, 2.13), (44, 2.06), (45, 2.13))
            }
        ),
        "non-torch at TP 2-4 on H100 SXM (NVSwitch, NVLink SHARP) from v0.18, less the TP-1 figure (0.25 GiB) and "
        "NCCL's ring buffers (24 channels × 2 connectors × 9.19 MiB = 0.43 GiB): log 39: 2.07 - 0.25 - 0.43; log 40: "
        "2.13 - 0.25 - 0.43. What holds it (NCCL's NVLS buffers, the symmetric-memory all-reduce workspaces vLLM "
        "sets up there) is not separable in the logs",
    ),
    FittedConstant(
        "nvlink_extra_v0",
        "bytes",
        _gib({"log:4": 3.58 - 1.79 - _NVSWITCH_RING_GIB}),
        "V0 (v0.6.5, H100 SXM) non-torch at TP 2 less TP 1 (3.58 - 1.79 GiB) less NCCL's ring buffers (0.43 GiB): "
        "V0 takes its baseline before NCCL and custom all-reduce are set up, so their init-time buffers count",
    ),
    FittedConstant(
        "graph_bytes_per_layer_graph_v021",
        "bytes",
        (("log:53", 1.02 * GIB / (48 * 102)), ("log:54", 0.84 * GIB / (42 * 102))),
        "'Estimated CUDA graph memory: X GiB total' (v0.19, logged, subtracted from v0.21) over layers × graphs: "
        "1024 max_num_seqs and 8192 batched tokens capture 51 PIECEWISE and 51 FULL sizes (1, 2, 4, 8-248 by 8, "
        "256-512 by 16); log 53: 1.02 GiB / (48 · 102); log 54: 0.84 GiB / (42 · 102)",
    ),
    FittedConstant(
        "graph_bytes_per_layer_graph_v024",
        "bytes",
        (("h200:qwen2.5-32b", 0.73 * GIB / (64 * 86)), ("h200:qwen3-30b-a3b", 0.49 * GIB / (48 * 86))),
        "'Estimated CUDA graph memory: X GiB total' of vLLM 0.24.0 on one H200 (bench/data/h200_sweeps server logs, "
        "256 max_num_seqs: 51 PIECEWISE + 35 FULL sizes) over layers × graphs: Qwen2.5-32B 0.73 GiB / (64 · 86), "
        "Qwen3-30B-A3B 0.49 GiB / (48 · 86)",
    ),
)
#: Every fitted constant by name.
CONSTANTS: dict[str, FittedConstant] = {c.name: c for c in _CONSTANT_LIST}

_LEFT_OUT: contextvars.ContextVar[str | None] = contextvars.ContextVar("vllm_fitted_left_out", default=None)


def fitted(name: str) -> float:
    """The value of constant ``name``: the mean of its samples, without the record :func:`leave_out` names.

    Raises:
        KeyError: no such constant.
    """
    constant = CONSTANTS[name]
    left_out = _LEFT_OUT.get()
    return constant.value if left_out is None else constant.value_without(left_out)


@contextmanager
def leave_out(record: str) -> Iterator[None]:
    """Within the block, every constant is fitted without ``record`` (``log:38``, ``h200:qwen2.5-32b``)."""
    token = _LEFT_OUT.set(record)
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)
