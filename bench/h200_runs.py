"""The measured H200 runs as calibration runs, for the fit of the default coefficients
(``bench/default_coefficients.py``) and the accuracy report (``bench/prediction_accuracy.py``).

Every run is a ``vllm bench serve`` result file of a real vLLM 0.24.0 server on one H200, from two campaigns:

* ``bench/data/h200_sweeps/`` (2026-12-02, ``bench/h200/sweep_campaign.py``): Llama-3.1-8B, Qwen2.5-32B and
  Qwen3-30B-A3B, closed loop, 512 and 2,048 input / 128 output tokens, concurrency 1-256;
* ``bench/data/h200_mechanisms/`` (2026-12-03, ``bench/h200/mechanisms_campaign.py``, two runs of it): Llama-3.3-70B
  FP8, Mixtral-8x7B, DeepSeek-V2-Lite, Gemma-2-9B (sliding window), Qwen3-14B, Qwen3-Coder-30B-A3B (block FP8 MoE),
  Llama-3.2-3B and Qwen3-8B (block FP8), 1,024 / 256 and 3,072 / 128 tokens, closed loop at concurrency 1-256 and
  Poisson and gamma arrivals, each server with a fixed KV cache (``--kv-cache-memory-bytes``: its logged "GPU KV cache
  size" is the pool planned here). Five points of the second run are left out whole (``EXCLUDED_POINTS``): the other
  server's start-up was on the GPU meanwhile.

The deployment is the servers' flags (``SERVER``) planned for the model.

TTFTs the model is not meant to explain are left out of both the fit and the scores, with the output throughput
(the same wait lengthens the run), each for a reason read off the data (``EXCLUDED_TTFT``): the first point on every
server, whose first request carries the server's first-use work (442, 430 and 39 ms against 24, 58 and 19 ms for the
next three), and the two Qwen3-30B-A3B points where vLLM logged "Triton kernel JIT compilation during inference:
fused_moe_kernel" (every request of their first wave waited 1.7–1.8 s). Their TPOT and ITL are kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gzip  # noqa: E402
import re  # noqa: E402

from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.loadtest.results import import_runs  # noqa: E402
from planner.predict.band import architecture_class  # noqa: E402
from planner.predict.calibration import CalibrationRun, calibration_run  # noqa: E402
from planner.predict.shape import StepShape, step_shape  # noqa: E402

__all__ = [
    "CLASSES",
    "DATA",
    "EXCLUDED_POINTS",
    "EXCLUDED_TTFT",
    "MECHANISMS",
    "MODELS",
    "MOE",
    "SERVER",
    "H200Run",
    "load_runs",
    "shape_of",
]

DATA = ROOT / "bench/data/h200_sweeps"
MECHANISMS = ROOT / "bench/data/h200_mechanisms"
#: served model name (the campaign's folder) -> catalog id
MODELS = {
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
    "llama-3.3-70b-fp8": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "deepseek-v2-lite": "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "gemma-2-9b": "google/gemma-2-9b-it",
    "qwen3-14b": "Qwen/Qwen3-14B",
    "qwen3-coder-30b-a3b-fp8": "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
    "llama-3.2-3b": "meta-llama/Llama-3.2-3B-Instruct",
    "qwen3-8b-fp8": "Qwen/Qwen3-8B-FP8",
}
#: the servers' flags (bench/h200/sweep_campaign.py SERVER_ARGS)
SERVER = {"gpu": "h200-sxm-141gb", "max_model_len": 8192, "max_num_seqs": 256, "max_num_batched_tokens": 8192}
#: (served model, point) -> why its TTFT (and output throughput) is left out (module docstring)
EXCLUDED_TTFT = {
    ("llama-3.1-8b", "in512_c1"): "the server's first request",
    ("qwen3-30b-a3b", "in512_c1"): "the server's first request",
    ("qwen2.5-32b", "in512_c1"): "the server's first request",
    ("qwen3-30b-a3b", "in512_c4"): "fused-MoE kernel compiled during the run",
    ("qwen3-30b-a3b", "in512_c16"): "fused-MoE kernel compiled during the run",
}

#: (served model, point) -> why the whole point is left out: the campaign's other server was in a GPU phase of its
#: start-up (dummy weight initialisation, memory profiling, CUDA-graph capture) during the point, so the two servers'
#: kernels shared the GPU. Seconds read off both servers' logs ("Starting to load model" to "Model loading took", and
#: "torch.compile took" to the server being up) against the point's wall window in campaign_2026-12-03T1502.json.gz.
EXCLUDED_POINTS = {
    ("gemma-2-9b", "in3072_c16"): "the other server's start-up used the GPU for 7.3 of its 8.7 s",
    ("qwen3-14b", "rate_hi"): "the other server's start-up used the GPU for 4.0 of its 19.2 s",
    ("qwen3-coder-30b-a3b-fp8", "in3072_c1"): "the other server's start-up used the GPU for all of its 1.7 s",
    ("llama-3.2-3b", "in3072_c16"): "the other server's start-up used the GPU for 0.9 of its 3.0 s",
    ("qwen3-8b-fp8", "rate_hi"): "the other server's start-up used the GPU for 15.0 of its 20.5 s",
}


@dataclass(frozen=True)
class H200Run:
    """One measured run: its model (served name), the input length asked for, the route and the run itself.

    Attributes:
        model: the served model name (a key of ``MODELS``).
        point: the result file's stem (``in512_c16``, ``chat_in512_c1``).
        input_len: input tokens per request, as measured (the chat template's included).
        route: ``completions`` or ``chat``.
        run: the calibration run (TTFT figures removed where ``EXCLUDED_TTFT`` says).
    """

    model: str
    point: str
    input_len: int
    route: str
    run: CalibrationRun

    @property
    def klass(self) -> str:
        """The model's architecture class (``CLASSES``)."""
        return CLASSES[self.model]

    @property
    def open_loop(self) -> bool:
        """Requests arrived at a rate (Poisson or gamma), not as slots freed."""
        return self.run.settings.request_rate != float("inf")


def shape_of(model_id: str, kv_cache_tokens: int | None = None) -> StepShape:
    """The step shape of ``model_id`` deployed with the servers' flags; ``kv_cache_tokens`` (a logged "GPU KV cache
    size", tokens per KV-cache group) replaces the planned pool."""
    planned = plan(Scenario(model=model_id, **SERVER), advise=False)
    shape = step_shape(planned)
    if kv_cache_tokens is not None:
        # vLLM logs num_blocks // (KV-cache groups) · block_size tokens (planner/capacity/explain.py): a hybrid
        # model's pool (Gemma-2's sliding and full groups) has that many blocks per group.
        groups = round(planned.num_gpu_blocks * planned.block_size / planned.kv_cache_tokens)
        shape = replace(shape, num_gpu_blocks=kv_cache_tokens // shape.block_size * groups)
    return shape


#: served model name -> architecture class (the regimes the accuracy report and the error band are kept by), as the
#: product classifies the deployment (planner.predict.band.architecture_class)
CLASSES = {name: architecture_class(shape_of(model_id)) for name, model_id in MODELS.items()}
MOE = {name for name, kind in CLASSES.items() if "moe" in kind}


def _logged_kv_tokens(folder: Path) -> int | None:
    """ "GPU KV cache size: N tokens" from the folder's server log, if it has one."""
    log = folder / "server.log.gz"
    if not log.exists():
        return None
    m = re.search(rb"GPU KV cache size: ([\d,]+) tokens", gzip.decompress(log.read_bytes()))
    return int(m.group(1).replace(b",", b"")) if m else None


def load_runs(data: Path | None = None, *, chat: bool = False) -> list[H200Run]:
    """Every result file of ``MODELS`` in the two campaigns (or under ``data`` alone): ``in<N>_c<C>``, ``rate_*`` and
    ``gamma_*`` points (with ``chat`` the ``chat_in…`` ones too), sorted by model and point; not the warm-ups."""
    out = []
    for root in (DATA, MECHANISMS) if data is None else (data,):
        for name, model_id in MODELS.items():
            folder = root / name
            if not folder.is_dir():
                continue
            shape = shape_of(model_id, _logged_kv_tokens(folder) if root == MECHANISMS else None)
            paths = sorted(p for p in folder.glob("*.json.gz") if _POINT.fullmatch(p.name))
            for path in paths:
                point = path.name.removesuffix(".json.gz")
                if (point.startswith("chat_") and not chat) or (name, point) in EXCLUDED_POINTS:
                    continue
                (saved,) = import_runs(path.read_bytes(), name=path.name)
                run = calibration_run(saved, shape, label=f"{name} {point}")
                if (name, point) in EXCLUDED_TTFT:
                    kept = {k: v for k, v in run.measured.items() if "ttft" not in k and k != "output_throughput"}
                    run = replace(run, measured=kept)
                route = "chat" if point.startswith("chat_") else "completions"
                out.append(H200Run(name, point, run.settings.input_len, route, run))
    return out


#: Result files of measured points (the warm-ups are left out).
_POINT = re.compile(r"(chat_)?(in\d+_c\d+|rate_\w+|gamma_\w+)\.json\.gz")
