"""The Live Compare settings: stop strings from text and the request the settings describe."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.compare.settings import DEFAULT, CompareSettings, parse_stop, to_request
from planner.errors import InvalidParameterError

#: Every setting away from its default (the links tests round-trip it too).
FULL = CompareSettings(
    endpoints=("vllm-a", "tgi.b", "llama_c"),
    system="Be brief.",
    prompt="Name three colours, then explain why 1 + 1 = 2 & more?",
    temperature=0.7,
    top_p=0.95,
    max_tokens=256,
    stop=("###", "END"),
    seed=42,
    repeat=5,
    timeout_s=12.5,
)


def test_parse_stop_and_request():
    assert parse_stop(" ###, END ,, ") == ("###", "END")
    request = to_request(FULL)
    assert request.stop == ("###", "END") and request.system == "Be brief." and request.seed == 42
    assert to_request(DEFAULT).system is None
    with pytest.raises(InvalidParameterError, match="prompt"):
        to_request(replace(DEFAULT, prompt=" "))
