"""Elastic PyTorch end to end: `kubectl scale` and a HorizontalPodAutoscaler resize a job.

The operator runs as a process against the full control plane (the controller manager's
HPA controller included); pods run on kwok nodes. What is checked is kubetrain's side of
elasticity: the pods and Services that join or leave, nothing else touched, nothing
charged, the job Running throughout. torchrun's side (the world re-forming) is proven
with real processes in tests/realcode/test_pytorch_elastic.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit import operator
from testkit.jobs import create, pods, running_pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.api import v1beta1
from kubetrain.devcluster import cluster as devcluster

NAME = "pytorch-elastic"


@pytest.fixture(scope="module", autouse=True)
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


def services(cluster: devcluster.Cluster, namespace: str) -> list[str]:
    got = json.loads(cluster.kubectl("get", "services", "-n", namespace, "-o", "json").stdout)["items"]
    return sorted(s["metadata"]["name"] for s in got)


def uids(found: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in found.items()}


def workers(cluster: devcluster.Cluster, namespace: str) -> int:
    got = json.loads(cluster.kubectl("get", "tj", NAME, "-n", namespace, "-o", "json").stdout)
    return int(got["spec"]["replicaSpecs"]["Worker"]["replicas"])


def test_kubectl_scale_adds_and_removes_workers_without_a_restart_or_a_charge(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    create(cluster, namespace, sample("pytorch-elastic"))
    two = running_pods(cluster, namespace, NAME, 2)
    wait_state(cluster, namespace, NAME, "Running")

    cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=3")
    three = running_pods(cluster, namespace, NAME, 3)
    assert {n: uids(three)[n] for n in two} == uids(two), "the running workers are left alone"
    assert services(cluster, namespace) == sorted(three)
    s = eventually(
        "status to count 3 active workers",
        lambda: (x := status(cluster, namespace, NAME))["replicaStatuses"]["Worker"]["active"] == 3 and x,
    )
    assert s["state"] == "Running"
    assert not any(c["type"] == "Restarting" and c["status"] == "True" for c in s["conditions"])

    cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=2")
    after = eventually(
        "worker 2 and its Service to go",
        lambda: (
            (p := pods(cluster, namespace, NAME)).keys() == two.keys()
            and services(cluster, namespace) == sorted(two)
            and p
        ),
    )
    assert uids(after) == uids(two)
    s = status(cluster, namespace, NAME)
    assert s["state"] == "Running"
    assert s.get("restarts", {}) in ({}, {"userCode": 0, "infrastructure": 0, "uncharged": 0})
    assert not s.get("failures")

    # Back up at once: worker 2 comes again, and so does its Service, deleted a moment ago.
    cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=3")
    again = running_pods(cluster, namespace, NAME, 3)
    eventually("worker 2's Service again", lambda: services(cluster, namespace) == sorted(again))

    refused = cluster.kubectl("scale", f"tj/{NAME}", "-n", namespace, "--replicas=4", check=False)
    assert refused.returncode != 0
    assert "must lie between framework.pytorch.elastic.minReplicas and maxReplicas" in refused.stderr


def test_a_horizontal_pod_autoscaler_scales_the_job_through_its_scale_subresource(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    create(cluster, namespace, sample("pytorch-elastic"))
    running_pods(cluster, namespace, NAME, 2)
    wait_state(cluster, namespace, NAME, "Running")

    # No metrics server here: an HPA still brings the count within its own min and max, and
    # that is done through the scale endpoint like any other change it makes.
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": NAME},
        "spec": {
            "scaleTargetRef": {"apiVersion": v1beta1.API_VERSION, "kind": "TrainingJob", "name": NAME},
            "minReplicas": 3,
            "maxReplicas": 3,
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(hpa))
    running_pods(cluster, namespace, NAME, 3)
    assert workers(cluster, namespace) == 3
    seen = eventually(
        "the HPA to report the job's 3 workers",
        lambda: (h := _hpa(cluster, namespace)).get("status", {}).get("currentReplicas") == 3 and h,
    )
    assert seen["status"]["desiredReplicas"] == 3

    hpa["spec"].update(minReplicas=1, maxReplicas=1)
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(hpa))
    one = running_pods(cluster, namespace, NAME, 1)
    assert list(one) == [f"{NAME}-worker-0"]
    assert workers(cluster, namespace) == 1
    assert status(cluster, namespace, NAME)["state"] == "Running"


def _hpa(cluster: devcluster.Cluster, namespace: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "hpa", NAME, "-n", namespace, "-o", "json").stdout
    got: dict[str, Any] = json.loads(out)
    return got
