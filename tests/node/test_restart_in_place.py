"""Restarts in place on real nodes: the kubelets restart every container of the job's pods where they are.

A 3-rank PyTorch DDP job (``restartMethod: InPlace``, restarted whole, PyTorch's scope) whose last
rank fails at step 130 of attempt 0. The operator moves the three pods to attempt 1; each pod's
agent sees it and exits, its kubelet (1.36, ``RestartAllContainersOnContainerExits``) restarts
every container of the pod in its sandbox, and the barrier holds each one until none of attempt
0 runs. The pods keep their UIDs, nodes and IPs; every rank of attempt 1 knows its attempt and
why it restarted, and resumes from the last checkpoint.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from testkit import jobs, resumed
from testkit.kube import eventually
from testkit.pods import logs

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator import intake, render
from kubetrain.operator.frameworks import registry

pytestmark = pytest.mark.usefixtures("running_operator")


@pytest.mark.parametrize("policy", ["OnFailure", "ExitCode"])
def test_a_ddp_job_restarts_in_place_keeps_its_pods_and_resumes_from_its_checkpoint(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str, policy: str
) -> None:
    """Under ``OnFailure`` the kubelet restarts the failed rank's container by itself; under
    ``ExitCode`` (``restartPolicy: Never``) the failed rank's main container's rule has its kubelet
    restart the whole pod in place, and its barrier holds it, its attempt having run there. In both,
    no pod is made again."""
    retry = {"name": "retryOne", "action": "Restart", "onExitCodes": {"values": [1]}}  # torchrun's exit
    job = resumed.ddp_job(
        shared_dir,
        restart_policy=policy,
        failurePolicy__restartMethod="InPlace",
        failurePolicy__rules=[retry] if policy == "ExitCode" else [],
    )
    name = jobs.create(cluster, namespace, job)
    first = jobs.running_pods(cluster, namespace, name, 3)
    assert all(p["spec"]["initContainers"][0]["name"] == naming.AGENT for p in first.values())

    s = jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=300)
    assert s["restarts"].get("userCode", 0) >= 1, s
    restarted = [f for f in s["failures"] if f["action"] == "Restart"]
    assert restarted
    assert {f["restart"] for f in restarted} == {"InPlace"}, restarted
    if policy == "ExitCode":
        # The code the kubelet erased in the restart, kept by the operator's cache.
        assert {f.get("exitCode") for f in restarted} == {1}, restarted
    assert not [e for e in jobs.events(cluster, namespace, name) if e["reason"] == "InPlaceRestartFellBack"]

    for pod_name, pod in jobs.pods(cluster, namespace, name).items():
        before = first[pod_name]
        # The same pod, on the same node, with the same IP: restarted in place, not made again.
        assert pod["metadata"]["uid"] == before["metadata"]["uid"], pod_name
        assert pod["spec"]["nodeName"] == before["spec"]["nodeName"]
        assert pod["status"]["podIP"] == before["status"]["podIP"]
        assert pod["metadata"]["labels"][naming.ATTEMPT] == "1"
        assert pod["metadata"]["annotations"][naming.OPENED] == "1"
        main = next(c for c in pod["status"]["containerStatuses"] if c["name"] == "pytorch")
        assert main["restartCount"] >= 1
    resumed.assert_resumed(cluster, namespace, name)


def test_the_barrier_holds_a_moved_pod_until_it_is_opened(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # The kubelet's part alone: a pod as kubetrain renders it for InPlace, owned by no job (no
    # operator opens it), moved to attempt 5 by hand as the operator moves one (one patch).
    job = jobs.sample("generic", failurePolicy__restartMethod="InPlace")
    job["spec"]["replicaSpecs"]["Learner"]["template"]["spec"]["containers"][0]["command"] = [
        "sh",
        "-c",
        "echo attempt $KUBETRAIN_RESTART_ATTEMPT restarts $KUBETRAIN_RESTARTS"
        " reason ${KUBETRAIN_LAST_RESTART_REASON-unset}; exec sleep 3600",
    ]
    job["metadata"]["namespace"] = namespace
    decoded = intake.decode(job, registry.default())
    [pod] = [
        o
        for o in render.render(decoded.job, decoded.framework, pods={("Learner", 0)}, in_place=True)
        if o["kind"] == "Pod"
    ]
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(pod))
    pod_name = pod["metadata"]["name"]
    uid = eventually("the pod to run", lambda: _running(cluster, namespace, pod_name), timeout=60)
    # Read from the file the barrier wrote (fileKeyRef): no reason before the first restart.
    assert logs(cluster, namespace, pod_name).strip() == "attempt 0 restarts 0 reason unset"

    moved = {
        "labels": {naming.ATTEMPT: "5"},
        "annotations": {naming.RESTARTS: "2", naming.LAST_RESTART_REASON: "UserCode:Error"},
    }
    cluster.kubectl(
        "patch", "pod", pod_name, "-n", namespace, "--type=merge", "-p", json.dumps({"metadata": moved})
    )
    held = eventually(
        "the pod to restart in place and wait at its barrier",
        lambda: _at_barrier(cluster, namespace, pod_name),
        timeout=30,
    )
    assert held["metadata"]["uid"] == uid
    main = held["status"]["containerStatuses"][0]
    assert main["restartCount"] == 1
    assert "running" not in main["state"], "nothing of the new attempt starts before it is opened"
    cluster.kubectl("annotate", "pod", pod_name, "-n", namespace, "--overwrite", f"{naming.OPENED}=5")
    eventually(
        "the main container to start in attempt 5",
        lambda: (
            _running(cluster, namespace, pod_name) == uid
            and logs(cluster, namespace, pod_name).strip() == "attempt 5 restarts 2 reason UserCode:Error"
        ),
        timeout=30,
    )


def _pod(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(json.loads(c.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout))


def _running(c: devcluster.Cluster, namespace: str, name: str) -> str | None:
    pod = _pod(c, namespace, name)
    main = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return str(pod["metadata"]["uid"]) if "running" in (main[0].get("state") or {}) else None


def _at_barrier(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    pod = _pod(c, namespace, name)
    init = {s["name"]: s for s in (pod.get("status") or {}).get("initContainerStatuses") or ()}
    barrier = init.get(naming.BARRIER, {})
    return pod if "running" in (barrier.get("state") or {}) and barrier.get("restartCount", 0) >= 1 else None
