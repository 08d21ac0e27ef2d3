"""The pods of a job, as a person reads them: which replica, which attempt, how it is doing.

Pods are found by the job-name label and kept only when the job controls them, by their
controller's uid as the operator judges it (:func:`kubetrain.api.meta.controlled_by`): a new
job of the same name does not lend the old one its pods. The replica type is spelled as the
job's spec spells it (``Worker``), since labels hold it in lower case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import meta, naming, observed, v1beta1
from kubetrain.client import connection

__all__ = ["PodInfo", "list_pods", "owned", "replica_of"]


@attrs.frozen(kw_only=True)
class PodInfo:
    name: str
    replica: str  # worker-1
    replica_type: str  # Worker
    index: int
    attempt: int
    phase: str
    node: str | None
    restarts: int
    # Why it is not running as it should: a waiting or terminated reason, or the scheduler's words.
    reason: str | None
    exit_code: int | None


def replica_of(pod: observed.Pod) -> str:
    return f"{pod.replica_type}-{pod.index}"


def owned(obj: Mapping[str, Any], job: v1beta1.TrainingJob) -> bool:
    """Whether ``job`` is the pod's controller."""
    return meta.controlled_by(obj, job.metadata.uid)


async def list_pods(c: connection.Connection, job: v1beta1.TrainingJob) -> list[dict[str, Any]]:
    """The job's replica pods as the apiserver returns them, by replica and attempt."""
    selector = f"{naming.JOB_NAME}={job.metadata.name}"
    items = (
        await c.request("GET", connection.PODS, job.metadata.namespace, params={"labelSelector": selector})
    )["items"]
    mine = [p for p in items if owned(p, job)]
    return sorted(mine, key=lambda p: (replica_of(observed.Pod.of(p)), observed.Pod.of(p).attempt))


def info(obj: Mapping[str, Any], job: v1beta1.TrainingJob) -> PodInfo:
    pod = observed.Pod.of(obj)
    types = {t.lower(): t for t in job.spec.replica_specs}
    reason = None
    if pod.unscheduled:
        reason = f"{pod.unscheduled[0]}: {pod.unscheduled[1]}"
    elif pod.waiting:
        reason = ", ".join(sorted(pod.waiting))
    elif pod.reasons:
        reason = pod.reasons[-1]
    return PodInfo(
        name=pod.name,
        replica=replica_of(pod),
        replica_type=types.get(pod.replica_type, pod.replica_type),
        index=pod.index,
        attempt=pod.attempt,
        phase="Terminating" if pod.deleting else pod.phase,
        node=pod.node,
        restarts=pod.restarts,
        reason=reason,
        exit_code=next(iter(pod.exit_codes.values()), None),
    )
