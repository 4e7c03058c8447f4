"""``python -m planner plan``: the explanation in text and ``--json``, and ``--compare-engine-version``.

Golden figures by hand from config.json (worked out in ``tests/unit/capacity/test_kv_layout.py``, vLLM
``vllm/v1/core/kv_cache_utils.py`` v0.10–v0.24 and #51041): gemma-2-9b on one H100 at 8,192 tokens has 2 KV-cache
groups of 21 layers, 513 + 512 = 1,025 blocks per request, 19,345 blocks (the planner's figure; 19,187 in issue 11
before issue 16's mechanisms), 19,345 / 1,025 = 18.87x and int(19,345 × 8,192 / 1,025) = 154,609 tokens;
gemma-3-12b-it at 131,072 tokens goes from 1 group of 48 layers (v0.9: 6,626 / 8,192 = 0.81x) to 6 groups of 8
(v0.11: 39,714 / 11,077 = 3.59x), 106,016 and 105,904 tokens; Llama-3.1-70B at TP 16 keeps 1 of its 8 KV heads
per GPU: 80 × 256 × 2 = 40,960 B per token per GPU, 80 × 8 × 256 × 2 = 327,680 B for the model.
"""

from __future__ import annotations

import json

import pytest

from tests.unit.cli.test_main import run

GEMMA_2 = ["plan", "--model", "google/gemma-2-9b", "--gpu", "h100", "--max-model-len", "8192"]
LLAMA_8B = ["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct"]
GEMMA_3 = ["plan", "--model", "google/gemma-3-12b-it", "--gpu", "h100", "--engine-version", "0.11.0"]


def test_text_explains_the_kv_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*GEMMA_2, "--engine-version", "0.28.0"], capsys)
    assert code == 0 and err == ""
    assert "KV bytes per token        344,064 per GPU" in out
    assert "KV layout (vLLM 0.28.0; per GPU unless it says model):" in out
    layout = out.split("KV layout", 1)[1]
    assert "sliding window  4,096" in layout and "full attention  n/a" in layout
    flat = " ".join(out.split())  # the sentences wrap
    assert "2 KV-cache groups of 21 layers" in flat
    assert "19,345 blocks / 1,025 blocks per request = 18.87x" in flat
    assert "int(18.8732 × 8,192) = 154,609 tokens" in flat
    assert "longest that fits:" in out


def test_json_carries_the_layout_and_the_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*GEMMA_2, "--engine-version", "0.28.0", "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    layout = payload["kv_layout"]
    assert (layout["num_kv_cache_groups"], layout["group_size_layers"], layout["blocks_per_request"]) == (2, 21, 1025)
    assert layout["kv_bytes_per_token_per_gpu"] == 344_064
    assert {g["attention"]: g["blocks_per_request"] for g in layout["group_types"]} == {"sliding": 513, "full": 512}
    explanation = payload["explanation"]
    assert any("154,609" in line for line in explanation["lines"])
    assert explanation["longest_fit"]["longest_by_memory_tokens"] == 297_216  # (19,345 - 769) x 16
    assert explanation["longest_fit"]["limited_by"] == "max_position_embeddings"
    assert payload["version_change"] is None


def test_tp16_labels_whole_model_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--model", "meta-llama/Llama-3.1-70B", "--gpu", "h100", "-tp", "16", "--max-model-len", "8192"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    assert "KV bytes per token        40,960 per GPU" in out
    assert "KV bytes per token, model 327,680 over 16 GPUs" in out
    assert "each head is cached on 2 GPUs" in " ".join(out.split())


def test_compare_engine_version_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*GEMMA_3, "--compare-engine-version", "0.9.0"], capsys)
    assert code == 0
    assert "what changed from vLLM 0.9.0 to 0.11.0:" in out
    assert "0.81x → 3.59x (4.4×)" in " ".join(out.split())
    code, out, _ = run([*GEMMA_3, "--compare-engine-version", "0.9.0", "--json"], capsys)
    change = json.loads(out)["version_change"]
    assert (change["old_version"], change["new_version"]) == ("0.9.0", "0.11.0")
    figures = {f["label"]: (f["old"], f["new"]) for f in change["figures"]}
    assert figures["GPU KV cache size (tokens)"] == ("106,016", "105,904")
    assert figures["Concurrency @ 131,072"] == ("0.81x", "3.59x")


def test_compare_with_the_same_accounting_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*GEMMA_3, "--compare-engine-version", "0.12.0"], capsys)
    assert code == 0
    assert "nothing to compare" in err and len(err.splitlines()) == 1
    assert "what changed" not in out


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([*GEMMA_3, "--compare-engine-version", "banana"], "banana"),
        ([*GEMMA_3, "--engine", "tgi", "--engine-version", "3.3.7", "--compare-engine-version", "0.9.0"], "0.9.0"),
    ],
    ids=["bad-version", "not-vllm"],
)
def test_compare_engine_version_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    assert f"--compare-engine-version '{named}' is not valid" in err


def test_tgi_plans_have_no_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["plan", "--engine", "tgi", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100"], capsys
    )
    assert code == 0 and "KV layout" not in out


# --- --max-model-len auto: Llama-3.1-8B-Instruct on an RTX 4090 holds 2,901 blocks (the planner's figure) of one
# full-attention group of 32 layers, so the longest that fits is 2,901 x 16 = 46,416 tokens -------------------------

AUTO = ["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX 4090"]


@pytest.mark.parametrize("value", ["auto", "AUTO", "-1"])
def test_auto_resolves_and_the_verdict_says_so(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, out, err = run([*AUTO, "--max-model-len", value], capsys)
    assert code == 0 and err == ""
    assert "fits: yes at max_model_len auto → 46,416 tokens" in out
    assert "Maximum concurrency for 46,416 tokens per request: 1.00x" in out
    assert (
        "launch: vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9 --max-model-len auto" in out
    )


def test_auto_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*AUTO, "--max-model-len", "auto", "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    assert (payload["max_model_len"], payload["max_model_len_auto"]) == (46_416, True)
    assert payload["estimated_max_model_len"] == 46_416
    assert payload["launch_command"].endswith("--max-model-len auto")
    assert payload["explanation"]["longest_fit"]["limited_by"] == "kv_cache"


def test_auto_before_vllm_0_12_launches_with_the_number(capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.11 parses --max-model-len as a number only (human_readable_int_or_auto came with PR #29431)
    code, out, _ = run([*AUTO, "--max-model-len", "auto", "--engine-version", "0.11.0", "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    assert payload["launch_command"].endswith(f"--max-model-len {payload['max_model_len']}")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [*AUTO, "--max-model-len", "automatic"],
            "--max-model-len 'automatic' is not valid: expected auto, -1 or an integer from 16 to 10,485,760",
        ),
        ([*AUTO, "--max-model-len", "-2"], "--max-model-len '-2' is not valid: expected auto, -1 or an integer"),
        ([*AUTO, "--max-model-len", "8k"], "--max-model-len '8k' is not valid: expected auto, -1 or an integer"),
        (
            [*AUTO, "--engine", "tgi", "--max-model-len", "auto"],
            "--max-model-len 'auto' is not valid: expected an integer from 16 to 10,485,760 (auto is for --engine "
            "vllm)",
        ),
    ],
    ids=["word", "negative", "suffix", "tgi"],
)
def test_bad_max_model_len_is_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err


# --- issue 16: the version range, the topology and the entry point in the CLI ------------------------------------


def test_json_carries_the_version_range_topology_and_runner(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--max-model-len", "8192"]
    code, out, _ = run([*argv, "--json"], capsys)
    assert code == 0
    payload = json.loads(out)
    assert payload["model_runner"] == "v2"
    assert (payload["version_range"]["low"]["version"], payload["version_range"]["high"]["version"]) == (
        "0.14.0",
        "0.28.0",
    )
    assert payload["topology"] == {
        "num_gpus": 1,
        "gpus_per_node": 8,
        "nodes": 1,
        "tp_spans_nodes": False,
        "link": "nvswitch",
        "all_reduce": None,
        "warning": None,
        "needs": [],
    }
    code, out, _ = run([*argv, "--engine-version", "0.19.0", "--json"], capsys)
    assert json.loads(out)["version_range"] is None  # a version given: no range


def test_text_says_the_range_and_the_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100", "-tp", "16", "--max-model-len"]
    code, out, _ = run([*argv, "8192"], capsys)
    assert code == 0
    assert "  vLLM version unknown: between " in out and "the figures above are 0.28.0's" in out
    assert (
        "  multi-node: Ray: --distributed-executor-backend ray on a Ray cluster of the 2 nodes or multiprocessing: "
        in out
    )
    assert "need 2 nodes of 8 NVIDIA H100 80GB SXM5" in out
    assert out.count("KV bytes per token, model") == 1


def test_entry_point_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--model", "Qwen/Qwen3-8B", "--gpu", "h100", "--max-model-len", "8192", "--json"]
    code, out, _ = run([*argv, "--entry-point", "llm"], capsys)
    assert code == 0 and json.loads(out)["max_num_batched_tokens"] == 16384  # vllm.LLM's default on an H100
    code, _, err = run([*argv, "--entry-point", "python"], capsys)
    assert code == 2 and "--entry-point: invalid choice: 'python'" in err


# --- issue 14: speculative decoding on the command line -------------------------------------------------------------

LLAMA = ["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--max-model-len", "8192"]
ARTICLE_DRAFT = {"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 5}


def test_the_articles_old_flags_plan_the_draft(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B's 131,072 B per token + Llama-3.2-1B's 16 × 8 × 64 × 2 × 2 = 32,768 (bf16)
    argv = [*LLAMA, "--speculative-model", "meta-llama/Llama-3.2-1B-Instruct", "--num-speculative-tokens", "5"]
    code, out, _ = run([*argv, "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["kv_bytes_per_token"] == 163_840
    assert data["speculative_config"] == ARTICLE_DRAFT


def test_speculative_config_json_is_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*LLAMA, "--speculative-config", json.dumps(ARTICLE_DRAFT), "--json"], capsys)
    assert code == 0 and json.loads(out)["kv_bytes_per_token"] == 163_840


@pytest.mark.parametrize(
    "extra",
    [
        ["--speculative-config", "{oops"],
        ["--speculative-model", "meta-llama/Llama-3.2-1B-Instruct"],
        ["--speculate", "3", "--speculative-config", json.dumps(ARTICLE_DRAFT)],
    ],
)
def test_bad_speculative_flags_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    code, _, err = run([*LLAMA, *extra], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ('{"method": eagle3}', "this one is not valid JSON (Expecting value)"),
        ('{"method": "eagle3", "num_speculative_tokens": 3}', "this one has method eagle3, which needs a model"),
        (
            '{"model": "x/y", "num_speculative_tokens": 99}',
            "this one has a num_speculative_tokens that is not an integer from 1 to 16",
        ),
    ],
)
def test_a_bad_speculative_config_says_what_is_wrong_after_what_is_accepted(capsys, config: str, problem: str) -> None:
    """Issue 24 item 12: the problem was put where the accepted form goes: "expected not valid JSON (a JSON
    object ...)". Now: the value, what is accepted, then what is wrong with this one, on one line."""
    code, _, err = run([*LLAMA, "--speculative-config", config], capsys)
    assert code == 2 and err.count("\n") == 1
    head = f"--speculative-config {config!r} is not valid: expected a JSON object as vLLM's --speculative-config takes"
    assert head in err and err.rstrip().endswith(problem)
    assert "expected not" not in err and "expected method" not in err


def test_target_beyond_the_models_limit_is_not_a_fit(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B's max_position_embeddings is 131,072: no concurrency at 1,000,000, and the verdict says so
    argv = [*LLAMA_8B, "--gpu", "h100", "--max-model-len", "8192", "--target-context", "1000000"]
    code, out, _ = run(argv, capsys)
    assert code == 0
    assert "concurrency at 1,000,000" not in out
    assert "fits: IN PART - not at the target context 1,000,000: beyond the model's limit of 131,072 tokens" in out
    code, out, _ = run([*argv, "--json"], capsys)
    payload = json.loads(out)
    assert payload["max_concurrency_at_target"] is None and payload["verdict"]["level"] == "warning"


def test_no_version_fix_fits_every_version(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B on an A10: v0.14 holds 28,352 tokens (tests/unit/capacity/test_plan.py), so 27,648, not 34,816
    code, out, _ = run([*LLAMA_8B, "--gpu", "a10", "--json"], capsys)
    payload = json.loads(out)
    assert code == 0 and payload["advice"][0]["change"] == "--max-model-len 27648"
    assert payload["launch_command_that_fits"].endswith("--max-model-len 27648")


def test_tgi_fix_on_a_bigger_gpu_names_the_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*LLAMA_8B, "--engine", "tgi", "--gpu", "l4", "--json"], capsys)
    payload = json.loads(out)
    assert code == 0 and payload["advice"][0]["change"] == "a bigger GPU: NVIDIA A100 40GB SXM4"
    fixed = payload["launch_command_that_fits"]
    assert fixed != payload["launch_command"]
    assert fixed.startswith("# on 1× NVIDIA A100 40GB SXM4: this command does not choose the GPU\ndocker run ")


def test_a_command_that_starts_only_in_newer_versions_warns_and_offers_one_that_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 34,816 tokens on an A10: v0.24+ hold 35,360 tokens, v0.10–v0.21 fewer (tests/unit/capacity/test_plan.py)
    code, out, _ = run([*LLAMA_8B, "--gpu", "a10", "--max-model-len", "34816", "--json"], capsys)
    payload = json.loads(out)
    assert code == 0 and payload["fits"] and payload["verdict"]["level"] == "warning"
    assert payload["launch_warning"] == (
        "this command starts only in vLLM 0.24.0, 0.27.0, 0.28.0: 0.10.0, 0.11.0, 0.14.0, 0.17.0, 0.18.0, 0.21.0 "
        "would not start it"
    )
    assert payload["launch_command_that_fits"].endswith("--max-model-len 27648")
