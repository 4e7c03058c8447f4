"""Model resolution without the Hub: malformed ids, pasted configs, and the offline answer when nothing is cached.

Resolution against the local Hub stand-in (the real huggingface_hub client) is in tests/integration/catalog/test_hub.py.
"""

from __future__ import annotations

import json

import pytest

from planner.catalog.hub import model_from_config, resolve_model
from planner.errors import HubUnavailableError, InvalidParameterError, UnsupportedModelError
from tests.hub import checkpoints


def test_uncached_offline_is_one_clear_line(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError) as exc:
        resolve_model("acme/never-seen")
    message = str(exc.value)
    assert "acme/never-seen" in message and "config.json" in message and "\n" not in message


@pytest.mark.parametrize("bad", ["no-slash", "a/b/c", "org/", "/name", "org/na me", "org/" + "x" * 200, "org/..x"])
def test_malformed_ids(bad: str) -> None:
    with pytest.raises(InvalidParameterError, match="repo id"):
        resolve_model(bad)


def test_pasted_config() -> None:
    config, _ = checkpoints.tiny_llama()
    resolved = model_from_config(json.dumps(config), label="my-model")
    assert resolved.source == "upload" and resolved.spec.num_layers == config["num_hidden_layers"]
    with pytest.raises(UnsupportedModelError, match="not valid JSON"):
        model_from_config("{not json")
    # the new-user trial's paste: a RecursionError traceback on the VRAM Budget page
    with pytest.raises(UnsupportedModelError, match=r"^my-model: nested too deeply to read; expected a config.json"):
        model_from_config("[" * 5000 + "]" * 5000, label="my-model")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '{"architectures":["LlamaForCausalLM"],"hidden_size":NaN,"num_hidden_layers":32,'
            '"num_attention_heads":32,"vocab_size":32000}',
            "'hidden_size' is nan",
        ),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (
            '{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":1000000000000,'
            '"num_attention_heads":32,"vocab_size":32000}',
            "up to 1,024",
        ),
        (
            '{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,'
            '"num_attention_heads":32,"num_key_value_heads":7,"vocab_size":32000}',
            "not a multiple",
        ),
        (
            '{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":4096,"num_hidden_layers":32,'
            '"num_attention_heads":32,"vocab_size":32000,"num_local_experts":"eight"}',
            "'num_local_experts' is 'eight'",
        ),
        (  # issue 24: not a list used to crash with a TypeError (found by tests/unit/catalog/test_hostile_configs.py)
            '{"architectures":1.5,"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"vocab_size":32000}',
            "'architectures' is 1.5",
        ),
        ("{" + " " * (2 << 20) + "}", "larger than any config.json"),
    ],
    ids=["nan", "deep-nesting", "huge-layer-count", "kv-heads", "string-experts", "architectures-number", "huge-text"],
)
def test_hostile_pasted_configs_are_one_line_errors(text: str, match: str) -> None:
    # A pasted config must never make the shared server compute without bound (a 10^12-layer config used to
    # build a 10^12-entry layer list) or raise anything but the planner's own one-line error.
    with pytest.raises(UnsupportedModelError, match=match) as exc:
        model_from_config(text)
    assert "\n" not in str(exc.value)
