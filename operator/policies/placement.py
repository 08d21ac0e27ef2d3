"""Whether a job's pods have been placed, and if not, why — in the words of the scheduler.

A pod the scheduler has not placed says so in its ``PodScheduled`` condition: reason
``SchedulingGated`` while a queue (Kueue) holds it back, ``Unschedulable`` with the
scheduler's message while no node fits it — for a gang, while not all of its members fit
at once (``pod group is unschedulable, waiting for minCount pods ...``). :func:`assess`
turns the pods of the current attempt into the job's ``Scheduled`` condition: True once
every pod has a node, False with reason ``Queued`` or ``Unschedulable`` and a message a
person can act on. :func:`give_up_at` is when ``schedulingPolicy.scheduleTimeoutSeconds``
runs out: counted from the moment the first pod became unschedulable, and never while the
job only waits in its queue.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import attrs

from kubetrain.api import observed

__all__ = ["Placement", "assess", "give_up_at"]

GATED = "SchedulingGated"
UNSCHEDULABLE = "Unschedulable"


@attrs.frozen(kw_only=True)
class Placement:
    placed: bool
    reason: str  # Scheduled, Queued or Unschedulable
    message: str
    since: datetime.datetime | None = None  # unschedulable since


def assess(pods: Sequence[observed.Pod], queue: str | None) -> Placement | None:
    """The placement of the live pods of the current attempt; None while there is nothing to say."""
    if not pods:
        return None
    waiting = [p for p in pods if not p.node and not p.finished]
    if not waiting:
        return Placement(placed=True, reason="Scheduled", message=f"all {len(pods)} pods are placed on nodes")
    gated = [p for p in waiting if p.unscheduled is not None and p.unscheduled[0] == GATED]
    if gated:
        where = f"queued in {queue}" if queue else "held back by scheduling gates"
        return Placement(
            placed=False,
            reason="Queued",
            message=f"{where}: {len(gated)} of {len(pods)} pods wait for admission",
        )
    stuck = [p for p in waiting if p.unscheduled is not None and p.unscheduled[0] == UNSCHEDULABLE]
    if not stuck:
        return None  # not looked at by the scheduler yet
    first = min(
        stuck, key=lambda p: p.unscheduled_since or datetime.datetime.max.replace(tzinfo=datetime.UTC)
    )
    assert first.unscheduled is not None
    return Placement(
        placed=False,
        reason=UNSCHEDULABLE,
        message=f"{len(stuck)} of {len(pods)} pods cannot be placed: {first.unscheduled[1]}",
        since=first.unscheduled_since,
    )


def give_up_at(placement: Placement | None, timeout_seconds: int | None) -> datetime.datetime | None:
    """When an unschedulable job has waited ``timeout_seconds``; None if it is not waiting for that."""
    if placement is None or placement.reason != UNSCHEDULABLE or placement.since is None:
        return None
    if timeout_seconds is None:
        return None
    return placement.since + datetime.timedelta(seconds=timeout_seconds)
