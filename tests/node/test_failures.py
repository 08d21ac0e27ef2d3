"""Failures on real pods behave as docs/lifecycle.md says: class, scope, budget and history.

Each failure here really happens — a process killed by a signal, a pod deleted with
kubectl, an image that is not there, a kubelet restarting a container in place, a kubelet
that stops — and the job's status is checked for what kubetrain made of it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from testkit import jobs
from testkit.kube import eventually
from testkit.pods import example_job, logs, restart_count

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import realnode

pytestmark = pytest.mark.usefixtures("running_operator")

EXIT = ["python3", "/opt/kubetrain/examples/exit.py"]
SLEEP = ["python3", "-c", "import time; print('up', flush=True); time.sleep(600)"]


def failures(s: dict[str, Any]) -> list[dict[str, Any]]:
    return list(s.get("failures", []))


def wait_failures(
    c: devcluster.Cluster, namespace: str, name: str, count: int, timeout: float = 90
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        s = jobs.status(c, namespace, name)
        return s if len(failures(s)) >= count else None

    return eventually(f"{count} failure(s) recorded on {name}", probe, timeout=timeout, interval=0.5)


def test_a_rank_killed_by_sigkill_is_retried_and_spends_the_user_budget(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = example_job(
        "sigkill",
        {"Worker": {"command": [*EXIT, "KILL", "--after=1"], "restartPolicy": "ExitCode"}},
        runPolicy={"backoffLimit": 1},
    )
    jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, "sigkill", "Failed", timeout=120)
    assert jobs.condition(s, "Failed")["reason"] == "BackoffLimitExceeded"
    history = failures(s)
    assert [f["exitCode"] for f in history] == [137, 137]
    assert {f["class"] for f in history} == {"UserCode"}
    assert [f["action"] for f in history] == ["Restart", "FailJob"]
    # The failure that goes over the budget is counted too: limit + 1.
    assert s["restarts"] == {"userCode": 2}
    assert all(f["node"].startswith("real-node-") for f in history)


def test_a_pod_deleted_with_kubectl_is_an_infrastructure_failure(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = example_job("deleted", {"Worker": {"command": SLEEP}}, failurePolicy={"restartScope": "Pod"})
    jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, "deleted", "Running", timeout=90)
    before = jobs.pods(cluster, namespace, "deleted")["deleted-worker-0"]["metadata"]["uid"]
    cluster.kubectl("delete", "pod", "deleted-worker-0", "-n", namespace, "--wait=false")
    s = wait_failures(cluster, namespace, "deleted", 1)
    (record,) = failures(s)
    assert (record["class"], record["reason"], record["action"]) == (
        "Infrastructure",
        "PodDeleted",
        "Restart",
    )
    s = jobs.wait_state(cluster, namespace, "deleted", "Running", timeout=90)
    assert s["restarts"].get("infrastructure") == 1
    assert not s["restarts"].get("userCode")
    after = jobs.pods(cluster, namespace, "deleted")["deleted-worker-0"]
    assert after["metadata"]["uid"] != before
    assert "up" in logs(cluster, namespace, "deleted-worker-0")


def test_an_image_that_is_not_there_is_infrastructure_after_the_grace(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = example_job(
        "noimage",
        {"Worker": {"command": SLEEP, "image": "kubetrain.local/not-built:v1"}},
        failurePolicy={"imagePullGraceSeconds": 5, "budgets": {"infrastructure": {"limit": 0}}},
    )
    jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, "noimage", "Failed", timeout=120)
    (record, *_) = failures(s)
    assert record["class"] == "Infrastructure"
    assert record["reason"] in {"ErrImagePull", "ImagePullBackOff"}


def test_on_failure_the_kubelet_restarts_the_container_in_place_and_it_is_charged(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # Fails once (leaving a mark in an emptyDir, which survives in-place restarts), then succeeds.
    command = [*EXIT, "3", "--unless-restarted=/scratch/failed-once"]
    # Scope Pod: a container the kubelet restarted in place needs nothing more from kubetrain.
    job = example_job(
        "onfailure",
        {"Worker": {"command": command, "restartPolicy": "OnFailure", "volume": "/scratch"}},
        failurePolicy={"restartScope": "Pod"},
    )
    jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, "onfailure", "Succeeded", timeout=120)
    (record,) = failures(s)
    assert (record["class"], record["exitCode"], record["action"]) == ("UserCode", 3, "Restart")
    assert s["restarts"].get("userCode") == 1
    pod = jobs.pods(cluster, namespace, "onfailure")["onfailure-worker-0"]
    # The same pod: the kubelet restarted its container, nobody recreated it.
    assert record["pod"] == "onfailure-worker-0"
    assert restart_count(pod) == 1
    assert "restarted in place: succeeding" in logs(cluster, namespace, "onfailure-worker-0")


def test_always_restarts_in_place_until_the_budget_is_spent(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = example_job(
        "always",
        {"Worker": {"command": [*EXIT, "4"], "restartPolicy": "Always"}},
        runPolicy={"backoffLimit": 1},
        failurePolicy={"restartScope": "Pod"},
    )
    jobs.create(cluster, namespace, job)
    s = jobs.wait_state(cluster, namespace, "always", "Failed", timeout=180)
    assert jobs.condition(s, "Failed")["reason"] == "BackoffLimitExceeded"
    assert [(f["exitCode"], f["class"]) for f in failures(s)] == [(4, "UserCode"), (4, "UserCode")]
    # Both in place, in one pod; the one that went over the budget counted too.
    assert {f["pod"] for f in failures(s)} == {"always-worker-0"}
    assert s["restarts"].get("userCode") == 2


def test_a_node_whose_kubelet_stops_loses_its_pods_which_come_back_elsewhere(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = example_job(
        "lostnode",
        {"Worker": {"command": SLEEP}},
        failurePolicy={"restartScope": "Pod", "terminationDeadlineSeconds": 3},
    )
    jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, "lostnode", "Running", timeout=90)
    first = jobs.pods(cluster, namespace, "lostnode")["lostnode-worker-0"]
    node = next(n for n in cluster.real_nodes if n.name == first["spec"]["nodeName"])
    stopped = time.monotonic()
    realnode.stop_kubelet(node)
    try:
        # NotReady after the grace period, evicted 5 s later, stuck Terminating (no kubelet
        # confirms), force-deleted by kubetrain after its termination deadline, recreated.
        def replaced() -> dict[str, Any] | None:
            pod = jobs.pods(cluster, namespace, "lostnode").get("lostnode-worker-0")
            ok = (
                pod
                and pod["metadata"]["uid"] != first["metadata"]["uid"]
                and pod["status"].get("phase") == "Running"
            )
            return pod if ok else None

        again = eventually("the pod to run again on the other node", replaced, timeout=120, interval=1)
        took = time.monotonic() - stopped
        assert again["spec"]["nodeName"] != node.name
        s = jobs.status(cluster, namespace, "lostnode")
        (record,) = failures(s)
        assert record["class"] == "Infrastructure"
        assert record["node"] == node.name
        assert record["reason"] in {"DeletionByTaintManager", "NodeLost"}
        assert s["restarts"].get("infrastructure") == 1
        assert not s["restarts"].get("userCode")
        print(f"kubelet stopped -> pod running on {again['spec']['nodeName']} in {took:.1f}s")
    finally:
        realnode.restart_kubelet(node)
        # Ready, and the taints the node lifecycle controller put on it gone: until they are, a
        # later test's pods that keep off the other node have nowhere to go.
        eventually("the node to be Ready again", lambda: _ready(cluster, node.name), timeout=60, interval=1)


def test_a_device_error_on_one_real_node_sends_the_replacement_to_the_other(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # The process fails with exit code 74 (a device error, as a GPU health check would) on the
    # node it prefers, and runs anywhere else. Its replacement must not go back there.
    bad = cluster.real_nodes[0].name
    code = f"import os, time; os.environ['NODE'] == '{bad}' and os._exit(74); print('up', flush=True); time.sleep(600)"
    job = example_job(
        "xid",
        {"Worker": {"command": ["python3", "-c", code]}},
        failurePolicy={
            "restartScope": "Pod",
            "rules": [
                {"name": "xid", "action": "Restart", "onExitCodes": {"values": [74]}, "avoidNode": True}
            ],
        },
    )
    pod_spec = job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]
    pod_spec["containers"][0]["env"] = [
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]
    prefer = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [bad]}]}
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": prefer}]
        }
    }
    jobs.create(cluster, namespace, job)
    s = wait_failures(cluster, namespace, "xid", 1, timeout=120)
    (record,) = failures(s)
    assert (record["node"], record["exitCode"], record["rule"]) == (bad, 74, "xid")
    assert [a["node"] for a in s["avoidedNodes"]] == [bad]
    s = jobs.wait_state(cluster, namespace, "xid", "Running", timeout=120)
    pod = jobs.pods(cluster, namespace, "xid")["xid-worker-0"]
    assert pod["spec"]["nodeName"] == cluster.real_nodes[1].name, "kept off the node that failed it"
    assert "up" in logs(cluster, namespace, "xid-worker-0")
    assert len(failures(s)) == 1, "no second failure: it did not go back"


def _ready(c: devcluster.Cluster, name: str) -> bool:
    """Whether node ``name`` is Ready and untainted by the node lifecycle controller."""
    node = json.loads(c.kubectl("get", "node", name, "-o", "json").stdout)
    ready = any(x["type"] == "Ready" and x["status"] == "True" for x in node["status"]["conditions"])
    tainted = any(t["key"].startswith("node.kubernetes.io/") for t in node["spec"].get("taints") or ())
    return ready and not tainted
