"""Unit tests open no socket and start no process (house style rule 21): servers belong to ``tests/integration/``.

From the start of a unit test's setup (so a session-scoped server fixture it asks for is caught too) to the end of its
teardown, the ways out of the process are blocked: ``socket.socket.connect``/``connect_ex``/``bind``,
``subprocess.Popen``, ``os.fork``/``os.posix_spawn`` and ``multiprocessing``'s ``Process.start``. A blocked call
raises :class:`LeftTheProcess` (not an ``OSError``, so client code cannot take it for a refused connection and carry
on) and is noted, so the test fails at teardown even when the call happened in a thread that swallowed the error.
``socket.socketpair`` (asyncio's self-pipe) stays allowed: it never leaves the process.
"""

from __future__ import annotations

import multiprocessing.process
import os
import platform
import socket
import subprocess
from collections.abc import Callable, Iterator

import pytest

# The openai SDK names the platform in its headers; the standard library reads the processor with ``uname -p`` in a
# subprocess the first time it is asked, and caches it: ask once here, before any test's block is in place.
platform.processor()

_PATCHES = pytest.StashKey[pytest.MonkeyPatch]()
_SEEN = pytest.StashKey[list[str]]()


class LeftTheProcess(RuntimeError):
    """A unit test tried to open a socket or start a process."""


def _blocked(what: str, seen: list[str]) -> Callable[..., object]:
    def refuse(*args: object, **kwargs: object) -> object:
        seen.append(what)
        raise LeftTheProcess(f"a unit test may not {what}: move the test to tests/integration/")

    return refuse


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Block sockets and processes before the test's fixtures are set up."""
    patches, seen = pytest.MonkeyPatch(), []
    for name in ("connect", "connect_ex", "bind"):
        patches.setattr(socket.socket, name, _blocked(f"call socket.{name}", seen))
    patches.setattr(subprocess.Popen, "__init__", _blocked("start a subprocess", seen))
    patches.setattr(os, "fork", _blocked("fork", seen))
    patches.setattr(os, "posix_spawn", _blocked("posix_spawn a process", seen))
    patches.setattr(multiprocessing.process.BaseProcess, "start", _blocked("start a multiprocessing Process", seen))
    item.stash[_PATCHES], item.stash[_SEEN] = patches, seen


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Lift the blocks after the test's teardown; fail the test if it tried to leave the process."""
    try:
        return (yield)
    finally:
        item.stash[_PATCHES].undo()
        seen = item.stash[_SEEN]
        if seen:
            raise LeftTheProcess(f"a unit test may not {seen[0]} (tests/unit opens no socket and starts no process)")
