"""SIGKILL the operator in the middle of a job's life: nothing is duplicated, lost or counted twice."""

from __future__ import annotations

import json
import os
import signal

from testkit import operator
from testkit.jobs import RESOURCE, create, pods, running_pods, sample, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process

ATTEMPT = "training.kubetrain.dev/restart-attempt"


def kill(op: process.Process) -> None:
    assert op.pid is not None
    os.kill(op.pid, signal.SIGKILL)
    process.wait_until("the operator to die", lambda: not op.alive(), timeout=10)


def test_a_killed_operator_picks_up_where_it_left_off(cluster: devcluster.Cluster, namespace: str) -> None:
    job = sample("pytorch-ddp", restart_policy="ExitCode", replicaSpecs__Worker__replicas=3)
    op = operator.start(cluster, namespace)
    try:
        name = create(cluster, namespace, job)
        # Killed while it creates the pods.
        eventually("the first pod", lambda: pods(cluster, namespace, name), timeout=30, interval=0.02)
        kill(op)
        op = operator.start(cluster, namespace)
        first = running_pods(cluster, namespace, name, 4)
        wait_state(cluster, namespace, name, "Running")

        # Killed while it restarts the world after a failure.
        kwok.finish_pod(cluster, namespace, "pytorch-ddp-worker-2", 137)
        eventually(
            "the failure to be recorded",
            lambda: json.loads(cluster.kubectl("get", RESOURCE, name, "-n", namespace, "-o", "json").stdout)[
                "status"
            ].get("restarts"),
            timeout=30,
            interval=0.02,
        )
        kill(op)
        op = operator.start(cluster, namespace)
        second = eventually(
            "a new world",
            lambda: (
                (now := running_pods(cluster, namespace, name, 4))
                and {p["metadata"]["labels"][ATTEMPT] for p in now.values()} == {"1"}
                and now
            ),
            timeout=60,
        )
        assert not {p["metadata"]["uid"] for p in second.values()} & {
            p["metadata"]["uid"] for p in first.values()
        }
        s = wait_state(cluster, namespace, name, "Running")
        assert s["restarts"] == {"userCode": 1}
        assert len(s["failures"]) == 1

        kwok.finish_pod(cluster, namespace, "pytorch-ddp-master-0", 0)
        s = wait_state(cluster, namespace, name, "Succeeded")
        assert s["restarts"] == {"userCode": 1}
        uid = json.loads(cluster.kubectl("get", RESOURCE, name, "-n", namespace, "-o", "json").stdout)[
            "metadata"
        ]["uid"]
        everything = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        for pod in everything:
            (owner,) = pod["metadata"]["ownerReferences"]
            assert owner["uid"] == uid, f"orphan pod {pod['metadata']['name']}"
    finally:
        op.stop()


def test_a_pod_gone_while_the_operator_was_down_is_counted_once_and_restarts_the_world(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # A new rank must never join an old world: a worker deleted while no operator watched is
    # a failure (infrastructure: PodVanished), handled by the job's restart scope.
    job = sample("pytorch-ddp", restart_policy="Never", replicaSpecs__Worker__replicas=3)
    op = operator.start(cluster, namespace)
    try:
        name = create(cluster, namespace, job)
        first = running_pods(cluster, namespace, name, 4)
        eventually(
            "the status to record every worker active",
            lambda: (
                wait_state(cluster, namespace, name, "Running")["replicaStatuses"]["Worker"].get(
                    "activeIndexes"
                )
                == "0-2"
            ),
            timeout=30,
        )
        op.stop()
        cluster.kubectl("delete", "pod", "-n", namespace, "pytorch-ddp-worker-1", "--wait=true")
        assert "pytorch-ddp-worker-1" not in pods(cluster, namespace, name)
        op = operator.start(cluster, namespace)
        second = eventually(
            "a new world",
            lambda: (
                (now := running_pods(cluster, namespace, name, 4))
                and {p["metadata"]["labels"][ATTEMPT] for p in now.values()} == {"1"}
                and now
            ),
            timeout=60,
        )
        assert not {p["metadata"]["uid"] for p in second.values()} & {
            p["metadata"]["uid"] for p in first.values()
        }, "no pod of the old world is left beside the new one"
        s = wait_state(cluster, namespace, name, "Running")
        assert s["restarts"] == {"infrastructure": 1}
        (record,) = s["failures"]
        assert record["reason"] == "PodVanished"
        assert record["class"] == "Infrastructure"
        assert (record["replicaType"], record["index"]) == ("Worker", 1)
        # Counted once: the next passes (a pod change wakes the job) charge nothing more.
        kwok.finish_pod(cluster, namespace, "pytorch-ddp-master-0", 0)
        s = wait_state(cluster, namespace, name, "Succeeded")
        assert s["restarts"] == {"infrastructure": 1}
    finally:
        op.stop()
