"""planner.demo.payloads: vLLM's chunk and body shapes."""

from __future__ import annotations

from planner.demo.payloads import answer_chunk, chat_chunk, usage_of, whole_answer


def test_usage() -> None:
    assert usage_of(5) == {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    assert usage_of(0, 30) == {"prompt_tokens": 30, "completion_tokens": 0, "total_tokens": 30}


def test_chat_and_completion_chunks(clock) -> None:
    assert chat_chunk({"content": "t1 "}, None, None) == {
        "id": "chatcmpl-timed",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "timed-model",
        "choices": [{"index": 0, "delta": {"content": "t1 "}, "logprobs": None, "finish_reason": None}],
    }
    assert chat_chunk({}, "stop", usage_of(1))["usage"]["completion_tokens"] == 1
    assert answer_chunk(False, "t1 ", "length", None) == chat_chunk({"content": "t1 "}, "length", None)
    assert answer_chunk(True, "t1 ", None, usage_of(1)) == {
        "id": "cmpl-timed",
        "object": "text_completion",
        "created": 0,
        "model": "timed-model",
        "choices": [{"index": 0, "text": "t1 ", "logprobs": None, "finish_reason": None}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
    }


def test_whole_answers(clock) -> None:
    chat = whole_answer(False, 3, 12, "length")
    assert chat["object"] == "chat.completion"
    assert chat["choices"] == [{"index": 0, "message": {"role": "assistant", "content": "t1 t2 t3 "},
                                "finish_reason": "length"}]  # fmt: skip
    text = whole_answer(True, 2, 5, "stop")
    assert (text["object"], text["choices"][0]["text"], text["usage"]["total_tokens"]) == ("text_completion",
                                                                                          "t1 t2 ", 7)  # fmt: skip
