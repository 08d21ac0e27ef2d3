"""What the accepted jobs made, as watches of the namespace saw it; what each job should make."""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

from kubetrain.api import naming, scheme, v1alpha1, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import registry
from kubetrain.operator.runtime import client
from kubetrain_bench.watch import list_and_watch

RESOURCES = {v.VERSION: client.Resource(v.GROUP, v.VERSION, v.PLURAL, v.KIND) for v in (v1beta1, v1alpha1)}
MANAGER = naming.MANAGER_NAME


class Seen:
    """Every pod and Service name ever seen in the namespace, and every job's events."""

    def __init__(self) -> None:
        self.names: dict[str, set[str]] = {"Pod": set(), "Service": set()}
        self.unschedulable: dict[str, str] = {}  # pod name -> the scheduler's message, while Pending
        self.waited: dict[str, str] = {}  # pod name -> the scheduler's message, if it ever was unschedulable
        self.live: set[str] = set()  # pods in the namespace now
        self.peak = 0  # the most pods ever in the namespace at once
        self.pod_state: dict[str, str] = {}  # pod name -> "Running, Ready" and the like, as last seen
        self.ready_at: dict[str, float] = {}  # pod name -> when it was first seen Ready (monotonic)
        self.events: dict[str, dict[str, dict[str, Any]]] = collections.defaultdict(dict)
        self.changed = asyncio.Event()

    def note(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata", {})
        if kind == "Event":
            involved = obj.get("involvedObject", {})
            if involved.get("kind") == "TrainingJob":
                self.events[involved.get("name", "")][meta.get("name", "")] = {
                    "type": obj.get("type"),
                    "reason": obj.get("reason"),
                    "message": str(obj.get("message", ""))[:500],
                    "count": obj.get("count", 1) or 1,
                }
        else:
            name = meta.get("name", "")
            self.names[kind].add(name)
            if kind == "Pod":
                refused = [
                    c
                    for c in obj.get("status", {}).get("conditions", [])
                    if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                ]
                self.live.add(name)
                self.peak = max(self.peak, len(self.live))
                if refused:
                    self.unschedulable[name] = str(refused[0].get("message", ""))[:300]
                    self.waited[name] = self.unschedulable[name]
                else:
                    self.unschedulable.pop(name, None)
                status = obj.get("status", {})
                ready = any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions", [])
                )
                if ready:
                    self.ready_at.setdefault(name, time.monotonic())
                gone = " (deleting)" if meta.get("deletionTimestamp") else ""
                self.pod_state[name] = (
                    f"{status.get('phase', '?')}, {'Ready' if ready else 'not Ready'}{gone}"
                )
        self.changed.set()

    async def watch(self, api: client.Client, resource: client.Resource, namespace: str) -> None:
        """List, then watch, ``resource`` forever (relisting when the watch ends or expires)."""

        def listed(items: list[dict[str, Any]]) -> None:
            for obj in items:
                self.note(resource.kind, obj)

        def changed(kind: str, obj: dict[str, Any]) -> None:
            if kind in ("ADDED", "MODIFIED"):
                self.note(resource.kind, obj)
            elif kind == "DELETED" and resource.kind == "Pod":
                self.live.discard(obj.get("metadata", {}).get("name", ""))

        await list_and_watch(api, resource, namespace=namespace, listed=listed, changed=changed, retry=0.5)


def expected_objects(stored: dict[str, Any]) -> tuple[set[str], set[str], str | None]:
    """(pod names, Service names, why it is idle or None) the operator should make for ``stored``."""
    hub = scheme.to_hub(scheme.decode(stored))
    managed_by = hub.spec.run_policy.managed_by
    if hub.spec.run_policy.suspend:
        return set(), set(), "suspended"
    if managed_by not in (None, MANAGER):
        return set(), set(), f"managed by {managed_by}"
    objects = render.render(hub, registry.default().get(hub.spec.framework.name))
    pods = {o["metadata"]["name"] for o in objects if o["kind"] == "Pod"}
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    want = sum(r.replicas for r in hub.spec.replica_specs.values())
    if len(pods) != want:
        raise AssertionError(f"renders {len(pods)} pods for {want} replicas")
    return pods, services, None
