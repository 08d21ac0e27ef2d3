"""scheduler-plugins' Coscheduling: ``scheduling.x-k8s.io/v1alpha1`` PodGroup, a second scheduler.

Pods name their group with the label ``scheduling.x-k8s.io/pod-group`` and are scheduled by
the scheduler-plugins scheduler (``spec.schedulerName``), which holds them at Permit until
``minMember`` of the group can be placed. ``scheduleTimeoutSeconds`` is how long it holds
them before letting go and trying again (kubetrain's own timeout decides when to give up).
"""

from __future__ import annotations

from kubetrain.operator.resources import Resource
from kubetrain.operator.scheduling import backend
from kubetrain.operator.scheduling import gang as gang_

__all__ = ["LABEL", "RESOURCE", "SCHEDULER_NAME", "make"]

RESOURCE = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
LABEL = "scheduling.x-k8s.io/pod-group"
# The scheduler name in scheduler-plugins' own manifests.
SCHEDULER_NAME = "scheduler-plugins-scheduler"


def make(scheduler_name: str = SCHEDULER_NAME) -> backend.Backend:
    def group(g: gang_.Gang, owners: list[backend.Object]) -> backend.Object:
        spec: backend.Object = {"minMember": g.min_count}
        if g.timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = g.timeout_seconds
        return backend.owned(g, RESOURCE, owners, spec)

    def join(pod: backend.Object, g: gang_.Gang) -> None:
        pod["metadata"].setdefault("labels", {})[LABEL] = g.name
        pod["spec"]["schedulerName"] = scheduler_name

    return backend.Backend(
        name="coscheduling",
        resource=RESOURCE,
        group=group,
        join=join,
        install=f"scheduler-plugins' PodGroup CRD and its scheduler, named {scheduler_name}",
    )
