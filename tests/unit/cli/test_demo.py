"""``python -m planner demo-server``: its flags, the announcement, the planned mode's engine and pool, and one-line
errors (the server's loop is replaced: no socket). Started for real and driven by ``bench``:
tests/integration/cli/test_demo.py."""

from __future__ import annotations

import pytest

from planner.cli import demo
from planner.cli.main import main
from planner.predict.simulator import OnlineScheduler

PROG = "python -m planner demo-server"


@pytest.fixture
def served(monkeypatch):
    seen: dict[str, object] = {}

    def serve(args, announce, *, engine=None, model_id=None, max_model_len=None, cache_labels=None):
        seen.update(args=args, line=announce(args.port), engine=engine, model_id=model_id,
                    max_model_len=max_model_len, labels=cache_labels)  # fmt: skip

    monkeypatch.setattr(demo, "serve", serve)
    return seen


def test_fixed_timing_with_the_demo_defaults(served) -> None:
    assert main(["demo-server"]) == 0
    args = served["args"]
    assert (args.port, args.tokenizer, args.enable_prefix_caching) == (8000, "bytes", True)
    assert args.max_num_seqs == demo.FIXED_MAX_NUM_SEQS == 64  # capped unless --max-num-seqs says otherwise
    assert served["line"].splitlines() == [
        "demo server on http://127.0.0.1:8000 (model timed-model; first token after 150 ms, then 20 ms a token); "
        "Ctrl-C stops it",
        '  endpoints.toml: [[endpoint]] name = "demo", kind = "vllm", base_url = "http://127.0.0.1:8000"',
        "  or: python -m planner bench --endpoint vllm:http://127.0.0.1:8000 --max-concurrency 8 --num-prompts 64",
    ]
    assert served["engine"] is None and served["labels"] == {}


def test_planned_mode_plays_the_plan(served) -> None:
    argv = ["demo-server", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--max-model-len", "8192"]
    assert main([*argv, "--port", "0", "--ttft-ms", "5"]) == 0
    assert isinstance(served["engine"], OnlineScheduler)
    assert (served["model_id"], served["max_model_len"]) == ("meta-llama/Llama-3.1-8B-Instruct", 8192)
    labels = served["labels"]
    assert set(labels) == {"block_size", "num_gpu_blocks", "kv_cache_size_tokens", "kv_cache_max_concurrency",
                           "gpu_memory_utilization", "cache_dtype"}  # fmt: skip
    assert (labels["block_size"], labels["gpu_memory_utilization"], labels["cache_dtype"]) == ("16", "0.9", "auto")
    # the pool's tokens are its blocks × 16, and its concurrency those tokens over 8,192 (one group of full attention)
    assert int(labels["kv_cache_size_tokens"]) == int(labels["num_gpu_blocks"]) * 16
    assert float(labels["kv_cache_max_concurrency"]) == pytest.approx(int(labels["kv_cache_size_tokens"]) / 8192)
    assert served["line"].startswith(
        "demo server on http://127.0.0.1:0 (playing meta-llama/Llama-3.1-8B-Instruct on h100"
    )
    assert served["args"].max_num_seqs is None  # the engine's own default


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--port", "70000"], "--port 70000 is not valid: expected 0 to 65535 (0: any free port)"),
        (["--model", "meta-llama/Llama-3.1-8B-Instruct"], "--model and --gpu go together"),
        (["--calibration", "p.json"], "--calibration goes with --model and --gpu (the deployment it times)"),
        (["--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "rtx-4090"], "meta-llama/Llama-3.1-70B-Instruct on"),
    ],
)
def test_bad_input_is_one_line_exit_2(served, capsys, argv, line) -> None:
    assert main(["demo-server", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{PROG}: error: {line}") and err.count("\n") == 1
    assert "args" not in served  # nothing was served


def test_a_port_that_is_taken_is_one_line(monkeypatch, capsys) -> None:
    def taken(*_, **__):
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(demo, "serve", taken)
    assert main(["demo-server", "--port", "8000"]) == 2
    assert capsys.readouterr().err == (
        f"{PROG}: error: --host 127.0.0.1 --port 8000: Address already in use; pick another with --port\n"
    )
