"""``cleanPodPolicy``: which pods are deleted when the job finishes; and Services let go.

``Running`` (the default) stops the pods still pending or running and keeps the
finished ones for their logs; ``All`` deletes every pod; ``None`` keeps everything,
running pods included (for debugging).

A replica's Service lives as long as the replica: when an elastic job is scaled down,
:func:`surplus_services` names the Services of the workers it no longer has (their pods
are surplus to the lifecycle, and deleted there).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api import observed, v1beta1

__all__ = ["DEFAULT", "surplus_services", "to_delete"]

DEFAULT = v1beta1.CleanPodPolicy.RUNNING


def to_delete(policy: v1beta1.CleanPodPolicy | None, pods: Iterable[observed.Pod]) -> list[observed.Pod]:
    """The pods of a finished job that ``policy`` deletes (pods already deleting excluded)."""
    policy = policy or DEFAULT
    if policy is v1beta1.CleanPodPolicy.NONE:
        return []
    live = [p for p in pods if not p.deleting]
    if policy is v1beta1.CleanPodPolicy.ALL:
        return live
    return [p for p in live if not p.finished]


def surplus_services(spec: v1beta1.TrainingJobSpec, services: Iterable[observed.Service]) -> list[str]:
    """Names of the job's replica Services past its replica counts (a scale-down)."""
    counts = {k.lower(): s.replicas for k, s in spec.replica_specs.items()}
    return sorted(
        s.name
        for s in services
        if s.replica_type in counts and s.index is not None and s.index >= counts[s.replica_type]
    )
