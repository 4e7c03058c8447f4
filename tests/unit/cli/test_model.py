"""``python -m planner model``: what an id resolves to, as text or JSON; one line and exit 2 when it cannot."""

from __future__ import annotations

import json

from planner.cli.main import main

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
# Llama-3.1-8B's parameters by hand from its config.json (vocab 128,256, hidden 4,096, 32 layers, 8 KV heads of 128,
# intermediate 14,336, untied embeddings): embeddings and LM head 2 × 128,256 × 4,096 = 1,050,673,152; per layer
# q, o 2 × 4,096² + k, v 2 × 4,096 × 1,024 + MLP 3 × 4,096 × 14,336 + 2 norms × 4,096 = 218,112,000, × 32 =
# 6,979,584,000; final norm 4,096: 8,030,261,248 (the count the Hub shows for the checkpoint's safetensors).
LLAMA_8B_PARAMS = 8_030_261_248


def test_text_lists_the_architecture(capsys) -> None:
    assert main(["model", LLAMA_8B]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{LLAMA_8B} (from catalog)"
    assert "  num_key_value_heads        8" in lines
    assert "  max_position_embeddings    131,072" in lines  # integers with thousands separators
    assert f"  params_computed            {LLAMA_8B_PARAMS:,}" in lines
    assert not any(line.startswith("  revision") for line in lines)  # None is left out


def test_json_is_one_object(capsys) -> None:
    assert main(["model", LLAMA_8B, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["model"], data["source"], data["revision"]) == (LLAMA_8B, "catalog", None)
    assert (data["num_hidden_layers"], data["num_key_value_heads"], data["head_dim"]) == (32, 8, 128)
    assert data["params_computed"] == LLAMA_8B_PARAMS


def test_a_bad_id_is_one_line_exit_2(capsys) -> None:
    assert main(["model", "bad id!"]) == 2
    assert capsys.readouterr().err == (
        "python -m planner model: error: 'bad id!' is not valid: expected a Hugging Face repo id such as "
        "meta-llama/Llama-3.1-8B-Instruct\n"
    )


def test_an_id_nowhere_offline_is_one_line_exit_2(capsys) -> None:
    # the test environment has the Hub off (HF_HUB_OFFLINE=1) and an empty cache
    assert main(["model", "acme/none"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner model: error: acme/none is not in the catalog or the cache, and the Hub")
    assert err.count("\n") == 1
