"""The measured H200 runs under ``bench/data/h200_sweeps/`` as calibration runs, for the fit of the default
coefficients (``bench/default_coefficients.py``) and the accuracy report (``bench/prediction_accuracy.py``).

Every run is a ``vllm bench serve`` result file of a real vLLM 0.24.0 server on one H200 (how they were made:
``bench/data/h200_sweeps/README.md``); the deployment is the servers' flags (``SERVER``) planned for the model.

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

from planner.capacity.plan import plan  # noqa: E402
from planner.capacity.scenario import Scenario  # noqa: E402
from planner.loadtest.results import import_runs  # noqa: E402
from planner.predict.calibration import CalibrationRun, calibration_run  # noqa: E402
from planner.predict.shape import StepShape, step_shape  # noqa: E402

__all__ = ["DATA", "EXCLUDED_TTFT", "MODELS", "MOE", "SERVER", "H200Run", "load_runs", "shape_of"]

DATA = ROOT / "bench/data/h200_sweeps"
#: served model name (the campaign's folder) -> catalog id
MODELS = {
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
}
MOE = {"qwen3-30b-a3b"}
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


@dataclass(frozen=True)
class H200Run:
    """One measured run: its model (served name), the input length asked for, the route and the run itself.

    Attributes:
        model: the served model name (a key of ``MODELS``).
        point: the result file's stem (``in512_c16``, ``chat_in512_c1``).
        input_len: input tokens asked for (the prompt text's; the chat template adds its own).
        route: ``completions`` or ``chat``.
        run: the calibration run (TTFT figures removed where ``EXCLUDED_TTFT`` says).
    """

    model: str
    point: str
    input_len: int
    route: str
    run: CalibrationRun


def shape_of(model_id: str) -> StepShape:
    """The step shape of ``model_id`` deployed with the servers' flags."""
    return step_shape(plan(Scenario(model=model_id, **SERVER), advise=False))


def load_runs(data: Path = DATA, *, chat: bool = False) -> list[H200Run]:
    """Every result file of ``MODELS`` under ``data`` (``in<N>_c<C>.json.gz``; with ``chat`` the ``chat_in…`` ones
    too), sorted by model and point."""
    out = []
    for name, model_id in MODELS.items():
        folder = data / name
        if not folder.is_dir():
            continue
        shape = shape_of(model_id)
        paths = sorted(folder.glob("in*_c*.json.gz")) + (sorted(folder.glob("chat_in*_c*.json.gz")) if chat else [])
        for path in paths:
            (saved,) = import_runs(path.read_bytes(), name=path.name)
            run = calibration_run(saved, shape, label=f"{name} {path.stem}")
            if (name, path.stem) in EXCLUDED_TTFT:
                kept = {k: v for k, v in run.measured.items() if "ttft" not in k and k != "output_throughput"}
                run = replace(run, measured=kept)
            route = "chat" if path.stem.startswith("chat_") else "completions"
            asked = int(path.stem.removeprefix("chat_").split("_")[0][2:])
            out.append(H200Run(name, path.stem, asked, route, run))
    return out
