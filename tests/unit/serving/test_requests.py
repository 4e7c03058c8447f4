"""The request a client sends: :class:`~planner.serving.requests.ChatRequest` validation and the bodies built per
endpoint kind.
"""

from __future__ import annotations

import pytest

from planner.errors import InvalidParameterError
from planner.serving.discovery import EndpointInfo
from planner.serving.requests import ChatRequest, build_request, check_context, default_route


@pytest.mark.parametrize("bad", [{"prompt": " "}, {"prompt": "x", "max_tokens": 0}, {"prompt": "x", "top_p": 0}])
def test_chat_request_validation(bad):
    with pytest.raises(InvalidParameterError):
        ChatRequest(**bad)


# --- the body each kind reads (module docstring of planner/serving/requests.py: where each engine reads its fields) ---
FULL = ChatRequest("hi", system="be brief", temperature=0.7, top_p=0.9, max_tokens=64, stop=("</s>",), seed=3,
                   ignore_eos=True, min_tokens=8)  # fmt: skip


def test_vllm_chat_body_in_order() -> None:
    wire = build_request("vllm", FULL, model="m")
    assert (wire.route, wire.path, wire.dropped, wire.url("http://h:8000")) == (
        "chat",
        "/v1/chat/completions",
        (),
        "http://h:8000/v1/chat/completions",
    )
    assert list(wire.body.items()) == [
        ("messages", [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]),
        ("model", "m"),
        ("stream", True),
        ("stream_options", {"include_usage": True, "continuous_usage_stats": True}),
        ("max_tokens", 64),
        ("temperature", 0.7),
        ("top_p", 0.9),
        ("seed", 3),
        ("stop", ["</s>"]),
        ("ignore_eos", True),  # vLLM's extra sampling parameters, at the top level
        ("min_tokens", 8),
    ]
    assert wire.continuous_usage


@pytest.mark.parametrize(
    ("kind", "model", "dropped", "continuous"),
    [
        ("sglang", "default", (), True),  # no model known: what the SDKs send
        ("llamacpp", "default", ("min_tokens",), False),  # llama-server reads ignore_eos, not min_tokens
        ("tgi", "tgi", ("ignore_eos", "min_tokens"), False),  # the Messages API reads neither
        ("openai", "default", ("ignore_eos", "min_tokens"), False),  # the OpenAI API refuses ignore_eos
    ],
)
def test_what_each_kind_does_not_read_is_left_out(kind, model, dropped, continuous) -> None:
    wire = build_request(kind, FULL, model=None)
    assert wire.dropped == dropped and wire.body["model"] == model and wire.continuous_usage is continuous
    assert all(name not in wire.body for name in dropped)


def test_tgi_native_route() -> None:
    wire = build_request("tgi", FULL, model="m", route="generate_stream")
    assert (wire.path, wire.dropped) == ("/generate_stream", ())  # ignore_eos is not named dropped here either way
    assert wire.body == {
        "inputs": "be brief\n\nhi",
        "parameters": {"max_new_tokens": 64, "temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["</s>"],
                       "details": True},
        "stream": True,
    }  # fmt: skip


def test_completions_with_token_ids_and_the_continuous_usage_retry() -> None:
    ids = ChatRequest("label", prompt_token_ids=(1, 2, 3), max_tokens=4)
    assert default_route("vllm", ids) == "completions"
    wire = build_request("vllm", ids, model="m")
    assert (wire.path, wire.body["prompt"]) == ("/v1/completions", [1, 2, 3])
    retry = wire.without_continuous_usage()
    assert retry.body["stream_options"] == {"include_usage": True} and retry.dropped == ("continuous_usage_stats",)
    assert wire.body["stream_options"]["continuous_usage_stats"] is True  # the original is unchanged
    for kind, route in (("tgi", "completions"), ("vllm", "chat")):
        with pytest.raises(InvalidParameterError, match="prompt_token_ids"):
            build_request(kind, ids, model="m", route=route)
    with pytest.raises(InvalidParameterError, match="route"):
        build_request("vllm", FULL, model="m", route="generate_stream")
    with pytest.raises(InvalidParameterError, match="route"):
        build_request("vllm", FULL, model="m", route="embeddings")


def test_messages_and_text_of_a_conversation() -> None:
    turn = ChatRequest("and now?", system="s", history=(("user", "q1"), ("assistant", "a1")))
    assert turn.messages() == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "and now?"},
    ]
    assert turn.text == "s\n\nq1\n\na1\n\nand now?"
    with pytest.raises(InvalidParameterError, match="history"):
        ChatRequest("x", history=(("system", "no"),))
    with pytest.raises(InvalidParameterError, match="min_tokens"):
        ChatRequest("x", max_tokens=4, min_tokens=5)


def test_check_context_refuses_only_what_certainly_cannot_fit() -> None:
    vllm = EndpointInfo("v", "vllm", healthy=True, max_model_len_tokens=4096)
    assert check_context(ChatRequest("x", max_tokens=4096), vllm) is None  # 0 + 4,096 ≤ 4,096
    assert check_context(ChatRequest("x", max_tokens=4096), vllm, prompt_tokens=12) == (
        "v: 12 prompt + 4096 max_tokens exceeds the context limit of 4096 tokens; lower max_tokens"
    )
    assert check_context(ChatRequest("x", max_tokens=5000), vllm) == (
        "v: 5000 max_tokens exceeds the context limit of 4096 tokens; lower max_tokens"
    )
    tgi = EndpointInfo("t", "tgi", healthy=True, max_model_len_tokens=8192, max_input_tokens=4095)
    assert check_context(ChatRequest("x", max_tokens=10), tgi, prompt_tokens=4096) == (
        "t: prompt of 4096 tokens exceeds max_input_tokens=4095"
    )
    assert check_context(ChatRequest("x"), None) is None
