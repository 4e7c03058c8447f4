"""A worker child for the tests of :mod:`planner.serving.worker_process`: ``python -m tests.servers.sleep_child``.

Payload ``(mode, seconds)``: ``sleep`` emits ``tick``, then ``finished`` after ``seconds`` or ``stopped`` when asked
to stop; ``fail`` raises; ``exit`` leaves with exit code 3 without a word.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from planner.serving.worker_process import run_child


async def _work(payload: Any, emit: Callable[..., None], stop: asyncio.Event) -> None:
    mode, seconds = payload
    if mode == "fail":
        raise ValueError("bad\nconfiguration")
    if mode == "exit":
        os._exit(3)
    emit("tick", 1)
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        emit("finished", seconds)
        return
    emit("stopped", True)


if __name__ == "__main__":
    run_child(_work)
