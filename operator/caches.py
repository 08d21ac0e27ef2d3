"""The operator's caches, read as :class:`~kubetrain.operator.observe.Caches`: values, not dicts.

Each method reads one informer's store (or the tombstones, or the node health) and turns what it
finds into the values :func:`~kubetrain.operator.observe.observe` and the executor read: pods and
Services as :mod:`~kubetrain.api.observed` reads them, a Workload as
:class:`~.scheduling.workload.Seen`, whoever holds a name as an :class:`~.observe.Holder`.
Whose an object is goes by its controller's UID, as Kubernetes' controllers claim pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import meta, observed, v1beta1
from kubetrain.operator import nodes as nodes_
from kubetrain.operator.observe import Holder
from kubetrain.operator.runtime import cache, informer
from kubetrain.operator.scheduling import workload

__all__ = ["InformerCaches"]

Obj = dict[str, Any]


@attrs.define(kw_only=True)
class InformerCaches:
    """:class:`~.observe.Caches` over the operator's informers."""

    stores: Mapping[str, cache.Store]  # kind -> store: Pod, Service, ConfigMap
    tombstones: cache.Tombstones | None = None
    nodes: informer.Informer | None = None
    health: nodes_.Health | None = None
    workloads: informer.Informer | None = None
    flavors: informer.Informer | None = None
    priorities: informer.Informer | None = None

    def _owned(self, kind: str, key: str, uid: str) -> list[Obj]:
        return [o for o in self.stores[kind].by_index("owner", key) if meta.controlled_by(o, uid)]

    def pods(self, key: str, uid: str) -> list[observed.Pod]:
        nodes = self.nodes.store if self.nodes is not None and self.nodes.synced.is_set() else None
        return [
            observed.Pod.of(p, node_exists=nodes is None or nodes_.exists(nodes, p))
            for p in self._owned("Pod", key, uid)
        ]

    def gone(self, key: str, uid: str) -> list[observed.Pod]:
        if self.tombstones is None:
            return []
        return [observed.Pod.of(t, gone=True) for t in self.tombstones.of(key) if meta.controlled_by(t, uid)]

    def services(self, key: str, uid: str) -> list[tuple[str, observed.Service]]:
        return [(cache.key_of(s), observed.Service.of(s)) for s in self._owned("Service", key, uid)]

    def shows(self, kind: str, key: str) -> bool:
        store = self.stores.get(kind)
        return store is not None and store.get(key) is not None

    def holder(self, kind: str, key: str) -> Holder | None:
        store = self.stores.get(kind)
        found = store.get(key) if store is not None else None
        return Holder.of(found) if found is not None else None

    def workload_object(self, job: v1beta1.TrainingJob) -> Obj | None:
        """The job's Workload as the cache shows it: one this very job controls, or the one
        MultiKueue made for it, while no one controls that."""
        if self.workloads is None:
            return None
        prebuilt = workload.prebuilt(job.metadata.annotations, job.metadata.labels)
        name = prebuilt or workload.name_of(job.metadata.name or "", job.metadata.uid or "")
        obj = self.workloads.store.get(f"{job.metadata.namespace}/{name}")
        if obj is None or meta.controlled_by(obj, job.metadata.uid):
            return obj
        return obj if prebuilt is not None and meta.controller_of(obj) is None else None

    def workload(self, job: v1beta1.TrainingJob) -> workload.Seen | None:
        obj = self.workload_object(job)
        if obj is None:
            return None
        flavors = self.flavors.store if self.flavors is not None else None
        return workload.Seen.of(
            obj,
            lambda n: flavors.get(n) if flavors is not None else None,
            owned=meta.controlled_by(obj, job.metadata.uid),
        )

    def priority(self, name: str) -> int | None:
        found = self.priorities.store.get(name) if self.priorities is not None else None
        return int(found.get("value") or 0) if found is not None else None

    def unhealthy(self) -> frozenset[str]:
        return self.health.unhealthy if self.health is not None else frozenset()

    def noticed(self) -> frozenset[str]:
        return self.health.noticed if self.health is not None else frozenset()

    def in_place(self) -> bool:
        return self.health is not None and self.health.in_place
