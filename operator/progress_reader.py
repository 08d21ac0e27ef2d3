"""The progress reader: the first ranks' agent logs, read off the reconcile workers, on a budget.

Reading a log goes from the apiserver to a kubelet and back. Done in the reconcile itself, one
read a minute for each of 2,000 running jobs kept the 16 workers busy enough that the next
2,000 jobs waited a minute for their first pass, and most were not Running 15 minutes later (the
jobs benchmark with ``--progress``). Done beside the workers, one read a minute per job still
meant 33 log reads and 33 status writes a second at 2,000 jobs, which saturated this machine's
apiserver: other jobs' state changes waited seconds behind them. So the reads share one budget:

- **Operator-wide.** At most ``budget`` reads a second, whatever the number of jobs, so at most as
  many status writes for progress. Each job is read at most once per ``interval``; with more jobs
  than ``budget x interval`` they take turns, oldest reading first, and each is read every
  ``jobs / budget`` seconds instead (2,000 jobs at the default 4 a second: every 500 s).
- **Idle time only.** No read starts while the controller has other work waiting
  (``busy``): a change of state and a new job's first pass go first. A new reading asks for the
  job's pass at :data:`~.runtime.workqueue.BACKGROUND` priority, behind all of them.
- **At most :data:`CONCURRENCY` in flight.** A slow kubelet holds back a few reads, not the rest.

Once the job has finished, its first rank is read a last time, ahead of the running jobs' turns:
the end of a run can outpace the agent's printing, and the status would show a step from before
the end. The agent prints its last line as the kubelet stops it, after the main container ended,
and the kubelet reports a pod Succeeded or Failed only once all its containers have stopped: so
the last read waits for that (``ended``), or :data:`LAST_READ_FALLBACK` for a pod that never gets
there (its node lost). A fixed few seconds after the job finished were too few on a loaded node.

The reconciler only says which pod stands for a job (:meth:`Reader.want`, :meth:`Reader.pause`
while none runs, :meth:`Reader.forget` once the job is gone; from
:func:`.policies.progress.source`) and takes what was read (:meth:`Reader.take`); the step
decides what the status makes of it (:func:`.policies.progress.update`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import math
import time
from collections.abc import Callable

import attrs

from kubetrain.api import naming
from kubetrain.operator.policies import progress
from kubetrain.operator.runtime import client

__all__ = ["BUSY_POLL", "CONCURRENCY", "DEFAULT_BUDGET", "LAST_READ_FALLBACK", "SOON_SECONDS", "Reader"]

# Log reads a second for the whole operator, and so progress status writes a second at most.
DEFAULT_BUDGET = 4.0
# Log reads in flight at once.
CONCURRENCY = 4
# How soon a job whose stop waits for a checkpoint's answer is read again.
SOON_SECONDS = 2.0
# How long after its job finished the first rank is read a last time if its pod is not seen to end
# first (its node lost, or the pod deleted before it ended).
LAST_READ_FALLBACK = 30.0
# How often a reader held back by other work looks again.
BUSY_POLL = 0.5

log = logging.getLogger(__name__)


@attrs.define
class _Job:
    namespace: str
    name: str
    pod: str
    due: float
    seen: progress.Reading | None = None  # the last reading told
    fresh: progress.Reading | None = None  # told, not taken yet
    last: bool = False  # the job finished: read once more, then no more
    done: bool = False  # read that last time
    paused: bool = False  # its first rank does not run now (it ended, or is being made again)


class Reader:
    name = "progress-reader"

    def __init__(
        self,
        api: client.Client,
        *,
        interval: float = progress.DEFAULT_INTERVAL_SECONDS,
        budget: float = DEFAULT_BUDGET,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api, self.interval, self.budget, self.clock = api, interval, budget, clock
        self._jobs: dict[str, _Job] = {}
        # (due, key): last reads, which go first, and the running jobs' turns
        self._last: list[tuple[float, str]] = []
        self._turns: list[tuple[float, str]] = []
        # A token bucket: reads may start while it holds one; it fills at `budget` a second, up to
        # one second's worth.
        self._tokens, self._filled_at = max(1.0, budget), clock()
        self._wakeup = asyncio.Event()
        self._notify: Callable[[str, str], None] = lambda namespace, name: None
        self._busy: Callable[[], bool] = lambda: False

    def listen(self, notify: Callable[[str, str], None], *, busy: Callable[[], bool] = lambda: False) -> None:
        """Call ``notify(namespace, name)`` when a job has a new reading to take; start no read
        while ``busy()``."""
        self._notify, self._busy = notify, busy

    def want(
        self,
        namespace: str,
        name: str,
        pod: str,
        *,
        finished: bool = False,
        ended: bool = False,
        soon: bool = False,
    ) -> None:
        """Read the job's progress from ``pod``: at its turn if it is new, its pod changed or it
        was paused; once ``finished``, a last time (only a job read while it ran): as soon as
        ``pod`` has ``ended`` (every container stopped, its agent's last line printed), else
        :data:`LAST_READ_FALLBACK` later; ``soon``, within :data:`SOON_SECONDS` (a stop waits for
        the answer to a checkpoint request: its reads come before the other jobs' turns, still on
        the budget)."""
        key = f"{namespace}/{name}"
        job = self._jobs.get(key)
        now = self.clock()
        if soon and job is not None and not job.last and not job.paused and job.pod == pod:
            if job.due > now + SOON_SECONDS:
                job.due = now + SOON_SECONDS
                heapq.heappush(self._turns, (job.due, key))
                self._wakeup.set()
            return
        if finished:
            due = now if ended else now + LAST_READ_FALLBACK
            if job is None or job.done or (job.last and job.due <= due):
                return
            job.last, job.paused, job.pod, job.due = True, False, pod, due
        elif job is not None and job.pod == pod and not job.paused:
            return
        else:
            job = _Job(namespace=namespace, name=name, pod=pod, due=now, seen=job.seen if job else None)
            self._jobs[key] = job
        heapq.heappush(self._last if job.last else self._turns, (job.due, key))
        self._wakeup.set()

    def pause(self, namespace: str, name: str) -> None:
        """No reads while the job's first rank does not run; it is still read a last time when
        the job finishes (the pod that ended is there)."""
        job = self._jobs.get(f"{namespace}/{name}")
        if job is not None and not job.last:
            job.paused, job.due = True, math.inf

    def forget(self, namespace: str, name: str) -> None:
        self._jobs.pop(f"{namespace}/{name}", None)

    def sizes(self) -> dict[str, int]:
        """The jobs it reads, and its turns (a forgotten job's turn goes when it comes due)."""
        return {"jobs": len(self._jobs), "turns": len(self._last) + len(self._turns)}

    def take(self, namespace: str, name: str) -> progress.Reading | None:
        """The job's reading not taken yet, if any."""
        job = self._jobs.get(f"{namespace}/{name}")
        if job is None or job.fresh is None:
            return None
        fresh, job.fresh = job.fresh, None
        return fresh

    async def read_due(self) -> int:
        """Read the jobs whose reading is due, as many as the budget allows now and none while
        the controller is busy; how many were read."""
        now = self.clock()
        self._tokens = min(max(1.0, self.budget), self._tokens + (now - self._filled_at) * self.budget)
        self._filled_at = now
        due: list[_Job] = []
        while self._tokens >= 1 and not self._busy():
            job = self._pop(self._last, now) or self._pop(self._turns, now)
            if job is None:
                break
            due.append(job)
            self._tokens -= 1
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(job: _Job) -> None:
            async with gate:
                await self._read(job)

        await asyncio.gather(*(one(j) for j in due))
        return len(due)

    def next_wait(self) -> float | None:
        """Seconds until a read may start (``None``: none is wanted)."""
        heads = [h[0][0] for h in (self._last, self._turns) if h]
        if not heads:
            return None
        wait = min(heads) - self.clock()
        if wait > 0:
            return wait
        if self._busy():
            return BUSY_POLL
        return max(0.0, (1 - self._tokens) / self.budget)

    async def run(self) -> None:
        while True:
            await self.read_due()
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=self.next_wait())

    def _pop(self, heap: list[tuple[float, str]], now: float) -> _Job | None:
        """The first job of ``heap`` due by ``now``; stale entries (forgotten, or wanted anew
        since) are dropped on the way."""
        while heap and heap[0][0] <= now:
            at, key = heapq.heappop(heap)
            job = self._jobs.get(key)
            if job is not None and job.due == at:
                return job
        return None

    async def _read(self, job: _Job) -> None:
        try:
            tail = await self.api.request(
                "GET",
                client.PODS,
                namespace=job.namespace,
                name=job.pod,
                subresource="log",
                params={
                    "container": naming.AGENT,
                    "tailLines": str(progress.TAIL_LINES),
                    "limitBytes": str(progress.TAIL_BYTES),
                },
                text=True,
            )
        except client.ApiError as e:
            # Its agent may be starting, or the pod going: read again an interval later.
            log.debug("no progress from %s/%s: %s", job.namespace, job.pod, e)
            tail = ""
        key = f"{job.namespace}/{job.name}"
        if self._jobs.get(key) is not job:
            return  # forgotten, or wanted from another pod, meanwhile
        if job.last:
            job.done = True
        elif not job.paused:
            job.due = self.clock() + self.interval
            heapq.heappush(self._turns, (job.due, key))
        reading = progress.parse(job.pod, tail)
        if reading is not None and reading != job.seen:
            job.seen = job.fresh = reading
            self._notify(job.namespace, job.name)
