"""What a job's status says of each replica type: its pods of the current attempt, counted.

:func:`replica_statuses` is the ``status.replicaStatuses`` the step writes: per replica type,
the pods that are active (not deleted, not ended) and which indexes of them are kept (a pod the
step deletes now is not), how many are ready, have succeeded or have failed, the selector of
the type's pods (for ``kubectl get -l`` and a scale subresource), and the attempt it runs and
whether that attempt began in place.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kubetrain.api import indexes, naming, observed, v1beta1

__all__ = ["replica_statuses"]


def replica_statuses(
    job: str,
    current: Mapping[str, Sequence[observed.Pod]],
    attempts: Mapping[str, int],
    in_place: Mapping[str, bool],
    deleting: Collection[str],
) -> dict[str, v1beta1.ReplicaStatus]:
    """The status of each replica type from ``current``, its pods of the current attempt
    (the vanished ones left out), where the pods named in ``deleting`` are being deleted now."""
    out = {}
    for key, pods in current.items():
        active = [p for p in pods if p.deleted is None and not p.finished]
        out[key] = v1beta1.ReplicaStatus(
            active=len(active),
            active_indexes=indexes.format_indexes([p.index for p in active if p.name not in deleting]),
            ready=sum(p.ready for p in active),
            succeeded=sum(p.phase == "Succeeded" for p in pods),
            failed=sum(p.phase == "Failed" for p in pods),
            selector=naming.selector({naming.JOB_NAME: job, naming.REPLICA_TYPE: key.lower()}),
            attempt=attempts[key],
            in_place=in_place[key],
        )
    return out
