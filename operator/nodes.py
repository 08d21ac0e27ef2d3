"""What the reconciler knows of nodes: which exist, which are unhealthy now, which a notice says
will go, and whether any can restart a pod in place.

The nodes' cache (projected: names, taint keys, true condition types, the one declared feature
read) answers whether a pod's node still exists. :class:`Health` follows the same cache's events
and keeps the names of the nodes that :class:`~.policies.avoid.Unhealthy` calls unhealthy, so a
step reads them as one frozen set instead of looking at every node; it also keeps the names of
the nodes that declare ``RestartAllContainersOnContainerExits``: pods are made restartable in
place only while some node can run them.
"""

from __future__ import annotations

import logging
from typing import Any

from kubetrain.api import naming
from kubetrain.operator.policies import avoid
from kubetrain.operator.runtime import cache, informer

__all__ = ["Health", "exists"]

log = logging.getLogger(__name__)


def exists(nodes: cache.Store, pod: dict[str, Any]) -> bool:
    """Whether the node ``pod`` was placed on (if any) is still there."""
    node = (pod.get("spec") or {}).get("nodeName")
    return not node or nodes.get(node) is not None


class Health:
    """The unhealthy nodes among those ``nodes`` holds, kept up to date by its events."""

    def __init__(
        self, nodes: informer.Informer, rule: avoid.Unhealthy, notice: avoid.Unhealthy | None = None
    ) -> None:
        self.rule = rule
        self.notice = notice or avoid.Unhealthy(
            conditions=frozenset(avoid.DEFAULT_NOTICE_CONDITIONS),
            taints=frozenset(avoid.DEFAULT_NOTICE_TAINTS),
        )
        self._why: dict[str, str] = {}
        self._noticed: set[str] = set()
        self.unhealthy: frozenset[str] = frozenset()
        self.noticed: frozenset[str] = frozenset()
        self._in_place: set[str] = set()
        nodes.add_handler(self.handler)

    @property
    def in_place(self) -> bool:
        """Whether some node declares that its kubelet restarts pods in place."""
        return bool(self._in_place)

    def handler(self, event: str, obj: cache.Obj, old: cache.Obj | None) -> None:
        name = obj["metadata"]["name"]
        declared = (obj.get("status") or {}).get("declaredFeatures") or ()
        if event != "DELETED" and naming.IN_PLACE_FEATURE in declared:
            self._in_place.add(name)
        else:
            self._in_place.discard(name)
        notice = None if event == "DELETED" else self.notice.why(obj)
        if (notice is not None) != (name in self._noticed):
            if notice is None:
                self._noticed.discard(name)
            else:
                self._noticed.add(name)
                log.info("node %s will go (%s): jobs on it checkpoint, then move off", name, notice)
            self.noticed = frozenset(self._noticed)
        why = None if event == "DELETED" else self.rule.why(obj)
        if why == self._why.get(name):
            return
        if why is None:
            del self._why[name]
            log.info("node %s is healthy again", name)
        else:
            self._why[name] = why
            log.info("node %s is unhealthy (%s): new pods keep off it", name, why)
        self.unhealthy = frozenset(self._why)
