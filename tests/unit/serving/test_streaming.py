"""Stream payload normalization and the request recorder.

The rules follow the servers' own code: vLLM's ``vllm/entrypoints/openai/chat_completion/serving.py`` (``data: ``
events, ``[DONE]``, errors inside an HTTP 200 stream), TGI's ``router/src/server.rs`` (``/generate_stream`` events
with no ``[DONE]``, the last carrying ``generated_text``), the SSE spec
(https://html.spec.whatwg.org/multipage/server-sent-events.html: the space after ``data:`` is optional, ``:`` lines are
comments) and TGI's recorded snapshots in tests/servers/tgi_reference/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.serving.streaming import SSEDecoder, StreamRecorder, normalize_payload
from tests.servers.empty_answer import CHUNKS

TGI_DATA = Path(__file__).resolve().parents[2] / "servers" / "tgi_reference"  # recorded TGI responses


def _record(payloads, *, start=100.0, step=0.01, **kwargs):
    """Feed payloads at start+step, start+2·step, ... after a request sent at ``start``; [DONE] after the last."""
    rec = StreamRecorder("ep", **kwargs)
    rec.sent(start)
    t = start
    for p in payloads:
        t += step
        rec.payload(p, t)
    rec.done(t + step)
    return rec.record()


# --- SSE framing (protocols.md §0) ---
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'data: {"a":1}\n\ndata: [DONE]\n\n', ['{"a":1}']),
        (b'data:{"a":1}\n\n', ['{"a":1}']),  # old TGI framing, no space
        (b': keep-alive\n\nevent: x\nid: 3\ndata: {"a":2}\n\n', ['{"a":2}']),
        (b'data: {"a":1}\r\n\r\ndata:[DONE]\r\n\r\ndata: {"late":1}\n\n', ['{"a":1}']),
    ],
)
def test_sse_decoder_framing(raw, expected):
    dec = SSEDecoder()
    assert dec.feed(raw) == expected


def test_sse_decoder_split_reads_and_utf8():
    data = 'data: {"t":"我是"}\n\n'.encode()
    dec = SSEDecoder()
    out = []
    for i in range(len(data)):  # one byte at a time: splits the UTF-8 sequence and the event
        out += dec.feed(data[i : i + 1])
    assert [json.loads(x) for x in out] == [{"t": "我是"}]


# --- vLLM chat (protocols.md §1.1 literal lines) ---
VLLM_ROLE = {
    "id": "cmpl-8",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant"}, "logprobs": None, "finish_reason": None}],
}
VLLM_TOKEN = {
    "id": "cmpl-8",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": "我是"}, "logprobs": None, "finish_reason": None}],
}
VLLM_USAGE = {
    "id": "chatcmpl-…",
    "object": "chat.completion.chunk",
    "choices": [],
    "usage": {"prompt_tokens": 15, "total_tokens": 18, "completion_tokens": 3},
}


def test_vllm_role_chunk_is_a_chunk_not_a_token():
    p = normalize_payload(VLLM_ROLE)
    assert p.has_choices and not p.has_token


def test_vllm_chat_with_usage_chunk():
    rec = _record([VLLM_ROLE, VLLM_TOKEN, VLLM_TOKEN, VLLM_USAGE])
    assert rec.ok and rec.text == "我是我是"
    assert rec.first_chunk_s == pytest.approx(0.01)  # role chunk
    assert rec.first_token_s == pytest.approx(0.02)  # first content, not the role chunk
    assert rec.last_token_s == pytest.approx(0.03)  # the usage chunk at 0.04 does not move it
    assert rec.end_s == pytest.approx(0.05)  # [DONE]
    assert (rec.output_tokens, rec.output_tokens_source, rec.prompt_tokens) == (3, "usage", 15)


@pytest.mark.parametrize("key", ["reasoning", "reasoning_content"])
def test_reasoning_counts_for_ttft_not_for_first_content(key):
    think = {"choices": [{"index": 0, "delta": {key: "hmm"}, "finish_reason": None}]}
    answer = {"choices": [{"index": 0, "delta": {"content": "42"}, "finish_reason": "stop"}]}
    rec = _record([VLLM_ROLE, think, answer])
    assert rec.first_token_s == pytest.approx(0.02) and rec.first_content_s == pytest.approx(0.03)
    assert (rec.reasoning_text, rec.text, rec.finish_reason) == ("hmm", "42", "stop")
    assert [c.kind for c in rec.chunks] == ["reasoning", "content"]


def test_tool_call_delta_is_a_token():
    call = {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "function": {"name": "get", "arguments": '{"a":'}}]},
                "finish_reason": None,
            }
        ]
    }
    p = normalize_payload(call)
    assert p.has_token and p.tool_calls == 'get{"a":'


def test_continuous_usage_gives_tokens_per_chunk():
    def chunk(text, n, finish=None):
        return {
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n},
        }

    role = {**VLLM_ROLE, "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}}
    rec = _record([role, chunk("a", 1), chunk("bcd", 4), chunk("e", 5, "length")])
    assert [c.n_tokens for c in rec.chunks] == [1, 3, 1]
    # usage on the finish chunk is the server's final count
    assert (rec.output_tokens, rec.output_tokens_source) == (5, "usage")
    cut = StreamRecorder("ep")
    cut.sent(0.0)
    for i, p in enumerate([role, chunk("a", 1), chunk("bcd", 4)], 1):
        cut.payload(p, i / 10)
    r = cut.record()
    assert (r.ok, r.error_kind, r.output_tokens, r.output_tokens_source) == (False, "cut", 4, "continuous_usage")


def test_completions_text():
    p = normalize_payload(
        {"object": "text_completion", "choices": [{"index": 0, "text": " hi", "finish_reason": None}]}
    )
    assert p.content == " hi" and p.has_token


# --- TGI chat (TGI's recorded integration-test snapshots, tests/servers/tgi_reference) ---
@pytest.mark.parametrize(
    ("name", "tokens", "finish"),
    [("test_chat_hfhub_usage.json", 3, "stop"), ("test_flash_llama_completion_stream_usage.json", 10, "length")],
)
def test_tgi_chat_recordings(name, tokens, finish):
    payloads = json.loads((TGI_DATA / name).read_text(encoding="utf-8"))
    rec = _record(payloads)
    expected_text = "".join(p["choices"][0]["delta"]["content"] for p in payloads if p["choices"])
    assert rec.ok and rec.text == expected_text
    assert (rec.output_tokens, rec.output_tokens_source, rec.finish_reason) == (tokens, "usage", finish)
    # TGI has no role chunk: the first chunk is the first token.
    assert rec.first_chunk_s == rec.first_token_s == pytest.approx(0.01)


def test_tgi_chat_hfhub_text_is_ok_bang():
    payloads = json.loads((TGI_DATA / "test_chat_hfhub_usage.json").read_text(encoding="utf-8"))
    assert _record(payloads).text == "OK!"


# --- TGI /generate_stream (protocols.md §2.1) ---
def _tgi_event(i, text, *, special=False, last=False, n=3):
    return {
        "index": i,
        "token": {"id": i, "text": text, "logprob": -0.5, "special": special},
        "generated_text": "100%" if last else None,
        "details": {"finish_reason": "eos_token", "generated_tokens": n, "seed": None, "input_length": 7}
        if last
        else None,
    }


def test_tgi_generate_stream_events():
    events = [_tgi_event(1, "100"), _tgi_event(2, "%"), _tgi_event(3, "</s>", special=True, last=True)]
    rec = StreamRecorder("tgi")
    rec.sent(0.0)
    for i, e in enumerate(events, 1):
        p = rec.payload(e, 0.1 * i)
    assert p.ends_stream  # no [DONE] on /generate_stream
    r = rec.record()
    assert r.ok and r.text == "100%"  # the special EOS token's text is skipped
    assert (r.output_tokens, r.output_tokens_source, r.prompt_tokens) == (3, "tgi_details", 7)
    assert r.last_token_s == pytest.approx(0.2) and r.end_s == pytest.approx(0.3)


def test_tgi_events_counted_without_details():
    events = [_tgi_event(1, "a"), {**_tgi_event(2, "b"), "generated_text": "ab"}]
    r = _record(events)
    assert (r.output_tokens, r.output_tokens_source) == (2, "tgi_events")


# --- llama.cpp final chunk (protocols.md §4 literal) ---
LLAMACPP_ROLE = {
    "choices": [{"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}],
    "object": "chat.completion.chunk",
}
LLAMACPP_FINAL = {
    "choices": [{"finish_reason": "stop", "index": 0, "delta": {}}],
    "object": "chat.completion.chunk",
    "usage": {"completion_tokens": 247, "prompt_tokens": 1085, "total_tokens": 1332},
    "timings": {"prompt_n": 1085, "prompt_ms": 203.378, "predicted_n": 247, "predicted_ms": 933.63},
}


def test_llamacpp_final_chunk_usage_and_timings():
    p = normalize_payload(LLAMACPP_FINAL)
    assert (p.completion_tokens, p.llamacpp_predicted_n, p.finish_reason) == (247, 247, "stop")
    token = {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": "x"}}]}
    r = _record([LLAMACPP_ROLE, token, LLAMACPP_FINAL])
    assert (r.output_tokens, r.output_tokens_source) == (247, "usage")
    assert not normalize_payload(LLAMACPP_ROLE).has_token  # content null


def test_llamacpp_timings_without_usage():
    final = {k: v for k, v in LLAMACPP_FINAL.items() if k != "usage"}
    token = {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": "x"}}]}
    r = _record([token, final])
    assert (r.output_tokens, r.output_tokens_source) == (247, "llamacpp_timings")


def test_llama_cpp_python_one_token_per_chunk():
    token = {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": "x"}}]}
    end = {"choices": [{"finish_reason": "length", "index": 0, "delta": {}}]}
    r = _record([LLAMACPP_ROLE, token, token, token, end], one_token_per_chunk=True)
    assert (r.output_tokens, r.output_tokens_source) == (3, "chunks_one_token_each")
    assert [c.n_tokens for c in r.chunks] == [1, 1, 1]
    r2 = _record([token, token, end])
    assert (r2.output_tokens, r2.output_tokens_source) == (2, "estimate")  # unknown server: flagged estimate


# --- in-stream errors (protocols.md §1.4, §2.4) ---
@pytest.mark.parametrize(
    ("payload", "message", "status"),
    [
        ({"error": {"message": "boom", "type": "InternalServerError", "param": None, "code": 500}}, "boom", 500),
        ({"error": {"message": "Input validation error: too long", "http_status_code": 422}}, "too long", 422),
        ({"error": "Model is overloaded", "error_type": "overloaded"}, "Model is overloaded", None),
    ],
)
def test_in_stream_error_fails_the_request(payload, message, status):
    rec = StreamRecorder("ep")
    rec.sent(0.0)
    rec.payload(VLLM_TOKEN, 0.1)
    rec.payload(payload, 0.2)
    rec.done(0.3)
    r = rec.record()
    assert not r.ok and r.error_kind == "in_stream" and message in r.error and "\n" not in r.error
    assert r.http_status == status and r.partial and r.text == "我是"


def test_stream_without_end_is_cut_and_keeps_partial_text():
    rec = StreamRecorder("ep")
    rec.sent(0.0)
    rec.payload(VLLM_TOKEN, 0.1)
    rec.eof(0.2)
    r = rec.record()
    assert (r.ok, r.error_kind, r.partial, r.text) == (False, "cut", True, "我是")


def test_on_event_receives_deltas_and_end():
    seen = []
    _record([VLLM_ROLE, VLLM_TOKEN, VLLM_USAGE], on_event=seen.append)
    assert [(u.kind, u.text) for u in seen] == [("content", "我是"), ("end", "")]
    assert seen[-1].record is not None and seen[-1].record.ok


# --- an empty answer: the stream ends normally without any token-bearing chunk: a failure, named ---
# llama-cpp-python's chat stream for an answer of no text (its shape checked against llama_cpp.server 0.3 with the
# gemma3 270M GGUF): the role chunk, a final chunk with an empty delta and finish_reason "stop", then [DONE]; no
# usage chunk (stream_options is ignored) and no timings.
LCP_ROLE, LCP_STOP = CHUNKS  # llama-cpp-python's stream of an empty answer
EMPTY_STOP = "empty answer: the stream ended normally (finish_reason stop) without any text, reasoning or tool call"


@pytest.mark.parametrize("one_token", [True, False])
def test_empty_answer_fails_with_zero_tokens_and_no_latency(one_token):
    from planner.metrics.latency import compute_metrics

    r = _record([LCP_ROLE, LCP_STOP], one_token_per_chunk=one_token)
    assert (r.ok, r.error_kind, r.error, r.partial) == (False, "empty", EMPTY_STOP, False)
    # zero token-bearing chunks is exactly zero tokens, however many tokens a chunk holds
    assert (r.output_tokens, r.output_tokens_source, r.finish_reason) == (0, "chunks_one_token_each", "stop")
    assert (r.first_token_s, r.last_token_s, r.text, r.chunks) == (None, None, "", ())
    m = compute_metrics(r)
    assert (m.ttft_s, m.tpot_s, m.e2e_s, m.output_tokens_per_s) == (None, None, None, None)  # no token: n/a


def test_empty_answer_ended_by_done_alone_says_so():
    r = _record([LCP_ROLE])  # no finish reason, but [DONE]
    assert (r.ok, r.error_kind, r.output_tokens, r.output_tokens_source) == (False, "empty", 0, "chunks_one_token_each")
    assert r.error == "empty answer: the stream ended normally ([DONE]) without any text, reasoning or tool call"


def test_empty_answer_names_the_servers_count():
    usage = {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}}
    r = _record([LCP_ROLE, LCP_STOP, usage])  # e.g. only an EOS token was generated
    assert (r.ok, r.output_tokens, r.output_tokens_source) == (False, 1, "usage")
    assert r.error == EMPTY_STOP + "; the server counted 1 output token"


def test_done_without_finish_reason_is_a_proper_end():
    rec = StreamRecorder("ep")
    rec.sent(0.0)
    rec.payload(VLLM_TOKEN, 0.1)
    rec.terminated()  # [DONE] seen, the body still draining
    rec.eof(0.3)
    r = rec.record()
    assert (r.ok, r.error, r.finish_reason, r.text, r.end_s) == (True, None, None, "我是", 0.3)


def test_stream_cut_before_any_token_has_unknown_tokens():
    rec = StreamRecorder("ep", one_token_per_chunk=True)
    rec.sent(0.0)
    rec.payload(LCP_ROLE, 0.1)
    rec.eof(0.2)
    r = rec.record()
    assert (r.ok, r.error_kind, r.output_tokens, r.output_tokens_source) == (False, "cut", None, None)
