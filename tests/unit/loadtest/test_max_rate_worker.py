"""planner.loadtest.max_rate_worker without a process: the child's work with the search replaced at the boundary,
and what :class:`MaxRateRun` keeps of each message (its worker is never started here)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from planner.loadtest import max_rate_worker
from planner.loadtest.max_rate import MaxRateSpec
from planner.loadtest.max_rate_worker import MaxRateRun, MaxRateSnapshot
from planner.loadtest.settings import LoadSettings
from planner.metrics.slo import parse_slos
from planner.serving.endpoints import Endpoint

ENDPOINT = Endpoint("a", "vllm", "http://127.0.0.1:9")
SPEC = MaxRateSpec(base=LoadSettings(), slos=parse_slos(["ttft_p99_ms=500"]), max_steps=5)
STARTED = datetime(2026, 12, 1, 12, 0, 0)


def test_the_child_sends_each_step_then_the_answer(monkeypatch) -> None:
    asked = {}

    async def find_max_rate(endpoint, spec, *, on_step, emit, secrets, stop, started, tag):
        asked.update(endpoint=endpoint, spec=spec, secrets=secrets, started=started, tag=tag)
        emit("progress", "p")
        on_step("step 1")
        on_step("step 2")
        return "the answer"

    monkeypatch.setattr(max_rate_worker, "find_max_rate", find_max_rate)
    emitted: list[tuple] = []

    async def main() -> None:
        payload = (ENDPOINT, SPEC, STARTED, {"KEY": "x"}, "12:00:00")
        await max_rate_worker._work(payload, lambda *m: emitted.append(m), asyncio.Event())

    asyncio.run(main())
    assert emitted == [("progress", "p"), ("step", "step 1"), ("step", "step 2"), ("answer", "the answer")]
    assert asked == {"endpoint": ENDPOINT, "spec": SPEC, "secrets": {"KEY": "x"}, "started": STARTED,
                     "tag": "12:00:00"}  # fmt: skip


def test_the_snapshot_keeps_what_the_messages_said() -> None:
    run = MaxRateRun(ENDPOINT, SPEC, started=STARTED, secrets={"KEY": "x"})
    assert run.snapshot() == MaxRateSnapshot(max_steps=5)
    for kind, payload in [
        ("job", (0,)),
        ("progress", ("half",)),
        ("step", ("s1",)),
        ("saved", ("run 1",)),
        ("job", (1,)),  # a new run: its progress starts again
        ("step", ("s2",)),
        ("error", ("b: no API key",)),
        ("answer", ("found",)),
        ("sample", ("ignored",)),
    ]:
        run._apply(kind, payload)
    run._error("lost contact with the max-rate search process")
    snap = run.snapshot()
    assert (snap.steps, snap.saved, snap.progress, snap.result) == (("s1", "s2"), ("run 1",), None, "found")
    assert snap.errors == ("b: no API key", "lost contact with the max-rate search process")
    assert (snap.done, snap.cancelled, snap.max_steps) == (False, False, 5)
    run.cancel()  # never started: only marks it
    assert run.snapshot().cancelled
