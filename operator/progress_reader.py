"""The progress reader: the first ranks' agent logs, read off the reconcile workers.

Reading a log goes from the apiserver to a kubelet and back. Done in the reconcile itself, one
read a minute for each of 2,000 running jobs kept the 16 workers busy enough that the next
2,000 jobs waited a minute for their first pass, and most were not Running 15 minutes later (the
jobs benchmark with ``--progress``). So the reads are done here, beside the workers: at most
:data:`CONCURRENCY` at once, each job's at most once per interval. A reading that says something
new is kept for the job's next pass, which is asked for at low priority, behind every change of
state and every new job. Once the job has finished, its first rank is read a last time: the
resumed end of a run can outpace the agent's printing, and the status would show a step from
before the end.

The reconciler only says which pod stands for a job (:meth:`Reader.want`, :meth:`Reader.pause`
while none runs, :meth:`Reader.forget` once the job is gone; from :func:`.policies.progress.source`) and takes what was read (:meth:`Reader.take`); the step
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

__all__ = ["CONCURRENCY", "LAST_READ_DELAY", "Reader"]

# Log reads in flight at once.
CONCURRENCY = 4
# How long after its job finished the first rank is read a last time: its agent prints its last
# line when the kubelet stops it, after the main container ended.
LAST_READ_DELAY = 5.0

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
    paused: bool = False  # its first rank does not run now (it ended, or is being made again)


class Reader:
    name = "progress-reader"

    def __init__(
        self,
        api: client.Client,
        *,
        interval: float = progress.DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api, self.interval, self.clock = api, interval, clock
        self._jobs: dict[str, _Job] = {}
        self._heap: list[tuple[float, str]] = []
        self._wakeup = asyncio.Event()
        self._notify: Callable[[str, str], None] = lambda namespace, name: None

    def listen(self, notify: Callable[[str, str], None]) -> None:
        """Call ``notify(namespace, name)`` when a job has a new reading to take."""
        self._notify = notify

    def want(self, namespace: str, name: str, pod: str, *, finished: bool = False) -> None:
        """Read the job's progress from ``pod``: at once if it is new, its pod changed or it was
        paused; once ``finished``, a last time (only a job read while it ran),
        :data:`LAST_READ_DELAY` later."""
        key = f"{namespace}/{name}"
        job = self._jobs.get(key)
        now = self.clock()
        if finished:
            if job is None or job.last:
                return
            job.last, job.paused, job.pod, job.due = True, False, pod, now + LAST_READ_DELAY
        elif job is not None and job.pod == pod and not job.paused:
            return
        else:
            job = _Job(namespace=namespace, name=name, pod=pod, due=now, seen=job.seen if job else None)
            self._jobs[key] = job
        heapq.heappush(self._heap, (job.due, key))
        self._wakeup.set()

    def pause(self, namespace: str, name: str) -> None:
        """No reads while the job's first rank does not run; it is still read a last time when
        the job finishes (the pod that ended is there)."""
        job = self._jobs.get(f"{namespace}/{name}")
        if job is not None and not job.last:
            job.paused, job.due = True, math.inf

    def forget(self, namespace: str, name: str) -> None:
        self._jobs.pop(f"{namespace}/{name}", None)

    def take(self, namespace: str, name: str) -> progress.Reading | None:
        """The job's reading not taken yet, if any."""
        job = self._jobs.get(f"{namespace}/{name}")
        if job is None or job.fresh is None:
            return None
        fresh, job.fresh = job.fresh, None
        return fresh

    async def read_due(self) -> int:
        """Read every job whose reading is due; how many were read."""
        now, due = self.clock(), []
        while self._heap and self._heap[0][0] <= now:
            at, key = heapq.heappop(self._heap)
            job = self._jobs.get(key)
            if job is not None and job.due == at:  # else forgotten, or wanted anew since
                due.append(job)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(job: _Job) -> None:
            async with gate:
                await self._read(job)

        await asyncio.gather(*(one(j) for j in due))
        return len(due)

    async def run(self) -> None:
        while True:
            await self.read_due()
            self._wakeup.clear()
            wait = max(0.0, self._heap[0][0] - self.clock()) if self._heap else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=wait)

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
        if not job.last and not job.paused:
            job.due = self.clock() + self.interval
            heapq.heappush(self._heap, (job.due, key))
        reading = progress.parse(job.pod, tail)
        if reading is not None and reading != job.seen:
            job.seen = job.fresh = reading
            self._notify(job.namespace, job.name)
