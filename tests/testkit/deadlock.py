"""The scenario gang scheduling exists for: two jobs that each fit alone, but not together.

Two dedicated kwok nodes have room for 6 of the 8 pods of two 4-pod jobs. Placed pod by pod,
both jobs get some of their pods and at least one of them holds nodes while it cannot run —
with two such jobs at 3 + 3 each waits for the other for ever. Placed as gangs, one job gets all
four pods and the other none until the first one is done, and both finish. The same scenario
runs against every backend (tests/e2e/test_gang_*.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok
from testkit.jobs import create, finish, pods, sample, status, wait_state

__all__ = ["PODS_PER_JOB", "Pool", "bound", "finish", "job", "placements", "pool", "start_both"]
from testkit.kube import eventually

PODS_PER_JOB = 4
# kwok nodes have 32 CPUs: at 10 CPUs a pod, two nodes have room for 3 + 3 pods.
CPU_PER_POD = "10"
NODE_LABEL = "kubetrain.dev/test-pool"


@attrs.frozen
class Pool:
    """Dedicated nodes: other tests' pods never land there, these jobs land nowhere else."""

    name: str
    nodes: tuple[str, ...]


def pool(c: devcluster.Cluster, name: str, size: int = 2) -> Iterator[Pool]:
    """Add ``size`` labelled, tainted kwok nodes; delete them afterwards."""
    nodes = tuple(f"{name}-{i}" for i in range(size))
    for n in nodes:
        kwok.add_node(c, n, {NODE_LABEL: name}, [{"key": NODE_LABEL, "value": name, "effect": "NoSchedule"}])
    eventually(
        f"nodes of {name} to be ready",
        lambda: all(_ready(c, n) for n in nodes),
        timeout=30,
    )
    try:
        yield Pool(name, nodes)
    finally:
        c.kubectl("delete", "node", *nodes, "--wait=false", check=False)


def _ready(c: devcluster.Cluster, node: str) -> bool:
    out = c.kubectl(
        "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False
    )
    return out.returncode == 0 and out.stdout.strip() == "True"


def job(name: str, p: Pool, **changes: Any) -> dict[str, Any]:
    """A pytorch-ddp job of 1 Master + 3 Workers whose pods only fit on ``p``."""
    out = sample("pytorch-ddp", **changes)
    out["metadata"]["name"] = name
    specs = out["spec"]["replicaSpecs"]
    specs["Worker"]["replicas"] = PODS_PER_JOB - 1
    for rs in specs.values():
        pod_spec = rs["template"]["spec"]
        pod_spec["nodeSelector"] = {NODE_LABEL: p.name}
        pod_spec["tolerations"] = [
            {"key": NODE_LABEL, "operator": "Equal", "value": p.name, "effect": "NoSchedule"}
        ]
        for container in pod_spec["containers"]:
            container["resources"] = {"requests": {"cpu": CPU_PER_POD}}
    return out


def bound(c: devcluster.Cluster, namespace: str, name: str) -> int:
    """How many of the job's pods have a node."""
    return sum(bool(p["spec"].get("nodeName")) for p in pods(c, namespace, name).values())


def placements(c: devcluster.Cluster, namespace: str, names: tuple[str, str]) -> tuple[int, int]:
    """Pods bound per job, once all 8 exist and the scheduler has settled (6 bound, or one gang)."""

    def settled() -> tuple[int, int] | None:
        if sum(len(pods(c, namespace, n)) for n in names) < 2 * PODS_PER_JOB:
            return None
        counts = (bound(c, namespace, names[0]), bound(c, namespace, names[1]))
        return counts if sum(counts) >= PODS_PER_JOB else None

    return eventually(f"pods of {names} to be placed", settled, timeout=60)


def start_both(c: devcluster.Cluster, namespace: str, p: Pool, **changes: Any) -> tuple[str, str]:
    names = ("first", "second")
    for n in names:
        create(c, namespace, job(n, p, **changes))
    return names


def assert_gang_placed_then_both_succeed(
    c: devcluster.Cluster, namespace: str, names: tuple[str, str]
) -> None:
    """One job has all its pods placed and the other none, until the first finishes."""
    counts = placements(c, namespace, names)
    assert sorted(counts) == [0, PODS_PER_JOB], f"placed per job: {counts}"
    running, waiting = names if counts[0] else names[::-1]
    # It stays so: the waiting gang does not take part of the room.
    time.sleep(5)
    assert (bound(c, namespace, running), bound(c, namespace, waiting)) == (PODS_PER_JOB, 0)
    shown = eventually(
        f"{waiting} to show why it waits",
        lambda: next(
            (
                x
                for x in status(c, namespace, waiting).get("conditions", [])
                if x["type"] == "Scheduled" and x["status"] == "False" and x["reason"] == "Unschedulable"
            ),
            None,
        ),
    )
    assert "cannot be placed" in shown["message"]
    wait_state(c, namespace, running, "Running")
    finish(c, namespace, running, sorted(pods(c, namespace, running)))
    eventually(f"{waiting} to be placed", lambda: bound(c, namespace, waiting) == PODS_PER_JOB, timeout=60)
    wait_state(c, namespace, waiting, "Running")
    done = finish(c, namespace, waiting, sorted(pods(c, namespace, waiting)))
    placed = next(x for x in done["conditions"] if x["type"] == "Scheduled")
    assert placed["status"] == "True", placed
