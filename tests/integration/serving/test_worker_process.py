"""The worker-process scaffold of Live Compare and Load Test, with a child that sleeps, fails or exits, and the spare
child a run takes instead of starting one."""

from __future__ import annotations

import time

import pytest

from planner.serving import worker_process
from planner.serving.worker_process import WorkerProcess


def _run(mode: str, seconds: float = 0.0, **kwargs):
    messages: list[tuple[str, tuple]] = []
    errors: list[str] = []
    worker = WorkerProcess(
        "tests.servers.sleep_child",
        (mode, seconds),
        apply=lambda kind, payload: messages.append((kind, payload)),
        on_error=errors.append,
        name="test",
        **kwargs,
    )
    return worker.start(), messages, errors


def test_messages_arrive_in_order_and_the_run_ends():
    worker, messages, errors = _run("sleep", 0.01)
    assert worker.wait(20) and worker.done
    assert messages == [("tick", (1,)), ("finished", (0.01,))] and errors == []


def test_cancel_stops_the_child_at_once():
    worker, messages, errors = _run("sleep", 60)
    deadline = time.monotonic() + 20
    while not messages and time.monotonic() < deadline:  # the child is up and waiting
        time.sleep(0.02)
    worker.cancel()
    assert worker.wait(10)  # long before the child's 60 s sleep ends
    assert messages == [("tick", (1,)), ("stopped", (True,))] and errors == [] and worker.cancelled


def test_a_failing_run_reports_one_line():
    worker, messages, errors = _run("fail")
    assert worker.wait(20)
    assert messages == [("fatal", ("bad configuration",))] and errors == []


def test_a_child_that_dies_is_reported():
    worker, messages, errors = _run("exit")
    assert worker.wait(20)
    assert messages == [] and errors == ["the test process ended unexpectedly (exit code 3)"]


def test_a_run_nobody_polls_is_stopped():
    worker, messages, errors = _run("sleep", 60, abandoned_s=1.0)
    assert worker.wait(20), "an abandoned run kept going"
    assert errors == ["cancelled: nobody watched this run for 1 s"] and messages[-1] == ("stopped", (True,))


def _drop_spare() -> None:
    with worker_process._spare_lock:
        spare, worker_process._spare = worker_process._spare, None
    if spare is not None:
        worker_process._retire(spare[0])


@pytest.fixture
def no_spare():
    """No spare child before or after the test (one left by another test would be taken here)."""
    _drop_spare()
    yield
    _drop_spare()


def test_a_warm_spare_is_kept_until_a_run_takes_it(no_spare):
    assert worker_process.spare_pid() is None
    assert worker_process.warm_worker() is True
    spare = worker_process.spare_pid()
    assert spare is not None
    assert worker_process.warm_worker() is False and worker_process.spare_pid() == spare  # one spare, kept
    worker, messages, errors = _run("sleep", 0.01)
    assert worker.pid == spare  # the run took the spare: no process started after the click
    assert worker_process.spare_pid() is None
    assert worker.wait(20)
    assert messages == [("tick", (1,)), ("finished", (0.01,))] and errors == []


def test_a_spare_from_another_environment_is_not_used(no_spare, monkeypatch):
    worker_process.warm_worker()
    spare = worker_process.spare_pid()
    monkeypatch.setenv("PLANNER_TEST_SPARE", "changed")  # e.g. a key set after the spare started
    worker, messages, errors = _run("sleep", 0.01)
    assert worker.pid != spare
    assert worker.wait(20) and messages[-1] == ("finished", (0.01,)) and errors == []
