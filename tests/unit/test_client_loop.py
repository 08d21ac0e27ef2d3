"""The client's private event loop ends as ``asyncio.run`` would: nothing left pending or open."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncGenerator

import pytest

from kubetrain.client import loop


def test_closing_the_loop_finishes_pending_tasks_and_closes_abandoned_generators(
    caplog: pytest.LogCaptureFixture,
) -> None:
    closed: list[str] = []

    async def stream() -> AsyncGenerator[int, None]:
        try:
            while True:
                yield 1
                await asyncio.sleep(0)
        finally:
            closed.append("stream")  # where a watch closes its HTTP stream

    runner = loop.Loop()
    generators = [stream()]
    background: set[asyncio.Task[None]] = set()

    async def leave_work_behind() -> None:
        async for _ in generators[0]:
            break  # abandoned, as a wait that ends on the job's outcome leaves its watch
        background.add(asyncio.create_task(asyncio.sleep(3600)))

    caplog.set_level(logging.ERROR, logger="asyncio")
    runner.run(leave_work_behind())
    runner.close()

    assert closed == ["stream"]
    (task,) = background
    assert task.cancelled()
    del task
    generators.clear()
    background.clear()
    gc.collect()
    assert not [r for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
