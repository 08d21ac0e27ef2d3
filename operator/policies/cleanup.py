"""``cleanPodPolicy``: which pods are deleted when the job finishes.

``Running`` (the default) stops the pods still pending or running and keeps the
finished ones for their logs; ``All`` deletes every pod; ``None`` keeps everything,
running pods included (for debugging).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api import v1beta1
from kubetrain.operator import observed

__all__ = ["DEFAULT", "to_delete"]

DEFAULT = v1beta1.CleanPodPolicy.RUNNING


def to_delete(policy: v1beta1.CleanPodPolicy | None, pods: Iterable[observed.Pod]) -> list[observed.Pod]:
    """The pods of a finished job that ``policy`` deletes (pods already deleting excluded)."""
    policy = policy or DEFAULT
    if policy is v1beta1.CleanPodPolicy.NONE:
        return []
    live = [p for p in pods if not p.deleting]
    if policy is v1beta1.CleanPodPolicy.ALL:
        return live
    return [p for p in live if not p.finished]
