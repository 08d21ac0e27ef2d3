"""Pacing: when a changed status is written.

Whatever says what happened is written at once: a condition, the state, an attempt, a
failure, a pod that ended. It is what users, scripts and the status lag wait for. But the
counts of pods *starting* — ``active`` and ``ready``, and the indexes ``activeIndexes`` names — move with each pod: written at once,
a job of N replicas patches its status N times on its way to Running, and a thousand jobs
starting together spend most of the operator's writes on numbers nobody acts on within
seconds. A change of those counts alone waits, and the write that carries the next real
change takes it along: in a running job until :data:`PERIOD` after the job's last status
write — 15 s, the period at which a HorizontalPodAutoscaler reads them through the scale
subresource; in a job not running yet until :data:`STARTING` after it, since its next real
change, Running, is what its users wait for. So on the normal course a job's status is
written twice, created and then running, even when a busy scheduler takes minutes to place
its pods. A hold never outlasts what the step itself waits for (a pod's termination
deadline, a backoff): the pass then due writes the held counts with its own change.
"""

from __future__ import annotations

import datetime

import attrs

from kubetrain.api import v1beta1

__all__ = ["PERIOD", "STARTING", "counts_only", "delay"]

PERIOD = datetime.timedelta(seconds=15)
STARTING = datetime.timedelta(minutes=5)


def counts_only(old: v1beta1.TrainingJobStatus, new: v1beta1.TrainingJobStatus) -> bool:
    """Whether ``new`` differs from ``old`` in the starting pods' counts alone (and does differ)."""
    return old != new and _uncounted(old) == _uncounted(new)


def delay(
    old: v1beta1.TrainingJobStatus,
    new: v1beta1.TrainingJobStatus,
    last_write: datetime.datetime | None,
    now: datetime.datetime,
    due: float | None = None,
) -> float:
    """Seconds to hold the write of ``new`` over ``old``: 0 to write it now.

    ``due`` is when, in seconds from ``now``, the step wants to look at the job again.
    """
    if last_write is None or not counts_only(old, new):
        return 0.0
    period = PERIOD if old.state is v1beta1.JobState.RUNNING else STARTING
    hold = max(0.0, (last_write + period - now).total_seconds())
    return hold if due is None else min(hold, due)


def _uncounted(status: v1beta1.TrainingJobStatus) -> v1beta1.TrainingJobStatus:
    return attrs.evolve(
        status,
        replica_statuses={
            k: attrs.evolve(r, active=0, ready=0, active_indexes="")
            for k, r in status.replica_statuses.items()
        },
    )
