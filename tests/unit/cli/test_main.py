"""Tests of planner.cli.main: ``python -m planner plan ...``.

Golden values cite their source:

* vLLM v0.19.0 startup log of Llama-3.1-8B-Instruct on one H100 80GB at gpu_memory_utilization 0.95,
  max_model_len 8192 (``bench/data/vllm_capacity_logs.json`` id 38): "weights memory: 14.99GiB", "Available KV cache
  memory: 58.11 GiB", "GPU KV cache size: 476,000 tokens".
* The article's ``design_memory_budget`` scenarios 1 and 4 (tests/data/article.md, restated in
  ``planner/catalog/presets.py``): 131,072 B/token, 153,802 tokens, 18 requests; 163,840 B/token,
  300,834 tokens, 36 requests.
* KV bytes per token of Llama-3.1-8B, by hand from its config.json (32 layers, 8 KV heads, head_dim
  128, bf16): 2 (K and V) × 32 × 8 × 128 × 2 B = 131,072 B.
"""

from __future__ import annotations

import json
import re

import pytest

from planner.cli.main import main

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
BASE = ["plan", "--model", LLAMA_8B, "--gpu", "h100"]
PREDICT = ["predict", "--model", LLAMA_8B, "--gpu", "h100", "--max-concurrency", "1"]

#: Keys the brief requires in ``--json`` output.
REQUIRED_JSON_KEYS = (
    "weights_memory_gib",
    "kv_cache_memory_gib",
    "kv_cache_tokens",
    "num_gpu_blocks",
    "max_concurrency",
    "kv_bytes_per_token",
    "fits",
    "launch_command",
)

#: vllm_capacity_logs.json id 38 (vLLM v0.19.0, H100 80GB, Llama-3.1-8B-Instruct, util 0.95, 8192).
LOG38_ARGV = [
    "plan",
    "--model",
    LLAMA_8B,
    "--gpu",
    "H100 80GB",
    "--gpu-memory-utilization",
    "0.95",
    "--max-model-len",
    "8192",
    "--engine-version",
    "0.19.0",
]
LOG38_KV_CACHE_GIB = 58.11
LOG38_KV_CACHE_TOKENS = 476_000
LOG38_WEIGHTS_GIB = 14.99
LLAMA_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # = 131,072, by hand from config.json
REL_TOL = 0.01


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``main(argv)``; argparse errors exit via SystemExit, which counts as the return code."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    assert err == ""
    return json.loads(out)


# --- valid plans -------------------------------------------------------------------------------


def test_vllm_json_has_every_required_key(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(BASE, capsys)
    missing = [k for k in REQUIRED_JSON_KEYS if k not in payload]
    assert not missing
    assert payload["engine"] == "vllm"
    assert payload["fits"] is True
    assert str(payload["launch_command"]).startswith(f"vllm serve {LLAMA_8B} ")


def test_vllm_golden_against_v0_19_startup_log(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(LOG38_ARGV, capsys)
    assert payload["kv_cache_memory_gib"] == pytest.approx(LOG38_KV_CACHE_GIB, rel=REL_TOL)
    assert payload["kv_cache_tokens"] == pytest.approx(LOG38_KV_CACHE_TOKENS, rel=REL_TOL)
    assert payload["weights_memory_gib"] == pytest.approx(LOG38_WEIGHTS_GIB, rel=REL_TOL)
    assert payload["kv_bytes_per_token"] == LLAMA_8B_KV_BYTES_PER_TOKEN
    assert payload["max_model_len"] == 8192
    assert payload["fits"] is True
    # The log's own "Maximum concurrency for 8,192 tokens per request: 58.11x".
    assert payload["max_concurrency"] == pytest.approx(58.11, rel=REL_TOL)


def test_vllm_text_output_reports_the_log_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(LOG38_ARGV, capsys)
    assert code == 0
    assert err == ""
    tokens = re.search(r"GPU KV cache size\s+([\d,]+) tokens", out)
    assert tokens is not None, out
    assert int(tokens.group(1).replace(",", "")) == pytest.approx(LOG38_KV_CACHE_TOKENS, rel=REL_TOL)
    kv_gib = re.search(r"KV cache\s+([\d.,]+) GiB", out)
    assert kv_gib is not None, out
    assert float(kv_gib.group(1)) == pytest.approx(LOG38_KV_CACHE_GIB, rel=REL_TOL)
    assert "Maximum concurrency for 8,192 tokens per request" in out
    assert "fits: yes" in out
    assert f"launch: vllm serve {LLAMA_8B}" in out


ARTICLE_SCENARIOS = [
    pytest.param(
        [
            "--params-b",
            "8",
            "--num-layers",
            "32",
            "--num-kv-heads",
            "8",
            "--head-dim",
            "128",
            "--gpu-memory-gb",
            "24",
            "--weight-quant",
            "int4",
            "--kv-quant",
            "fp16",
            "--target-context",
            "8192",
        ],
        131_072,
        153_802,
        18,
        id="scenario1-rtx4090-llama8b-int4-fp16kv",
    ),
    pytest.param(
        [
            "--params-b",
            "70",
            "--num-layers",
            "80",
            "--num-kv-heads",
            "8",
            "--head-dim",
            "128",
            "--gpu-memory-gb",
            "80",
            "--weight-quant",
            "int4",
            "--kv-quant",
            "fp8",
        ],
        163_840,
        300_834,
        36,
        id="scenario4-h100-llama70b-int4-fp8kv",
    ),
]


@pytest.mark.parametrize(("flags", "kv_bytes_per_token", "kv_cache_tokens", "max_concurrency"), ARTICLE_SCENARIOS)
def test_article_engine_reproduces_the_article(
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    kv_bytes_per_token: int,
    kv_cache_tokens: int,
    max_concurrency: int,
) -> None:
    # Exact: the article engine reproduces the article's integer arithmetic (issue 2).
    payload = run_json(["plan", "--engine", "article", *flags], capsys)
    assert payload["engine"] == "article"
    assert payload["kv_bytes_per_token"] == kv_bytes_per_token
    assert payload["kv_cache_tokens"] == kv_cache_tokens
    assert payload["max_concurrency"] == max_concurrency
    assert payload["fits"] is True


def test_tgi_plan(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(["plan", "--engine", "tgi", "--model", LLAMA_8B, "--gpu", "h100"], capsys)
    assert payload["engine"] == "tgi"
    assert str(payload["engine_label"]).startswith("TGI")
    assert payload["kv_bytes_per_token"] == LLAMA_8B_KV_BYTES_PER_TOKEN
    assert payload["kv_cache_tokens"] > 0
    assert payload["fits"] is True
    command = str(payload["launch_command"])
    assert command.startswith("docker run ")
    assert "ghcr.io/huggingface/text-generation-inference:" in command
    assert f"--model-id {LLAMA_8B}" in command


def test_tgi_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["plan", "--engine", "tgi", "--model", LLAMA_8B, "--gpu", "h100"], capsys)
    assert code == 0
    assert err == ""
    assert out.startswith("TGI ")
    assert "launch: docker run " in out


def test_non_fitting_plan_exits_zero_with_reason(capsys: pytest.CaptureFixture[str]) -> None:
    # 70B in bf16 is ~131 GiB of weights; one RTX 4090 has 24 GB.
    payload = run_json(["plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "rtx-4090"], capsys)
    assert payload["fits"] is False
    assert isinstance(payload["reason"], str) and payload["reason"]
    assert isinstance(payload["advice"], list)
    for advice in payload["advice"]:
        assert {"change", "max_concurrency", "num_gpus"} <= set(advice)


def test_non_fitting_plan_offers_advice(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(["plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "rtx-4090"], capsys)
    assert payload["fits"] is False
    assert payload["advice"], "a plan that does not fit should say how to make it fit"


def test_non_fitting_plan_text_says_no(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "rtx-4090"], capsys)
    assert code == 0
    assert "fits: NO - " in out


def test_custom_gpu_with_memory_plans(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(
        ["plan", "--model", LLAMA_8B, "--gpu", "custom", "--custom-gpu-memory-gib", "80", "--max-model-len", "8192"],
        capsys,
    )
    assert payload["total_gpu_memory_gib"] == pytest.approx(80.0, rel=REL_TOL)
    assert payload["fits"] is True


# --- error paths: exit code 2, exactly one stderr line naming the flag or value ----------------


def _snake(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


ERRORS = [
    pytest.param([*BASE, "--bogus-flag"], ("--bogus-flag",), id="unknown-flag"),
    pytest.param(["plan", "--gpu", "h100"], ("--model",), id="missing-model"),
    pytest.param(["plan", "--model", LLAMA_8B], ("--gpu",), id="missing-gpu"),
    pytest.param(
        ["plan", "--model", "acme/no-such-model", "--gpu", "h100"], ("acme/no-such-model",), id="unknown-model"
    ),
    pytest.param(["plan", "--model", LLAMA_8B, "--gpu", "tpu-v9"], ("tpu-v9",), id="unknown-gpu"),
    pytest.param(
        [*BASE, "--gpu-memory-utilization", "abc"], ("--gpu-memory-utilization", "abc"), id="util-not-a-number"
    ),
    pytest.param([*BASE, "--gpu-memory-utilization", "0"], ("--gpu-memory-utilization", "0"), id="util-0"),
    pytest.param([*BASE, "--gpu-memory-utilization", "1.5"], ("--gpu-memory-utilization", "1.5"), id="util-1.5"),
    pytest.param([*BASE, "--gpu-memory-utilization", "nan"], ("--gpu-memory-utilization", "nan"), id="util-nan"),
    pytest.param([*BASE, "--gpu-memory-utilization", "inf"], ("--gpu-memory-utilization", "inf"), id="util-inf"),
    pytest.param([*BASE, "--gpu-memory-utilization", "-1"], ("--gpu-memory-utilization", "-1"), id="util-negative"),
    pytest.param([*BASE, "--tensor-parallel-size", "0"], ("--tensor-parallel-size", "0"), id="tp-0"),
    pytest.param([*BASE, "--tensor-parallel-size", "65"], ("--tensor-parallel-size", "65"), id="tp-65"),
    pytest.param([*BASE, "--tensor-parallel-size", "two"], ("--tensor-parallel-size", "two"), id="tp-two"),
    pytest.param([*BASE, "--max-model-len", "0"], ("--max-model-len", "0"), id="max-model-len-0"),
    pytest.param(
        [*BASE, "--max-model-len", "99999999999"], ("--max-model-len", "99999999999"), id="max-model-len-huge"
    ),
    pytest.param([*BASE, "--kv-cache-dtype", "int3"], ("--kv-cache-dtype", "int3"), id="bad-kv-cache-dtype"),
    pytest.param([*BASE, "--dtype", "half8"], ("--dtype", "half8"), id="bad-dtype"),
    pytest.param([*BASE, "--quantization", "int3"], ("--quantization", "int3"), id="bad-quantization"),
    pytest.param([*BASE, "--engine", "sglang"], ("--engine", "sglang"), id="bad-engine"),
    pytest.param([*BASE, "--engine-version", "banana"], ("--engine-version", "banana"), id="bad-engine-version"),
    pytest.param(
        ["plan", "--model", LLAMA_8B, "--gpu", "custom"], ("--custom-gpu-memory-gib",), id="custom-gpu-without-memory"
    ),
    pytest.param([*BASE, "--weight-quant", "int3"], ("--weight-quant", "int3"), id="bad-weight-quant"),
    pytest.param([*BASE, "--max-num-seqs", "-5"], ("--max-num-seqs", "-5"), id="negative-max-num-seqs"),
    pytest.param(
        [*BASE, "--engine", "tgi", "--engine-version", "banana"],
        ("--engine-version", "banana"),
        id="tgi-bad-engine-version",
    ),
    pytest.param(
        ["plan", "--model", "", "--gpu", "h100"],
        ("--model",),
        id="empty-model",
    ),
    # issue 24 (hostile-flags suite): a 400-digit integer raised OverflowError in the range check
    pytest.param([*BASE, "--max-num-seqs", "9" * 400], ("--max-num-seqs",), id="huge-max-num-seqs"),
    pytest.param([*BASE, "--target-context", "-" + "9" * 400], ("--target-context",), id="huge-negative-context"),
]


@pytest.mark.parametrize(("argv", "names"), ERRORS)
def test_error_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], names: tuple[str, ...]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert "error" in line
    for name in names:
        # A flag may be named as typed (--max-num-seqs) or as its field (max_num_seqs).
        if name.startswith("--"):
            assert name in line or _snake(name) in line, line
        else:
            assert name in line, line


def test_unknown_model_error_suggests_close_ids(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["plan", "--model", "meta-llama/Llama-3.1-8B-Instrct", "--gpu", "h100"], capsys)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "meta-llama/Llama-3.1-8B-Instrct" in err
    assert LLAMA_8B in err


@pytest.mark.parametrize(
    "argv",
    [
        [*BASE, "--num-kv-heads", '{"a":' * 300],
        [*BASE, "--kv-quant", "9" * 600],
        [*BASE, "--gpu-memory-utilization", "it's " + "x" * 600],
        ["size", "--model", LLAMA_8B, "--target-rate", "1", "--price", '{"a":' * 300],  # the CLI's own message
    ],
    ids=["int", "choice", "float-with-quote", "size-price"],
)
def test_a_long_value_argparse_refuses_is_quoted_short(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """argparse echoes the whole value it refuses; 1,800 characters of it made a one-line refusal a screenful
    (issue 24, found by tests/unit/cli/test_hostile_flags.py)."""
    code, _, err = run(argv, capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert len(line) < 300 and argv[-2] in line, line


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["calibrate", "a\x00b", "--out", "p.json", "--model", LLAMA_8B, "--gpu", "h100"], "RUN.json"),
        (["calibrate", "run.json", "--out", "p\x00.json", "--model", LLAMA_8B, "--gpu", "h100"], "--out"),
        (["compare", "--prompt", "hi", "--endpoints-file", "\x00"], "--endpoints-file"),
        (["bench", "--endpoint", "vllm:http://127.0.0.1:9", "--dataset-path", "d\x00.jsonl"], "--dataset-path"),
        (["bench", "--endpoint", "vllm:http://127.0.0.1:9", "--save-result", "\ud800.json"], "--save-result"),
        ([*PREDICT, "--calibration", "p\x00.json"], "--calibration"),
        ([*PREDICT, "--spec-acceptance-from", "r\x00.json"], "--spec-acceptance-from"),
        ([*PREDICT, "--save-result", "r\x00.json"], "--save-result"),
        (["size", "--model", LLAMA_8B, "--target-rate", "1", "--calibration", "\x00"], "--calibration"),
        (["demo-server", "--model", LLAMA_8B, "--gpu", "h100", "--calibration", "\x00"], "--calibration"),
    ],
    ids=lambda v: v if isinstance(v, str) else v[0],
)
def test_a_file_name_no_file_can_have_is_refused_at_parse(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    """NUL or a lone surrogate in a path made Python's file calls raise ValueError, a traceback past the commands'
    ``except OSError`` (issue 24, found by tests/unit/cli/test_hostile_flags.py); nothing is opened or sent."""
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert flag in line and "NUL" in line, line


@pytest.mark.parametrize("path", [" ", ".", "no/such.toml"])
def test_an_endpoints_file_that_cannot_be_read_names_the_flag(capsys: pytest.CaptureFixture[str], path: str) -> None:
    """The line was ``error:  : cannot read: ...`` for a path of one space (issue 24, hostile-flags suite)."""
    code, _, err = run(["compare", "--prompt", "hi", "--endpoints-file", path], capsys)
    assert code == 2
    (line,) = err.splitlines()
    assert "--endpoints-file" in line and "cannot read" in line, line


def test_missing_subcommand_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([], capsys)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "1.5", "nan", "inf", "-1"])
def test_utilization_error_says_what_is_accepted(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = run([*BASE, "--gpu-memory-utilization", value], capsys)
    assert code == 2
    # The accepted range, planner.capacity.scenario.LIMITS["gpu_memory_utilization"] = (0.01, 1.0).
    assert re.search(r"0\.01 to 1(\.0)?\b", err), err


# --- the module entry point ----------------------------------------------------------------------


# --- a reader that closes the pipe early (python -m planner ... | head -1) ----------------------------------------


# --- compare: an empty answer is a failure, and nothing succeeded exits 1 ---------------------------------------


def test_a_planner_error_no_subcommand_catches_is_one_line_and_exit_2(monkeypatch, capsys) -> None:
    from planner.cli import catalog as cli_catalog
    from planner.errors import PlannerError

    def escapes():
        raise PlannerError("what went wrong, in one line")

    # `gpus` catches nothing itself: a planner error from the catalog reaches the net in main
    monkeypatch.setattr(cli_catalog, "list_gpus", escapes)
    assert main(["gpus"]) == 2
    assert capsys.readouterr().err == "python -m planner gpus: error: what went wrong, in one line\n"


def _subcommands() -> list[str]:
    import argparse

    from planner.cli.main import build_parser

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


@pytest.mark.parametrize("command", _subcommands())
def test_every_subcommand_prints_its_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the new-user trial: "size --help" ended in "ValueError: unsupported format character 'p'" (a literal "%" in
    # one flag's help, which argparse formats)
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "Traceback" not in out
