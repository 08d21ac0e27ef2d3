"""Every failure of a pod is classified once: infrastructure or user code.

Infrastructure: the pod was disrupted (a ``DisruptionTarget`` condition: eviction,
preemption, taint eviction, pod garbage collection, kubelet shutdown), its node is gone,
the kubelet refused or evicted it (``Evicted``, ``Preempted``, ``OutOfcpu``, ...), it
was deleted while nobody asked for it (``PodDeleted``) or went while the operator was not
watching (``PodVanished``: the status recorded it active, and it is gone), or its images could not be pulled for longer than
the grace period. User code: the program exited and the pod failed, or the kubelet
restarted one of its containers; and, with ``spec.progress.deadlineSeconds``, its step stopped
moving (:func:`hang`). A pod may fail several times — once per container
restart, and once more when the pod itself fails — and :func:`new_failures` returns the
ones beyond those already counted.
"""

from __future__ import annotations

import datetime

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.api.v1beta1 import progress_types

__all__ = [
    "DEFAULT_IMAGE_PULL_GRACE",
    "INFRASTRUCTURE_REASONS",
    "Failure",
    "exit_code",
    "hang",
    "image_pull_due",
    "new_failures",
]

DEFAULT_IMAGE_PULL_GRACE = 300
INFRASTRUCTURE_REASONS = frozenset(
    {
        "Evicted",
        "Preempted",
        "NodeLost",
        "NodeShutdown",
        "Shutdown",
        "Terminated",
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "OutOfcpu",
        "OutOfmemory",
        "OutOfpods",
    }
)


@attrs.frozen(kw_only=True)
class Failure:
    pod: observed.Pod
    failure_class: v1beta1.FailureClass
    reason: str
    exit_code: int | None = None
    in_place: bool = False  # the kubelet restarted a container; the pod lives on
    hung: bool = False  # its step stopped moving: its containers still run
    held: bool = False  # its attempt ended and the pod waits at its barrier, restarted in place


def new_failures(
    pod: observed.Pod, counted: int, *, container: str, now: datetime.datetime, image_pull_grace: int | None
) -> list[Failure]:
    """The failures of ``pod`` beyond the first ``counted`` (container restarts come first, each
    as soon as the container crashed: not when the kubelet's back-off lets it start again)."""
    out = [_restarted(pod, container)] * max(0, pod.crashes - counted)
    whole = _pod_failure(pod, container, now, image_pull_grace)
    if whole is not None and counted <= pod.crashes:
        out.append(whole)
    return out


def hang(pod: observed.Pod, counted: datetime.datetime | None, *, grace: int) -> list[Failure]:
    """The hang of ``pod`` not charged yet (``counted``: the last one charged), if any.

    Its agent found its step unmoved for the job's deadline. A hang counts while the pod's own
    containers still run, and only ``grace`` seconds after they last started: one seen earlier
    (before a container restarted, say) is the run's before. Charged to user code: a stalled
    collective, a deadlocked loader or a dead mount is nothing the cluster reported, and a
    deterministic hang must spend a budget, not restart for ever (docs/lifecycle.md).
    """
    at, started = pod.hung_at, pod.started_at
    if at is None or started is None or pod.finished or pod.deleting or not pod.running:
        return []
    if (counted is not None and at <= counted) or at < started + datetime.timedelta(seconds=grace):
        return []
    return [
        Failure(pod=pod, failure_class=v1beta1.FailureClass.USER_CODE, reason=progress_types.HUNG, hung=True)
    ]


def held(pod: observed.Pod, counted: str | None, *, container: str) -> list[Failure]:
    """The end of ``pod``'s attempt that its agent said and that is not charged yet (``counted``:
    the signal last charged): its main container ended, its rule had the kubelet restart the pod in
    place, and the barrier holds it. The kubelet's restart counts cannot tell it: a container that
    ends before it runs again is counted once for two ends. The word stays in the pod's status
    after the pod moves on, until its agent's next exit: it is charged once, and only while the
    pod is at the attempt it speaks of (one said just before a move is the old attempt's)."""
    if not pod.held or pod.finished or pod.deleting or pod.held_signal == counted:
        return []
    if pod.held_attempt is not None and pod.held_attempt != pod.attempt:
        return []
    return [attrs.evolve(_restarted(pod, container), held=True)]


def image_pull_due(pod: observed.Pod, grace: int | None) -> datetime.datetime | None:
    """When a pod stuck pulling images starts to count as failed."""
    if not pod.waiting & observed.IMAGE_PULL_REASONS or pod.created is None or pod.finished:
        return None
    return pod.created + datetime.timedelta(seconds=DEFAULT_IMAGE_PULL_GRACE if grace is None else grace)


def _pod_failure(
    pod: observed.Pod, container: str, now: datetime.datetime, grace: int | None
) -> Failure | None:
    infra = v1beta1.FailureClass.INFRASTRUCTURE
    if pod.phase == "Succeeded":
        return None
    if pod.disruption is not None:
        return Failure(pod=pod, failure_class=infra, reason=pod.disruption)
    if pod.node and not pod.node_exists:
        return Failure(pod=pod, failure_class=infra, reason="NodeLost")
    if pod.phase == "Failed" and pod.deleted is not None:
        # Deleted by someone else: a real kubelet kills its containers (137, 143) and reports the
        # pod Failed before it is gone. The exit codes are the deletion's, not the user's.
        return Failure(pod=pod, failure_class=infra, reason="PodDeleted")
    if pod.phase == "Failed":
        kubelet = next((r for r in pod.reasons if r in INFRASTRUCTURE_REASONS), None)
        if kubelet is not None:
            return Failure(pod=pod, failure_class=infra, reason=kubelet)
        return Failure(
            pod=pod,
            failure_class=v1beta1.FailureClass.USER_CODE,
            reason=_exit_reason(pod),
            exit_code=exit_code(pod, container),
        )
    if pod.vanished:
        return Failure(pod=pod, failure_class=infra, reason="PodVanished")
    if pod.gone:
        return Failure(pod=pod, failure_class=infra, reason="PodDeleted")
    due = image_pull_due(pod, grace)
    if due is not None and now >= due:
        reason = sorted(pod.waiting & observed.IMAGE_PULL_REASONS)[0]
        return Failure(pod=pod, failure_class=infra, reason=reason)
    return None


def _restarted(pod: observed.Pod, container: str) -> Failure:
    return Failure(
        pod=pod,
        failure_class=v1beta1.FailureClass.USER_CODE,
        # A pod held at its barrier whose exit the kubelet erased (inplace.restart_codes).
        reason=_exit_reason(pod, default="RestartedInPlace" if pod.held else "ContainerRestarted"),
        exit_code=exit_code(pod, container),
        in_place=True,
    )


def exit_code(pod: observed.Pod, container: str) -> int | None:
    """The main container's exit code, unless it is 0 and another container's is not."""
    main = pod.exit_codes.get(container)
    if main:
        return main
    failed = [code for code in pod.exit_codes.values() if code]
    return failed[0] if failed else main


def _exit_reason(pod: observed.Pod, default: str = "Error") -> str:
    return next((r for r in pod.reasons if r not in ("Completed",)), default)
