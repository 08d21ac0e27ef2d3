"""A work queue of keys with client-go's guarantees, for asyncio workers.

- **One worker per key.** A key being processed is never handed out again until
  :meth:`WorkQueue.done`; if it is added meanwhile it is marked dirty and queued once
  more after ``done`` — so no change is lost and none is processed twice at once.
- **Deduplication.** A key waiting in the queue is there once, however often it is added.
- **Delays.** :meth:`add_rate_limited` for errors, with the delay from a :mod:`~.ratelimit`
  limiter, and :meth:`add_after`: a key delayed twice keeps the earlier time. A successful
  pass says *when* to look again, and that is all it needs: :meth:`schedule` replaces the
  key's delay, or drops it. client-go keeps every timer, so a job held for minutes and then
  written for another reason still has its pass run minutes later, for nothing — ten
  thousand of them kept an idle operator busy. A dropped delay leaves its entry in the
  timers' heap, dead, until it comes due — up to an hour for a running job's goodput refresh,
  holding the key of a job long gone: so the heap is rebuilt without its dead entries once
  they outnumber the live ones, and it holds no more than twice the keys delayed now.
- **Priorities.** A key is added with a priority (:data:`NORMAL` unless said otherwise) and
  the highest waiting priority is handed out first, in order of adding within one; a key
  added again with a higher priority moves up, never down. The controller gives a job's
  first pass (and everything the initial list brings) :data:`LOW`, so thousands of new jobs
  never hold back the status of a job whose pods just changed — controller-runtime's
  priority queue does the same. :data:`BACKGROUND` is below both, for work that only fills idle
  time (a job's progress), and :meth:`highest_waiting` tells such work whether anything else
  waits.

The bookkeeping is synchronous (:meth:`get_nowait`) and driven by an injected clock, so
it is property-tested without an event loop; :meth:`get` is the async wait around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from kubetrain.operator.runtime import ratelimit

__all__ = ["BACKGROUND", "LOW", "NORMAL", "NoMetrics", "QueueMetrics", "WorkQueue"]

K = TypeVar("K", bound=Hashable)

NORMAL = 0
LOW = -100
BACKGROUND = -200


class QueueMetrics(Protocol):
    def added(self) -> None: ...
    def depth(self, depth: int) -> None: ...
    def started(self, waited: float, priority: int) -> None: ...
    def finished(self, worked: float) -> None: ...
    def retried(self) -> None: ...


class NoMetrics:
    def added(self) -> None:
        pass

    def depth(self, depth: int) -> None:
        pass

    def started(self, waited: float, priority: int) -> None:
        pass

    def finished(self, worked: float) -> None:
        pass

    def retried(self) -> None:
        pass


class WorkQueue(Generic[K]):
    def __init__(
        self,
        rate_limiter: ratelimit.RateLimiter | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self._limiter = rate_limiter or ratelimit.controller_default(clock)
        self._clock = clock
        self._metrics = metrics or NoMetrics()
        # (-priority, sequence, key); an entry is live while _waiting holds its sequence.
        self._heap: list[tuple[int, int, K]] = []
        self._waiting: dict[K, int] = {}
        # key -> the priority it is owed at: waiting, or to be queued again when done
        self._dirty: dict[K, int] = {}
        self._processing: dict[K, float] = {}
        self._queued_at: dict[K, float] = {}
        self._delayed: list[tuple[float, int, K]] = []
        self._delayed_at: dict[K, float] = {}
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._shutting_down = False

    # --- adding ----------------------------------------------------------------------------

    def add(self, key: K, priority: int = NORMAL) -> None:
        if self._shutting_down:
            return
        owed = self._dirty.get(key)
        if owed is not None:
            if priority > owed:
                self._dirty[key] = priority
                if key in self._waiting:
                    self._push(key, priority)
            return
        self._metrics.added()
        self._dirty[key] = priority
        self._queued_at.setdefault(key, self._clock())
        if key in self._processing:
            return  # queued again by done()
        self._push(key, priority)

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        ready = self._clock() + delay
        if self._delayed_at.get(key, float("inf")) <= ready:
            return
        self._delayed_at[key] = ready
        heapq.heappush(self._delayed, (ready, next(self._seq), key))
        self._drop_dead_delays()  # a later entry of the key is dead now
        self._wakeup.set()

    def schedule(self, key: K, delay: float | None) -> None:
        """Hand ``key`` out again after ``delay``, instead of any earlier delay; never if ``None``."""
        self._delayed_at.pop(key, None)  # its heap entry is dead now: skipped when due
        if delay is not None:
            self.add_after(key, delay)
        else:
            self._drop_dead_delays()

    def add_rate_limited(self, key: K) -> None:
        self._metrics.retried()
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.retries(key)

    # --- taking ----------------------------------------------------------------------------

    def get_nowait(self) -> K | None:
        """The next key, now in processing; ``None`` if nothing is due."""
        self._promote_due()
        while self._heap:
            negated, seq, key = heapq.heappop(self._heap)
            if self._waiting.get(key) == seq:
                break
        else:
            return None
        del self._waiting[key]
        del self._dirty[key]
        now = self._clock()
        self._processing[key] = now
        self._metrics.started(now - self._queued_at.pop(key, now), -negated)
        self._metrics.depth(len(self._waiting))
        return key

    async def get(self) -> K | None:
        """Wait for the next key; ``None`` once the queue is shut down."""
        while True:
            key = self.get_nowait()
            if key is not None:
                return key
            if self._shutting_down:
                return None
            timeout = self._delayed[0][0] - self._clock() if self._delayed else None
            # No await between the check above and clear(): no wake-up can be missed.
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    def done(self, key: K) -> None:
        started = self._processing.pop(key, None)
        if started is not None:
            self._metrics.finished(self._clock() - started)
        owed = self._dirty.get(key)
        if owed is not None:
            self._push(key, owed)

    # --- state -----------------------------------------------------------------------------

    def shut_down(self) -> None:
        self._shutting_down = True
        self._wakeup.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._waiting)

    def sizes(self) -> dict[str, int]:
        """The keys each of its maps holds: all empty once every key was handed out and forgotten."""
        return {
            "waiting": len(self._waiting),
            "dirty": len(self._dirty),
            "processing": len(self._processing),
            "delayed": len(self._delayed),  # entries, dead ones too: each holds its key
            "backoff": len(self._limiter),
        }

    def highest_waiting(self) -> int | None:
        """The priority of the key handed out next, if one waits (delayed keys do not wait yet)."""
        self._promote_due()
        while self._heap and self._waiting.get(self._heap[0][2]) != self._heap[0][1]:
            heapq.heappop(self._heap)  # dead: its key moved up, or was handed out
        return -self._heap[0][0] if self._heap else None

    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    def pending(self) -> frozenset[K]:
        """Every key that will still be handed out: queued, dirty or delayed."""
        return frozenset(self._dirty) | frozenset(self._delayed_at)

    def unfinished_seconds(self) -> float:
        now = self._clock()
        return sum(now - t for t in self._processing.values())

    def longest_running_seconds(self) -> float:
        now = self._clock()
        return max((now - t for t in self._processing.values()), default=0.0)

    def _promote_due(self) -> None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            ready, _, key = heapq.heappop(self._delayed)
            if self._delayed_at.get(key) == ready:
                del self._delayed_at[key]
                self.add(key)

    def _drop_dead_delays(self) -> None:
        """Rebuild the timers' heap without its dead entries once they outnumber the live ones
        (each rebuild drops at least half of what it walks: amortised O(1) per entry)."""
        if len(self._delayed) > 2 * len(self._delayed_at):
            self._delayed = [e for e in self._delayed if self._delayed_at.get(e[2]) == e[0]]
            heapq.heapify(self._delayed)

    def _push(self, key: K, priority: int) -> None:
        # A key moved up leaves its old entry behind, dead: skipped when popped.
        seq = next(self._seq)
        self._waiting[key] = seq
        heapq.heappush(self._heap, (-priority, seq, key))
        self._metrics.depth(len(self._waiting))
        self._wakeup.set()
