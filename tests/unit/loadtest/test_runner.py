"""The load runner without a server: lengths drawn as vLLM draws them, the requests built from them, and the
input-length check against the server's usage.

Runs against the timed server are in tests/integration/loadtest/test_runner.py.
"""

from __future__ import annotations

import asyncio

import pytest

from planner.errors import InvalidParameterError
from planner.loadtest.runner import (
    Workload,
    build_requests,
    check_inputs,
    draw_lengths,
    prepare_workload,
    run_load,
    token_range,
)
from planner.loadtest.settings import LoadSettings
from planner.loadtest.workload import InputCalibration
from planner.serving.discovery import EndpointInfo
from planner.serving.endpoints import Endpoint
from planner.serving.streaming import RequestRecord


def _ep(url: str, kind: str = "vllm") -> Endpoint:
    return Endpoint(name="t", kind=kind, base_url=url)


def test_lengths_follow_vllm_range_ratio():
    assert token_range(100, 0.25) == (75, 125)  # [floor(100*0.75), ceil(100*1.25)]
    settings = LoadSettings(num_prompts=300, input_len=100, output_len=40, range_ratio=0.25)
    draws = draw_lengths(settings, 300)
    words = [n for n, _, _ in draws]
    outs = [r.max_tokens for r in build_requests(settings, Workload(("p",) * 300))]
    assert min(words) >= 75 and max(words) <= 125 and len(set(words)) > 20
    assert min(outs) >= 30 and max(outs) <= 50  # [floor(40*0.75), ceil(40*1.25)]
    assert outs == [n for _, n, _ in draws]  # one draw gives a request its input and output lengths
    settings = LoadSettings(num_prompts=3, input_len=16, output_len=8, prompts=("a b", "c d e"))
    info = EndpointInfo("t", "vllm", healthy=False)
    workload = asyncio.run(prepare_workload(_ep("http://127.0.0.1:1"), info, settings))  # no server call for these
    fixed = build_requests(settings, workload)
    assert [(r.prompt, r.max_tokens) for r in fixed] == [("a b", 8), ("c d e", 8), ("a b", 8)]
    assert workload.tokens == (None, None, None) and workload.calibration is None


def test_a_constant_excess_too_large_for_a_chat_template_is_reported():
    # (the trial's case) a tokenizer route that counts every prompt the same whatever its length sizes nothing:
    # 2 prompts of 50 tokens asked, the route counted 14 each, the server's usage says 226 each
    workload = Workload(("p", "q"), tokens=(14, 14), targets=(50, 50), calibration=InputCalibration("nearest", 2, 2))
    records = [RequestRecord("t", ok=True, prompt_tokens=226), RequestRecord("t", ok=True, prompt_tokens=226)]
    check = check_inputs(workload, records, [0, 1], endpoint="t")
    # 226 - 50 = 176 > MAX_TEMPLATE_TOKENS: not taken for a chat template, so the gap is reported
    assert (check.template_tokens, check.requested_tokens, check.measured_tokens) == (None, 100, 452)
    assert check.warning == (
        "t: asked for 100 input tokens (the chat template not included), the server counted 452 (+352.0%); the "
        "server's tokenizer route could not size the prompts: it counted 28 tokens for 100 asked"
    )
    # failed requests report no usage and say nothing about input lengths (their failure is reported instead)
    failed = [RequestRecord("t", ok=False, error="x", error_kind="connect")] * 2
    assert check_inputs(workload, failed, [0, 1], endpoint="t").warning is None


def test_ray_workers_without_a_remote_sender_are_refused_before_any_request():
    # the runner does not import the Ray module (it builds on the runner): the caller passes send_on_ray in
    settings = LoadSettings(num_prompts=4, num_workers=2)
    with pytest.raises(InvalidParameterError, match=r"num_workers=2 .*remote sender"):
        asyncio.run(run_load(Endpoint("t", "vllm", "http://127.0.0.1:9"), settings))
