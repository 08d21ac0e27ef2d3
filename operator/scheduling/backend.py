"""A gang-scheduling backend: the group object it reads, and how a pod joins it.

A backend is a value: its name (the operator's ``--gang-scheduler``), the resource of its
group object (``None`` when it has none), and two pure functions — ``group`` renders the
group object of a :class:`~.gang.Gang`, ``join`` adds to a pod what makes the scheduler
treat it as a member. :data:`NONE` schedules pods one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kubetrain.api import naming
from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["KUEUE_ROUTES", "NONE", "POD_ROUTE", "WORKLOAD_ROUTE", "Backend", "Object", "owned"]

Object = dict[str, Any]
# The operator's --kueue: the job's own Workload (the default), or Kueue's plain-pod groups.
WORKLOAD_ROUTE = "workload"
POD_ROUTE = "pods"
KUEUE_ROUTES = (WORKLOAD_ROUTE, POD_ROUTE)


@attrs.frozen(kw_only=True)
class Backend:
    name: str
    # The group object's resource, or None for a backend without one.
    resource: Resource | None
    group: Callable[[gang_.Gang, list[Object]], Object | None]
    join: Callable[[Object, gang_.Gang], None]
    # What a person installs to get it (for messages about a cluster that does not serve it).
    install: str = ""
    # Whether schedulingPolicy.queue names a queue of this scheduler's own (Volcano's) rather
    # than a Kueue LocalQueue.
    own_queues: bool = False
    # How a job waits in a Kueue LocalQueue (the operator's --kueue): as its own Workload
    # (scheduling.workload), or as plain-pod groups (scheduling.kueue_pods).
    kueue: str = WORKLOAD_ROUTE

    def kueue_queue(self, queue: str | None) -> str | None:
        """The Kueue LocalQueue whose plain-pod groups a job asking for ``queue`` joins, if any."""
        return None if self.own_queues or self.kueue != POD_ROUTE else queue

    def workload_queue(self, queue: str | None) -> str | None:
        """The Kueue LocalQueue a job asking for ``queue`` waits in as its own Workload, if any."""
        return None if self.own_queues or self.kueue != WORKLOAD_ROUTE else queue


def owned(g: gang_.Gang, resource: Resource, owners: list[Object], spec: Object) -> Object:
    """A namespaced group object named after the gang, owned by the job."""
    meta: Object = {
        "name": g.name,
        "namespace": g.namespace,
        "labels": {naming.JOB_NAME: g.job},
    }
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta, "spec": spec}


def _nothing(_g: gang_.Gang, _owners: list[Object]) -> None:
    return None


def _alone(_pod: Object, _g: gang_.Gang) -> None:
    return None


NONE = Backend(name="none", resource=None, group=_nothing, join=_alone)
