"""Volcano: ``scheduling.volcano.sh/v1beta1`` PodGroup and the ``volcano`` scheduler.

Pods name their group with the annotation ``scheduling.k8s.io/group-name`` and set
``schedulerName: volcano``; the PodGroup carries ``minMember``, the Volcano ``queue`` (so
``schedulingPolicy.queue`` names a Volcano queue with this backend, not a Kueue one) and
``priorityClassName``.
"""

from __future__ import annotations

from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["ANNOTATION", "BACKEND", "RESOURCE", "SCHEDULER_NAME"]

RESOURCE = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_NAME = "volcano"


def _group(g: gang_.Gang, owners: list[backend.Object]) -> backend.Object:
    spec: backend.Object = {"minMember": g.min_count}
    if g.queue:
        spec["queue"] = g.queue
    if g.priority_class:
        spec["priorityClassName"] = g.priority_class
    return backend.owned(g, RESOURCE, owners, spec)


def _join(pod: backend.Object, g: gang_.Gang) -> None:
    pod["metadata"].setdefault("annotations", {})[ANNOTATION] = g.name
    pod["spec"]["schedulerName"] = SCHEDULER_NAME


BACKEND = backend.Backend(
    name="volcano",
    resource=RESOURCE,
    group=_group,
    join=_join,
    install="Volcano (its scheduler and the scheduling.volcano.sh CRDs)",
    own_queues=True,
)
