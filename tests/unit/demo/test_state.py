"""planner.demo.state: the fixed pool and answers, the reset, and the real clock's contract."""

from __future__ import annotations

import asyncio

from planner.demo.state import (
    KV_BLOCK_SIZE,
    KV_BLOCKS_PER_REQUEST,
    KV_NUM_GPU_BLOCKS,
    MAX_MODEL_LEN,
    STATE,
    Clock,
    State,
)


def test_the_fixed_pool() -> None:
    # 2,048 blocks × 16 tokens = 32,768 tokens; a request holds 64 blocks = 1,024 tokens; 32,768 / 4,096 = 8 requests
    assert KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE == 32_768 and KV_BLOCKS_PER_REQUEST * KV_BLOCK_SIZE == 1024
    assert KV_NUM_GPU_BLOCKS * KV_BLOCK_SIZE / MAX_MODEL_LEN == 8.0


def test_reset_forgets_everything() -> None:
    STATE.running, STATE.recorded, STATE.model_id = 3, [{"path": "/x"}], "other"
    STATE.blocks[1] = None
    STATE.reset()
    fresh = State()
    assert (STATE.running, STATE.recorded, STATE.model_id, len(STATE.blocks)) == (0, [], "timed-model", 0)
    assert STATE.ttft_ms == fresh.ttft_ms == 150.0 and isinstance(STATE.clock, Clock)


def test_the_real_clock_never_wakes_early() -> None:
    clock = Clock()

    async def run() -> float:
        target = clock.now() + 0.002
        await clock.sleep_until(target)
        return clock.now() - target

    assert asyncio.run(run()) >= 0.0  # how late is a figure for bench/measurement_accuracy.py, not a test
    assert clock.wall() > 1.7e9  # seconds since the epoch, after 2023
