"""Measurements in a process of their own: the parent that starts and polls it, and the child's main loop.

Why a process: a Streamlit server is one Python process; streams read on one of its threads share the GIL with
every page render (the live charts redraw twice a second), which delayed chunk handling by 100–400 ms: the page
reported worse latency than the CLI for the same load (Load Test), and Live Compare saw a 12-token answer arrive
in one 15 ms burst 0.5 s after a 150 ms first token. So Live Compare and Load Test both run in a child process,
``python -m <module>``, whose module calls :func:`run_child`.

Protocol: every child is ``python -m planner.serving.worker_process`` (:func:`child_main`). The parent writes the
name of the worker module to its stdin, pickled, and then one pickled payload (the work and any API keys: never argv
or the environment); the child runs that module as ``__main__`` (as ``python -m <module>`` would), which calls
:func:`run_child`; it writes one pickled message tuple ``(kind, *payload)`` per state change to its stdout and ends
with ``("done",)``. One byte on the child's stdin, or stdin closing (the app went away), asks it to stop. A run that
nobody polled for ``abandoned_s`` seconds (its browser tab was closed) is stopped the same way.

A spare child (:func:`warm_worker`): a cold child spends its first 1-3 s importing (the OpenAI SDK, pandas, the load
test's runner: 1.2 s of CPU on the 2-core development machine), and a run's first request waited for that after the
click. So the pages start one child ahead of time, which imports every worker module (:data:`WORKER_MODULES`) and then
waits for its module's name; :meth:`WorkerProcess.start` takes it when it was started with the same interpreter and
environment, else starts a cold one. One spare at most per app process; it leaves when the app does (its stdin
closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import pickle
import runpy
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = [
    "ABANDONED_S",
    "WORKER_MODULES",
    "ProcessRun",
    "WorkerProcess",
    "child_main",
    "run_child",
    "spare_pid",
    "warm_worker",
]

#: A run whose state nobody has asked for this long (its page was closed) is stopped, seconds.
ABANDONED_S = 300.0
#: The worker modules the app starts; a spare child imports them all before it is needed.
WORKER_MODULES = ("planner.compare.worker", "planner.loadtest.worker", "planner.loadtest.max_rate_worker")
_ROOT = Path(__file__).resolve().parents[2]
_PRELOAD_FLAG = "--preload"

_spare_lock = threading.Lock()
#: The spare child and the environment it was started with (see :func:`warm_worker`).
_spare: tuple[subprocess.Popen[bytes], dict[str, str]] | None = None


def _child_environment() -> dict[str, str]:
    """A child's environment: this process's, with the repository on ``PYTHONPATH`` (the package is not installed)."""
    path = os.pathsep.join(filter(None, (str(_ROOT), os.environ.get("PYTHONPATH"))))
    return {**os.environ, "PYTHONPATH": path}


def _spawn(env: dict[str, str], *, preload: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "planner.serving.worker_process", *([_PRELOAD_FLAG] if preload else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=_ROOT,
        env=env,
    )


def _retire(proc: subprocess.Popen[bytes]) -> None:
    """Stop a spare that will not be used (it holds no work: killing it loses nothing, and its imports stop using a
    core) and reap it on a thread of its own."""

    def reap() -> None:
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                pipe.close()  # type: ignore[union-attr]

    with contextlib.suppress(OSError):
        proc.kill()
    threading.Thread(target=reap, name="spare-worker-reaper", daemon=True).start()


def warm_worker() -> bool:
    """Have one spare worker process started (importing :data:`WORKER_MODULES`), for the next run to take.

    Idempotent and thread-safe: a spare that is alive and was started with today's environment is kept; one that
    died or whose environment has changed since is replaced.

    Returns:
        True when a new spare was started now.
    """
    global _spare
    env = _child_environment()
    with _spare_lock:
        if _spare is not None and _spare[0].poll() is None and _spare[1] == env:
            return False
        if _spare is not None:
            _retire(_spare[0])
        _spare = (_spawn(env, preload=True), env)
        return True


def spare_pid() -> int | None:
    """The process id of the spare child waiting for a run, None when there is none (for tests and logs)."""
    with _spare_lock:
        return None if _spare is None or _spare[0].poll() is not None else _spare[0].pid


def _take_child() -> subprocess.Popen[bytes]:
    """The spare child when it is alive and has this process's environment (it is then no longer the spare), else a
    cold child started now."""
    global _spare
    env = _child_environment()
    with _spare_lock:
        spare, _spare = _spare, None
    if spare is not None:
        if spare[0].poll() is None and spare[1] == env:
            return spare[0]
        _retire(spare[0])
    return _spawn(env, preload=False)


class WorkerProcess:
    """The parent side: start ``python -m module`` with ``payload``, hand every message to ``apply``.

    ``apply(kind, payload)`` runs on a reader thread, one message at a time. :meth:`poll` marks the run as watched.

    Args:
        module: The child's module, e.g. ``"planner.loadtest.worker"``.
        payload: What the child reads first (picklable).
        apply: Called with each message ``(kind, payload tuple)``, except ``done``.
        on_error: Called with one line when the child cannot be heard (a broken pipe, a bad message) or exits
            with an error, unless it was cancelled.
        name: Thread names' prefix, and the process's name in error lines.
        abandoned_s: Seconds without :meth:`poll` after which the run is stopped (None = never).
    """

    def __init__(
        self,
        module: str,
        payload: Any,
        *,
        apply: Callable[[str, tuple[Any, ...]], None],
        on_error: Callable[[str], None],
        name: str,
        abandoned_s: float | None = ABANDONED_S,
    ) -> None:
        self._module = module
        self._payload = payload
        self._apply = apply
        self._on_error = on_error
        self._name = name
        self._abandoned_s = abandoned_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._done = threading.Event()
        self._write_lock = threading.Lock()
        self.cancelled = False
        self._last_poll = time.monotonic()

    def start(self) -> WorkerProcess:
        """Start the child (once); returns self."""
        if self._proc is not None:
            return self
        self._proc = _take_child()
        assert self._proc.stdin is not None
        try:
            pickle.dump(self._module, self._proc.stdin)
            pickle.dump(self._payload, self._proc.stdin)
            self._proc.stdin.flush()
        except OSError:  # the child died before reading (a spare killed from outside): the reader reports its exit
            pass
        threading.Thread(target=self._read, name=f"{self._name}-reader", daemon=True).start()
        if self._abandoned_s is not None:
            threading.Thread(target=self._watchdog, name=f"{self._name}-watchdog", daemon=True).start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            while True:
                try:
                    kind, *payload = pickle.load(self._proc.stdout)
                except EOFError:
                    break
                if kind == "done":
                    break
                self._apply(kind, tuple(payload))
        except Exception as exc:  # a broken pipe or a message that does not unpickle
            self._on_error(f"lost contact with the {self._name} process: {exc}")
        finally:
            code = self._proc.wait()
            for pipe in (self._proc.stdin, self._proc.stdout):
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()
            if code not in (0, None) and not self.cancelled:
                self._on_error(f"the {self._name} process ended unexpectedly (exit code {code})")
            self._done.set()

    def _watchdog(self) -> None:
        assert self._abandoned_s is not None
        while not self._done.wait(min(5.0, self._abandoned_s / 4)):
            if time.monotonic() - self._last_poll > self._abandoned_s:
                self._on_error(f"cancelled: nobody watched this run for {self._abandoned_s:.0f} s")
                self.cancel()
                return

    @property
    def pid(self) -> int | None:
        """The child's process id, None before :meth:`start`."""
        return None if self._proc is None else self._proc.pid

    def poll(self) -> None:
        """Mark the run as watched (a page asked for its state)."""
        self._last_poll = time.monotonic()

    def cancel(self) -> None:
        """Ask the child to stop (safe from any thread, any number of times)."""
        self.cancelled = True
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with self._write_lock, contextlib.suppress(OSError, ValueError):  # ValueError: already closed
                proc.stdin.write(b"c")
                proc.stdin.flush()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the child has exited (or ``timeout_s`` passes); True when it has."""
        return self._done.wait(timeout_s)

    @property
    def done(self) -> bool:
        """The child has exited and every message was applied."""
        return self._done.is_set()


class ProcessRun:
    """What a page holds of a run in a worker process: start, cancel, wait, done.

    A subclass calls :meth:`__init__` with its worker module, payload and name, and defines ``_apply(kind,
    payload)``, called under :attr:`_lock` for each message; the worker's stderr lines and fatal error land in
    :attr:`_errors`.
    """

    def __init__(self, module: str, payload: Any, *, name: str, abandoned_s: float | None = ABANDONED_S) -> None:
        self._lock = threading.Lock()
        self._errors: list[str] = []
        self._worker = WorkerProcess(
            module, payload, apply=self._apply, on_error=self._error, name=name, abandoned_s=abandoned_s
        )

    def _apply(self, kind: str, payload: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def _error(self, line: str) -> None:
        with self._lock:
            self._errors.append(line)

    def start(self) -> ProcessRun:
        """Start the worker process (once); returns self."""
        self._worker.start()
        return self

    def cancel(self) -> None:
        """Stop the run; what finished is kept. Safe from any thread, any number of times."""
        self._worker.cancel()

    @property
    def pid(self) -> int | None:
        """The worker process's id, None before :meth:`start`."""
        return self._worker.pid

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the run is done (or ``timeout_s`` passes); True when done."""
        return self._worker.wait(timeout_s)

    @property
    def done(self) -> bool:
        """The run has finished (normally, cancelled or with an error) and every message was applied."""
        return self._worker.done


def run_child(work: Callable[[Any, Callable[..., None], asyncio.Event], Awaitable[None]]) -> None:
    """The child's main: read the payload, run ``work(payload, emit, stop)`` in an event loop, then exit.

    ``emit(kind, *payload)`` writes one message (thread-safe); ``stop`` is set when the parent asks to stop or
    goes away. An exception from ``work`` is reported as ``("fatal", one line)``; ``("done",)`` always ends the
    stream. Never returns.
    """
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer
    payload = pickle.load(stdin)
    lock = threading.Lock()

    def emit(*message: Any) -> None:
        with lock:
            pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def watch_stdin() -> None:
            stdin.read(1)  # returns on a cancel byte or when the parent closes the pipe
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch_stdin, daemon=True).start()
        await work(payload, emit, stop)

    try:
        asyncio.run(main())
    except Exception as exc:  # the run itself failed (not a request): one line for the page
        emit("fatal", " ".join(str(exc).split()) or type(exc).__name__)
    emit("done")
    # The stdin watcher thread still blocks in a buffered read; a normal interpreter exit would abort on that
    # reader's lock, so leave at once (everything is written and flushed).
    os._exit(0)


def child_main(argv: list[str]) -> None:
    """Main of ``python -m planner.serving.worker_process [--preload]``: import every worker module first when
    ``--preload`` (a spare, see :func:`warm_worker`), read the worker module's name from stdin, then run that module
    as ``__main__``. A spare whose stdin closes before a name comes (the app went away) exits at once."""
    if _PRELOAD_FLAG in argv:
        for module in WORKER_MODULES:
            importlib.import_module(module)
    try:
        module = pickle.load(sys.stdin.buffer)
    except EOFError:
        os._exit(0)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    child_main(sys.argv[1:])
