"""MultiKueue across two local clusters, each with its own Kueue and its own operator.

A TrainingJob submitted to the manager with ``spec.managedBy: kueue.x-k8s.io/multikueue`` gets
its Workload from the manager's operator and nothing else. The manager's Kueue (its generic
adapter for custom kinds, ``multiKueue.externalFrameworks``) copies the Workload to the worker,
where the worker's Kueue admits it, then creates the job there naming that Workload
(``kueue.x-k8s.io/prebuilt-workload-name``). The worker's operator adopts the Workload, runs the
job on the worker's nodes and finishes the Workload at its end; Kueue mirrors the job's status
back to the manager and finishes the manager's Workload. Deleting the job on the manager
removes it from the worker.

The worker is a second cluster of the e2e tier (kwok nodes), started for this module only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import fixtures, operator, queues
from testkit.jobs import create, get_job, pods, running_pods, status
from testkit.kube import eventually
from testkit.queues import PODS, queued_job, true

from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import kueue

KIND = "TrainingJob.v1beta1.training.kubetrain.dev"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
WORKER = "worker-1"


@pytest.fixture(scope="module")
def worker() -> Iterator[devcluster.Cluster]:
    c = devcluster.start(devcluster.Tier.CLUSTER, nodes=2)
    try:
        fixtures.install_crds(c)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module", autouse=True)
def kueues_and_operators(cluster: devcluster.Cluster, worker: devcluster.Cluster) -> Iterator[None]:
    manager_kueue = kueue.start(cluster, multikueue_kinds=(KIND,))
    worker_kueue = kueue.start(worker)
    ops = []
    try:
        ops = [operator.start(cluster), operator.start(worker)]
        kueue.add_worker(cluster, worker, WORKER)
        yield
    finally:
        for op in ops:
            op.stop()
        kueue.stop(worker, worker_kueue)
        kueue.stop(cluster, manager_kueue)
        cluster.kubectl(
            "delete", "multikueueclusters.kueue.x-k8s.io", WORKER, "--ignore-not-found", check=False
        )


@pytest.fixture
def queue(cluster: devcluster.Cluster, worker: devcluster.Cluster, namespace: str) -> Iterator[str]:
    """A LocalQueue of one name on both clusters: on the manager its ClusterQueue dispatches
    through MultiKueue, on the worker it holds the quota."""
    worker.kubectl("create", "namespace", namespace)
    worker.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", namespace)
    on_worker = queues.local_queue(worker, namespace)
    next(on_worker)
    config, check = f"{namespace}-mk", f"{namespace}-mk-check"
    for obj in (
        {"kind": "MultiKueueConfig", "metadata": {"name": config}, "spec": {"clusters": [WORKER]}},
        {
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {
                "controllerName": MULTIKUEUE,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config},
            },
        },
    ):
        queues.apply(cluster, {"apiVersion": kueue.API_VERSION, **obj})
    on_manager = queues.local_queue(cluster, namespace, checks=(check,))
    name = next(on_manager)
    yield name
    next(on_manager, None)
    next(on_worker, None)
    for kind, n in (("admissionchecks", check), ("multikueueconfigs", config)):
        cluster.kubectl("delete", f"{kind}.kueue.x-k8s.io", n, "--ignore-not-found", check=False)
    worker.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def workloads(c: devcluster.Cluster, namespace: str) -> list[dict[str, Any]]:
    out = c.kubectl("get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json").stdout
    return list(json.loads(out)["items"])


def dispatched(name: str, queue: str) -> dict[str, Any]:
    job = queued_job(name, queue)
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def test_a_job_submitted_to_the_manager_runs_on_the_worker_and_its_status_comes_back(
    cluster: devcluster.Cluster, worker: devcluster.Cluster, namespace: str, queue: str
) -> None:
    name = create(cluster, namespace, dispatched("mk", queue))
    # The worker gets the job, naming the Workload MultiKueue made there; its operator adopts it.
    remote = eventually("the job on the worker", lambda: get_job(worker, namespace, name), timeout=90)
    prebuilt = remote["metadata"]["annotations"][PREBUILT]
    assert "managedBy" not in remote["spec"], "the worker's copy is the worker operator's to run"
    running_pods(worker, namespace, name, PODS)

    def adopted() -> dict[str, Any] | None:
        wl = next((w for w in workloads(worker, namespace) if w["metadata"]["name"] == prebuilt), None)
        refs = (wl or {}).get("metadata", {}).get("ownerReferences") or []
        return (
            wl if any(r["uid"] == remote["metadata"]["uid"] and r.get("controller") for r in refs) else None
        )

    eventually("the worker's Workload adopted by its job", adopted, timeout=30)
    assert len(workloads(worker, namespace)) == 1, "no second Workload beside MultiKueue's"
    # The manager runs nothing: one Workload, no pods; its job shows the worker's status.
    (local,) = workloads(cluster, namespace)
    assert local["metadata"]["name"] == prebuilt
    assert not pods(cluster, namespace, name)
    eventually(
        "the manager's job to show Running",
        lambda: status(cluster, namespace, name).get("state") == "Running",
        timeout=60,
    )

    queues.finish_all(worker, namespace, name)
    eventually(
        "the manager's job to show Succeeded",
        lambda: status(cluster, namespace, name).get("state") == "Succeeded",
        timeout=60,
    )
    eventually(
        "the manager's Workload to be finished",
        lambda: true(next(iter(workloads(cluster, namespace)), None), "Finished"),
        timeout=60,
    )


def test_deleting_the_job_on_the_manager_removes_it_from_the_worker(
    cluster: devcluster.Cluster, worker: devcluster.Cluster, namespace: str, queue: str
) -> None:
    name = create(cluster, namespace, dispatched("gone", queue))
    running_pods(worker, namespace, name, PODS)
    cluster.kubectl("delete", "trainingjob", name, "-n", namespace)
    eventually("the worker's job to be removed", lambda: get_job(worker, namespace, name) is None, timeout=90)
    eventually("the worker's pods to go", lambda: not pods(worker, namespace, name), timeout=90)
