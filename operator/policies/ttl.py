"""``ttlSecondsAfterFinished``: a finished job is deleted this long after it finished.

Deleting the job deletes its pods, Services and ConfigMap too (they are owned by it).
"""

from __future__ import annotations

import datetime

__all__ = ["expires_at"]


def expires_at(completion: datetime.datetime | None, ttl_seconds: int | None) -> datetime.datetime | None:
    if completion is None or ttl_seconds is None:
        return None
    return completion + datetime.timedelta(seconds=ttl_seconds)
