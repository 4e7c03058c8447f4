"""Workloads: the JSONL prompts file, the example prompts, and synthetic prompts sized by the server's tokenizer."""

from __future__ import annotations

import asyncio
import json

import pytest

import planner.loadtest.workload as workload
from planner.errors import InvalidParameterError
from planner.loadtest.workload import (
    EXAMPLE_PROMPTS,
    calibrate_prompt,
    calibrate_prompts,
    example_prompts,
    parse_prompts_jsonl,
    synthetic_text,
)
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint

EP = Endpoint("fake", "vllm", "http://127.0.0.1:1")
INFO = EndpointInfo(endpoint="fake", kind="vllm", healthy=True, model="m")


# --- prompts files ---------------------------------------------------------------------------------------------------
def test_jsonl_accepts_vllm_prompt_text_and_messages():
    lines = [
        {"prompt": "What is the capital of India?", "output_tokens": 10},  # vLLM CustomDataset docstring example
        {"text": "plain text"},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]},
        {"prompt": "ünïcode ✓", "extra": 1},
    ]
    data = "\ufeff" + "\n".join(json.dumps(x) for x in lines[:2]) + "\n\n  \n" + "\n".join(map(json.dumps, lines[2:]))
    expected = ("What is the capital of India?", "plain text", "hi", "ünïcode ✓")
    assert parse_prompts_jsonl(data.encode("utf-8")) == expected
    assert parse_prompts_jsonl(data.lstrip("\ufeff")) == expected


def test_jsonl_lines_end_only_at_newlines():
    """JSON Lines ends a line at \\n (and \\r\\n) only: U+2028, U+2029 and U+0085 are characters of a JSON string that
    a writer with ensure_ascii=False leaves raw. They used to split the line, so a well-formed file was refused as
    "not valid JSON" (issue 24, found by the hostile-file suite)."""
    prompts = ("first\u2028line", "para\u2029graph", "next\x85line", "form\x0cfeed")
    data = "\r\n".join(json.dumps({"prompt": p}, ensure_ascii=False) for p in prompts) + "\r\n"
    assert parse_prompts_jsonl(data) == prompts
    assert parse_prompts_jsonl(data.encode("utf-8")) == prompts


@pytest.mark.parametrize(
    ("data", "name"),
    [
        ('{"prompt": "ok"}\n{"prompt": "ok"\n', "dataset line 2"),  # not JSON
        ('{"prompt": "ok"}\n\n{"question": "x"}\n', "dataset line 3"),  # no accepted key (blank lines still count)
        ('{"prompt": ""}\n', "dataset line 1"),  # empty prompt
        ('["a list"]\n', "dataset line 1"),
        ('{"messages": [{"role": "assistant", "content": "x"}]}\n', "dataset line 1"),  # no user message
        ("\n\n", "dataset"),  # no prompt at all
    ],
)
def test_jsonl_errors_name_the_line_and_what_is_accepted(data, name):
    with pytest.raises(InvalidParameterError) as info:
        parse_prompts_jsonl(data)
    assert info.value.name == name
    assert '"prompt" (vLLM custom dataset)' in info.value.accepted and "\n" not in str(info.value)


def test_jsonl_is_bounded():
    with pytest.raises(InvalidParameterError, match="at most 10 bytes"):
        parse_prompts_jsonl('{"prompt": "hello"}', max_bytes=10)
    with pytest.raises(InvalidParameterError, match="at most 2"):
        parse_prompts_jsonl('{"prompt": "a"}\n{"prompt": "b"}\n{"prompt": "c"}\n', max_prompts=2)
    with pytest.raises(InvalidParameterError, match="UTF-8"):
        parse_prompts_jsonl(b'{"prompt": "\xff"}')


def test_example_prompts_are_the_articles_eight():
    assert len(EXAMPLE_PROMPTS) == 8 and len({name for name, _ in EXAMPLE_PROMPTS}) == 8
    # the article's demo (tests/data/article.md): first and last of its eight, in its order
    assert example_prompts()[0] == "What is Python?" and example_prompts()[-1] == "Name 3 planets."


def test_synthetic_text_rotates_the_word_list():
    assert len(synthetic_text(300).split()) == 300
    assert synthetic_text(3, 0).split()[1:] == synthetic_text(3, 1).split()[:2]
    assert synthetic_text(0) == synthetic_text(1)  # never empty


# --- calibration against a tokenizer replaced at the boundary (tokenize_text) ---------------------------------------
def _fake_counter(monkeypatch, tokens_per_word: int, overhead: int, calls: list[int] | None = None):
    async def tokenize(endpoint, info, text, *, timeout_s=5.0, secrets=None):
        words = len(text.split())
        if calls is not None:
            calls.append(words)
        return tuple(range(overhead + tokens_per_word * words))

    monkeypatch.setattr(workload, "tokenize_text", tokenize)


def test_calibration_removes_the_template_overhead(monkeypatch):
    calls: list[int] = []
    _fake_counter(monkeypatch, 1, 7, calls)  # e.g. a tokenizer adding 7 tokens to any text
    got = asyncio.run(calibrate_prompt(EP, INFO, 25))
    # first count: 25 words -> 32 tokens; one token per word, so 25 - 7 = 18 words -> 25 tokens
    assert (got.words, got.counted_tokens, got.method) == (18, 25, "exact (server /tokenize)")
    assert calls == [25, 18] and len(got.text.split()) == 18


def test_calibration_keeps_the_nearest_when_the_target_is_unreachable(monkeypatch):
    _fake_counter(monkeypatch, 2, 5)  # counts are always odd
    got = asyncio.run(calibrate_prompt(EP, INFO, 24))
    # 24 words -> 53; secant steps reach 9 words -> 23 and 10 words -> 25; tie -> the shorter prompt
    assert (got.words, got.counted_tokens, got.method) == (9, 23, "nearest (server /tokenize)")
    _fake_counter(monkeypatch, 1, 7)
    tiny = asyncio.run(calibrate_prompt(EP, INFO, 3))  # the template alone is more than 3 tokens
    assert (tiny.words, tiny.counted_tokens, tiny.method) == (1, 8, "nearest (server /tokenize)")


def test_prompts_are_sized_from_one_calibration_and_verified_within_a_budget(monkeypatch):
    calls: list[int] = []
    _fake_counter(monkeypatch, 1, 7, calls)
    targets = [(20, 0), (25, 1), (18, 2)]
    texts, tokens, cal = asyncio.run(calibrate_prompts(EP, INFO, targets))
    assert [len(t.split()) for t in texts] == [13, 18, 11] and tokens == (20, 25, 18)
    assert (cal.method, cal.total, cal.counted, cal.exact, cal.overhead_tokens) == ("exact", 3, 3, 3, 7)
    assert cal.label == "exact (server /tokenize)"
    # 2 calls calibrate the first prompt, 1 verifies each other prompt
    assert len(calls) == 4
    # a budget of 8 calls leaves 2 for verification: 3 of 10 prompts counted, the rest sized by the calibration
    many = [(20 + i, i) for i in range(10)]
    texts, tokens, cal = asyncio.run(calibrate_prompts(EP, INFO, many, max_counts=8))
    assert (cal.method, cal.counted, cal.exact) == ("calibrated", 3, 3)
    assert tokens == tuple(range(20, 30)) and [len(t.split()) for t in texts] == list(range(13, 23))
    assert "3 of 10" in cal.label


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"target_tokens": 0}, "target_tokens"), ({"max_rounds": 0}, "max_rounds")]
)
def test_calibration_validation(kwargs, name):
    args = {"target_tokens": 5, **kwargs}
    with pytest.raises(InvalidParameterError) as info:
        asyncio.run(calibrate_prompt(EP, INFO, args.pop("target_tokens"), **args))
    assert info.value.name == name
