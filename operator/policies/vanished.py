"""Pods gone while nobody watched: counted from what the status recorded.

The operator learns of a pod's end from its watch, and remembers a deleted pod for a while (a
tombstone). A pod that went while the operator was down, or while its watch was broken, left
neither, and a replica recreated in its place would join the old world uncharged. So each
status records, per replica type, the indexes whose pod of the current attempt was last seen
active (``activeIndexes``). A recorded index with no pod of that attempt — none there, and no
tombstone whose end is still to be counted — is a pod that vanished: :func:`pods` returns a
stand-in for it, which the failure semantics count once as the infrastructure failure
``PodVanished``. The next status no longer records the index, so it is never counted twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kubetrain.api import indexes, naming, observed, v1beta1

__all__ = ["pods"]


def pods(
    job: str,
    status: v1beta1.TrainingJobStatus,
    replicas: Mapping[str, int],
    seen: Iterable[observed.Pod],
    counted: Mapping[str, v1beta1.CountedFailures],
    made: Collection[str],
) -> list[observed.Pod]:
    """Stand-ins for the pods ``status`` recorded active that are gone without a trace.

    ``replicas`` is the spec's count per replica type, ``seen`` the pods there and the
    tombstones, ``counted`` the failures counted per pod uid, ``made`` the names of pods this
    process created that its caches do not show yet.
    """
    # A pod there, or gone with its end not counted yet (the step counts it), accounts for its
    # index; a tombstone whose end was counted is an earlier pod of that index.
    there = {
        (p.replica_type, p.index, p.attempt)
        for p in seen
        if not p.gone or p.uid not in counted or counted[p.uid].count <= p.crashes
    }
    out = []
    for key, rs in status.replica_statuses.items():
        for i in sorted(indexes.parse_indexes(rs.active_indexes)):
            name = naming.replica_name(job, key, i)
            if i >= replicas.get(key, 0) or (key.lower(), i, rs.attempt) in there or name in made:
                continue
            out.append(
                observed.Pod(
                    name=name,
                    uid=f"vanished/{name}/{rs.attempt}",
                    replica_type=key.lower(),
                    index=i,
                    attempt=rs.attempt,
                    phase="Running",
                    gone=True,
                    vanished=True,
                )
            )
    return out
