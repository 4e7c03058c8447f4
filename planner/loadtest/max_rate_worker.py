"""The Load Test page's maximum-rate search in a worker process of its own (``python -m
planner.loadtest.max_rate_worker``), for the reason :class:`planner.loadtest.worker.BenchmarkRun` gives: the page's
renders must not share an interpreter with the client being measured.

The child runs :func:`planner.loadtest.max_rate.find_max_rate` and sends, besides the job queue's own messages
(``progress``, ``saved``, ``error``, ...), one ``("step", MaxRateStep)`` per finished run and ``("answer",
MaxRateResult)`` at the end; :class:`MaxRateRun` keeps them and :meth:`MaxRateRun.snapshot` gives a consistent copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from planner.loadtest.max_rate import MaxRateResult, MaxRateSpec, MaxRateStep, find_max_rate
from planner.loadtest.results import SavedRun
from planner.loadtest.runner import LoadProgress
from planner.serving.endpoints import Endpoint
from planner.serving.worker_process import ABANDONED_S, ProcessRun, run_child

__all__ = ["MaxRateRun", "MaxRateSnapshot", "worker_main"]


@dataclass(frozen=True)
class MaxRateSnapshot:
    """A consistent copy of a :class:`MaxRateRun`'s state.

    Attributes:
        max_steps: most runs of the search.
        steps: runs finished, in order.
        progress: counters of the run in progress; None before its first request finished.
        saved: finished runs as :class:`~planner.loadtest.results.SavedRun` (for the results table).
        result: the answer once the search ended; None before.
        errors: one line per problem (a run that could not start, a lost worker).
        done: the worker has ended.
        cancelled: :meth:`MaxRateRun.cancel` was called.
    """

    max_steps: int
    steps: tuple[MaxRateStep, ...] = field(default=(), repr=False)
    progress: LoadProgress | None = None
    saved: tuple[SavedRun, ...] = field(default=(), repr=False)
    result: MaxRateResult | None = field(default=None, repr=False)
    errors: tuple[str, ...] = ()
    done: bool = False
    cancelled: bool = False


async def _work(payload: Any, emit: Callable[..., None], stop: asyncio.Event) -> None:
    endpoint, spec, started, secrets, tag = payload
    result = await find_max_rate(
        endpoint,
        spec,
        on_step=lambda step: emit("step", step),
        emit=emit,
        secrets=secrets,
        stop=stop,
        started=started,
        tag=tag,
    )
    emit("answer", result)


def worker_main() -> None:
    """Entry of the worker process: the search comes pickled on stdin, its messages go out on stdout."""
    run_child(_work)


class MaxRateRun(ProcessRun):
    """Run a maximum-rate search in a worker process; poll :meth:`snapshot`, stop with :meth:`cancel` (the run in
    progress keeps what finished; no later step starts). A search nobody polls for :data:`ABANDONED_S` seconds is
    cancelled."""

    def __init__(
        self,
        endpoint: Endpoint,
        spec: MaxRateSpec,
        *,
        started: datetime,
        tag: str = "",
        secrets: Mapping[str, Any] | None = None,
    ) -> None:
        self._spec = spec
        self._steps: list[MaxRateStep] = []
        self._saved: list[SavedRun] = []
        self._progress: LoadProgress | None = None
        self._result: MaxRateResult | None = None
        payload = (endpoint, spec, started, dict(secrets) if secrets is not None else None, tag)
        super().__init__("planner.loadtest.max_rate_worker", payload, name="max-rate search", abandoned_s=ABANDONED_S)

    def _apply(self, kind: str, payload: tuple[Any, ...]) -> None:
        with self._lock:
            if kind == "job":
                self._progress = None
            elif kind == "progress":
                self._progress = payload[0]
            elif kind == "step":
                self._steps.append(payload[0])
            elif kind == "saved":
                self._saved.append(payload[0])
            elif kind == "answer":
                self._result = payload[0]
            elif kind in ("error", "fatal"):
                self._errors.append(payload[0])

    def snapshot(self) -> MaxRateSnapshot:
        """A frozen copy of the current state; polling keeps the search alive."""
        self._worker.poll()
        done = self._worker.done
        with self._lock:
            return MaxRateSnapshot(
                max_steps=self._spec.max_steps,
                steps=tuple(self._steps),
                progress=self._progress,
                saved=tuple(self._saved),
                result=self._result,
                errors=tuple(self._errors),
                done=done,
                cancelled=self._worker.cancelled,
            )


if __name__ == "__main__":
    worker_main()
