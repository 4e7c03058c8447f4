"""planner.serving.backends.base: the failure wording every backend shares, the idle timer and the [DONE] watch."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from planner.serving.backends.base import (
    IdleTimeoutError,
    body_message,
    items_within,
    transport_failure,
    watch_for_done,
)
from planner.serving.streaming import StreamRecorder
from tests.unit.serving.backends.streams import CHAT, CONTEXT_400


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (CONTEXT_400, "This model's maximum context length is 4096 tokens. (BadRequestError)"),  # vLLM nested
        ({"object": "error", "message": "too long", "type": "BadRequestError"}, "too long (BadRequestError)"),  # flat
        ({"error": "Request failed", "error_type": "generation"}, "Request failed (generation)"),  # TGI
        ({"error": "Input validation error", "error_type": "validation"}, "Input validation error"),  # type in text
        ({"detail": [{"loc": ["body"], "msg": "field required"}]}, '[{"loc": ["body"], "msg": "field required"}]'),
        ('{"error": {"message": "bad\\nrequest"}}', "bad request"),  # JSON text, on one line
        (b"<html>Bad Gateway</html>", "<html>Bad Gateway</html>"),  # not JSON: the text itself
        ({"error": {"message": "x (BadRequestError)", "type": "BadRequestError"}}, "x (BadRequestError)"),  # no twice
        (None, ""),
    ],
)
def test_body_message(body: object, message: str) -> None:
    assert body_message(body) == message


def test_transport_failure_is_connect_before_the_head_and_cut_after() -> None:
    before = StreamRecorder("e")
    transport_failure(before, "http://127.0.0.1:9/v1", ConnectionRefusedError(111, "Connection refused"))
    record = before.record()
    assert (record.error_kind, record.error) == ("connect", "cannot connect to http://127.0.0.1:9/v1: "
                                                "[Errno 111] Connection refused")  # fmt: skip
    after = StreamRecorder("e")
    after.sent()
    after.first_byte(http_status=200)
    transport_failure(after, "http://h/v1", ConnectionResetError())
    record = after.record()
    assert (record.error_kind, record.error) == ("cut", "stream from http://h/v1 cut: ConnectionResetError: "
                                                "connection closed")  # fmt: skip


def test_items_within_times_out_only_between_items() -> None:
    async def items(gaps: list[float | None]):
        for gap in gaps:
            if gap is None:
                await asyncio.Event().wait()  # never comes
            yield gap

    async def collect(gaps: list[float | None]) -> list:
        return [item async for item in items_within(items(gaps), 0.05)]

    assert asyncio.run(collect([0.0, 0.0, 0.0])) == [0.0, 0.0, 0.0]
    with pytest.raises(IdleTimeoutError):
        asyncio.run(collect([0.0, None]))


def test_watch_for_done_tells_the_recorder_at_done() -> None:
    recorder = StreamRecorder("e")
    response = httpx2.Response(200, content=CHAT, request=httpx2.Request("POST", "http://h/v1/chat/completions"))
    calls = []
    recorder.terminated = lambda *a, **k: calls.append("terminated")  # type: ignore[method-assign]
    watch_for_done(response, recorder)

    async def read() -> bytes:
        return b"".join([part async for part in response.aiter_bytes()])

    assert asyncio.run(read()) == CHAT and calls == ["terminated"]  # the body passes through unchanged
