"""When a job has succeeded: its success policy over the replicas that succeeded.

A target names a replica type, and optionally one index. Without an index it is met when
every replica of the type has succeeded; with one, when that replica has. ``All`` needs
every target met, ``Any`` one of them. Without a ``successPolicy`` the framework's
default applies (the chief or master; else worker 0 or every worker).
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from kubetrain.api import v1beta1

__all__ = ["met"]


def met(
    policy: v1beta1.SuccessPolicy, succeeded: Set[tuple[str, int]], replicas: Mapping[str, int]
) -> str | None:
    """Why the job has succeeded (a message), or ``None`` while it has not."""
    done = [d for t in policy.targets if (d := _target_met(t, succeeded, replicas)) is not None]
    if policy.operator is v1beta1.SuccessOperator.ANY:
        return done[0] if done else None
    return "; ".join(done) if len(done) == len(policy.targets) else None


def _target_met(
    target: v1beta1.SuccessTarget, succeeded: Set[tuple[str, int]], replicas: Mapping[str, int]
) -> str | None:
    t = target.replica_type
    if target.index is not None:
        return f"{t} {target.index} succeeded" if (t, target.index) in succeeded else None
    count = replicas.get(t, 0)
    if count and all((t, i) in succeeded for i in range(count)):
        return f"all {count} {t} replicas succeeded"
    return None
