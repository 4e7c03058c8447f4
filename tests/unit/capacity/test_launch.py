"""Tests of planner.capacity.launch: ``vllm serve`` and TGI ``docker run`` commands for planned scenarios.

Flag spellings are checked against the engines' own CLIs:

* vLLM: ``vllm serve --help`` (``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``):
  ``--tensor-parallel-size``, ``--pipeline-parallel-size``, ``--kv-cache-dtype``,
  ``--gpu-memory-utilization``, ``--max-model-len``, ``--quantization``, ``--enforce-eager``; the
  ``--quantization`` choices are ``QuantizationMethods`` in
  ``vllm/model_executor/layers/quantization/__init__.py`` ("awq", "fp8", "gptq", "bitsandbytes",
  "mxfp4", ... and no plain "int8").
* TGI: ``text-generation-launcher --help`` (``launcher/src/main.rs``): ``--model-id``, ``--num-shard``,
  ``--quantize`` (awq, gptq, fp8, eetq, bitsandbytes-nf4, ...), ``--kv-cache-dtype``
  (fp8_e4m3fn, fp8_e5m2), ``--max-input-tokens``, ``--max-total-tokens``,
  ``--max-batch-prefill-tokens``; its default ``--max-batch-prefill-tokens`` is max_input + 50
  (the launcher's ``--help``: "Default to `max_input_tokens + 50` to give a bit of room", ``launcher/src/main.rs``).
"""

from __future__ import annotations

import shlex

import pytest

from planner.capacity.launch import launch_command, tgi_command, vllm_command
from planner.capacity.plan import plan
from planner.capacity.result import Plan
from planner.capacity.scenario import Scenario

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
SECRET = "hf_planted_secret"

#: vLLM ``--quantization`` choices of the methods the planner can emit (vLLM QuantizationMethods).
VLLM_QUANTIZATION_METHODS = frozenset(
    {"awq", "fp8", "gptq", "bitsandbytes", "mxfp4", "experts_int8", "compressed-tensors"}
)


def _flag_value(args: list[str], flag: str) -> str:
    """The value after ``flag``; the flag must appear exactly once."""
    assert args.count(flag) == 1, (flag, args)
    return args[args.index(flag) + 1]


def _plan(**changes: object) -> Plan:
    return plan(Scenario(**changes), advise=False)


# --- vLLM ---------------------------------------------------------------------------------------


VLLM_CASES = [
    pytest.param({"tensor_parallel_size": 2}, "--tensor-parallel-size", "2", id="tp2"),
    pytest.param({"pipeline_parallel_size": 2}, "--pipeline-parallel-size", "2", id="pp2"),
    pytest.param({"kv_cache_dtype": "fp8"}, "--kv-cache-dtype", "fp8", id="kv-fp8"),
    pytest.param({"gpu_memory_utilization": 0.95}, "--gpu-memory-utilization", "0.95", id="util-0.95"),
    pytest.param({"max_model_len": 16384}, "--max-model-len", "16384", id="max-model-len"),
    pytest.param({"quantization": "fp8"}, "--quantization", "fp8", id="quant-fp8"),
    pytest.param({"dtype": "float16"}, "--dtype", "float16", id="dtype"),
    pytest.param({"max_num_seqs": 64}, "--max-num-seqs", "64", id="max-num-seqs"),
    pytest.param({"max_num_batched_tokens": 4096}, "--max-num-batched-tokens", "4096", id="batched-tokens"),
    pytest.param({"block_size": 32}, "--block-size", "32", id="block-size"),
]


@pytest.mark.parametrize(("changes", "flag", "value"), VLLM_CASES)
def test_vllm_flag_spelling(changes: dict[str, object], flag: str, value: str) -> None:
    args = shlex.split(vllm_command(_plan(model=LLAMA_8B, gpu="h100", **changes)))
    assert args[:3] == ["vllm", "serve", LLAMA_8B]
    assert _flag_value(args, flag) == value


def test_vllm_full_command() -> None:
    p = _plan(
        model=LLAMA_70B,
        gpu="h100",
        tensor_parallel_size=2,
        kv_cache_dtype="fp8",
        gpu_memory_utilization=0.95,
        max_model_len=16384,
        quantization="fp8",
        enforce_eager=True,
    )
    args = shlex.split(vllm_command(p))
    assert args[:3] == ["vllm", "serve", LLAMA_70B]
    assert _flag_value(args, "--tensor-parallel-size") == "2"
    assert _flag_value(args, "--kv-cache-dtype") == "fp8"
    assert _flag_value(args, "--gpu-memory-utilization") == "0.95"
    assert _flag_value(args, "--max-model-len") == "16384"
    assert _flag_value(args, "--quantization") == "fp8"
    assert args.count("--enforce-eager") == 1
    # Every token after the model id is a flag or a flag's value: no stray positional arguments.
    rest = args[3:]
    flags = [a for a in rest if a.startswith("--")]
    assert len(flags) == 6
    assert launch_command(p) == vllm_command(p)


def test_vllm_defaults_are_omitted_but_utilization_and_length_pinned() -> None:
    # Llama-3.1-8B-Instruct config.json: max_position_embeddings 131072 (vLLM's default max_model_len).
    args = shlex.split(vllm_command(_plan(model=LLAMA_8B, gpu="h100")))
    assert args == ["vllm", "serve", LLAMA_8B, "--gpu-memory-utilization", "0.9", "--max-model-len", "131072"]


@pytest.mark.parametrize("quantization", ["fp8", "bitsandbytes"])
def test_runtime_quantization_is_a_vllm_flag(quantization: str) -> None:
    # vLLM quantizes a bf16 checkpoint while loading only for these (--quantization fp8 / bitsandbytes).
    args = shlex.split(vllm_command(_plan(model=LLAMA_8B, gpu="h100", quantization=quantization)))
    assert _flag_value(args, "--quantization") in VLLM_QUANTIZATION_METHODS


@pytest.mark.parametrize("quantization", ["awq", "gptq", "int8"])
def test_checkpoint_quantization_asks_for_an_export(quantization: str) -> None:
    # AWQ/GPTQ/w8a8 come with the checkpoint's quantization_config; a flag cannot make them from bf16.
    command = vllm_command(_plan(model=LLAMA_8B, gpu="h100", quantization=quantization))
    comment, serve = command.split("\n")
    assert comment.startswith("# needs a") and "export of" in comment and LLAMA_8B in comment
    assert "--quantization" not in shlex.split(serve)


def test_quantized_checkpoint_needs_no_flag() -> None:
    awq = "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"
    args = shlex.split(vllm_command(_plan(model=awq, gpu="h100")))
    assert args[:3] == ["vllm", "serve", awq] and "--quantization" not in args


def test_vllm_command_for_article_engine() -> None:
    p = _plan(engine="article", model=LLAMA_8B, gpu="rtx-4090", weight_quant="int4", target_context=8192)
    args = shlex.split(launch_command(p))
    assert args[:3] == ["vllm", "serve", LLAMA_8B]
    assert _flag_value(args, "--max-model-len") == "8192"


# --- TGI ------------------------------------------------------------------------------------------


def _tgi_args(**changes: object) -> list[str]:
    command = tgi_command(_plan(engine="tgi", **changes))
    assert "$PWD/data:/data" in command  # unquoted, so the shell expands it
    return shlex.split(command)


TGI_CASES = [
    pytest.param({"tensor_parallel_size": 2}, "--num-shard", "2", id="num-shard"),
    pytest.param({"kv_cache_dtype": "fp8"}, "--kv-cache-dtype", "fp8_e4m3fn", id="kv-fp8"),
    pytest.param({"kv_cache_dtype": "fp8_e5m2"}, "--kv-cache-dtype", "fp8_e5m2", id="kv-fp8-e5m2"),
    pytest.param({"quantization": "awq"}, "--quantize", "awq", id="quantize-awq"),
    pytest.param({"quantization": "gptq"}, "--quantize", "gptq", id="quantize-gptq"),
    pytest.param({"quantization": "fp8"}, "--quantize", "fp8", id="quantize-fp8"),
    pytest.param({"quantization": "int8"}, "--quantize", "eetq", id="quantize-eetq"),
    pytest.param({"quantization": "bitsandbytes"}, "--quantize", "bitsandbytes-nf4", id="quantize-bnb"),
    pytest.param({"max_input_tokens": 4000}, "--max-input-tokens", "4000", id="max-input"),
    pytest.param({"max_total_tokens": 8192}, "--max-total-tokens", "8192", id="max-total"),
    pytest.param({"max_batch_prefill_tokens": 4096}, "--max-batch-prefill-tokens", "4096", id="prefill"),
    pytest.param({"cuda_memory_fraction": 0.8}, "--cuda-memory-fraction", "0.8", id="cuda-fraction"),
    pytest.param({"dtype": "bfloat16"}, "--dtype", "bfloat16", id="dtype"),
]


@pytest.mark.parametrize(("changes", "flag", "value"), TGI_CASES)
def test_tgi_flag_spelling(changes: dict[str, object], flag: str, value: str) -> None:
    args = _tgi_args(model=LLAMA_8B, gpu="h100", **changes)
    assert _flag_value(args, "--model-id") == LLAMA_8B
    assert _flag_value(args, flag) == value


def test_tgi_full_command() -> None:
    args = _tgi_args(
        model="Qwen/Qwen2.5-7B-Instruct-AWQ",
        gpu="l40s",
        tensor_parallel_size=2,
        quantization="awq",
        kv_cache_dtype="fp8",
        max_input_tokens=4096,
        max_total_tokens=8192,
        max_batch_prefill_tokens=8192,
    )
    assert args[:2] == ["docker", "run"]
    assert "ghcr.io/huggingface/text-generation-inference:3.3.7" in args
    assert _flag_value(args, "--model-id") == "Qwen/Qwen2.5-7B-Instruct-AWQ"
    assert _flag_value(args, "--num-shard") == "2"
    assert _flag_value(args, "--quantize") == "awq"
    assert _flag_value(args, "--kv-cache-dtype") == "fp8_e4m3fn"
    assert _flag_value(args, "--max-input-tokens") == "4096"
    assert _flag_value(args, "--max-total-tokens") == "8192"
    assert _flag_value(args, "--max-batch-prefill-tokens") == "8192"
    assert "--tensor-parallel-size" not in args


def test_tgi_default_token_limits() -> None:
    # TGI 3.x caps the default --max-total-tokens at 16k (launcher PR #1727); max_input = total - 1;
    # prefill = max_input + 50 (capacity_accounting.md section 2).
    args = _tgi_args(model=LLAMA_8B, gpu="h100")
    assert _flag_value(args, "--max-total-tokens") == "16384"
    assert _flag_value(args, "--max-input-tokens") == "16383"
    assert _flag_value(args, "--max-batch-prefill-tokens") == "16433"
    assert "--num-shard" not in args
    assert "--quantize" not in args
    assert "--kv-cache-dtype" not in args


def test_tgi_explicit_version_is_the_image_tag() -> None:
    args = _tgi_args(model=LLAMA_8B, gpu="h100", engine_version="2.2.0")
    assert "ghcr.io/huggingface/text-generation-inference:2.2.0" in args


def test_launch_command_dispatches_on_engine() -> None:
    p = _plan(engine="tgi", model=LLAMA_8B, gpu="h100")
    assert launch_command(p) == tgi_command(p)


# --- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "tgi", "article"])
def test_no_secret_in_command(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", SECRET)
    p = _plan(engine=engine, model=LLAMA_8B, gpu="h100", tensor_parallel_size=2)
    for command in (launch_command(p), vllm_command(p), tgi_command(p)):
        assert SECRET not in command


def test_tgi_passes_hf_token_by_name_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", SECRET)
    args = _tgi_args(model=LLAMA_8B, gpu="h100")
    assert _flag_value(args, "-e") == "HF_TOKEN"
    assert not any("=" in a and a.startswith("HF_TOKEN") for a in args)


def test_uploaded_config_gets_a_placeholder_path() -> None:
    # A pasted config.json has no repo behind it: the commands point at the user's own checkpoint.
    from planner.capacity.plan import plan
    from planner.capacity.scenario import Scenario
    from planner.catalog.hub import model_from_config

    label = "uploaded-config/my-finetune-1234abcd"
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "intermediate_size": 14336,
        "max_position_embeddings": 8192,
    }
    spec = model_from_config(config, label=label).spec
    vllm = vllm_command(plan(Scenario(model=label, gpu="h100"), spec=spec))
    tgi = tgi_command(plan(Scenario(engine="tgi", model=label, gpu="h100"), spec=spec))
    assert label not in vllm and "/path/to/your/checkpoint" in vllm
    assert label not in tgi and "/data/your-checkpoint" in tgi


def test_a_command_that_will_not_start_says_so_and_comes_with_one_that_fits():
    from planner.capacity.launch import launch
    from planner.capacity.plan import plan

    # Llama-3.1-70B in bf16 on one H100: ~131 GiB of weights against a 71.27 GiB budget (0.9 x 79.19 GiB)
    result = plan(Scenario(model="meta-llama/Llama-3.1-70B-Instruct", gpu="h100"))
    command = launch(result)
    assert command.command.startswith("vllm serve meta-llama/Llama-3.1-70B-Instruct")
    assert command.warning.startswith("this command will not start: the weights alone (131.42 GiB per GPU) exceed")
    assert command.change == result.advice[0].change and command.corrected is not None
    assert plan(result.advice[0].scenario, advise=False).fits  # the corrected command is from a plan that fits
    assert launch(plan(Scenario(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100"))).warning is None


def test_vllm_command_keeps_auto_where_vllm_takes_it() -> None:
    # --max-model-len auto/-1: vLLM v0.12+ (PR #29431) resolves it itself; v0.11 takes numbers only
    from planner.capacity.launch import vllm_command
    from planner.capacity.plan import plan
    from planner.capacity.scenario import MAX_MODEL_LEN_AUTO, Scenario

    new = plan(Scenario(gpu="rtx-4090", max_model_len=MAX_MODEL_LEN_AUTO, engine_version="0.12.0"))
    old = plan(Scenario(gpu="rtx-4090", max_model_len=MAX_MODEL_LEN_AUTO, engine_version="0.11.2"))
    assert vllm_command(new).endswith("--max-model-len auto")
    assert vllm_command(old).endswith(f"--max-model-len {old.max_model_len}")
