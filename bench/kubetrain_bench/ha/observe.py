"""What the failover benchmark watches: the Lease, the jobs' status, and every pod and Service made.

Each is a list-then-watch (:func:`kubetrain_bench.watch.list_and_watch`) on the benchmark's own
connection, and every time is the benchmark's clock (``time.perf_counter``) when its watch showed
the change:

- :class:`Lease`: each holder, from when it was first seen holding, and each renewal (the gaps
  between two renewals by one holder say how close a loaded leader came to its renew deadline);
- :class:`Jobs`: each job's ``status.observedGeneration`` and state, and each status write (a
  change of ``.status``); :meth:`Jobs.reflected` is when a job's status first showed a generation;
- :class:`Children`: the uids of every pod (by job, replica type and index) and Service (by
  job) ever seen: a key with two uids is a duplicate (nothing in this benchmark deletes one).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import Callable
from typing import Any

from kubetrain.api import naming
from kubetrain.operator.runtime import client
from kubetrain_bench.watch import list_and_watch

Obj = dict[str, Any]
Clock = Callable[[], float]


class Lease:
    def __init__(self, name: str, clock: Clock) -> None:
        self.name, self.clock = name, clock
        self.holders: list[tuple[float, str]] = []  # (first seen, holder)
        self.renewals: list[tuple[float, str]] = []  # (seen, holder)

    def see(self, obj: Obj) -> None:
        if obj["metadata"]["name"] != self.name:
            return
        now, holder = self.clock(), obj.get("spec", {}).get("holderIdentity") or ""
        if not self.holders or self.holders[-1][1] != holder:
            self.holders.append((now, holder))
        self.renewals.append((now, holder))

    def holder(self) -> str:
        return self.holders[-1][1] if self.holders else ""

    def taken_after(self, t: float, old: str) -> float | None:
        """When a holder other than ``old`` (and not nobody) was first seen after ``t``."""
        return next((at for at, h in self.holders if at > t and h and h != old), None)

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time between two renewals by one holder seen within [start, end]."""
        seen = [(t, h) for t, h in self.renewals if start <= t <= end]
        return max((b - a for (a, h1), (b, h2) in itertools.pairwise(seen) if h1 == h2), default=0.0)


class Jobs:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.generation: dict[str, int] = {}
        self.observed: dict[str, int] = {}
        self.state: dict[str, str] = {}
        self.status_writes: list[float] = []
        self._status: dict[str, Obj] = {}
        self._first: dict[str, dict[int, float]] = collections.defaultdict(dict)

    def see(self, obj: Obj) -> None:
        name, status = obj["metadata"]["name"], obj.get("status") or {}
        now = self.clock()
        if name in self._status and status != self._status[name]:
            self.status_writes.append(now)
        self._status[name] = status
        self.generation[name] = obj["metadata"].get("generation", 0)
        self.state[name] = status.get("state", "")
        observed = status.get("observedGeneration")
        if observed is not None:
            self.observed[name] = observed
            self._first[name].setdefault(observed, now)

    def reflected(self, name: str, generation: int) -> float | None:
        """When the job's status was first seen at ``generation`` or later (None: not yet)."""
        return min((t for g, t in self._first.get(name, {}).items() if g >= generation), default=None)

    def first_write_after(self, t: float) -> float | None:
        return next((w for w in self.status_writes if w > t), None)

    def behind(self) -> list[str]:
        """Jobs whose status does not show their last generation, or that are not Running."""
        return sorted(
            n
            for n, g in self.generation.items()
            if self.observed.get(n, 0) < g or self.state.get(n) != "Running"
        )


class Children:
    def __init__(self) -> None:
        self.pods: dict[tuple[str, str, str], set[str]] = collections.defaultdict(set)
        self.services: dict[str, set[str]] = collections.defaultdict(set)

    def see_pod(self, obj: Obj) -> None:
        labels = obj["metadata"].get("labels") or {}
        key = (
            labels.get(naming.JOB_NAME, ""),
            labels.get(naming.REPLICA_TYPE, ""),
            labels.get(naming.REPLICA_INDEX, ""),
        )
        self.pods[key].add(obj["metadata"]["uid"])

    def see_service(self, obj: Obj) -> None:
        job = (obj["metadata"].get("labels") or {}).get(naming.JOB_NAME, "")
        self.services[job].add(obj["metadata"]["uid"])

    def duplicates(self) -> tuple[int, int]:
        """Pod keys and jobs' Services made more than once."""
        return (
            sum(1 for uids in self.pods.values() if len(uids) > 1),
            sum(1 for uids in self.services.values() if len(uids) > 1),
        )


def watch(
    api: client.Client, resource: client.Resource, namespace: str, see: Callable[[Obj], None]
) -> asyncio.Task[None]:
    """Every object of ``resource`` in ``namespace`` listed and each change shown to ``see``."""

    def listed(items: list[Obj]) -> None:
        for obj in items:
            see(obj)

    def changed(kind: str, obj: Obj) -> None:
        if kind in ("ADDED", "MODIFIED"):
            see(obj)

    return asyncio.create_task(
        list_and_watch(api, resource, namespace=namespace, listed=listed, changed=changed, retry=0.2)
    )
