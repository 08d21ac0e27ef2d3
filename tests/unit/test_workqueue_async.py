"""The work queue's async side: waiting, delayed keys, shutdown, and the default limiter."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from typing import Any

import attrs

from kubetrain.operator.runtime import ratelimit, workqueue


def test_get_waits_for_a_delayed_key_and_shutdown_releases_waiters() -> None:
    async def scenario() -> None:
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue()
        started = time.monotonic()
        q.add_after("later", 0.2)
        q.add_after("later", 5)  # a later time for the same key does not postpone it
        assert await q.get() == "later"
        assert 0.15 <= time.monotonic() - started < 1.0
        q.done("later")
        waiter = asyncio.create_task(q.get())
        await asyncio.sleep(0.05)
        q.shut_down()
        assert await waiter is None
        q.add("ignored")
        assert len(q) == 0

    asyncio.run(scenario())


def test_the_default_limiter_backs_off_per_key_and_limits_overall_rate() -> None:
    now = [0.0]
    limiter = ratelimit.controller_default(clock=lambda: now[0])
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    limiter.forget("a")
    assert limiter.when("a") == 0.005
    assert max(ratelimit.ItemExponentialRateLimiter().when("x") for _ in range(100)) <= 1000
    bucket = ratelimit.BucketRateLimiter(qps=10, burst=100, clock=lambda: now[0])
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert round(bucket.when("one more"), 3) == 0.1
    now[0] += 10  # refilled
    assert bucket.when("again") == 0.0


def test_the_wait_is_reported_with_the_priority_the_key_was_handed_out_at() -> None:
    class Recording(workqueue.NoMetrics):
        def __init__(self) -> None:
            self.started_at: list[int] = []

        def started(self, waited: float, priority: int) -> None:
            self.started_at.append(priority)

    metrics = Recording()
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(metrics=metrics)
    q.add("new", workqueue.LOW)
    q.add("changed")
    q.add("moved up", workqueue.LOW)
    q.add("moved up", 7)
    while q.get_nowait() is not None:
        pass
    assert metrics.started_at == [7, workqueue.NORMAL, workqueue.LOW]


def test_the_queue_s_maps_empty_once_every_key_is_done_and_forgotten_and_the_metric_says_so() -> None:
    from prometheus_client import generate_latest

    from kubetrain.operator.runtime import metrics

    async def scenario() -> None:
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue()
        metrics.remember("test-queue", q.sizes)
        q.add("a")
        q.add("b")
        q.add_after("c", 0.01)
        q.add_rate_limited("d")
        held = q.sizes()
        assert held["waiting"] == 2
        assert held["delayed"] >= 1
        assert held["backoff"] == 1
        assert (
            'kubetrain_remembered_entries{map="waiting",owner="test-queue"} 2.0'
            in generate_latest(metrics.REGISTRY).decode()
        )
        for _ in range(4):
            key = await asyncio.wait_for(q.get(), 5)
            q.done(key)
            q.forget(key)
        assert set(q.sizes().values()) == {0}, q.sizes()

    asyncio.run(scenario())


def test_a_dropped_delay_leaves_no_key_behind() -> None:
    """A job deleted while its next pass waits (a running job's goodput refresh is 10 to 60 minutes
    off) must not stay in the timers' heap until that time: under churn that kept every job of the
    last hour."""

    @attrs.frozen
    class Key:  # a job's key that can say whether anything still holds it
        name: str
        __weakref__: Any = attrs.field(init=False, eq=False, repr=False)

    now = [0.0]
    q: workqueue.WorkQueue[Key] = workqueue.WorkQueue(clock=lambda: now[0])
    keys = [Key(f"job-{i}") for i in range(1000)]
    for key in keys:
        q.schedule(key, 600.0)  # a running job: look again in ten minutes
    kept = Key("kept")
    q.schedule(kept, 900.0)
    for key in keys:
        q.schedule(key, None)  # its pass after it was deleted: no time to look again
    held = [weakref.ref(k) for k in keys]
    del keys, key
    gc.collect()
    # No more dead entries than live ones (one: "kept"), out of a thousand.
    assert sum(r() is not None for r in held) <= 1
    assert q.sizes()["delayed"] <= 2, q.sizes()
    moved = Key("moved")
    for i in range(50):
        q.add_after(moved, 500.0 - i)  # each earlier time leaves the later one dead
    assert q.sizes()["delayed"] <= 4, q.sizes()
    now[0] = 899.0
    assert q.get_nowait() == moved
    assert q.get_nowait() is None
    now[0] = 900.0
    assert q.get_nowait() == kept
    q.done(moved)
    q.done(kept)
    assert set(q.sizes().values()) == {0}, q.sizes()
