"""Two deadlines: how long a job may be active, and how long a pod may stay Terminating.

``activeDeadlineSeconds`` counts from the job's ``startTime``, which is reset when a
suspended job resumes (time spent suspended is not spent). The termination deadline
counts from the end of a deleted pod's grace period (its ``deletionTimestamp``): a pod
still there after that — its node is lost and no kubelet will confirm its end — is
force-deleted, so a restart never waits forever. It defaults to
:data:`DEFAULT_TERMINATION_DEADLINE` seconds.
"""

from __future__ import annotations

import datetime

from kubetrain.api import observed

__all__ = ["DEFAULT_TERMINATION_DEADLINE", "active_until", "force_delete_at"]

DEFAULT_TERMINATION_DEADLINE = 60


def active_until(start: datetime.datetime | None, seconds: int | None) -> datetime.datetime | None:
    """When an active job runs out of time, if it can."""
    if start is None or seconds is None:
        return None
    return start + datetime.timedelta(seconds=seconds)


def force_delete_at(pod: observed.Pod, seconds: int | None) -> datetime.datetime | None:
    """When a pod being deleted is force-deleted, if it is still there."""
    if pod.deleted is None or pod.gone:
        return None
    wait = DEFAULT_TERMINATION_DEADLINE if seconds is None else seconds
    return pod.deleted + datetime.timedelta(seconds=wait)
