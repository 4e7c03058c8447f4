"""``python -m planner demo-server``: a local streaming server to try Live Compare, Load Test and the CLI on, no GPU."""

from __future__ import annotations

import argparse

from planner.cli.command import Command
from planner.cli.messages import error, file_path
from planner.cli.plan import usage_error
from planner.demo.server import DEMO_DEFAULTS, serve
from planner.demo.server import add_arguments as add_server_arguments
from planner.demo.state import MODEL_ID
from planner.errors import PlannerError

#: Requests generating at once in the fixed-timing mode when --max-num-seqs is not given.
FIXED_MAX_NUM_SEQS = 64

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``demo-server`` subcommand's flags, added to ``p``."""
    add_server_arguments(p, DEMO_DEFAULTS)
    plan = p.add_argument_group(
        "play a planned deployment (chat and completions timed by the predicted vLLM engine instead of the fixed "
        "delays)"
    )
    plan.add_argument("--model", help="catalog model id to play, e.g. meta-llama/Llama-3.1-8B-Instruct")
    plan.add_argument("--gpu", help="catalog GPU id or name, e.g. h100, h200 (python -m planner gpus)")
    plan.add_argument("--tensor-parallel-size", "-tp", type=int, default=1, help="GPUs (default: 1)")
    plan.add_argument("--max-model-len", help="context length, or auto: the longest that fits (default: the model's)")
    plan.add_argument("--max-num-batched-tokens", type=int, help="tokens per step (default: the engine's)")
    plan.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="share of GPU memory (default: 0.9)")
    plan.add_argument("--kv-cache-dtype", default="auto", help="KV-cache dtype, e.g. fp8 (default: auto)")
    plan.add_argument("--quantization", "-q", help="weight quantization (default: the checkpoint's)")
    plan.add_argument(
        "--calibration", type=file_path, metavar="PROFILE.json", help="coefficients from python -m planner calibrate"
    )


def _planned(args: argparse.Namespace) -> tuple[object, str, int, dict[str, str]]:
    """The engine that plays ``--model`` on ``--gpu``, its model id, max_model_len and KV-cache labels.

    Raises:
        PlannerError: the deployment cannot be planned or does not fit.
    """
    from planner.capacity.plan import plan
    from planner.capacity.scenario import Scenario, parse_max_model_len
    from planner.cli.predict import read_profile
    from planner.predict.shape import step_shape
    from planner.predict.simulator import OnlineScheduler
    from planner.predict.step_time import DEFAULT_COEFFICIENTS

    if not args.model or not args.gpu:
        raise PlannerError(
            "--model and --gpu go together: the deployment to play, e.g. --model "
            "meta-llama/Llama-3.1-8B-Instruct --gpu h100"
        )
    scenario = Scenario(
        model=args.model,
        gpu=args.gpu,
        tensor_parallel_size=args.tensor_parallel_size,
        max_model_len=None if args.max_model_len is None else parse_max_model_len(args.max_model_len),
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_dtype=args.kv_cache_dtype,
        quantization=args.quantization,
    )
    result = plan(scenario, advise=False)
    if not result.fits:
        raise PlannerError(f"{result.model_id} on {result.gpu_name} does not fit ({result.reason}): nothing to play")
    profile = read_profile(args.calibration)
    engine = OnlineScheduler(step_shape(result), profile.coefficients if profile else DEFAULT_COEFFICIENTS)
    labels = {
        "block_size": str(result.block_size),
        "num_gpu_blocks": str(result.num_gpu_blocks),
        "kv_cache_size_tokens": str(result.kv_cache_tokens),
        "kv_cache_max_concurrency": str(result.max_concurrency),
        "gpu_memory_utilization": str(result.scenario.gpu_memory_utilization),
        "cache_dtype": result.scenario.kv_cache_dtype,
    }
    return engine, result.model_id, result.max_model_len, labels


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C; exit code 0 (2 for a deployment that cannot be played)."""
    engine = None
    model_id = max_model_len = None
    labels: dict[str, str] = {}
    prog = f"python -m planner {args.command}"
    if not 0 <= args.port <= 65535:
        return error(prog, f"--port {args.port} is not valid: expected 0 to 65535 (0: any free port)")
    if args.model or args.gpu:
        try:
            engine, model_id, max_model_len, labels = _planned(args)
        except PlannerError as exc:
            return usage_error(args.command, exc, flags=args)
    else:
        if args.calibration:
            return error(prog, "--calibration goes with --model and --gpu (the deployment it times)")
        if args.max_num_seqs is None:
            args.max_num_seqs = FIXED_MAX_NUM_SEQS

    def announce(port: int) -> str:
        url = f"http://{args.host}:{port}"
        timing = (
            f"playing {model_id} on {args.gpu}, timed by the predicted vLLM engine"
            if engine
            else f"model {MODEL_ID}; first token after {args.ttft_ms:g} ms, then {args.itl_ms:g} ms a token"
        )
        return (
            f"demo server on {url} ({timing}); Ctrl-C stops it\n"
            f'  endpoints.toml: [[endpoint]] name = "demo", kind = "vllm", base_url = "{url}"\n'
            f"  or: python -m planner bench --endpoint vllm:{url} --max-concurrency 8 --num-prompts 64"
        )

    try:
        serve(args, announce, engine=engine, model_id=model_id, max_model_len=max_model_len, cache_labels=labels)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        return error(prog, f"--host {args.host} --port {args.port}: {exc.strerror or exc}; pick another with --port")
    return 0


COMMAND = Command(
    "demo-server",
    help="start a local OpenAI/vLLM-compatible streaming server with known latency, to try the endpoint pages",
    description="A streaming server on this machine that answers as vLLM does (chat and completions, /v1/models, "
    "/tokenize, /metrics in vLLM's names; TGI's /info and /generate_stream too) with a known first-token delay "
    "and gap between tokens that grows with the requests running at once. Its answers are placeholder text.",
    add_arguments=add_arguments,
    run=run,
)
