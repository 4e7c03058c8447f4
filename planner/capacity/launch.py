"""Launch commands that realise a planned scenario: ``vllm serve`` and TGI's ``docker run``."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from planner.capacity.engines.tgi import TGI_KV_CACHE_DTYPE, TGI_QUANTIZE
from planner.capacity.engines.vllm import accepts_max_model_len_auto
from planner.capacity.plan import plan as replan
from planner.capacity.result import Plan
from planner.catalog.models import get_model
from planner.errors import PlannerError

__all__ = ["UPLOADED_PREFIX", "Launch", "launch", "launch_command", "tgi_command", "vllm_command"]

#: Model ids the pages give pasted or uploaded configs (``uploaded-config/<name>-<hash>``).
UPLOADED_PREFIX = "uploaded-config/"


#: Schemes vLLM applies to an unquantized checkpoint while loading (``--quantization fp8``,
#: ``--quantization bitsandbytes``); the others come with the checkpoint.
_RUNTIME_QUANTIZATION = ("fp8", "bitsandbytes")
_EXPORT_NAMES = {"awq": "an AWQ int4", "gptq": "a GPTQ int4", "int8": "a w8a8 int8", "mxfp4": "an MXFP4"}


def _checkpoint_method(model_id: str) -> str:
    try:
        return get_model(model_id).spec.quant.method
    except PlannerError:
        return "none"


def vllm_command(plan: Plan) -> str:
    """The ``vllm serve`` command for ``plan`` (flags as ``vllm serve --help`` spells them).

    Settings left at vLLM's defaults are omitted, except ``--gpu-memory-utilization`` and
    ``--max-model-len``, which the plan depends on most and which are worth pinning. A plan of ``--max-model-len
    auto`` keeps ``auto`` for vLLM v0.12+ (which resolves it to the longest that fits, as the plan does) and gets the
    resolved number for older versions, which take only numbers. ``--quantization``
    appears only for schemes vLLM applies at load time (fp8, bitsandbytes); AWQ, GPTQ, w8a8 and MXFP4
    come with the checkpoint, so when the planned checkpoint is not such an export the command starts
    with a comment line saying one is needed. A plan of the offline ``vllm.LLM`` class (``entry_point`` ``llm``)
    pins ``--max-num-seqs`` and ``--max-num-batched-tokens`` to that class's defaults, which ``vllm serve`` would not
    pick, so the server sizes its memory as planned. Speculative decoding is ``--speculative-config '<JSON>'`` (vLLM
    0.24.0's spelling; the older ``--speculative-model``/``--num-speculative-tokens`` are gone). A what-if KV
    compression is no flag: a comment line says the command leaves it out.
    """
    s = plan.scenario
    if s.engine == "article" and s.params_b is not None and s.model not in plan.model_id:
        return "# the article engine with hand-typed model inputs has no checkpoint to serve"
    args = ["vllm", "serve", plan.model_id]
    if plan.model_id.startswith(UPLOADED_PREFIX):
        # A pasted config.json has no repo behind it; the user serves their own checkpoint folder.
        args[2] = "/path/to/your/checkpoint"
    if s.tensor_parallel_size > 1:
        args += ["--tensor-parallel-size", str(s.tensor_parallel_size)]
    if s.pipeline_parallel_size > 1:
        args += ["--pipeline-parallel-size", str(s.pipeline_parallel_size)]
    if s.dtype != "auto":
        args += ["--dtype", s.dtype]
    prefix = ""
    if s.quantization in _RUNTIME_QUANTIZATION:
        args += ["--quantization", s.quantization]
    elif s.quantization and _checkpoint_method(plan.model_id) != s.quantization:
        # vLLM reads AWQ/GPTQ/int8/MXFP4 from the checkpoint's quantization_config; a flag cannot
        # quantize a bf16 checkpoint into them.
        prefix = f"# needs {_EXPORT_NAMES[s.quantization]} export of {plan.model_id} (vLLM detects its scheme)\n"
    if s.kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", s.kv_cache_dtype]
    # auto where this vLLM takes it (it fits the length to its own measured memory), else the resolved number
    auto = plan.max_model_len_auto and accepts_max_model_len_auto(s.engine_version)
    max_len = "auto" if auto else str(plan.max_model_len)
    args += ["--gpu-memory-utilization", f"{s.gpu_memory_utilization:g}", "--max-model-len", max_len]
    # a plan of the offline vllm.LLM class pins its scheduler defaults, which vllm serve would not pick
    offline = s.entry_point == "llm" and s.engine == "vllm"
    seqs = s.max_num_seqs if s.max_num_seqs is not None or not offline else plan.max_num_seqs
    batched = s.max_num_batched_tokens
    if batched is None and offline:
        batched = plan.max_num_batched_tokens
    if seqs is not None:
        args += ["--max-num-seqs", str(seqs)]
    if batched is not None:
        args += ["--max-num-batched-tokens", str(batched)]
    if s.block_size not in (None, 16):
        args += ["--block-size", str(s.block_size)]
    if s.enforce_eager:
        args.append("--enforce-eager")
    if s.speculative_config is not None:
        args += ["--speculative-config", s.speculative_config.to_text()]
    return prefix + _what_if(plan) + shlex.join(args)


def _what_if(plan: Plan) -> str:
    """A comment line for a what-if KV compression, which no engine flag sets (so the command leaves it out)."""
    ratio = plan.scenario.kv_compression_ratio
    if not ratio:
        return ""
    return f"# what-if KV compression ÷{ratio:g} is not an engine setting: this command does not include it\n"


def tgi_command(plan: Plan) -> str:
    """The ``docker run ... text-generation-inference`` command for ``plan`` (launcher flags)."""
    s = plan.scenario
    version = s.engine_version if s.engine == "tgi" and s.engine_version else "3.3.7"
    args = [
        "docker",
        "run",
        "--gpus",
        "all",
        "--shm-size",
        "1g",
        "-p",
        "8080:80",
        "-e",
        "HF_TOKEN",
        "-v",
        "$PWD/data:/data",
        f"ghcr.io/huggingface/text-generation-inference:{version}",
        "--model-id",
        "/data/your-checkpoint" if plan.model_id.startswith(UPLOADED_PREFIX) else plan.model_id,
    ]
    if s.tensor_parallel_size > 1:
        args += ["--num-shard", str(s.tensor_parallel_size)]
    if s.quantization in TGI_QUANTIZE:
        args += ["--quantize", TGI_QUANTIZE[s.quantization]]
    if s.kv_cache_dtype in TGI_KV_CACHE_DTYPE:
        args += ["--kv-cache-dtype", TGI_KV_CACHE_DTYPE[s.kv_cache_dtype]]
    if s.dtype in ("bfloat16", "float16"):
        args += ["--dtype", s.dtype]
    max_total = s.max_total_tokens or plan.max_model_len
    max_input = s.max_input_tokens or max_total - 1
    prefill = s.max_batch_prefill_tokens or max_input + 50
    args += [
        "--max-input-tokens",
        str(max_input),
        "--max-total-tokens",
        str(max_total),
        "--max-batch-prefill-tokens",
        str(prefill),
    ]
    if s.cuda_memory_fraction != 1.0:
        args += ["--cuda-memory-fraction", f"{s.cuda_memory_fraction:g}"]
    if s.speculative_config is not None:
        # TGI speculates by n-gram (or the checkpoint's Medusa heads): --speculate takes only the token count
        args += ["--speculate", str(s.speculative_config.num_speculative_tokens)]
    # $PWD must stay unquoted so the shell expands it.
    return _what_if(plan) + shlex.join(args).replace("'$PWD/data:/data'", "$PWD/data:/data")


def launch_command(plan: Plan) -> str:
    """The launch command of the plan's own engine (``vllm serve`` for the article engine too)."""
    return tgi_command(plan) if plan.scenario.engine == "tgi" else vllm_command(plan)


@dataclass(frozen=True)
class Launch:
    """The launch command of a plan, and whether it will start.

    Attributes:
        command: The plan's own launch command.
        warning: One line when the command will not start (the plan's reason); None when it fits.
        corrected: The launch command of the cheapest change that fits (the plan's first advice, re-planned);
            None when it fits or no change does.
        change: That change in words, e.g. ``"--kv-cache-dtype fp8"``; None with ``corrected``.
    """

    command: str
    warning: str | None = None
    corrected: str | None = None
    change: str | None = None


def launch(plan: Plan) -> Launch:
    """The plan's launch command, with a warning and the corrected command when the plan does not fit, or (vLLM with
    no version set) fits only in some of the versions in use.

    The corrected command is the first (cheapest) :attr:`~planner.capacity.result.Plan.advice` entry, planned again
    without advice so its command is built from a plan that fits.
    """
    command = launch_command(plan)
    vr = plan.version_range
    if plan.fits and (vr is None or not vr.refused_by):
        return Launch(command)
    if plan.fits and vr is not None:  # the command pins no version: it starts only where the installed one fits
        warning = (
            f"this command starts only in vLLM {', '.join(vr.starts_in)}: {', '.join(vr.refused_by)} would not start it"
        )
    else:
        what = "vLLM refuses this configuration" if plan.refused else "this command will not start"
        warning = f"{what}: {plan.reason}"
    if not plan.advice:
        return Launch(command, warning)
    advice = plan.advice[0]
    try:
        fixed = replan(advice.scenario, advise=False)
    except PlannerError:
        return Launch(command, warning)
    if not fixed.fits:
        return Launch(command, warning)
    corrected = launch_command(fixed)
    if fixed.gpu_name != plan.gpu_name:  # no flag picks the GPU: without this line the two commands read the same
        corrected = f"# on {fixed.num_gpus}× {fixed.gpu_name}: this command does not choose the GPU\n{corrected}"
    return Launch(command, warning, corrected, advice.change)
