"""The Live Compare worker process, ``python -m planner.compare.worker`` (see :mod:`planner.serving.worker_process`):
it runs :func:`planner.compare.run.run_compare` and sends every stream update back to :class:`~planner.compare.run.
CompareRun`, then the result. A module of its own, so what it pickles is named after the modules the app imports."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from planner.compare.run import run_compare
from planner.serving.worker_process import run_child

__all__: list[str] = []


async def _work(payload: Any, emit: Callable[..., None], stop: asyncio.Event) -> None:
    endpoints, request, repeat, timeout_s, secrets = payload
    run = asyncio.create_task(
        run_compare(
            endpoints,
            request,
            repeat=repeat,
            timeout_s=timeout_s,
            on_event=lambda update: emit("event", update),
            secrets=secrets,
        )
    )
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({run, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if not run.done():
        run.cancel()  # streams in flight end as "cancelled" records, already sent as events
    with contextlib.suppress(asyncio.CancelledError):
        emit("result", await run)


if __name__ == "__main__":
    run_child(_work)
