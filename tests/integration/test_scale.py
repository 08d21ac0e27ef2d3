"""The scale subresource in a real kube-apiserver: what `kubectl scale` and an HPA write.

Scale writes reach no admission webhook, so the CRD's own rules (CEL) are what keep an
elastic job's workers within its bounds and a fixed-size job's counts fixed; these tests
prove the apiserver enforces them, and that the Scale it serves is the Worker count.
"""

from __future__ import annotations

import json

import kr8s
from testkit import kube as k
from testkit.builders import a_job

from kubetrain.api import v1beta1
from kubetrain.devcluster import cluster as devcluster


def elastic(name: str, namespace: str, workers: int = 2) -> v1beta1.TrainingJob:
    policy = v1beta1.ElasticPolicy(min_replicas=1, max_replicas=3)
    return (
        a_job(name)
        .namespace(namespace)
        .framework("pytorch", pytorch=v1beta1.PyTorchOptions(elastic=policy))
        .replicas("Worker", workers)
        .build()
    )


def scale(cluster: devcluster.Cluster, name: str, namespace: str, replicas: int) -> tuple[int, str]:
    done = cluster.kubectl("scale", f"tj/{name}", "-n", namespace, f"--replicas={replicas}", check=False)
    return done.returncode, done.stderr


def test_kubectl_scale_changes_an_elastic_jobs_workers(
    cluster: devcluster.Cluster, kube: kr8s.Api, namespace: str
) -> None:
    job = k.create_job(kube, elastic("el", namespace))
    # What an HPA reads: the count and the selector of the Worker pods.
    job.patch(
        {"status": {"replicaStatuses": {"Worker": {"active": 2, "selector": "a=b"}}}},
        type="merge",
        subresource="status",
    )
    got = json.loads(cluster.kubectl("get", "--raw", _scale_path(namespace, "el")).stdout)
    assert (got["kind"], got["spec"]["replicas"], got["status"]) == (
        "Scale",
        2,
        {"replicas": 2, "selector": "a=b"},
    )
    assert scale(cluster, "el", namespace, 3) == (0, "")
    job.refresh()
    assert job.raw["spec"]["replicaSpecs"]["Worker"]["replicas"] == 3


def test_the_apiserver_keeps_scale_within_the_elastic_bounds(
    cluster: devcluster.Cluster, kube: kr8s.Api, namespace: str
) -> None:
    k.create_job(kube, elastic("bounded", namespace))
    code, err = scale(cluster, "bounded", namespace, 4)
    assert code != 0
    assert "an elastic job's Worker replicas must lie between framework.pytorch.elastic.minReplicas" in err
    code, err = scale(cluster, "bounded", namespace, 0)
    assert code != 0
    assert "must lie between" in err


def test_a_fixed_size_job_refuses_to_scale_unless_suspended(
    cluster: devcluster.Cluster, kube: kr8s.Api, namespace: str
) -> None:
    fixed = a_job("fixed").namespace(namespace).framework("pytorch").replicas("Worker", 2).build()
    job = k.create_job(kube, fixed)
    code, err = scale(cluster, "fixed", namespace, 3)
    assert code != 0
    assert "replicas change only while the job is suspended, or in an elastic job" in err
    job.patch({"spec": {"runPolicy": {"suspend": True}}}, type="merge")
    assert scale(cluster, "fixed", namespace, 3) == (0, "")


def _scale_path(namespace: str, name: str) -> str:
    return f"/apis/{v1beta1.GROUP}/v1beta1/namespaces/{namespace}/trainingjobs/{name}/scale"
