"""Slow start: how many creates of one pass are in flight at once.

A job's objects are created in batches that double from :data:`FIRST_BATCH` up to
:data:`MAX_BATCH`, and a batch with a refusal stops the rest until a later pass (as Kubernetes'
Job and ReplicaSet controllers do). A 10,000-pod job sent at once queued its creates at the
apiserver past the client's timeout: 115 timed out there, and 13,000 FailedCreate Events were
written for the creates the client gave up on.
"""

from __future__ import annotations

__all__ = ["FIRST_BATCH", "MAX_BATCH", "batches"]

FIRST_BATCH = 8
MAX_BATCH = 256


def batches(count: int) -> tuple[int, ...]:
    """The sizes of the batches ``count`` creates are sent in, in order."""
    out: list[int] = []
    size = FIRST_BATCH
    while count > 0:
        out.append(min(size, count))
        count -= out[-1]
        size = min(2 * size, MAX_BATCH)
    return tuple(out)
