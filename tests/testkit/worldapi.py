"""The apiserver and the caches of :class:`~testkit.world.World`, as the operator's shell sees them.

:class:`WorldApi` answers the operator's executor (:mod:`kubetrain.operator.execute`) as the
apiserver would: creates that a name already holds are refused 409, a delete or patch whose UID
precondition no longer holds 409, what is not there 404, a status patch over an older
``resourceVersion`` 409; a status patch is applied as a JSON merge patch to the stored status and
read back, so what the executor writes is what the next look sees. :class:`WorldCaches` is the
operator's caches over the same simulated cluster (:class:`kubetrain.operator.observe.Caches`).
So the World runs the operator's real observe and execute: every rule of the shell is inside the
property machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kubetrain.api import naming, observed, v1beta1, wire
from kubetrain.operator import observe
from kubetrain.operator.runtime import client
from kubetrain.operator.scheduling import workload as workload_

if TYPE_CHECKING:
    from testkit.world import World

Obj = dict[str, Any]


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` merged into ``target``."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def refuse(status: int, message: str) -> client.ApiError:
    return client.ApiError(status, {404: "NotFound", 409: "Conflict"}.get(status, "Invalid"), message)


class WorldApi:
    """What the executor calls: ``create``, ``get``, ``list``, ``delete``, ``merge_patch``."""

    def __init__(self, world: World) -> None:
        self.w = world

    async def create(
        self, resource: client.Resource, body: Obj, namespace: str | None = None, **_: Any
    ) -> Obj:
        w, kind, name = self.w, body.get("kind", resource.kind), body["metadata"]["name"]
        if resource is client.EVENTS or resource.plural == "events":
            w.events.append((body["reason"], body["message"]))
            return body
        if kind == "Pod":
            if name in w.refusing:
                raise refuse(*w.refusing[name])
            if name in w.pods or name in w.unseen or name in w.others:
                raise refuse(409, f'pods "{name}" already exists')
            w.created(body)
            return body
        if kind == "Service":
            if name in w.services:
                raise refuse(409, f'services "{name}" already exists')
            if name == naming.tensorboard_name(w.name):
                w.tensorboards += 1
            w.services[name] = observed.Service.of(body)
            return body
        if kind == workload_.WORKLOADS.kind:
            if name in w.refusing:
                raise refuse(*w.refusing[name])
            if w.workload is not None:
                raise refuse(409, f'workloads "{name}" already exists')
            w.workload = workload_.Seen(name=name)
            return body
        if w.scheduler.resource is not None and kind == w.scheduler.resource.kind:
            if name in w.groups:
                raise refuse(409, f'podgroups "{name}" already exists')
            w.groups[name] = w.uid
            return body
        # A ConfigMap, a Secret, the TensorBoard's Deployment.
        key = (kind, name)
        if key in w.shared:
            raise refuse(409, f"{kind} {name} already exists")
        w.shared.add(key)
        return body

    async def get(self, resource: client.Resource, name: str, namespace: str | None = None) -> Obj:
        w = self.w
        if (
            w.scheduler.resource is not None
            and resource.kind == w.scheduler.resource.kind
            and name in w.groups
        ):
            return _owned(name, w.groups[name], w.name)
        if resource.kind == workload_.WORKLOADS.kind and w.workload is not None:
            return _owned(name, w.uid, w.name)
        if (resource.kind, name) in w.shared:
            return _owned(name, w.uid, w.name)
        raise refuse(404, f"{resource.plural} {name} not found")

    async def list(self, resource: client.Resource, namespace: str | None = None, **_: str) -> Obj:
        w = self.w
        return {"items": [_owned(n, uid, w.name) for n, uid in sorted(w.groups.items())]}

    async def delete(
        self,
        resource: client.Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> None:
        w = self.w
        if resource is client.PODS:
            pod = w.pods.get(name)
            if pod is None:
                raise refuse(404, f'pods "{name}" not found')
            if uid is not None and pod.uid != uid:
                raise refuse(409, "Precondition failed: UID in precondition")
            w.deleted(pod, force=grace_period_seconds == 0)
        elif resource.kind == "Service":
            if w.services.pop(name, None) is None:
                raise refuse(404, f'services "{name}" not found')
            w.seen("Service", name, "DELETED")
        elif resource.kind == "TrainingJob":
            w.deleted_job = True
        elif resource.kind == workload_.WORKLOADS.kind:
            w.workload = None
        elif w.scheduler.resource is not None and resource.kind == w.scheduler.resource.kind:
            if w.groups.pop(name, None) is None:
                raise refuse(404, f"{name} not found")
            w.groups_deleted.append(name)

    async def merge_patch(
        self,
        resource: client.Resource,
        name: str,
        patch: Obj,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Obj:
        w = self.w
        if resource.kind == "TrainingJob":
            return w.stored(patch)
        if resource.plural == "events":
            return patch
        if resource is client.PODS:
            pod = w.pods.get(name)
            md = patch.get("metadata") or {}
            if pod is None:
                raise refuse(404, f'pods "{name}" not found')
            if "uid" in md and md["uid"] != pod.uid:
                raise refuse(409, "Precondition failed: UID in precondition")
            w.patched(pod, md)
            return patch
        if resource.kind == workload_.WORKLOADS.kind:
            if w.workload is None:
                raise refuse(404, f"{name} not found")
            if subresource is None:
                w.workload = attrs.evolve(w.workload, owned=True)
                return patch
            conds = {c["type"]: c["status"] for c in patch["status"].get("conditions") or ()}
            if conds.get("Finished") == "True":
                w.workload = attrs.evolve(w.workload, finished=True)
            elif conds.get("QuotaReserved") == "False":
                w.workload = attrs.evolve(w.workload, reserved=False, admitted=False, assignments={})
            return patch
        raise AssertionError(f"the executor patched {resource.kind} {name}")


def _owned(name: str, uid: str, job: str) -> Obj:
    ref = {"kind": "TrainingJob", "name": job, "uid": uid, "controller": True}
    return {"metadata": {"name": name, "ownerReferences": [ref]}}


class WorldCaches:
    """The operator's caches over the World (:class:`kubetrain.operator.observe.Caches`)."""

    def __init__(self, world: World) -> None:
        self.w = world

    def pods(self, key: str, uid: str) -> Iterable[observed.Pod]:
        w = self.w
        if uid != w.uid:
            return []
        return [attrs.evolve(p, node_exists=p.node not in w.lost or p.node is None) for p in w.pods.values()]

    def gone(self, key: str, uid: str) -> Iterable[observed.Pod]:
        return list(self.w.tombstones.values()) if uid == self.w.uid else []

    def services(self, key: str, uid: str) -> Iterable[tuple[str, observed.Service]]:
        w = self.w
        return [(f"{w.namespace}/{n}", s) for n, s in w.services.items()] if uid == w.uid else []

    def shows(self, kind: str, key: str) -> bool:
        name = key.partition("/")[2]
        if kind == "Pod":
            return name in self.w.pods or name in self.w.others
        return (kind == "Service" and name in self.w.services) or (kind, name) in self.w.shared

    def holder(self, kind: str, key: str) -> observe.Holder | None:
        w, name = self.w, key.partition("/")[2]
        if kind == "Pod" and name in w.others:
            return observe.Holder(kind="TrainingJob", name=w.name, uid=w.others[name], going=True)
        mine = (kind == "Pod" and name in w.pods) or (kind == "Service" and name in w.services)
        if mine or (kind, name) in w.shared:
            return observe.Holder(kind="TrainingJob", name=w.name, uid=w.uid)
        return None

    def workload(self, job: v1beta1.TrainingJob) -> workload_.Seen | None:
        return self.w.workload

    def workload_object(self, job: v1beta1.TrainingJob) -> Obj | None:
        seen = self.w.workload
        if seen is None:
            return None
        conditions = (
            [{"type": "Evicted", "status": "True", "reason": seen.evicted[0], "message": seen.evicted[1]}]
            if seen.evicted
            else []
        )
        md = {"name": seen.name, "namespace": self.w.namespace, "uid": "wl-uid", "resourceVersion": "1"}
        return {"metadata": md, "status": {"conditions": conditions}}

    def priority(self, name: str) -> int | None:
        return self.w.priorities.get(name)

    def unhealthy(self) -> frozenset[str]:
        return frozenset(self.w.unhealthy)

    def noticed(self) -> frozenset[str]:
        return frozenset(self.w.noticed)

    def in_place(self) -> bool:
        return self.w.in_place


def stored_status(status: v1beta1.TrainingJobStatus, patch: Mapping[str, Any]) -> v1beta1.TrainingJobStatus:
    """``status`` with a merge patch of its wire form applied, read back."""
    return wire.structure(merge(wire.unstructure(status), patch), v1beta1.TrainingJobStatus)
