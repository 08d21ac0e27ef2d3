"""Kubernetes' own gang scheduling (1.35+): the ``scheduling.k8s.io`` PodGroup.

kube-scheduler holds a member pod at its Permit stage until ``minCount`` members can be
placed, then binds them together; a gang that cannot be placed binds none, and every
member's ``PodScheduled`` condition says ``Unschedulable``. Pods join with
``spec.schedulingGroup.podGroupName`` (immutable) and wait, without a condition, while their
PodGroup does not exist: the group is created first.

The API moved between releases: 1.35 and 1.36 serve ``v1alpha2`` behind the ``GenericWorkload``
and ``GangScheduling`` feature gates (``--runtime-config=scheduling.k8s.io/v1alpha2=true``);
1.37 serves ``v1beta1`` behind ``GenericWorkload`` alone (``--runtime-config=scheduling.k8s.io/v1beta1=true``)
and no ``v1alpha2`` at all. What the operator writes — ``schedulingPolicy.gang.minCount`` and
``priorityClassName`` — is the same in both, so a backend per version (:data:`BACKENDS`, newest
first) differs only in its ``apiVersion``, and the operator takes the first the cluster serves,
asked once at start (:func:`kubetrain.operator.main.detect`). kube-controller-manager's
``podgroup-protection-controller`` releases a group's finalizer once its pods are gone.
"""

from __future__ import annotations

from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["BACKEND", "BACKENDS", "RESOURCE", "make"]

# Newest first: the order the operator asks the cluster in.
VERSIONS = ("v1beta1", "v1alpha2")
_INSTALL = {
    "v1beta1": "Kubernetes 1.37+ with the GenericWorkload feature gate and "
    "--runtime-config=scheduling.k8s.io/v1beta1=true",
    "v1alpha2": "Kubernetes 1.35+ with the GenericWorkload and GangScheduling feature gates and "
    "--runtime-config=scheduling.k8s.io/v1alpha2=true",
}


def make(version: str) -> backend.Backend:
    """The native backend whose PodGroup is ``scheduling.k8s.io/{version}``."""
    resource = Resource("scheduling.k8s.io", version, "podgroups", "PodGroup")

    def group(g: gang_.Gang, owners: list[backend.Object]) -> backend.Object:
        spec: backend.Object = {"schedulingPolicy": {"gang": {"minCount": g.min_count}}}
        if g.priority_class:
            spec["priorityClassName"] = g.priority_class
        return backend.owned(g, resource, owners, spec)

    return backend.Backend(
        name="native", resource=resource, group=group, join=_join, install=_INSTALL[version]
    )


def _join(pod: backend.Object, g: gang_.Gang) -> None:
    pod["spec"]["schedulingGroup"] = {"podGroupName": g.name}


BACKENDS = tuple(make(v) for v in VERSIONS)
# What a cluster of the project's default version (1.36) serves, and what `kubetrain render` shows.
BACKEND = BACKENDS[-1]
RESOURCE = BACKEND.resource
