"""The background thread / event-loop scaffolding shared by Live Compare and Load Test runs."""

from __future__ import annotations

import asyncio

from planner.compare.background import BackgroundRun


class _Sleeper(BackgroundRun):
    def __init__(self, seconds: float, fail: bool = False) -> None:
        super().__init__("test-run")
        self.seconds, self.fail, self.task = seconds, fail, None

    async def _run(self) -> str:
        self.task = asyncio.current_task()
        if self._cancelled:
            raise asyncio.CancelledError
        if self.fail:
            raise ValueError("bad\nconfiguration")
        await asyncio.sleep(self.seconds)
        return "finished"

    def _stop_in_loop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _partial(self) -> str:
        return "partial"


def test_runs_to_completion() -> None:
    run = _Sleeper(0.01).start()
    assert run.wait(5) and run.done
    assert (run._result, run._error) == ("finished", None)


def test_cancel_while_running_returns_the_partial_result() -> None:
    run = _Sleeper(30).start()
    while run._loop is None:
        pass
    run.cancel()
    assert run.wait(5)
    assert run._result == "partial"


def test_cancel_before_start_never_runs_the_work() -> None:
    run = _Sleeper(30)
    run.cancel()
    run.start()
    assert run.wait(5)
    assert run._result == "partial"


def test_a_failing_run_reports_one_line() -> None:
    run = _Sleeper(0, fail=True).start()
    assert run.wait(5)
    assert run._error == "bad configuration"
    run.cancel()  # after the loop closed: harmless
