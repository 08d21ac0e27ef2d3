"""Kubernetes' own gang scheduling (1.35+): ``scheduling.k8s.io/v1alpha2`` PodGroup.

kube-scheduler holds a member pod at its Permit stage until ``minCount`` members can be
placed, then binds them together; a gang that cannot be placed binds none, and its
PodGroup's ``PodGroupScheduled`` condition and every member's ``PodScheduled`` condition
say ``Unschedulable``. Pods join with ``spec.schedulingGroup.podGroupName`` (immutable) and
wait, without a condition, while their PodGroup does not exist: the group is created first.
Needs the ``GenericWorkload`` and ``GangScheduling`` feature gates on kube-apiserver,
kube-scheduler and kube-controller-manager, the API enabled with
``--runtime-config=scheduling.k8s.io/v1alpha2=true``, and kube-controller-manager's
``podgroup-protection-controller``.
"""

from __future__ import annotations

from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["BACKEND", "RESOURCE"]

RESOURCE = Resource("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup")


def _group(g: gang_.Gang, owners: list[backend.Object]) -> backend.Object:
    spec: backend.Object = {"schedulingPolicy": {"gang": {"minCount": g.min_count}}}
    if g.priority_class:
        spec["priorityClassName"] = g.priority_class
    return backend.owned(g, RESOURCE, owners, spec)


def _join(pod: backend.Object, g: gang_.Gang) -> None:
    pod["spec"]["schedulingGroup"] = {"podGroupName": g.name}


BACKEND = backend.Backend(
    name="native",
    resource=RESOURCE,
    group=_group,
    join=_join,
    install="Kubernetes 1.35+ with the GenericWorkload and GangScheduling feature gates and "
    "--runtime-config=scheduling.k8s.io/v1alpha2=true",
)
