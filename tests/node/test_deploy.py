"""config/default deployed for real: the operator as the pods of its Deployment, from its image.

A cluster of its own (one real node) so that no other operator runs beside the deployed one.
The manager's image is built here from this repository (what the Dockerfile installs), its
webhooks are called by the apiserver through their Service, two replicas elect a leader, and
every sample whose image exists here runs to Succeeded under it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import fixtures, jobs
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, images

RUNNABLE_SAMPLES = ("pytorch-ddp", "mpi-allreduce", "generic")


@pytest.fixture(scope="module")
def deployed() -> Iterator[devcluster.Cluster]:
    # The node tier's image set: one seed serves both (devcluster/noderoot.py).
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=1, root=fixtures.ROOT, timeout=300, seed_images=True
    )
    try:
        deploy.in_cluster(c, fixtures.ROOT / "config", images.operator(fixtures.ROOT).ref)
        yield c
    finally:
        c.stop()


def manager_pods(c: devcluster.Cluster) -> dict[str, dict[str, Any]]:
    out = c.kubectl(
        "get", "pods", "-n", deploy.NAMESPACE, "-l", "control-plane=controller-manager", "-o", "json"
    )
    return {p["metadata"]["name"]: p for p in json.loads(out.stdout)["items"]}


def leader(c: devcluster.Cluster) -> str:
    lease = json.loads(
        c.kubectl("get", "lease", "kubetrain-operator-leader", "-n", deploy.NAMESPACE, "-o", "json").stdout
    )
    # A leader that stops releases the Lease: no holder until the other one takes it.
    return str(lease["spec"].get("holderIdentity", "")).split("_")[0]


def test_the_manager_runs_as_its_deployment_from_its_image(deployed: devcluster.Cluster) -> None:
    pods = manager_pods(deployed)
    assert len(pods) == 2
    for pod in pods.values():
        assert pod["status"]["phase"] == "Running"
        assert pod["spec"]["serviceAccountName"] == deploy.SERVICE_ACCOUNT
        (container,) = pod["spec"]["containers"]
        assert container["image"] == images.operator(fixtures.ROOT).ref
        assert pod["spec"]["nodeName"].startswith("real-node-")
    # It reached the apiserver through the `kubernetes` Service (kube-proxy) and took the Lease.
    assert leader(deployed) in pods


def test_the_apiserver_calls_both_webhooks_through_the_service(deployed: devcluster.Cluster) -> None:
    bad = jobs.sample("mpi-allreduce")
    bad["metadata"]["name"] = "two-launchers"
    bad["spec"]["replicaSpecs"]["Launcher"]["replicas"] = 2
    refused = deployed.kubectl("create", "-n", "default", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert "denied the request" in refused.stderr
    assert "spec.replicaSpecs.Launcher" in refused.stderr
    # A v1alpha1 object is stored as v1beta1 and read back as v1alpha1: conversion both ways.
    legacy = fixtures.ROOT / "samples" / "v1alpha1" / "tfjob-master-worker-ps.yaml"
    deployed.kubectl("create", "-n", "default", "-f", str(legacy))
    name = (
        deployed.kubectl("get", "-f", str(legacy), "-n", "default", "-o", "name")
        .stdout.strip()
        .split("/")[-1]
    )
    as_alpha = json.loads(
        deployed.kubectl(
            "get", f"trainingjobs.v1alpha1.training.kubetrain.dev/{name}", "-n", "default", "-o", "json"
        ).stdout
    )
    as_beta = jobs.get_job(deployed, "default", name)
    assert isinstance(as_alpha["spec"]["replicaSpecs"], list)
    assert as_beta is not None
    assert isinstance(as_beta["spec"]["replicaSpecs"], dict)
    assert len(as_beta["spec"]["replicaSpecs"]) == len(as_alpha["spec"]["replicaSpecs"]) == 3
    # Created as v1alpha1, it keeps Kubeflow's host names: config/defaults gives PerJob to v1beta1 only.
    assert as_beta["spec"]["network"] == {"hostNames": "PerReplica"}
    deployed.kubectl("delete", "-f", str(legacy), "-n", "default", "--wait=false")


@pytest.mark.parametrize("name", RUNNABLE_SAMPLES)
def test_the_sample_runs_to_succeeded(deployed: devcluster.Cluster, name: str) -> None:
    namespace = f"sample-{name}"
    deployed.kubectl("create", "namespace", namespace)
    deployed.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", namespace)
    job = jobs.create(deployed, namespace, jobs.sample(name))
    # The sample leaves its host names to config/defaults, which gives a new v1beta1 job PerJob.
    stored = jobs.get_job(deployed, namespace, job)
    assert stored is not None
    assert stored["spec"]["network"] == {"hostNames": "PerJob"}
    jobs.wait_state(deployed, namespace, job, "Succeeded", timeout=300)
    services = deployed.kubectl("get", "services", "-n", namespace, "-o", "name").stdout.split()
    assert services == [f"service/{job}"]


def test_the_other_replica_takes_over_when_the_leader_goes(deployed: devcluster.Cluster) -> None:
    first = leader(deployed)
    deployed.kubectl("delete", "pod", first, "-n", deploy.NAMESPACE, "--wait=false")
    second = eventually(
        "a new leader", lambda: (x := leader(deployed)) != first and x, timeout=90, interval=1
    )
    assert second in manager_pods(deployed)
    deployed.kubectl("create", "namespace", "after-failover")
    deployed.kubectl(
        "wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", "after-failover"
    )
    job = jobs.create(deployed, "after-failover", jobs.sample("generic"))
    jobs.wait_state(deployed, "after-failover", job, "Succeeded", timeout=120)
