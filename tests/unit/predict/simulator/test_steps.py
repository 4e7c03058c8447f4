"""The step log: each step's row of terms rebuilt in order from the three forms the schedulers record."""

from __future__ import annotations

import numpy as np
import pytest

from planner.predict.simulator.steps import StepLog
from planner.predict.step_time import TERMS
from tests.unit.predict.conftest import TEN_MS, tiny_shape

COL = {name: i for i, name in enumerate(TERMS)}


def test_rows_steps_and_decode_runs_in_order() -> None:
    # tiny_shape: one layer, 1 KV byte per token, every rate 1, so each column is a count worked by hand
    shape = tiny_shape()
    log = StepLog(TEN_MS)
    rows = np.zeros((1, len(TERMS)))
    rows[0, COL["step"]] = 1.0
    assert log.record_rows(rows, 4.0).tolist() == pytest.approx([0.010])  # a 10 ms row from 0
    # a step of 2 decodes (context 10) and a 5-token prefill chunk that completes: 3 sequences, 3 sampled
    log.record_step(0.010, 2, 3, 3, [10.0], 5, [15.0], [0.0])
    # 3 decode-only steps of 2 sequences from context 12, growing 2 a step (their ends appended by the scheduler)
    log.ends.extend([0.030, 0.040, 0.050])
    log.record_decode_run(2, 3, 2, 2, [12.0], [2.0])
    f = log.features(shape, 8e-6)
    assert f.shape == (5, len(TERMS))
    assert f[:, COL["seq"]].tolist() == [0.0, 3.0, 2.0, 2.0, 2.0]
    # KV reads and writes: context plus the step's tokens (7, then 2 a step)
    assert f[1:, COL["kv"]].tolist() == pytest.approx([10 + 7, 12 + 2, 14 + 2, 16 + 2])
    # matmul FLOPs (1 per token): the decodes, the prefill chunk apart
    assert f[1:, COL["decode_flops"]].tolist() == pytest.approx([2, 2, 2, 2])
    assert f[1:, COL["prefill_flops"]].tolist() == pytest.approx([5, 0, 0, 0])
    assert log.ends == pytest.approx([0.010, 0.020, 0.030, 0.040, 0.050])
    assert log.running_sum == 4 + 3 + 3 * 2
    log.forget()
    assert log.ends == [] and log.now == pytest.approx(0.020)  # the clock stays (record_step moved it last)
