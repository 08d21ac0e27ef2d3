"""How a job's pods spread over nodes, said by the job itself so that kube-scheduler need not guess.

kube-scheduler's PodTopologySpread plugin gives a pod with no ``topologySpreadConstraints`` of its
own the system defaults (soft: ``kubernetes.io/hostname`` with maxSkew 3,
``topology.kubernetes.io/zone`` with maxSkew 5). To find which pods to spread it from, it lists
*every* Service in the pod's namespace and matches each one's selector against the pod
(``helper.DefaultSelector`` → ``GetPodServices``, v1.36), once for every pod it places. With one
headless Service per replica (``network.hostNames: PerReplica``, Kubeflow v1's names) that is as
many Services as pods: at 2,000 jobs x 4 in one namespace it spent 9.3 ms of CPU per pod where
bare pods cost it 1.3 ms (docs/performance.md), and the spreading it bought was none, since a
per-replica Service selects its own pod only. With one
Service per job (``PerJob``) it spreads the job's pods, at the cost of the same listing.

A pod that carries constraints of its own skips all of that: the scheduler reads them and no
Service. So every replica pod whose template says nothing about spreading gets
:func:`constraints`: the job's pods spread softly over nodes, which is what the defaults give a job
whose pods share one Service (a JobSet, a ``PerJob`` job), now in both modes and without the
listing. Only the hostname key: with constraints of its own, the scheduler leaves unscored every
node that lacks one of their keys, and many clusters (this one's kwok and real nodes, most
on-premises ones) label no zones — while spreading a training job over zones only adds cross-zone
traffic to its collectives. A template that sets ``topologySpreadConstraints``, even to ``[]``,
keeps what it says.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api import naming

__all__ = ["HOSTNAME", "MAX_SKEW", "add", "constraints"]

HOSTNAME = "kubernetes.io/hostname"
# kube-scheduler's own default for the hostname key. Soft constraints weigh in its score only, where
# maxSkew adds the same to every node: the job's pods counted on each node decide.
MAX_SKEW = 3


def constraints(job: str) -> list[dict[str, Any]]:
    """The pods of ``job`` spread softly over nodes."""
    return [
        {
            "maxSkew": MAX_SKEW,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {naming.JOB_NAME: job}},
        }
    ]


def add(spec: dict[str, Any], job: str) -> None:
    """Give a pod ``spec`` of ``job`` :func:`constraints`, unless its template set its own."""
    if "topologySpreadConstraints" not in spec:
        spec["topologySpreadConstraints"] = constraints(job)
