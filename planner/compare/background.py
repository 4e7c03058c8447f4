"""A coroutine run on its own thread and event loop, for UIs that poll it (Live Compare, Load Test).

The Streamlit script thread must never parse streams itself: a page starts a run, then polls a frozen
snapshot from a fragment. Subclasses say what to run (:meth:`BackgroundRun._run`), how to stop it from
inside the loop (:meth:`BackgroundRun._stop_in_loop`) and what a cancelled run returns
(:meth:`BackgroundRun._partial`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

__all__ = ["BackgroundRun"]


class BackgroundRun:
    """Owns one daemon thread with a fresh event loop; thread-safe ``cancel``, ``wait`` and ``done``.

    Attributes set for subclasses: ``_lock`` (guards their state), ``_cancelled``, ``_error`` (one line when
    the run itself failed), ``_result`` (what :meth:`_run` returned, or :meth:`_partial` after a cancel) and
    ``_loop`` (the running loop, once started).
    """

    def __init__(self, thread_name: str) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._cancelled = False
        self._error: str | None = None
        self._result: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._main, name=thread_name, daemon=True)

    async def _run(self) -> Any:
        """The work, run in the background loop (subclasses)."""
        raise NotImplementedError

    def _stop_in_loop(self) -> None:
        """Stop the work; called in the background loop's thread (subclasses)."""
        raise NotImplementedError

    def _partial(self) -> Any:
        """The result of a run the cancel interrupted (subclasses may override)."""
        return None

    def start(self) -> BackgroundRun:
        """Start the worker thread (once); returns self."""
        if not self._thread.is_alive() and not self._done.is_set():
            self._thread.start()
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                self._result = loop.run_until_complete(self._run())
            except asyncio.CancelledError:
                self._result = self._partial()
            except Exception as exc:  # the run itself failed (configuration); shown as one line
                self._error = " ".join(str(exc).split()) or type(exc).__name__
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._done.set()

    def cancel(self) -> None:
        """Stop the run. Safe from any thread, any number of times, before or after it started."""
        self._cancelled = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._stop_in_loop)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the run is done (or ``timeout_s`` passes); True when done."""
        return self._done.wait(timeout_s)

    @property
    def done(self) -> bool:
        """The run has finished."""
        return self._done.is_set()
