"""Replacements keep off the nodes that failed them, and off nodes the operator is told are unhealthy.

On two dedicated kwok nodes, with a real kube-scheduler: a device error (exit code 74, matched
by a failure rule with ``avoidNode``) sends the replacement to the other node; a second one there
leaves no node, so the job lets both go and the pod runs again; and a node tainted unhealthy is
kept off by pods that tolerate every taint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import deadlock, operator
from testkit.jobs import create, events, pods, running_pods, sample, status, summary, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok

UNHEALTHY = "example.com/gpu-unhealthy"
DEVICE_RULE = {"name": "xid", "action": "Restart", "onExitCodes": {"values": [74]}, "avoidNode": True}


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster, None, f"--unhealthy-node-taints={UNHEALTHY}")
    yield
    op.stop()


@pytest.fixture
def pool(cluster: devcluster.Cluster, request: pytest.FixtureRequest) -> Iterator[deadlock.Pool]:
    yield from deadlock.pool(cluster, f"avoid-{request.node.name[5:25].replace('_', '-').rstrip('-')}")


def job(name: str, pool: deadlock.Pool, workers: int, *, tolerate_all: bool = False) -> dict[str, Any]:
    """A pytorch-ddp job whose pods only fit on ``pool``, restarted pod by pod."""
    out = sample("pytorch-ddp", failurePolicy={"restartScope": "Pod", "rules": [DEVICE_RULE]})
    out["metadata"]["name"] = name
    specs = out["spec"]["replicaSpecs"]
    specs["Worker"]["replicas"] = workers
    for rs in specs.values():
        pod_spec = rs["template"]["spec"]
        pod_spec["nodeSelector"] = {deadlock.NODE_LABEL: pool.name}
        everything = [{"operator": "Exists"}]
        own = [{"key": deadlock.NODE_LABEL, "operator": "Equal", "value": pool.name, "effect": "NoSchedule"}]
        pod_spec["tolerations"] = everything if tolerate_all else own
    return out


def test_a_device_error_sends_the_replacement_to_another_node_until_none_is_left(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    name = create(cluster, namespace, job("xid", pool, workers=1))
    first = running_pods(cluster, namespace, name, 2)["xid-worker-0"]
    wait_state(cluster, namespace, name, "Running")
    bad = first["spec"]["nodeName"]
    kwok.finish_pod(cluster, namespace, "xid-worker-0", 74)
    second = eventually(
        "the replacement to run on the other node",
        lambda: _replaced(cluster, namespace, name, first),
        timeout=60,
        evidence=lambda: summary(cluster, namespace, name),
    )
    assert second["spec"]["nodeName"] != bad
    s = status(cluster, namespace, name)
    assert [(a["node"], a["pod"]) for a in s["avoidedNodes"]] == [(bad, "xid-worker-0")]
    assert s["failures"][-1]["rule"] == "xid"
    assert bad in json.dumps(second["spec"]["affinity"]), "kept off by node affinity"

    # Now the other node fails it too: keeping off both leaves no node, so both are let go.
    kwok.finish_pod(cluster, namespace, "xid-worker-0", 74)
    third = eventually(
        "the pod to run again once the nodes are let go",
        lambda: _replaced(cluster, namespace, name, second),
        timeout=90,
        evidence=lambda: summary(cluster, namespace, name),
    )
    s = wait_state(cluster, namespace, name, "Running")
    assert "avoidedNodes" not in s, s.get("avoidedNodes")
    assert "affinity" not in third["spec"] or "matchFields" not in json.dumps(third["spec"]["affinity"])
    assert s["restarts"] == {"userCode": 2}, "letting the nodes go is not a failure"
    released = [e for e in events(cluster, namespace, name) if e["reason"] == "AvoidedNodesReleased"]
    assert len(released) == 1, [e["reason"] for e in events(cluster, namespace, name)]
    assert "unschedulable" in released[0]["message"]


def test_pods_that_tolerate_every_taint_keep_off_a_node_tainted_unhealthy(
    cluster: devcluster.Cluster, namespace: str, pool: deadlock.Pool
) -> None:
    sick = pool.nodes[0]
    cluster.kubectl("taint", "node", sick, f"{UNHEALTHY}=true:NoSchedule")
    name = create(cluster, namespace, job("sick", pool, workers=5, tolerate_all=True))
    running = running_pods(cluster, namespace, name, 6)
    assert {p["spec"]["nodeName"] for p in running.values()} == {pool.nodes[1]}, "none on the sick node"
    assert "avoidedNodes" not in status(cluster, namespace, name), "health is not a failure"


def _replaced(c: devcluster.Cluster, namespace: str, name: str, old: dict[str, Any]) -> dict[str, Any] | None:
    pod = pods(c, namespace, name).get(old["metadata"]["name"])
    ok = pod and pod["metadata"]["uid"] != old["metadata"]["uid"] and pod["status"].get("phase") == "Running"
    return pod if ok else None
