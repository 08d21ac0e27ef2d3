"""Elastic PyTorch in real pods: `kubectl scale` grows and shrinks a training world on real nodes.

The short job samples/v1beta1/short/torch-elastic.yaml, made from the shipped torch-elastic
runtime (expanded as the operator's mutating webhook expands it: ``jobs.short``), runs as written
but for its shared directory (a fresh one) and a stop file: torchrun in each pod reads only the
PET_* kubetrain renders, meets at Worker 0's Service name through CoreDNS, and the script keeps
its progress on the hostPath the pods share. The test scales the job 2 -> 3 -> 2 with kubectl
while it trains, reads the steps rank 0 prints from the pods' logs, then lets it finish.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from testkit import jobs
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

NAME = "torch-elastic"


def steps(cluster: devcluster.Cluster, namespace: str) -> list[dict[str, Any]]:
    found = []
    for pod in jobs.pods(cluster, namespace, NAME):
        text = cluster.kubectl("logs", "-n", namespace, pod, check=False).stdout
        found += [
            json.loads(x.split(" ", 1)[1]) for x in text.splitlines() if x.startswith("KUBETRAIN-STEP ")
        ]
    return sorted(found, key=lambda s: s["step"])


def until(cluster: devcluster.Cluster, namespace: str, what: str, probe: Callable[[], int | None]) -> int:
    """``eventually``, showing the pods and their logs if it times out."""
    try:
        return eventually(what, probe, timeout=240)
    except AssertionError as e:  # timed out, or the job failed
        shown = [
            cluster.kubectl(*args, "-n", namespace, check=False).stdout
            for args in (("get", "pods", "-o", "wide"), ("get", "tj", NAME, "-o", "yaml"), ("get", "events"))
        ]
        for pod in jobs.pods(cluster, namespace, NAME):
            for previous in ([], ["--previous"]):
                text = cluster.kubectl("logs", "-n", namespace, pod, "--tail=40", *previous, check=False)
                shown.append(f"--- {pod} {' '.join(previous)}:\n{text.stdout}{text.stderr}")
        raise AssertionError("\n".join([str(e), *shown])) from None


def test_kubectl_scale_regrows_and_shrinks_a_training_world(
    cluster: devcluster.Cluster, namespace: str, shared_dir: str
) -> None:
    job = jobs.short(
        NAME,
        command=[
            "torchrun",
            "/opt/kubetrain/examples/elastic_train.py",
            "--steps=100000",
            "--checkpoint=/shared/step",
            "--stop-file=/shared/stop",
        ],
        # The short job's volume, by name: a fresh directory every node sees.
        replicaSpecs__Worker__template__spec__volumes=[
            {"name": "shared", "hostPath": {"path": shared_dir, "type": "DirectoryOrCreate"}}
        ],
        runPolicy__cleanPodPolicy="None",  # should it fail, its pods' logs tell why
        # The runtime leaves torchrun's last call at its default, 30 s: each of the test's three
        # worlds would wait that long for more workers (the runtime's 16 never come). Merged into
        # the runtime's elastic settings key by key, as samples/v1beta1/pytorch-elastic.yaml says it.
        framework__pytorch__elastic__rdzvConf={"last_call_timeout": "5"},
    )
    assert jobs.create(cluster, namespace, job) == NAME

    def reached(world: int, after: int) -> int | None:
        assert jobs.status(cluster, namespace, NAME).get("state") != "Failed", "the job failed"
        seen = [s["step"] for s in steps(cluster, namespace) if s["world"] == world and s["step"] > after + 5]
        return seen[-1] if seen else None

    two = until(cluster, namespace, "training in a world of 2", lambda: reached(2, 0))
    cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=3")
    three = until(cluster, namespace, "the world to grow to 3", lambda: reached(3, two))
    cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=2")
    until(cluster, namespace, "the world to shrink to 2", lambda: reached(2, three))

    (pathlib.Path(shared_dir) / "stop").touch()
    s = jobs.wait_state(cluster, namespace, NAME, "Succeeded", timeout=120)
    assert s.get("restarts", {}).get("userCode", 0) == 0
    assert not s.get("failures")
    numbers = [x["step"] for x in steps(cluster, namespace)]
    # Read from the pods still there: no step twice, and none after the end lost its place.
    assert numbers == sorted(set(numbers))
