"""A job's TensorBoard on the full local cluster: created once, owned by the job, kept after it
finishes, gone with it — through the apiserver's garbage collector, as a user's cluster does it.

Pods run on kwok nodes, and this cluster runs no Deployment controller: the Deployment's pods
are the node tier's business (tests/node/test_tensorboard.py); here, the objects themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from testkit import operator
from testkit.jobs import RESOURCE, condition, create, events, finish, running_pods, sample, status, wait_state
from testkit.kube import eventually

from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")


@pytest.fixture(scope="module")
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


def board(c: devcluster.Cluster, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    r = c.kubectl("get", kind, f"{name}-tensorboard", "-n", namespace, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def both(c: devcluster.Cluster, namespace: str, name: str) -> dict[str, dict[str, Any]] | None:
    found = {kind: board(c, namespace, kind, name) for kind in ("deployment", "service")}
    return {k: v for k, v in found.items() if v is not None} if all(found.values()) else None


def gone(c: devcluster.Cluster, namespace: str, name: str) -> bool:
    return all(board(c, namespace, kind, name) is None for kind in ("deployment", "service"))


def test_it_is_created_once_owned_by_the_job_and_kept_after_the_job_finishes(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(cluster, namespace, sample("pytorch-tensorboard"))
    running = running_pods(cluster, namespace, name, 3)
    s = wait_state(cluster, namespace, name, "Running")
    assert s["tensorboard"] == {
        "name": f"{name}-tensorboard",
        "address": f"http://{name}-tensorboard.{namespace}.svc:6006",
    }
    objects = eventually("the TensorBoard's Deployment and Service", lambda: both(cluster, namespace, name))
    uid = json.loads(cluster.kubectl("get", RESOURCE, name, "-n", namespace, "-o", "json").stdout)[
        "metadata"
    ]["uid"]
    for obj in objects.values():
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "TrainingJob",
            name,
            uid,
            True,
        )
    assert objects["service"]["spec"]["ports"][0]["port"] == 6006
    assert objects["service"]["spec"]["clusterIP"] != "None"  # an address to reach, unlike a replica's

    finish(cluster, namespace, name, sorted(running))
    # Many reconciles later (pods ran, finished, were cleaned up): the very objects, never written again.
    after = both(cluster, namespace, name)
    assert after is not None
    for kind, obj in objects.items():
        assert after[kind]["metadata"]["uid"] == obj["metadata"]["uid"]
        assert after[kind]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"], kind
    assert status(cluster, namespace, name)["tensorboard"] == s["tensorboard"]
    assert not [e for e in events(cluster, namespace, name) if e["reason"] == "FailedCreate"]

    cluster.kubectl("delete", RESOURCE, name, "-n", namespace)
    eventually(
        "the garbage collector to delete the TensorBoard", lambda: gone(cluster, namespace, name), timeout=60
    )


def test_the_ttl_that_deletes_the_job_deletes_its_tensorboard(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = create(
        cluster,
        namespace,
        sample("pytorch-tensorboard", runPolicy__ttlSecondsAfterFinished=8),
    )
    running = running_pods(cluster, namespace, name, 3)
    eventually("the TensorBoard", lambda: both(cluster, namespace, name))
    finish(cluster, namespace, name, sorted(running))
    assert both(cluster, namespace, name) is not None, "kept while the job is kept"
    eventually(
        "the job to expire",
        lambda: cluster.kubectl("get", RESOURCE, name, "-n", namespace, check=False).returncode != 0,
        timeout=60,
    )
    eventually("its TensorBoard to go with it", lambda: gone(cluster, namespace, name), timeout=60)


def test_a_log_dir_the_pods_do_not_share_fails_the_job_with_the_field_named(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    job = sample("pytorch-tensorboard")
    for replica in job["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["volumes"] = [{"name": "logs", "emptyDir": {}}]
    job["metadata"]["name"] = "unshared"
    # Without the admission webhook (only the CRD installed), the operator says it on the job.
    name = create(cluster, namespace, job)
    s = wait_state(cluster, namespace, name, "Failed")
    failed = condition(s, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"].startswith(
        "spec.tensorboard.logDir: /logs/pytorch-tb is on volume 'logs' of replica type Master: "
        "each pod gets its own emptyDir"
    )
    assert gone(cluster, namespace, name)
