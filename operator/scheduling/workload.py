"""Kueue's Workload route: the job's own Workload, whose admission starts the job.

A job in a Kueue queue (``schedulingPolicy.queue``) gets one Workload (``kueue.x-k8s.io/v1beta2``),
made and owned by the operator, as Kueue makes one for a batch Job, a JobSet or a TrainJob:
one pod set per replica type, named like the type in lower case, with the type's count and
its first pod as the template (so Kueue charges exactly what the pods will ask for, agent and
init containers included), the job's queue, and its priority. The job makes no pod until
Kueue admits the Workload; its pods then carry what the admission says (:func:`apply`): each
assigned ResourceFlavor's node labels as a node selector and its tolerations, and the updates
of the admission checks (a ProvisioningRequest's node selector, say). An elastic job's Workers
may be admitted fewer (``minCount``: partial admission); a template that asks for a topology
with Kueue's annotations gets it requested (``topologyRequest``), and its pods, admitted with a
topology assignment, wait at Kueue's gate until Kueue places them on their domains.

When Kueue evicts the Workload (preempted, its quota reclaimed, an admission check retried),
the job stops: its pods are deleted as a suspension deletes them, uncharged, and once none
is left the operator gives the quota back (:func:`requeued_status`), so Kueue can queue it
again. When the job ends, its Workload is finished (:func:`finished_status`) and Kueue
frees the quota at once, before the pods are cleaned up. A job its user suspends keeps no
Workload once its pods are gone: suspended, it holds no quota, and resumed it queues again with
a Workload made from its spec as it is then.

MultiKueue dispatches a job whose ``spec.managedBy`` is :data:`MULTIKUEUE`: on the manager the
operator makes the job's Workload and nothing else (Kueue mirrors the worker's status onto the
job); on the worker, MultiKueue makes the Workload and a copy of the job that names it
(:data:`PREBUILT`), and the operator adopts that Workload instead of making one, runs the job,
and finishes the Workload at its end, which is how the manager learns it ended.

Everything here is pure: :class:`Seen` reads a Workload (and the flavors it names) into a
value the lifecycle step decides on, and the renders are plain dicts the reconciler sends.
"""

from __future__ import annotations

import datetime
import enum
import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from kubetrain.operator.resources import Resource

__all__ = [
    "MULTIKUEUE",
    "PREBUILT",
    "PRIORITY_CLASSES",
    "RESOURCE_FLAVORS",
    "WORKLOADS",
    "Act",
    "Assignment",
    "Seen",
    "apply",
    "assigned",
    "finished_status",
    "name_of",
    "pod_set_name",
    "prebuilt",
    "render",
    "requeued_status",
]

GROUP = "kueue.x-k8s.io"
WORKLOADS = Resource(GROUP, "v1beta2", "workloads", "Workload")
RESOURCE_FLAVORS = Resource(GROUP, "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
# Topology-Aware Scheduling: a pod template asks for a topology with one of these annotations
# (Kueue's own, as for its built-in jobs); admitted with a topology assignment, the pods carry
# Kueue's gate, their pod set and their Workload, and Kueue ungates them onto their domains.
TOPOLOGY_REQUESTS = {
    "kueue.x-k8s.io/podset-required-topology": "required",
    "kueue.x-k8s.io/podset-preferred-topology": "preferred",
    "kueue.x-k8s.io/podset-unconstrained-topology": "unconstrained",
}
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
POD_SET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
_UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"

# Evictions after which Kueue's own integrations mark a Workload Requeued (its others wait for a
# backoff Kueue ends itself).
_REQUEUED_AFTER = frozenset({"Preempted", "NodeFailures"})
# A Workload's name is a DNS subdomain; the job's name is cut so that the whole fits.
_MAX_NAME = 253
# MultiKueue: the manager's spec.managedBy, and the Workload it names on a job it dispatches to a
# worker (an annotation since Kueue 0.18; a label before, still read).
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"

Object = dict[str, Any]


class Act(enum.StrEnum):
    """What the reconciler does to the job's Workload."""

    CREATE = "Create"
    # The job has ended: Kueue may free the quota.
    FINISH = "Finish"
    # The job stopped after an eviction: give the quota back, so that Kueue queues it again.
    REQUEUE = "Requeue"
    # The job is suspended and its pods are gone: the Workload goes, with any quota it holds; on
    # resume the job gets a new one, made from its spec as it is then (scaled meanwhile, say).
    DELETE = "Delete"
    # MultiKueue made the Workload (and the job) on this worker cluster: the job takes it as its own
    # (a controller reference, the spec untouched), as Kueue's own integrations adopt theirs.
    ADOPT = "Adopt"


def name_of(job: str, uid: str) -> str:
    """The Workload of job ``job`` (its UID tells a job made again under the same name apart)."""
    tag = hashlib.sha256(uid.encode()).hexdigest()[:5]
    prefix = "trainingjob-"
    return f"{prefix}{job[: _MAX_NAME - len(prefix) - len(tag) - 1]}-{tag}"


def prebuilt(annotations: Mapping[str, str], labels: Mapping[str, str]) -> str | None:
    """The Workload MultiKueue made for the job with these annotations and labels, if it
    dispatched it here."""
    return annotations.get(PREBUILT) or labels.get(PREBUILT) or None


def pod_set_name(replica_type: str) -> str:
    return replica_type.lower()


@attrs.frozen(kw_only=True)
class Assignment:
    """What an admission asks of one pod set's pods."""

    count: int | None = None  # None: every pod of the set
    node_selector: Mapping[str, str] = attrs.field(factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    # Placed by Topology-Aware Scheduling: the Workload and the pod set Kueue ungates the pods of.
    topology: tuple[str, str] | None = None


@attrs.frozen(kw_only=True)
class Seen:
    """The job's Workload as the caches show it."""

    name: str
    uid: str = ""
    # The job controls it (it made it, or adopted it from MultiKueue).
    owned: bool = True
    # Kueue reserved quota for it (status.admission is set).
    reserved: bool = False
    # Admitted: quota reserved and every admission check Ready.
    admitted: bool = False
    # Evicted (preempted, quota reclaimed, deactivated, an admission check retried): Kueue's
    # reason and message, until it is admitted again.
    evicted: tuple[str, str] | None = None
    finished: bool = False
    cluster_queue: str = ""
    # The admission's assignment of each pod set, by pod set name.
    assignments: Mapping[str, Assignment] = attrs.field(factory=dict)

    @property
    def runs(self) -> bool:
        """Whether the job may run: admitted and not evicted."""
        return self.admitted and self.evicted is None

    @classmethod
    def of(
        cls, obj: Mapping[str, Any], flavors: Callable[[str], Mapping[str, Any] | None], *, owned: bool = True
    ) -> Seen:
        """``obj``, a Workload; ``flavors`` finds a ResourceFlavor by name; ``owned``: the job controls it."""
        status = obj.get("status") or {}
        true = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
        admission = status.get("admission") or None
        evicted = true.get("Evicted")
        updates: dict[str, list[Mapping[str, Any]]] = {}
        for check in status.get("admissionChecks") or []:
            for u in check.get("podSetUpdates") or []:
                updates.setdefault(u.get("name", ""), []).append(u)
        assignments = {}
        for a in (admission or {}).get("podSetAssignments") or []:
            name = a.get("name", "")
            assignments[name] = _assignment(a, flavors, updates.get(name, []), obj["metadata"]["name"])
        return cls(
            name=obj["metadata"]["name"],
            uid=obj["metadata"].get("uid", ""),
            owned=owned,
            reserved=admission is not None and "QuotaReserved" in true,
            admitted="Admitted" in true,
            evicted=(evicted.get("reason", ""), evicted.get("message", "")) if evicted else None,
            finished="Finished" in true,
            cluster_queue=(admission or {}).get("clusterQueue", ""),
            assignments=assignments,
        )


def assigned(seen: Seen | None, creates: Iterable[tuple[str, int]]) -> dict[str, Assignment]:
    """What the admission of ``seen`` asks of the pods to ``create`` (replica type, index), by
    their pod set (their replica type in lower case, as their label has it)."""
    sets = {pod_set_name(key) for key, _ in creates}
    if not sets or seen is None:
        return {}
    return {k: a for k, a in seen.assignments.items() if k in sets}


def _assignment(
    a: Mapping[str, Any],
    flavors: Callable[[str], Mapping[str, Any] | None],
    updates: list[Mapping[str, Any]],
    workload: str,
) -> Assignment:
    selector: dict[str, str] = {}
    tolerations: list[Mapping[str, Any]] = []
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    for flavor in dict.fromkeys((a.get("flavors") or {}).values()):
        spec = (flavors(flavor) or {}).get("spec") or {}
        selector.update(spec.get("nodeLabels") or {})
        tolerations += [t for t in spec.get("tolerations") or [] if t not in tolerations]
    for u in updates:
        selector.update(u.get("nodeSelector") or {})
        tolerations += [t for t in u.get("tolerations") or [] if t not in tolerations]
        labels.update(u.get("labels") or {})
        annotations.update(u.get("annotations") or {})
    return Assignment(
        count=a.get("count"),
        node_selector=selector,
        tolerations=tuple(tolerations),
        labels=labels,
        annotations=annotations,
        topology=(workload, a.get("name", "")) if a.get("topologyAssignment") else None,
    )


def apply(pod: Object, a: Assignment | None) -> None:
    """Put on ``pod`` what its pod set's admission asks of it."""
    if a is None:
        return
    spec, meta = pod["spec"], pod["metadata"]
    if a.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **a.node_selector}
    if a.tolerations:
        own = spec.get("tolerations") or []
        spec["tolerations"] = own + [dict(t) for t in a.tolerations if t not in own]
    if a.labels:
        meta["labels"] = {**a.labels, **(meta.get("labels") or {})}
    if a.annotations:
        meta["annotations"] = {**a.annotations, **(meta.get("annotations") or {})}
    if a.topology is not None:
        workload, pod_set = a.topology
        spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": TOPOLOGY_GATE}]
        meta["labels"] = {**(meta.get("labels") or {}), POD_SET_LABEL: pod_set}
        own = meta.get("annotations") or {}
        asked = {} if any(k in own for k in TOPOLOGY_REQUESTS) else {_UNCONSTRAINED: "true"}
        meta["annotations"] = {**own, **asked, WORKLOAD_ANNOTATION: workload}


def render(
    *,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    owners: list[Object],
    queue: str,
    pods: Mapping[str, Object],
    counts: Mapping[str, int],
    min_counts: Mapping[str, int] | None = None,
    priority: tuple[str, int] | None = None,
    index_label: str = "",
) -> Object:
    """The Workload of a job: one pod set per replica type, from ``pods`` (a pod of each type, by
    type), ``counts`` and ``min_counts`` (the fewest pods of a type Kueue may admit the job with,
    where it may be fewer than its count); ``priority`` is the job's PriorityClass and its value.
    A pod set whose template asks for a topology (:data:`TOPOLOGY_REQUESTS`) requests it, its pods
    ranked by ``index_label``."""
    pod_sets = []
    for key, pod in pods.items():
        meta = pod["metadata"]
        template = {
            "metadata": {
                "labels": dict(meta.get("labels") or {}),
                "annotations": dict(meta.get("annotations") or {}),
            },
            "spec": pod["spec"],
        }
        pod_set: Object = {"name": pod_set_name(key), "count": counts[key], "template": template}
        asked = [
            (field, meta["annotations"][k])
            for k, field in TOPOLOGY_REQUESTS.items()
            if k in (meta.get("annotations") or {})
        ]
        if asked:
            field, level = asked[0]
            pod_set["topologyRequest"] = {
                field: level == "true" if field == "unconstrained" else level,
                "podIndexLabel": index_label,
            }
        fewest = (min_counts or {}).get(key)
        if fewest is not None and fewest < counts[key]:
            pod_set["minCount"] = fewest
        pod_sets.append(pod_set)
    spec: Object = {"queueName": queue, "podSets": pod_sets}
    if priority is not None:
        ref = {"group": PRIORITY_CLASSES.group, "kind": PRIORITY_CLASSES.kind, "name": priority[0]}
        spec |= {"priorityClassRef": ref, "priority": priority[1]}
    meta_: Object = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if owners:
        meta_["ownerReferences"] = owners
    return {"apiVersion": WORKLOADS.api_version, "kind": WORKLOADS.kind, "metadata": meta_, "spec": spec}


def finished_status(
    obj: Mapping[str, Any], *, succeeded: bool, message: str, now: datetime.datetime
) -> Object:
    """The status patch that finishes ``obj``: Kueue frees its quota."""
    reason = "Succeeded" if succeeded else "Failed"
    return _patch(obj, {"Finished": ("True", reason, message)}, now)


def requeued_status(obj: Mapping[str, Any], *, now: datetime.datetime) -> Object:
    """The status patch that gives an evicted Workload's quota back once the job has stopped, as
    Kueue's own integrations do: no admission, ``QuotaReserved`` and ``Admitted`` False, and
    ``Requeued`` True after a preemption or lost nodes (after the other evictions Kueue requeues
    it itself, once their backoff is over)."""
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    evicted: Mapping[str, Any] = next(
        (c for c in conditions if c.get("type") == "Evicted" and c.get("status") == "True"), {}
    )
    reason, message = evicted.get("reason") or "Evicted", evicted.get("message") or "evicted"
    checks = "UnsatisfiedChecks" if status.get("admissionChecks") else ""
    changes = {
        "QuotaReserved": ("False", "Pending", message),
        "Admitted": ("False", f"NoReservation{checks}", "The workload has no reservation"),
        "Requeued": ("True" if reason in _REQUEUED_AFTER else "False", reason, message),
    }
    patch = _patch(obj, changes, now)
    patch["status"]["admission"] = None
    return patch


def _patch(
    obj: Mapping[str, Any], changes: Mapping[str, tuple[str, str, str]], now: datetime.datetime
) -> Object:
    """A merge patch of ``obj``'s status conditions, over the version read: the whole list, as a
    merge patch replaces a list; a condition keeps its transition time if its status stays."""
    stamp = now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = obj["metadata"].get("generation")
    old = (obj.get("status") or {}).get("conditions") or []
    out = [c for c in old if c.get("type") not in changes]
    for ctype, (status, reason, message) in changes.items():
        prev = next((c for c in old if c.get("type") == ctype and c.get("status") == status), None)
        since = prev["lastTransitionTime"] if prev is not None else stamp
        new = {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
        }
        out.append(new if generation is None else {**new, "observedGeneration": generation})
    return {
        "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
        "status": {"conditions": out},
    }
