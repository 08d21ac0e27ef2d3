"""Kueue's admission of a job on the Workload route, as the lifecycle step reads it.

A job in a Kueue queue (the operator's ``--kueue=workload``) runs only while its Workload is
admitted and not evicted (:func:`hold`). Until then it is suspended — ``Queued`` while its
Workload is made and waits, ``Evicted`` with Kueue's words once Kueue took the admission back —
and what the reconciler does to the Workload follows from what is seen: make it when none is,
give an evicted one's quota back once no pod of the job is left. An eviction is charged
nothing: it is Kueue's decision, neither the job's fault nor its nodes', and Kueue's own
``requeuingStrategy`` bounds how often it happens. Admitted with fewer pods than asked (an
elastic job's Workers), the job runs with those (:func:`admitted`).

Around that: a job its user suspends lets its Workload go once no pod is left
(:func:`on_suspend`), so it holds no quota and queues again, as its spec is then, on resume; a
finished job finishes its Workload at once (:func:`on_finish`), so Kueue frees the quota before
the pods are cleaned up.

MultiKueue: on the manager, a job it dispatches only gets its Workload (:func:`dispatched`); on
a worker, the job waits for the Workload MultiKueue made and adopts it (:func:`adopt`), and
finishes it at its end — how the manager learns the job ended.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from kubetrain.operator.scheduling import workload

__all__ = ["Hold", "admitted", "adopt", "dispatched", "hold", "on_finish", "on_suspend", "resumed"]

QUEUED, EVICTED, ADMITTED = "Queued", "Evicted", "Admitted"


@attrs.frozen
class Hold:
    """Kueue holds the job: the reason and message of its ``Suspended`` condition, and what to
    do to its Workload."""

    reason: str
    message: str
    act: workload.Act | None = None


def hold(
    seen: workload.Seen | None, *, queue: str, pods_left: bool, prebuilt: str | None = None
) -> Hold | None:
    """Why Kueue holds the job whose Workload is ``seen`` (None: not seen), or None if it may run;
    ``pods_left``: a pod of the job is left, or may be (made, not seen yet); ``prebuilt``: the
    Workload MultiKueue made for it, which it waits for instead of making its own."""
    if seen is not None and seen.runs:
        return None
    where = f"in Kueue LocalQueue {queue}"
    if seen is None and prebuilt is not None:
        return Hold(QUEUED, f"waiting {where} for Workload {prebuilt}, which MultiKueue makes")
    if seen is None:
        return Hold(QUEUED, f"waiting {where}: its Workload is being created", workload.Act.CREATE)
    if seen.evicted is not None:
        reason, message = seen.evicted
        back = seen.reserved and not pods_left
        return Hold(
            EVICTED, f"evicted by Kueue ({reason}): {message}", workload.Act.REQUEUE if back else None
        )
    return Hold(QUEUED, f"waiting {where} for Kueue to admit Workload {seen.name}")


def resumed(seen: workload.Seen) -> tuple[str, str]:
    """The reason and message of the ``Suspended`` condition turning False on admission."""
    return ADMITTED, f"admitted by Kueue to ClusterQueue {seen.cluster_queue}"


def admitted(replicas: Mapping[str, int], seen: workload.Seen | None) -> dict[str, int]:
    """``replicas`` (by replica type), each no more than its pod set's admitted count."""
    out = dict(replicas)
    if seen is None or not seen.runs:
        return out
    for key in out:
        a = seen.assignments.get(workload.pod_set_name(key))
        if a is not None and a.count is not None:
            out[key] = min(out[key], a.count)
    return out


def on_suspend(seen: workload.Seen | None, *, pods_left: bool, prebuilt: bool) -> workload.Act | None:
    """What a job its user suspends does to its Workload: lets it go once no pod is left. One
    MultiKueue made (``prebuilt``) stays, adopted or not: the job would not get it back."""
    if seen is None or not seen.owned or pods_left or prebuilt:
        return None
    return workload.Act.DELETE


def adopt(seen: workload.Seen | None) -> workload.Act | None:
    """What a job does to the Workload MultiKueue made for it: takes it as its own, once."""
    return workload.Act.ADOPT if seen is not None and not seen.owned else None


def dispatched(seen: workload.Seen | None) -> workload.Act | None:
    """What the operator does for a job MultiKueue dispatches (on the manager): makes its Workload,
    and nothing else — the job runs on a worker, and Kueue mirrors its status here."""
    return workload.Act.CREATE if seen is None else None


def on_finish(seen: workload.Seen | None) -> workload.Act | None:
    """What a finished job does to its Workload: finishes it, once."""
    return workload.Act.FINISH if seen is not None and not seen.finished else None
