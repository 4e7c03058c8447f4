"""The demo server's routes, played in process on a scripted clock (tests/unit/demo/conftest.py): what each route
answers and, for a streamed answer, when each chunk goes out.

Timing by hand from the token timing script (planner/demo/script.py): token k is due at t0 + 150 ms + (k − 1) · 20 ms
and tokens go out in chunks of 1, 2, 1, 3, 1, 2, 1, ... sent when their last token is due. For 12 tokens the chunks
end at tokens 1, 3, 4, 7, 8, 10, 11, 12: at 150, 190, 210, 270, 290, 330, 350 and 370 ms.
"""

from __future__ import annotations

import pytest

from planner.demo.script import chat_template
from planner.demo.state import CONTEXT_ERROR, IN_STREAM_ERROR, SERVER_ERROR, STATE, TGI_STREAM_ERROR

CHUNK_ENDS = (1, 3, 4, 7, 8, 10, 11, 12)
CHUNK_TIMES = (0.150, 0.190, 0.210, 0.270, 0.290, 0.330, 0.350, 0.370)


def _chat(prompt: str, **body: object) -> dict[str, object]:
    return {"model": "timed-model", "messages": [{"role": "user", "content": prompt}], **body}


def _content(events) -> list[tuple[float, str]]:
    return [
        (t, e["choices"][0]["delta"]["content"])
        for t, e in events
        if isinstance(e, dict) and e.get("choices") and e["choices"][0]["delta"].get("content")
    ]


def test_models_health_version_info_and_404(send) -> None:
    models = send("GET", "/v1/models")
    assert models.status == 200 and models.json == {
        "object": "list",
        "data": [
            {"id": "timed-model", "object": "model", "owned_by": "vllm", "root": "timed-model", "max_model_len": 4096}
        ],
    }
    health = send("GET", "/health")
    assert (health.status, health.body, health.headers["content-length"]) == (200, b"", "0")
    assert send("GET", "/version").json == {"version": "0.0.0-timed"}
    assert send("GET", "/info").json["max_total_tokens"] == 4096
    missing = send("GET", "/nope")
    assert missing.status == 404 and missing.json["error"]["message"] == "no route GET /nope"


def test_a_streamed_chat_answer_keeps_the_script(send) -> None:
    body = _chat("hi [tokens=12]", stream=True, stream_options={"include_usage": True, "continuous_usage_stats": True})
    response = send("POST", "/v1/chat/completions", body)
    assert response.status == 200 and response.headers["content-type"] == "text/event-stream"
    events = response.events
    role_t, role = events[0]
    assert role_t == 0.0 and role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert role["usage"]["completion_tokens"] == 0
    content = _content(events)
    assert [t for t, _ in content] == pytest.approx(CHUNK_TIMES)
    ends = [e for e in events if isinstance(e[1], dict) and e[1].get("choices")][1:]
    assert [e["usage"]["completion_tokens"] for _, e in ends] == list(CHUNK_ENDS)  # cumulative, exact per chunk
    assert "".join(text for _, text in content) == "".join(f"t{k} " for k in range(1, 13))
    assert [e["choices"][0]["finish_reason"] for _, e in ends] == [None] * 7 + ["length"]
    usage = events[-2][1]
    assert usage["choices"] == [] and usage["usage"] == {"prompt_tokens": 12, "completion_tokens": 12,
                                                          "total_tokens": 24}  # fmt: skip
    assert events[-1][1] == "[DONE]" and STATE.generation_tokens == 12 and STATE.running == 0


def test_the_decode_gap_grows_with_the_requests_running(send) -> None:
    # --itl-per-running-ms 0.5 with 4 other requests running: every gap is 20 + 0.5 × 4 = 22 ms
    STATE.itl_per_running_ms, STATE.running = 0.5, 4
    response = send("POST", "/v1/chat/completions", _chat("x [tokens=4]", stream=True))
    assert [t for t, _ in _content(response.events)] == pytest.approx([0.150, 0.150 + 2 * 0.022, 0.150 + 3 * 0.022])


def test_a_whole_answer_comes_when_its_last_token_is_due(send) -> None:
    response = send("POST", "/v1/chat/completions", _chat("hi [tokens=12] [ttft_ms=50] [itl_ms=10]"))
    assert response.done_s == pytest.approx(0.050 + 11 * 0.010)  # 160 ms
    assert response.status == 200 and response.json["object"] == "chat.completion"
    assert response.json["choices"][0]["message"]["content"] == "".join(f"t{k} " for k in range(1, 13))
    assert response.json["usage"] == {"prompt_tokens": 12, "completion_tokens": 12, "total_tokens": 24}


def test_completions_default_to_16_tokens_and_accept_token_ids(send) -> None:
    # vLLM's CompletionRequest default max_tokens is 16; a token-id prompt counts its ids
    response = send("POST", "/v1/completions", {"model": "timed-model", "prompt": [1, 2, 3, 4, 5]})
    body = response.json
    assert (body["object"], body["choices"][0]["finish_reason"]) == ("text_completion", "length")
    assert body["choices"][0]["text"] == "".join(f"t{k} " for k in range(1, 17))
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 16, "total_tokens": 21}


def test_end_of_sequence_unless_ignore_eos(send) -> None:
    STATE.eos_tokens = 12  # the tests' server: the placeholder model ends its answer after 12 tokens
    stopped = send("POST", "/v1/chat/completions", _chat("x", max_tokens=100)).json
    assert (stopped["usage"]["completion_tokens"], stopped["choices"][0]["finish_reason"]) == (12, "stop")
    ignored = send("POST", "/v1/chat/completions", _chat("x", max_tokens=100, ignore_eos=True)).json
    assert (ignored["usage"]["completion_tokens"], ignored["choices"][0]["finish_reason"]) == (100, "length")
    # no max_tokens on chat: what the context leaves (4,096 − 12 prompt tokens), cut at the end of sequence
    assert send("POST", "/v1/chat/completions", _chat("x", ignore_eos=True)).json["usage"]["completion_tokens"] == 4084


@pytest.mark.parametrize(
    ("mode", "status", "message"),
    [("http400", 400, CONTEXT_ERROR), ("http500", 500, SERVER_ERROR)],
)
def test_http_error_modes(send, mode: str, status: int, message: str) -> None:
    response = send("POST", "/v1/chat/completions", _chat(f"x [mode={mode}]", stream=True))
    assert response.status == status and response.json["error"]["message"] == message
    assert response.json["error"]["code"] == status


def test_the_old_flat_error_body(send) -> None:
    body = send("POST", "/v1/chat/completions", _chat("x [mode=http400_flat]")).json
    assert body == {"object": "error", "message": CONTEXT_ERROR, "type": "BadRequestError", "param": None, "code": 400}


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("error", {"message": IN_STREAM_ERROR, "type": "InternalServerError", "param": None, "code": 500}),
        ("tgi_error", {"message": TGI_STREAM_ERROR, "http_status_code": 422}),
    ],
)
def test_in_stream_errors_come_after_two_chunks(send, mode: str, error: dict) -> None:
    events = send("POST", "/v1/chat/completions", _chat(f"x [mode={mode}] [tokens=12]", stream=True)).events
    assert [text for _, text in _content(events)] == ["t1 ", "t2 t3 "]
    assert events[-2][1] == {"error": error} and events[-1][1] == "[DONE]"


def test_cut_drops_the_connection_after_three_chunks(send) -> None:
    response = send("POST", "/v1/chat/completions", _chat("x [mode=cut] [tokens=12]", stream=True))
    assert [text for _, text in _content(response.events)] == ["t1 ", "t2 t3 ", "t4 "] and response.aborted


def test_reject_continuous_only_when_it_is_asked_for(send) -> None:
    options = {"continuous_usage_stats": True}
    rejected = send("POST", "/v1/chat/completions", _chat("x [mode=reject_continuous]", stream_options=options))
    assert rejected.status == 400 and "continuous_usage_stats" in rejected.json["error"]["message"]
    assert send("POST", "/v1/chat/completions", _chat("x [mode=reject_continuous] [tokens=2]")).status == 200


def test_hang_answers_nothing(send) -> None:
    response = send("POST", "/v1/chat/completions", _chat("x [mode=hang]", stream=True))
    assert response.status == 0 and response.chunks == []


def test_tgi_generate_stream_one_token_per_event(send) -> None:
    body = {"inputs": "x [tokens=3]", "parameters": {"max_new_tokens": 10, "details": True}}
    response = send("POST", "/generate_stream", body)
    assert all(chunk.startswith(b"data:{") for _, chunk in response.chunks)  # TGI's framing: no space after data:
    events = response.events
    assert [t for t, _ in events] == pytest.approx([0.150, 0.170, 0.190])  # one token per event
    assert [e["token"]["text"] for _, e in events] == ["t1 ", "t2 ", "t3 "]
    assert [e["generated_text"] for _, e in events] == [None, None, "t1 t2 t3 "]
    assert events[-1][1]["details"] == {"finish_reason": "length", "generated_tokens": 3, "seed": None,
                                        "input_length": 12}  # fmt: skip


def test_every_request_is_recorded_with_its_body_as_sent(send) -> None:
    send("GET", "/health")
    send("POST", "/v1/chat/completions", _chat("x [tokens=2]", ignore_eos=True))
    recorded = send("GET", "/_recorded").json
    assert [(r["method"], r["path"]) for r in recorded] == [("GET", "/health"), ("POST", "/v1/chat/completions")]
    chat = recorded[1]
    assert chat["body"] == '{"model": "timed-model", "messages": [{"role": "user", "content": "x [tokens=2]"}], ' + (
        '"ignore_eos": true}'
    )
    # on the scripted wall clock: finished 150 + 20 ms after it was received
    assert chat["finished_s"] - chat["received_s"] == pytest.approx(0.170)
    assert chat["headers"]["host"] == "demo"
    assert send("DELETE", "/_recorded").json == [] and send("GET", "/_recorded").json == []


def test_tokenize_counts_bytes_of_the_templated_chat(send) -> None:
    assert send("POST", "/tokenize", {"model": "timed-model", "prompt": "hello"}).status == 404  # fixed tokenizer
    STATE.tokenizer = "bytes"
    messages = [{"role": "user", "content": "héllo"}]
    count = len(chat_template(messages).encode())  # "<|user|>\nhéllo\n<|assistant|>\n": 9 + 7 + 14 = 30 bytes
    assert count == 30
    answer = send("POST", "/tokenize", {"model": "timed-model", "messages": messages}).json
    assert (answer["count"], answer["max_model_len"], answer["tokens"]) == (30, 4096, list(range(30)))


def test_prefill_time_for_the_tokens_not_cached(send) -> None:
    # --enable-prefix-caching --prefill-ms-per-token 0.5: a 64-token id prompt adds 32 ms to the first token; sent
    # again, its first three blocks of 16 are hits (never the last token's block), so only 16 tokens add 8 ms
    STATE.prefix_caching, STATE.prefill_ms_per_token = True, 0.5
    body = {"model": "timed-model", "prompt": list(range(64)), "max_tokens": 1, "stream": True}
    first = _times(send("POST", "/v1/completions", body))
    again = _times(send("POST", "/v1/completions", body))
    assert (first, again) == (pytest.approx([0.150 + 0.032]), pytest.approx([0.150 + 0.008]))
    assert (STATE.prefix_queries, STATE.prefix_hits) == (128, 48)
    assert send("POST", "/reset_prefix_cache").status == 200 and not STATE.blocks


def _times(response) -> list[float]:
    return [t for t, e in response.events if isinstance(e, dict) and e["choices"] and e["choices"][0]["text"]]
