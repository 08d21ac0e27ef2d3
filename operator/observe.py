"""Observe: one look at a job, as the step's :class:`~kubetrain.operator.lifecycle.Input`.

The reconciler is three calls: :func:`observe` turns the caches, the job and what this process
remembers of it into an ``Input``; :func:`kubetrain.operator.lifecycle.step` decides; and
:mod:`~kubetrain.operator.execute` carries the decision out. This module is pure: it reads, through
the small :class:`Caches` interface, values only — pods and Services as
:mod:`~kubetrain.api.observed` reads them, the Workload as :class:`~.scheduling.workload.Seen`,
who holds a name as a :class:`Holder`. The operator's caches implement it over its informers
(:mod:`.caches`); the ``World`` simulator of the tests implements it over its simulated cluster,
so the property machine runs this very code.

What it decides, it decides here once: a pod is the job's if the job's UID controls it (a job
made again under its name is another job); a pod seen gone counts only where no live pod has
its UID; a Service this process deleted is gone whatever the cache still shows; a pod this
process made that the cache does not show yet is *made* (not to be made again); what the
apiserver refused, the gang groups the job has and the last status write are this process's
memory of the job's UID (:mod:`.memory`).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from kubetrain.api import meta, naming, observed, v1beta1
from kubetrain.operator import lifecycle
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.policies import progress
from kubetrain.operator.scheduling import backend, workload

__all__ = ["Caches", "Expected", "Holder", "Mine", "observe"]


@attrs.frozen(kw_only=True)
class Holder:
    """Who holds a name: the controller of the object that has it (``kind`` and ``uid`` empty
    for an object no one controls), and whether that object is going away; ``unread``: an object
    the operator could not read (gone since, or the apiserver busy)."""

    kind: str = ""
    name: str = ""
    uid: str = ""
    going: bool = False
    unread: bool = False

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Holder:
        """Who holds ``obj``'s name: its controller, and whether it is going away."""
        owner = meta.controller_of(obj)
        going = bool(obj["metadata"].get("deletionTimestamp"))
        if owner is None:
            return cls(going=going)
        return cls(kind=owner["kind"], name=owner["name"], uid=owner.get("uid", ""), going=going)


class Mine(Protocol):
    """What this process remembers of the job's UID that observe reads (:class:`.memory.Job`)."""

    @property
    def refused(self) -> tuple[v1beta1.Refusal, ...] | None: ...
    @property
    def untold(self) -> tuple[v1beta1.Refusal, ...]: ...
    @property
    def last_write(self) -> datetime.datetime | None: ...
    @property
    def groups(self) -> frozenset[str] | None: ...


class Expected(Protocol):
    """What this process made or deleted of a kind that the caches do not show yet
    (:class:`.runtime.cache.Expectations`)."""

    def expected(self, key: str, /) -> bool | None: ...
    def pending(self, owner: str, /) -> Iterable[str]: ...


class Caches(Protocol):
    """What the caches show, as values."""

    def pods(self, key: str, uid: str) -> Iterable[observed.Pod]:
        """The live pods filed under the job ``key`` that the job ``uid`` controls."""

    def gone(self, key: str, uid: str) -> Iterable[observed.Pod]:
        """The last state of pods of the job ``uid`` seen deleted (``gone``)."""

    def services(self, key: str, uid: str) -> Iterable[tuple[str, observed.Service]]:
        """The Services of the job ``uid``, each with its cache key."""

    def shows(self, kind: str, key: str) -> bool:
        """Whether the cache of ``kind`` holds an object at ``key``."""

    def holder(self, kind: str, key: str) -> Holder | None:
        """Who holds ``key`` in the cache of ``kind`` (None: no object there, or no cache)."""

    def workload(self, job: v1beta1.TrainingJob) -> workload.Seen | None:
        """The job's Workload: one it controls, or the one MultiKueue made for it."""

    def workload_object(self, job: v1beta1.TrainingJob) -> dict[str, Any] | None:
        """The object :meth:`workload` reads, for the executor's patches."""

    def priority(self, name: str) -> int | None:
        """The value of the PriorityClass ``name``; None if it is not known."""

    def unhealthy(self) -> frozenset[str]:
        """The nodes the operator is told are unhealthy."""

    def noticed(self) -> frozenset[str]:
        """The nodes a notice says will go."""

    def in_place(self) -> bool:
        """Whether some node declares that its kubelet restarts pods in place."""


def observe(
    job: v1beta1.TrainingJob,
    fw: fw_contract.Framework,
    caches: Caches,
    mine: Mine,
    expected: Mapping[str, Expected],
    *,
    scheduler: backend.Backend,
    now: datetime.datetime,
    reading: progress.Reading | None = None,
) -> lifecycle.Input:
    """The step's input for ``job`` now: ``mine`` is what this process remembers of the job's
    UID, ``expected`` what it created or deleted that the caches do not show yet, by kind."""
    name, namespace, uid = (
        job.metadata.name or "",
        job.metadata.namespace or "default",
        job.metadata.uid or "",
    )
    key = f"{namespace}/{name}"
    pods = list(caches.pods(key, uid))
    live = {p.uid for p in pods}
    pods += [p for p in caches.gone(key, uid) if p.uid not in live]
    deleted = expected["Service"]
    made = expected["Pod"].pending(uid)
    policy = job.spec.run_policy.scheduling_policy
    queue = policy.queue if policy else None
    admission = scheduler.workload_queue(queue) is not None
    priority = policy.priority_class if policy is not None else None
    return lifecycle.Input(
        name=name,
        namespace=namespace,
        generation=job.metadata.generation,
        spec=job.spec,
        status=job.status,
        pods=tuple(pods),
        defaults=lifecycle.Defaults.of(fw, job.spec),
        now=now,
        refused=mine.refused,
        untold=mine.untold,
        # Whether the job's gangs wait in a Kueue queue (Volcano's queues are its own).
        queued=scheduler.kueue_queue(queue) is not None,
        admission=admission,
        workload=caches.workload(job) if admission else None,
        prebuilt=workload.prebuilt(job.metadata.annotations, job.metadata.labels) if admission else None,
        priority=caches.priority(priority) if admission and priority else None,
        tensorboard=caches.shows("Service", f"{namespace}/{naming.tensorboard_name(name)}"),
        services=tuple(s for k, s in caches.services(key, uid) if deleted.expected(k) is not False),
        made=frozenset(k.partition("/")[2] for k in made if not caches.shows("Pod", k)),
        last_write=mine.last_write,
        unhealthy=caches.unhealthy(),
        noticed=caches.noticed(),
        in_place=caches.in_place(),
        progress=reading,
        gangs=scheduler.resource is not None,
        groups=mine.groups,
        created=job.metadata.creation_timestamp,
    )
