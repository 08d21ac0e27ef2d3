"""Which nodes a job's new pods keep off, and when they stop keeping off them.

A replacement should not land on the node that failed the pod it replaces. When a failure
is tied to its node — the node was lost or shut down, the kubelet evicted the pod or could
not admit it, the taint manager evicted it, or a failure rule says so (``avoidNode``, for a
device error's exit code, say) — the node joins the job's ``status.avoidedNodes``, a list
of at most :data:`~kubetrain.api.v1beta1.status_types.MAX_AVOIDED_NODES`, the oldest
let go first. Nodes the operator is told are unhealthy (node conditions that are True and
taints, by name: :class:`Unhealthy`, set by flags) are kept off too, for as long as they
are. The pods created next carry both as node affinity (``metadata.name NotIn``), which
the scheduler applies; a pod keeps the affinity it was created with.

Keeping off nodes must not strand a job. When a pod of the current attempt cannot be
placed and the scheduler names node affinity, the job lets its avoided nodes go (and says
so in an Event), and every such pod created with another list than the one wanted now is
deleted — not a failure — and created again: with the list let go, or without a node
that has become healthy since.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import attrs

from kubetrain.api import observed, v1beta1
from kubetrain.api.v1beta1 import status_types
from kubetrain.operator.policies import classify, placement

__all__ = [
    "DEFAULT_CONDITIONS",
    "DEFAULT_NOTICE_CONDITIONS",
    "DEFAULT_NOTICE_TAINTS",
    "DEFAULT_TAINTS",
    "MAX_UNHEALTHY",
    "NODE_REASONS",
    "Unhealthy",
    "blocked",
    "release",
    "remember",
    "tied_to_node",
    "wanted",
]

# The failures a node causes: lost or shut down, the kubelet's evictions and admission errors,
# the taint manager's evictions (DisruptionTarget reasons). Preemption and API evictions say
# nothing about the node's health.
NODE_REASONS = frozenset(
    {
        "NodeLost",
        "NodeShutdown",
        "Shutdown",
        "Terminated",
        "Evicted",
        "UnexpectedAdmissionError",
        "DeletionByTaintManager",
        "TerminationByKubelet",
    }
)
# node-problem-detector's permanent problems.
DEFAULT_CONDITIONS = ("KernelDeadlock", "ReadonlyFilesystem")
# Taints the scheduler already honours, unless a pod tolerates every taint (``operator: Exists``
# with no key), as training pods that must run on tainted GPU nodes often do.
DEFAULT_TAINTS = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
)
# A node a notice says will go (spec.checkpoint: the job checkpoints, then moves off it): the taints
# that node-termination handlers and cloud providers set on a spot interruption or a maintenance —
# AWS's node termination handler, GKE's impending termination, Karpenter's disruption, the cluster
# autoscaler's scale-down. No condition by default; --node-notice-conditions adds some.
DEFAULT_NOTICE_TAINTS = (
    "aws-node-termination-handler/spot-itn",
    "aws-node-termination-handler/scheduled-maintenance",
    "aws-node-termination-handler/asg-lifecycle-termination",
    "cloud.google.com/impending-node-termination",
    "karpenter.sh/disrupted",
    "ToBeDeletedByClusterAutoscaler",
)
DEFAULT_NOTICE_CONDITIONS: tuple[str, ...] = ()
# At most this many unhealthy nodes are written into a pod's affinity (the first by name).
MAX_UNHEALTHY = 128
# The scheduler's words when node affinity (or a node selector) leaves no node.
_AFFINITY = "node affinity"


@attrs.frozen(kw_only=True)
class Unhealthy:
    """Which nodes count as unhealthy: a node condition of these types is True, or a taint with
    one of these keys is on it."""

    conditions: frozenset[str] = frozenset(DEFAULT_CONDITIONS)
    taints: frozenset[str] = frozenset(DEFAULT_TAINTS)

    def why(self, node: Mapping[str, Any]) -> str | None:
        """Why ``node`` (as the apiserver returns it) is unhealthy; None when it is not."""
        for c in (node.get("status") or {}).get("conditions") or ():
            if c.get("type") in self.conditions and c.get("status") == "True":
                return f"condition {c['type']}"
        for t in (node.get("spec") or {}).get("taints") or ():
            if t.get("key") in self.taints:
                return f"taint {t['key']}"
        return None


def tied_to_node(f: classify.Failure, *, rule_says: bool) -> bool:
    """Whether failure ``f`` puts the pod's node on the job's avoided list."""
    if f.pod.node is None or f.pod.vanished:
        return False
    return rule_says or (f.failure_class is v1beta1.FailureClass.INFRASTRUCTURE and f.reason in NODE_REASONS)


def remember(
    avoided: tuple[v1beta1.AvoidedNode, ...], f: classify.Failure, now: datetime.datetime
) -> tuple[v1beta1.AvoidedNode, ...]:
    """``avoided`` with the node of failure ``f`` added last (once), the oldest let go first."""
    assert f.pod.node is not None
    entry = v1beta1.AvoidedNode(node=f.pod.node, reason=f.reason, pod=f.pod.name, time=now)
    kept = [a for a in avoided if a.node != f.pod.node]
    return (*kept, entry)[-status_types.MAX_AVOIDED_NODES :]


def wanted(avoided: Iterable[v1beta1.AvoidedNode], unhealthy: Collection[str]) -> frozenset[str]:
    """The nodes new pods keep off: the avoided ones and (at most :data:`MAX_UNHEALTHY`) unhealthy ones."""
    return frozenset(a.node for a in avoided) | frozenset(sorted(unhealthy)[:MAX_UNHEALTHY])


def blocked(pods: Iterable[observed.Pod]) -> list[observed.Pod]:
    """The pods that keep off nodes and cannot be placed because of it, in the scheduler's words."""
    return [
        p
        for p in pods
        if p.avoiding
        and p.node is None
        and not p.finished
        and p.deleted is None
        and p.unscheduled is not None
        and p.unscheduled[0] == placement.UNSCHEDULABLE
        and _AFFINITY in p.unscheduled[1]
    ]


def release(avoided: tuple[v1beta1.AvoidedNode, ...], stuck: list[observed.Pod]) -> str | None:
    """Why the avoided nodes are let go now (they leave ``stuck`` pods unplaceable); None to keep them."""
    if not avoided or not stuck or not any({a.node for a in avoided} & p.avoiding for p in stuck):
        return None
    names = ", ".join(a.node for a in avoided)
    first = stuck[0]
    said = first.unscheduled[1] if first.unscheduled is not None else ""
    return f"keeping off {names} leaves {first.name} unschedulable ({said}); they are let go"
