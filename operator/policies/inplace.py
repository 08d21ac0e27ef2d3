"""Restarts in place: which pods may move to a new attempt where they are, and when they may go on.

With ``failurePolicy.restartMethod: InPlace`` a restart of a replica type or of the job does not
delete its pods. Each running pod that can (:func:`restartable`: it has kubetrain's agent and
barrier, it has not ended, nobody deletes it, its node is there) is *moved*: relabelled to the new
attempt. Its agent sees the label change and exits, the kubelet restarts every container of the
pod on the same node, and the barrier, its first init container, holds it until the pod is
*opened* for its attempt. The rest are deleted and made again, as ``Recreate`` does.

A new world never meets an old one: the moving pods are opened together, once no pod of an
older attempt is left and no moving pod runs a container of its own any more
(:func:`may_open`). Pods made meanwhile are made closed and opened with them. A moving pod whose
containers still run :data:`STOP_TIMEOUT_SECONDS` after the restart (its kubelet cannot restart
in place, its agent is gone), or that can no longer restart in place, is deleted and made again
(:func:`fall_back`): the restart then completes as a recreate.

The pod whose main container failed restarts in place too, where its policy says ``Never``: its
main container carries a rule restarting the whole pod on the exit codes the job restarts
for (:func:`restart_codes`), and the barrier holds it, since its attempt has run there. It is then
moved and opened like the others.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable

from kubetrain.api import observed, v1beta1
from kubetrain.operator.policies import classify, failure

__all__ = [
    "CLOSED",
    "STOP_TIMEOUT_SECONDS",
    "fall_back",
    "may_open",
    "restart_codes",
    "restartable",
    "says_its_ends",
    "stop_due",
]

# How long a moving pod's own containers may run after the restart before it is made again.
STOP_TIMEOUT_SECONDS = 30
# The opened attempt of a pod made closed: its barrier has never opened, so nothing of an older
# attempt ever ran in it.
CLOSED = -1


def says_its_ends(pod: observed.Pod) -> bool:
    """Whether ``pod``'s agent says each end of its attempts (a pod made to restart in place under
    ``Never``): its kubelet's restart counts then tell none of them."""
    return pod.opened is not None and pod.restart_policy == "Never"


def restartable(pod: observed.Pod) -> bool:
    """Whether ``pod`` can move to a new attempt in place."""
    return (
        pod.opened is not None
        and not pod.deleting
        and not pod.finished
        and pod.node is not None
        and pod.node_exists
    )


def stop_due(restarted_at: datetime.datetime | None) -> datetime.datetime | None:
    """When moving pods that still run are given up on."""
    if restarted_at is None:
        return None
    return restarted_at + datetime.timedelta(seconds=STOP_TIMEOUT_SECONDS)


def fall_back(pod: observed.Pod, due: datetime.datetime | None, now: datetime.datetime) -> bool:
    """Whether the moving (or closed) ``pod`` is to be made again instead: it ended, its node is
    gone, or it was moved and its containers still run past ``due``."""
    if pod.deleting:
        return False  # going already
    stuck = pod.running and pod.opened != CLOSED and due is not None and now >= due
    return pod.finished or not pod.node_exists or stuck


def may_open(moving: Iterable[observed.Pod], stale: bool) -> bool:
    """Whether the moving pods may start the new attempt: no pod of an older attempt is left
    (``stale``) and none of those moved runs a container of its own (a pod made closed never ran
    one of an older attempt)."""
    return not stale and not any(p.running and p.opened != CLOSED for p in moving)


@functools.lru_cache(maxsize=1024)
def restart_codes(
    rules: tuple[v1beta1.FailureRule, ...],
    *,
    replica_type: str,
    restart_policy: v1beta1.RestartPolicy,
    scope: v1beta1.RestartScope,
    container: str,
) -> tuple[int, ...]:
    """The exit codes of a ``replica_type`` pod's main container (``container``) for which the
    job restarts a replica type or the job, judged as plain errors (``reason`` Error, no pod
    condition): on these its kubelet restarts the pod in place. Not those that fail the job, whose
    pod ends and keeps its logs; nor a Pod-scope restart, which makes the pod again."""
    out = []
    for code in range(1, 256):
        pod = observed.Pod(
            name="",
            uid="",
            replica_type=replica_type.lower(),
            index=0,
            exit_codes={container: code},
            reasons=("Error",),
        )
        f = classify.Failure(
            pod=pod, failure_class=v1beta1.FailureClass.USER_CODE, reason="Error", exit_code=code
        )
        v = failure.verdict(
            f,
            replica_type=replica_type,
            rules=rules,
            restart_policy=restart_policy,
            scope=scope,
            container=container,
        )
        restarts = v.action in (v1beta1.FailureAction.RESTART, v1beta1.FailureAction.RESTART_UNCHARGED)
        if restarts and v.scope is not v1beta1.RestartScope.POD:
            out.append(code)
    return tuple(out)
