"""The work queue never runs a key twice at once and never loses one (state machine)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kubetrain.operator.runtime import ratelimit, workqueue

KEYS = st.sampled_from(["a", "b", "c", "d"])
PRIORITIES = st.sampled_from([workqueue.BACKGROUND, workqueue.LOW, workqueue.NORMAL, 7])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class QueueMachine(RuleBasedStateMachine):
    """Workers take keys, finish them; keys are added now, later or with backoff; time passes.

    The model: a key that was added must be handed out again after its latest add (or its
    delay) — unless it is handed out and finished — and never while a worker holds it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(
            ratelimit.ItemExponentialRateLimiter(0.005, 1.0), clock=self.clock
        )
        self.held: set[str] = set()
        self.owed: set[str] = set()  # added since it was last handed out
        self.timers: dict[str, float] = {}  # key -> when its delay ends

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.queue.add(key, priority)
        self.owed.add(key)

    @rule(key=KEYS, delay=st.floats(0, 2))
    def add_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)
        self._delay(key, delay, keep_earlier=True)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        delay = min(0.005 * 2 ** self.queue.num_requeues(key), 1.0)
        self.queue.add_rate_limited(key)
        self._delay(key, delay, keep_earlier=True)

    @rule(key=KEYS, delay=st.none() | st.floats(0, 2))
    def schedule(self, key: str, delay: float | None) -> None:
        self.queue.schedule(key, delay)
        self.timers.pop(key, None)
        if delay is not None:
            self._delay(key, delay, keep_earlier=False)

    def _delay(self, key: str, delay: float, *, keep_earlier: bool) -> None:
        if delay <= 0:
            self.owed.add(key)
            return
        ready = self.clock.now + delay
        if not (keep_earlier and self.timers.get(key, ready) < ready):
            self.timers[key] = ready

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)

    @rule(seconds=st.floats(0, 3))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule()
    def take(self) -> None:
        # What is due is promoted before anything is handed out.
        for key, ready in list(self.timers.items()):
            if ready <= self.clock.now:
                del self.timers[key]
                self.owed.add(key)
        key = self.queue.get_nowait()
        if key is None:
            return
        assert key not in self.held, f"{key} handed to a second worker"
        self.held.add(key)
        self.owed.discard(key)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.held)))
        self.held.remove(key)
        self.queue.done(key)

    @invariant()
    def nothing_owed_is_lost_and_no_timer_outlives_its_replacement(self) -> None:
        assert self.queue.pending() == self.owed | set(self.timers)

    @invariant()
    def processing_is_what_workers_hold(self) -> None:
        assert self.queue.processing() == self.held

    def teardown(self) -> None:
        # Drain: finish everything, let all delays pass, take until empty.
        for key in list(self.held):
            self.queue.done(key)
        self.held.clear()
        self.clock.now += 10_000
        seen = set()
        while (key := self.queue.get_nowait()) is not None:
            assert key not in seen, f"{key} handed out twice while draining"
            seen.add(key)
            self.queue.done(key)
        assert self.owed | set(self.timers) == seen
        assert len(self.queue) == 0


TestQueueMachine = QueueMachine.TestCase


@given(st.lists(st.tuples(KEYS, PRIORITIES), max_size=30))
def test_the_highest_priority_waiting_goes_first(adds: list[tuple[str, int]]) -> None:
    """Drained without workers in between: each key once, at the highest priority it was added
    with, highest first, and in order of (last) promotion within a priority; the priority of the
    next one known beforehand."""
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=FakeClock())
    for key, priority in adds:
        queue.add(key, priority)
    drained, tops = [], []
    while True:
        tops.append(queue.highest_waiting())
        if (key := queue.get_nowait()) is None:
            break
        drained.append(key)
    best = {k: max(p for kk, p in adds if kk == k) for k, _ in adds}
    assert sorted(drained) == sorted(best)
    assert tops == [best[k] for k in drained] + [None], "what waits is told before it is handed out"
    assert [best[k] for k in drained] == sorted((best[k] for k in drained), reverse=True)
    # Within a priority: the order in which keys first reached it.
    reached = {}
    for i, (key, priority) in enumerate(adds):
        if priority == best[key] and key not in reached:
            reached[key] = i
    for a, b in itertools.pairwise(drained):
        if best[a] == best[b]:
            assert reached[a] < reached[b]
