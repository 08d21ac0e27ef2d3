"""Kueue's plain-pod groups: ``schedulingPolicy.queue`` names a Kueue LocalQueue.

Kueue's pod webhook gates every pod labelled with a queue (``kueue.x-k8s.io/admission``
scheduling gate) and admits a group as one Workload once ``pod-group-total-count`` of its
pods exist and its ClusterQueue has quota for all of them; it then lifts the gates. So a
gang is one Kueue group, named like the gang, and a job waits in its queue with its pods
gated (``PodScheduled`` False, reason ``SchedulingGated``). Kueue keeps a group's quota
while any of its pods could still be retried: kubetrain marks the pods of a finished job
``retriable-in-group: "false"``, so the quota is released when the job ends. Pods Kueue
preempts get a ``TerminationTarget`` condition and are charged as infrastructure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from kubetrain.api import naming, observed
from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["GROUP_NAME", "LOCAL_QUEUES", "QUEUE_NAME", "RETRIABLE", "TOTAL_COUNT", "join", "released"]

QUEUE_NAME = naming.KUEUE_QUEUE_NAME
GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE = naming.KUEUE_RETRIABLE
LOCAL_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")


def join(pod: backend.Object, g: gang_.Gang) -> None:
    assert g.queue
    meta = pod["metadata"]
    meta.setdefault("labels", {}).update({QUEUE_NAME: g.queue, GROUP_NAME: g.name})
    meta.setdefault("annotations", {})[TOTAL_COUNT] = str(g.size)


def released(
    live: Collection[observed.Pod], *, finished: bool, current: Callable[[observed.Pod], bool]
) -> tuple[str, ...]:
    """The queued pods of ``live`` the job is done with, which Kueue may then let go with their quota.

    Kueue keeps a group's quota, and its finalizer on the group's pods, while any of them could
    be retried. The job is done with the unfinished pods of a ``finished`` job, and with every pod
    of an attempt a restart left behind (not ``current``): a new attempt is a new group, whose
    pods, named like the old ones, are created only once those are gone.
    """
    return tuple(
        p.name
        for p in live
        if p.in_queue and not p.released and (p.phase != "Succeeded" if finished else not current(p))
    )
