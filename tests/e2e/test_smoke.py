"""Pods on the cluster tier: scheduled onto kwok nodes, run, finish, get evicted, lose nodes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kwok, process


def pod_json(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    result = c.kubectl("get", "pod", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def run_pod(c: devcluster.Cluster, namespace: str, name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    c.kubectl("create", "-f", "-", input=json.dumps(pod))
    return eventually(f"{name} to run", lambda: _phase_is(c, namespace, name, "Running"))


def _phase_is(c: devcluster.Cluster, namespace: str, name: str, phase: str) -> dict[str, Any] | None:
    pod = pod_json(c, namespace, name)
    return pod if pod and pod.get("status", {}).get("phase") == phase else None


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((x for x in pod.get("status", {}).get("conditions", []) if x["type"] == ctype), None)


@pytest.mark.parametrize(
    ("exit_code", "phase", "reason"), [(0, "Succeeded", "Completed"), (137, "Failed", "OOMKilled")]
)
def test_a_pod_is_scheduled_runs_and_exits(
    cluster: devcluster.Cluster, namespace: str, exit_code: int, phase: str, reason: str
) -> None:
    running = run_pod(cluster, namespace, "smoke")
    assert running["spec"]["nodeName"].startswith("kwok-node-")
    assert running["status"]["podIP"]
    assert condition(running, "Ready")["status"] == "True"  # type: ignore[index]
    kwok.finish_pod(cluster, namespace, "smoke", exit_code, reason="OOMKilled" if exit_code else None)
    done = eventually(f"smoke to be {phase}", lambda: _phase_is(cluster, namespace, "smoke", phase))
    (status,) = done["status"]["containerStatuses"]
    assert status["state"]["terminated"]["exitCode"] == exit_code
    assert status["state"]["terminated"]["reason"] == reason


def test_eviction_marks_the_pod_as_disrupted(cluster: devcluster.Cluster, namespace: str) -> None:
    run_pod(cluster, namespace, "evictee")
    watcher = subprocess.Popen(
        [
            cluster.bins["kubectl"],
            f"--kubeconfig={cluster.kubeconfig}",
            "get",
            "pod",
            "evictee",
            "-n",
            namespace,
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1)
        kwok.evict_pod(cluster, namespace, "evictee")
        eventually("evictee to be gone", lambda: pod_json(cluster, namespace, "evictee") is None)
    finally:
        watcher.terminate()
    events = [json.loads(doc) for doc in _json_docs(watcher.communicate(timeout=10)[0])]
    disrupted = [condition(e["object"], "DisruptionTarget") for e in events]
    assert any(d and d["status"] == "True" and d["reason"] == "EvictionByEvictionAPI" for d in disrupted)


def _json_docs(stream: str) -> list[str]:
    """Split kubectl's concatenated JSON documents."""
    docs, depth, start = [], 0, 0
    for i, ch in enumerate(stream):
        if ch == "{":
            depth, start = depth + 1, (i if depth == 0 else start)
        elif ch == "}":
            depth -= 1
            if depth == 0:
                docs.append(stream[start : i + 1])
    return docs


def test_losing_a_node_disrupts_its_pods_and_leaves_them_terminating(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    kwok.add_node(cluster, "kwok-doomed")
    eventually(
        "kwok-doomed to be Ready",
        lambda: (
            "True"
            in cluster.kubectl(
                "get", "node", "kwok-doomed", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
            ).stdout
        ),
    )
    run_pod(cluster, namespace, "stranded", node="kwok-doomed")
    kwok.lose_node(cluster, "kwok-doomed")
    pod = eventually(
        "stranded to be disrupted",
        lambda: (
            (p := pod_json(cluster, namespace, "stranded"))
            and p["metadata"].get("deletionTimestamp")
            and condition(p, "DisruptionTarget")
            and p
        ),
    )
    assert condition(pod, "DisruptionTarget")["reason"] == "DeletionByTaintManager"  # type: ignore[index]
    time.sleep(3)  # no kubelet answers for a lost node: the pod stays Terminating
    assert pod_json(cluster, namespace, "stranded") is not None


def test_no_process_outlives_a_killed_test_run(tmp_path: Any) -> None:
    # A child Python starts the apiserver tier, reports its pids, and is killed with SIGKILL —
    # as when CI or a developer kills a hung test run.
    script = textwrap.dedent(f"""
        import json, sys, time
        from kubetrain.devcluster import cluster
        c = cluster.start(cluster.Tier.APISERVER, workdir=__import__("pathlib").Path({str(tmp_path)!r}))
        print(json.dumps(c.pids), flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen(
        [sys.executable, "-P", "-c", script], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    assert child.stdout is not None
    pids = json.loads(child.stdout.readline())
    assert len(pids) == 2
    assert process.pids_alive(pids) == pids
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    eventually("etcd and kube-apiserver to exit", lambda: not process.pids_alive(pids) or None, timeout=15)


def test_a_component_that_exits_is_restarted_and_its_exit_logged(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # As after an apiserver restart, when kube-scheduler exits on "Scheduler cache is corrupted".
    scheduler = next(p for p in cluster.processes if p.name == "kube-scheduler")
    old = scheduler.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    eventually("kube-scheduler to run again", lambda: scheduler.alive() and scheduler.pid != old, timeout=20)
    log = (cluster.workdir / "logs" / "supervisor.log").read_text()
    assert "kube-scheduler exited with status -9; restarting" in log
    # And it schedules again: a new pod is bound and runs.
    assert run_pod(cluster, namespace, "after-restart")["status"]["phase"] == "Running"
