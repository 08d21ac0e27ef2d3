"""The work queue never runs a key twice at once and never loses one (state machine)."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kubetrain.operator.runtime import ratelimit, workqueue

KEYS = st.sampled_from(["a", "b", "c", "d"])


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

    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.queue.add(key)
        self.owed.add(key)

    @rule(key=KEYS, delay=st.floats(0, 2))
    def add_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)
        self.owed.add(key)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        self.queue.add_rate_limited(key)
        self.owed.add(key)

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)

    @rule(seconds=st.floats(0, 3))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule()
    def take(self) -> None:
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
    def nothing_owed_is_lost(self) -> None:
        assert self.owed <= self.queue.pending()

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
        assert self.owed <= seen
        assert len(self.queue) == 0


TestQueueMachine = QueueMachine.TestCase
