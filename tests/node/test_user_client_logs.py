"""``kubetrain.client`` reading real output: followed logs of a job on real nodes.

The replicas print numbered lines. One is restarted in place by its kubelet (OnFailure,
a container exit) and one is replaced by a new pod of the next attempt (ExitCode, 137):
a followed log must carry on through both, mark each, keep every replica's lines in
order, and end by itself when the job has succeeded.
"""

from __future__ import annotations

import pathlib
import threading
from typing import Any

import pytest
from testkit.pods import IMAGE

from kubetrain import client
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

LINES = 6
# First run of Master/0: three lines, then an exit its kubelet restarts in place (a marker on
# an emptyDir survives the container). First pod of Worker/1: three lines, then SIGKILL's code,
# which replaces the pod (a marker on the node's disk survives the pod). The others stay up until
# the replacement has started: it joins their gang, which it could not do once they had finished.
SCRIPT = f"""
import os, pathlib, sys, time
kind, index = os.environ["KUBETRAIN_REPLICA_TYPE"], os.environ["KUBETRAIN_REPLICA_INDEX"]
started = pathlib.Path("/node/replacement-started")
if (kind, index) == ("Worker", "1") and pathlib.Path("/node/replaced").exists():
    started.touch()
for i in range({LINES}):
    print(f"{{kind}}/{{index}} line {{i}}", flush=True)
    time.sleep(0.3)
    marker = pathlib.Path("/scratch/restarted" if kind == "Master" else "/node/replaced")
    if i == 2 and (kind, index) in (("Master", "0"), ("Worker", "1")) and not marker.exists():
        marker.touch()
        sys.exit(3 if kind == "Master" else 137)
for _ in range(600):
    if started.exists():
        break
    time.sleep(0.2)
"""


def replica(count: int, restart_policy: str, node_dir: pathlib.Path) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": IMAGE,
        "command": ["python3", "-c", SCRIPT],
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "node", "mountPath": "/node"},
        ],
    }
    return {
        "replicas": count,
        "restartPolicy": restart_policy,
        "template": {
            "spec": {
                "containers": [container],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "node", "hostPath": {"path": str(node_dir), "type": "DirectoryOrCreate"}},
                ],
                "terminationGracePeriodSeconds": 2,
            }
        },
    }


def test_a_followed_log_carries_on_through_a_restart_and_a_new_attempt_and_ends_with_the_job(
    cluster: devcluster.Cluster, namespace: str, tmp_path: pathlib.Path
) -> None:
    job = {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "lines"},
        "spec": {
            "framework": {"name": "generic"},
            "replicaSpecs": {
                "Master": replica(1, "OnFailure", tmp_path),
                "Worker": replica(2, "ExitCode", tmp_path),
            },
            "failurePolicy": {"restartScope": "Pod"},
            "runPolicy": {"cleanPodPolicy": "None"},
        },
    }
    got: list[client.LogLine] = []
    with client.connect(str(cluster.kubeconfig), namespace=namespace) as c:
        # Following starts before the job exists: it waits for the job's pods.
        c.create(job)
        follower = threading.Thread(target=lambda: got.extend(c.logs("lines", follow=True)), daemon=True)
        follower.start()
        follower.join(timeout=300)
        assert not follower.is_alive(), (
            f"logs -f did not end with the job; got {[tuple(x) for x in got]}\n"
            f"status: {c.get('lines').status}\npods: {c.pods('lines')}"
        )
        final = c.get("lines")
        assert final.status.state is not None
        assert final.status.state.value == "Succeeded"

    by_replica: dict[str, list[client.LogLine]] = {}
    for line in got:
        by_replica.setdefault(line.replica, []).append(line)
    assert sorted(by_replica) == ["master-0", "worker-0", "worker-1"]

    def texts(r: str) -> list[str]:
        return [x.text if not x.notice else "NOTICE" for x in by_replica[r]]

    full = [f"{{}} line {i}" for i in range(LINES)]
    assert texts("worker-0") == [f.format("Worker/0") for f in full]
    # Restarted in place by the kubelet: the first container's lines, a notice, the next one's.
    assert texts("master-0") == [f.format("Master/0") for f in full[:3]] + ["NOTICE"] + [
        f.format("Master/0") for f in full
    ]
    (restart,) = [x for x in by_replica["master-0"] if x.notice]
    assert "container restarted" in restart.text
    # Replaced by a new pod (restartScope Pod keeps the attempt): the old pod's lines, a notice, the new one's.
    assert texts("worker-1") == [f.format("Worker/1") for f in full[:3]] + ["NOTICE"] + [
        f.format("Worker/1") for f in full
    ]
    assert "a new pod (attempt 0)" in next(x.text for x in by_replica["worker-1"] if x.notice)
    # Unpacks as (replica, text), which is how most people will read it.
    replica_name, text = got[0]
    assert (replica_name, text) == (got[0].replica, got[0].text)

    # Without follow: what each pod holds now, the replaced container's log first.
    with client.connect(str(cluster.kubeconfig), namespace=namespace) as c:
        master = list(c.logs("lines", replica="Master/0"))
        # The replaced container's log may be gone already (the kubelet says so): a notice, then.
        assert "before the last restart" in master[0].text
        now = next(i for i, x in enumerate(master) if x.notice and "the container now" in x.text)
        assert [x.text for x in master[now + 1 :]] == [f.format("Master/0") for f in full]
        workers = [x.text for x in c.logs("lines", replica="worker", attempt=0)]
        assert workers == [f.format(f"Worker/{i}") for i in (0, 1) for f in full]
        assert list(c.logs("lines", replica="worker", attempt=1)) == []
