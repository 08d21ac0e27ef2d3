"""Every change of state a step may make, and the table drawn as a diagram.

A job's state is derived from its conditions (:func:`kubetrain.api.v1beta1.state_of`), and a
step moves it only along :data:`TRANSITIONS`; staying put is always allowed. The property
machine checks every step against this table, and ``kubetrain manifests`` draws it into
docs/state-diagram.md.
"""

from __future__ import annotations

from kubetrain.api import v1beta1

__all__ = ["TRANSITIONS", "diagram"]

S = v1beta1.JobState

TRANSITIONS: frozenset[tuple[v1beta1.JobState, v1beta1.JobState]] = frozenset(
    {
        (S.PENDING, S.CREATED),
        (S.PENDING, S.SUSPENDED),
        (S.PENDING, S.FAILED),  # the spec cannot run
        (S.CREATED, S.RUNNING),
        (S.CREATED, S.RESTARTING),
        (S.CREATED, S.SUCCEEDED),
        (S.CREATED, S.FAILED),
        (S.CREATED, S.SUSPENDED),
        (S.RUNNING, S.RESTARTING),
        (S.RUNNING, S.SUCCEEDED),
        (S.RUNNING, S.FAILED),
        (S.RUNNING, S.SUSPENDED),
        (S.RESTARTING, S.RUNNING),
        (S.RESTARTING, S.SUCCEEDED),
        (S.RESTARTING, S.FAILED),
        (S.RESTARTING, S.SUSPENDED),
        (S.SUSPENDED, S.CREATED),
        (S.SUSPENDED, S.FAILED),  # the spec cannot run (edited while suspended, webhook absent)
    }
)


def diagram() -> str:
    """:data:`TRANSITIONS` as a Mermaid state diagram."""
    lines = ["stateDiagram-v2", "    [*] --> Pending"]
    order = list(S)
    for a, b in sorted(TRANSITIONS, key=lambda t: (order.index(t[0]), order.index(t[1]))):
        lines.append(f"    {a.value} --> {b.value}")
    lines += ["    Succeeded --> [*]", "    Failed --> [*]"]
    return "\n".join(lines) + "\n"
