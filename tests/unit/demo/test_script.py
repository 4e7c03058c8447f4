"""planner.demo.script: the token timing script (chunk sizes, gaps), answer length, prompt tokens and drafts."""

from __future__ import annotations

import pytest

from planner.demo import script
from planner.demo.script import (
    answer_tokens,
    chat_template,
    chunk_sizes,
    count_drafts,
    drafts_of,
    options,
    prompt_tokens,
    prompt_units,
    token_text,
)
from planner.demo.state import STATE


@pytest.mark.parametrize(
    ("n", "sizes"),
    [(0, []), (1, [1]), (3, [1, 2]), (4, [1, 2, 1]), (7, [1, 2, 1, 3]), (12, [1, 2, 1, 3, 1, 2, 1, 1])],
)
def test_chunks_of_1_2_1_3_cut_to_the_answer(n: int, sizes: list[int]) -> None:
    assert chunk_sizes(n) == sizes and sum(sizes) == n


def test_token_text_and_options() -> None:
    assert [token_text(k) for k in (1, 2, 12)] == ["t1 ", "t2 ", "t12 "]
    assert options("hello [mode=cut] [tokens=8] [itl_ms=2.5]") == {"mode": "cut", "tokens": "8", "itl_ms": "2.5"}
    assert options("no options [here]") == {}


def test_the_decode_gap_grows_with_the_requests_running(clock) -> None:
    # --itl-per-running-ms: each token gap grows by that much per other request running at the time
    STATE.itl_per_running_ms, STATE.running = 0.5, 9
    assert script.gap(0.020) == pytest.approx(0.020 + 0.0005 * 8)
    STATE.running = 1
    assert script.gap(0.020) == 0.020
    STATE.running = 0  # between requests: never a negative share
    assert script.gap(0.020) == 0.020


def test_prompt_tokens_fixed_or_bytes(clock) -> None:
    chat = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
    assert prompt_tokens(chat) == 12  # --tokenizer fixed
    assert prompt_tokens({"prompt": [5, 6, 7]}) == 3  # token ids count themselves
    STATE.tokenizer = "bytes"
    text = "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n"
    # 11 + 9 + 9 + 3 + 14 bytes ("<|system|>\n", "be brief\n", "<|user|>\n", "hi\n", "<|assistant|>\n")
    assert chat_template(chat["messages"]) == text and prompt_tokens(chat) == 46
    assert prompt_tokens({"prompt": "héllo"}) == 6  # UTF-8 bytes: é is two
    assert prompt_units({"prompt": "ab"}) == [97, 98] and prompt_units({"prompt": [3, 4]}) == [3, 4]


def test_answer_length(clock) -> None:
    chat, completions = {"messages": []}, {"prompt": "x"}
    assert answer_tokens(chat, {"tokens": "5"}, 100, 12) == (5, "length")  # the option overrides everything
    assert answer_tokens(chat, {}, 100, 12) == (100, "length")
    assert answer_tokens(completions, {}, None, 12) == (16, "length")  # CompletionRequest's default
    assert answer_tokens(chat, {}, None, 96) == (4000, "length")  # 4,096 − 96: what the context leaves
    STATE.eos_tokens = 12
    assert answer_tokens(chat, {}, 100, 12) == (12, "stop")
    assert answer_tokens({"ignore_eos": True}, {}, 100, 12) == (100, "length")
    assert answer_tokens(chat, {}, 12, 12) == (12, "length")  # max_tokens reached first (or at the same token)


@pytest.mark.parametrize(("n", "accepted", "drafts"), [(0, 2, 0), (1, 2, 0), (2, 2, 1), (4, 2, 1), (5, 2, 2),
                                                        (128, 2, 43), (128, 0, 127)])  # fmt: skip
def test_drafts_of_an_answer(n: int, accepted: int, drafts: int) -> None:
    # the first token comes from the prefill; each draft yields its accepted tokens and the bonus token:
    # ceil((n − 1) / (a + 1)), e.g. 127 / 3 = 42.3 → 43
    assert drafts_of(n, accepted) == drafts


def test_count_drafts_only_when_speculating(clock) -> None:
    count_drafts(128)
    assert (STATE.spec_drafts, STATE.spec_accepted) == (0, 0)
    STATE.num_speculative_tokens, STATE.spec_accepted_per_draft = 3, 2
    count_drafts(128)
    count_drafts(1)
    assert (STATE.spec_drafts, STATE.spec_accepted) == (43, 86)
