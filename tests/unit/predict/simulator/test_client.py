"""The client and the API server: send times and arrivals at the engine, worked by hand."""

from __future__ import annotations

from collections import deque

import pytest

from planner.predict.simulator.client import Client, Frontend
from planner.predict.simulator.requests import RequestTable

#: 3 ms + 0.1 ms per prompt token in, 2 ms + 0.1 ms per token between arrivals, 1 ms out
FRONTEND = Frontend(in_s=0.003, in_per_token_s=1e-4, gap_s=0.002, gap_per_token_s=1e-4, out_s=0.001)


def test_a_burst_reaches_the_engine_one_request_after_another() -> None:
    # three 10-token prompts sent at 0: alone each would arrive at 3 + 1 = 4 ms; the second waits 2 + 1 ms behind
    # the first (7 ms), the third behind the second (10 ms)
    requests = RequestTable([(10, 5)] * 3, [0.0, 0.0, 0.0])
    client = Client(requests, FRONTEND, cap=3)
    assert requests.arrival == pytest.approx([0.004, 0.007, 0.010], abs=1e-12)
    waiting: deque[int] = deque()
    client.deliver(0.007, waiting)
    assert list(waiting) == [0, 1]
    assert client.next_arrival_s() == pytest.approx(0.010)


def test_a_capped_client_sends_when_a_slot_frees() -> None:
    # one slot: the second request (due at 0) is sent when the client has read the first's last token (engine done
    # at 50 ms, read 1 ms later), and reaches an idle API server 3 + 1 ms after that
    requests = RequestTable([(10, 5)] * 2, [0.0, 0.0])
    client = Client(requests, FRONTEND, cap=1)
    assert requests.sent[1] != requests.sent[1]  # NaN: not sent yet
    client.request_done(0.050)
    assert requests.sent[1] == pytest.approx(0.051)
    assert requests.arrival[1] == pytest.approx(0.055)
    client.request_done(0.100)  # nothing left to send
    assert len(client.pending) == 2
