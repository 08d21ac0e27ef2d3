"""The nodes cache: which nodes are unhealthy, and whether any kubelet restarts pods in place,
kept from the node informer's events (handed to its handler, as the informer would)."""

from __future__ import annotations

from typing import Any

from kubetrain.api import naming
from kubetrain.operator import nodes, projection
from kubetrain.operator.policies import avoid


def health() -> tuple[nodes.Health, Any]:
    """A cache on a stand-in informer, and the handler it registered."""
    handlers: list[Any] = []

    class Informer:
        def add_handler(self, handler: Any) -> None:
            handlers.append(handler)

    cache = nodes.Health(Informer(), avoid.Unhealthy())  # type: ignore[arg-type]
    (handler,) = handlers
    return cache, handler


def test_the_unhealthy_nodes_follow_the_node_caches_events() -> None:
    cache, handler = health()

    def node(name: str, *taints: str, conditions: tuple[str, ...] = ()) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"taints": [{"key": t} for t in taints]},
            "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
        }

    handler("ADDED", node("a"), None)
    handler("ADDED", node("b", "node.kubernetes.io/unschedulable"), None)
    handler("ADDED", node("c", conditions=("KernelDeadlock",)), None)
    assert cache.unhealthy == {"b", "c"}
    handler("MODIFIED", node("b"), None)  # uncordoned
    assert cache.unhealthy == {"c"}
    handler("DELETED", node("c", conditions=("KernelDeadlock",)), None)
    assert cache.unhealthy == frozenset()


def test_the_node_cache_tells_whether_any_node_restarts_in_place() -> None:
    cache, handler = health()
    node = {"metadata": {"name": "n1"}, "status": {"declaredFeatures": ["A", naming.IN_PLACE_FEATURE]}}
    handler("ADDED", projection.node(node), None)
    assert cache.in_place
    handler("MODIFIED", projection.node({"metadata": {"name": "n1"}}), None)  # a kubelet of 1.35
    assert not cache.in_place
    handler("ADDED", projection.node(node), None)
    handler("DELETED", projection.node(node), None)
    assert not cache.in_place
