"""planner.serving.worker_process without a process: the parent's reading of the child's pickled messages, its error
lines and cancel byte, the watchdog, and the child's loop on in-memory pipes. With real child processes:
tests/integration/serving/test_worker_process.py."""

from __future__ import annotations

import asyncio
import io
import pickle
import sys

import pytest

from planner.serving import worker_process
from planner.serving.worker_process import WorkerProcess, run_child


class FakeChild:
    """What the parent reads and writes of a child: its stdout holds ``messages`` pickled, its exit code is
    ``code``."""

    def __init__(self, messages: list[tuple], code: int = 0, tail: bytes = b"") -> None:
        out = io.BytesIO()
        for message in messages:
            pickle.dump(message, out)
        out.write(tail)
        out.seek(0)
        self.stdout, self.stdin, self.code = out, io.BytesIO(), code

    def wait(self) -> int:
        return self.code


def _parent(child: FakeChild, **kwargs) -> tuple[WorkerProcess, list, list]:
    applied: list[tuple[str, tuple]] = []
    errors: list[str] = []
    worker = WorkerProcess("x", None, apply=lambda k, p: applied.append((k, p)), on_error=errors.append, name="test",
                           **kwargs)  # fmt: skip
    worker._proc = child  # type: ignore[assignment]  # as start() would have made it
    return worker, applied, errors


def test_messages_are_applied_in_order_until_done() -> None:
    child = FakeChild([("tick", 1), ("event", "a", 2), ("done",), ("after", 0)])
    worker, applied, errors = _parent(child)
    worker._read()
    assert applied == [("tick", (1,)), ("event", ("a", 2))] and errors == []  # nothing after "done"
    assert worker.done and worker.wait(0) and child.stdin.closed


def test_an_unexpected_exit_is_one_line_unless_cancelled() -> None:
    worker, applied, errors = _parent(FakeChild([("tick", 1)], code=3))
    worker._read()
    assert applied == [("tick", (1,))] and errors == ["the test process ended unexpectedly (exit code 3)"]
    worker, _, errors = _parent(FakeChild([], code=-15))
    worker.cancelled = True
    worker._read()
    assert errors == [] and worker.done


def test_a_message_that_does_not_unpickle_is_lost_contact() -> None:
    worker, _, errors = _parent(FakeChild([], tail=b"\x80\x05garbage"))
    worker._read()
    assert len(errors) == 1 and errors[0].startswith("lost contact with the test process: ")


def test_cancel_writes_one_byte_any_number_of_times() -> None:
    child = FakeChild([])
    worker, _, _ = _parent(child)
    worker.cancel()
    worker.cancel()
    assert worker.cancelled and child.stdin.getvalue() == b"cc"
    child.stdin.close()
    worker.cancel()  # a closed pipe: nothing raised
    WorkerProcess("x", None, apply=print, on_error=print, name="n").cancel()  # never started: nothing to write


def test_a_run_nobody_polls_is_stopped() -> None:
    child = FakeChild([])
    worker, _, errors = _parent(child, abandoned_s=0.04)
    worker._last_poll -= 1.0  # last asked for a second ago, 25 × abandoned_s
    worker._watchdog()
    assert errors == ["cancelled: nobody watched this run for 0 s"] and child.stdin.getvalue() == b"c"
    worker, _, errors = _parent(FakeChild([]), abandoned_s=0.04)
    worker._done.set()  # ended before the watchdog's first look: it leaves quietly
    worker._watchdog()
    assert errors == []


class _Exit(Exception):
    pass


def _child(monkeypatch, payload, work) -> list[tuple]:
    stdin = io.BytesIO(pickle.dumps(payload))  # then end of file: the parent went away, so stop is set
    stdout = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(stdout))

    def leave(code: int) -> None:
        raise _Exit(code)

    monkeypatch.setattr(worker_process.os, "_exit", leave)
    with pytest.raises(_Exit):
        run_child(work)
    stdout.seek(0)
    messages = []
    while stdout.tell() < len(stdout.getvalue()):
        messages.append(pickle.load(stdout))
    return messages


def test_the_child_emits_then_done(monkeypatch) -> None:
    async def work(payload, emit, stop):
        emit("tick", payload)
        await stop.wait()  # the parent's pipe closed
        emit("stopped", True)

    assert _child(monkeypatch, 7, work) == [("tick", 7), ("stopped", True), ("done",)]


def test_a_failing_child_says_why_in_one_line(monkeypatch) -> None:
    async def work(payload, emit, stop):
        await asyncio.sleep(0)
        raise ValueError("bad\nconfiguration")

    assert _child(monkeypatch, None, work) == [("fatal", "bad configuration"), ("done",)]
