"""TensorBoard on real nodes: a PyTorch DDP run writes its loss to a volume its pods share, and
the job's TensorBoard — kubetrain's image, in a Deployment the job owns — serves it.

TensorBoard is asked over HTTP, as a browser behind ``kubetrain tensorboard`` would ask it: at
its pod's IP from this host, which routes the cluster's pod range into the node network, and at
its Service's ClusterIP from inside that network, where kube-proxy's rules are (the host routes
the Service range to one cluster only, and another may be running). The shared volume is a
hostPath in a fresh directory of this host, which every real node sees.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest
from testkit import jobs
from testkit.http import answers, get
from testkit.kube import eventually

from kubetrain.api import naming
from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

RANKS = ["rank0", "rank1", "rank2"]
STEPS = 200


def tensorboard_pods(c: devcluster.Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in naming.tensorboard_labels(name).items())
    out = c.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout
    return list(json.loads(out)["items"])


def test_tensorboard_serves_the_scalars_a_training_run_wrote(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    job = jobs.sample("pytorch-tensorboard")
    for replica in job["spec"]["replicaSpecs"].values():
        (volume,) = replica["template"]["spec"]["volumes"]
        volume["hostPath"]["path"] = shared_dir
    started = time.monotonic()
    name = jobs.create(cluster, namespace, job)

    def ready() -> bool:
        r = cluster.kubectl(
            "get", "deployment", f"{name}-tensorboard", "-n", namespace, "-o", "json", check=False
        )
        return r.returncode == 0 and json.loads(r.stdout).get("status", {}).get("readyReplicas") == 1

    eventually("the TensorBoard Deployment to be ready", ready, timeout=180, interval=0.5)
    print(f"\nTENSORBOARD-READY {time.monotonic() - started:.1f}s after the job was created")
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=240)

    (pod,) = tensorboard_pods(cluster, namespace, name)
    assert pod["spec"]["containers"][0]["image"] == "kubetrain.local/tensorboard:2.21.0"
    at_pod = f"http://{pod['status']['podIP']}:6006"
    # TensorBoard looks for new event files every few seconds.
    runs = eventually(
        "TensorBoard to show every rank's run",
        lambda: (r := answers(f"{at_pod}/data/runs")) and sorted(r) == RANKS and r,
        timeout=60,
    )
    assert sorted(runs) == RANKS
    tags = get(f"{at_pod}/data/plugin/scalars/tags")
    assert {run: sorted(t) for run, t in tags.items()} == {run: ["loss"] for run in RANKS}
    query = urllib.parse.urlencode({"run": "rank0", "tag": "loss"})
    points = eventually(
        "every step of rank 0",
        lambda: (p := answers(f"{at_pod}/data/plugin/scalars/scalars?{query}")) and len(p) == STEPS and p,
        timeout=60,
    )
    assert [step for _, step, _ in points] == list(range(STEPS))
    assert points[-1][2] < points[0][2] / 100, "the loss it shows is the one the run trained down"

    # The same through the Service: the address status.tensorboard gives, by its ClusterIP.
    service = json.loads(
        cluster.kubectl("get", "service", f"{name}-tensorboard", "-n", namespace, "-o", "json").stdout
    )
    assert jobs.status(cluster, namespace, name)["tensorboard"]["address"] == (
        f"http://{name}-tensorboard.{namespace}.svc:6006"
    )
    assert cluster.network is not None
    inside = cluster.network.run(
        "curl", "-sf", "--max-time", "10", f"http://{service['spec']['clusterIP']}:6006/data/runs"
    )
    assert sorted(json.loads(inside)) == RANKS

    # Kept after training; gone with the job, its pod too.
    cluster.kubectl("delete", jobs.RESOURCE, name, "-n", namespace)
    eventually(
        "the TensorBoard's pod to go with the job",
        lambda: not tensorboard_pods(cluster, namespace, name),
        timeout=90,
    )
