"""Fixtures for the live-compare tests: the timed SSE server (tests/servers/timed_sse.py) in its own process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.timed_sse import TimedServer


@pytest.fixture(scope="session")
def timed_server() -> Iterator[TimedServer]:
    """The timed server on an ephemeral 127.0.0.1 port, health-polled at start, terminated after the session."""
    with TimedServer() as server:
        yield server


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on 127.0.0.1 whose port was just bound and released, so nothing listens there."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
