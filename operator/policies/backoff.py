"""The delay before a restart: doubling from ``initialSeconds``, capped at ``maxSeconds``.

The first restart waits ``initialSeconds``, the n-th ``initialSeconds * 2**(n-1)``. No
``restartBackoff`` means no delay.
"""

from __future__ import annotations

import datetime

from kubetrain.api import v1beta1

__all__ = ["delay", "due"]


def delay(backoff: v1beta1.RestartBackoff | None, restarts: int) -> float:
    """Seconds to wait before restart number ``restarts`` (1 for the first)."""
    if backoff is None or restarts < 1:
        return 0.0
    return float(min(backoff.max_seconds, backoff.initial_seconds * 2 ** min(restarts - 1, 32)))


def due(
    backoff: v1beta1.RestartBackoff | None, restarts: int, last: datetime.datetime | None
) -> datetime.datetime | None:
    """When pods replaced by the latest restart may be created again."""
    wait = delay(backoff, restarts)
    if last is None or wait == 0:
        return None
    return last + datetime.timedelta(seconds=wait)
