"""Admission asks the real apiserver about the pods and Services a job renders (dryRun=All).

The webhook's review function runs here against a real kube-apiserver with its default
admission plugins (ServiceAccount, ResourceQuota, PodSecurity, ...): what the apiserver
would refuse about the object is refused with the path in TrainingJob terms; what it
would refuse about the namespace is admitted with a warning. Nothing is stored.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from testkit.builders import a_job

from kubetrain.api import scheme
from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import client
from kubetrain.operator.webhooks import validating


def job(namespace: str, **container: Any) -> dict[str, Any]:
    obj = scheme.encode(a_job("dr").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build())
    obj["metadata"]["namespace"] = namespace
    for spec in obj["spec"]["replicaSpecs"].values():
        spec["template"]["spec"]["containers"][0].update(container)
    return obj


async def review(
    c: devcluster.Cluster, obj: dict[str, Any], old: dict[str, Any] | None = None
) -> dict[str, Any]:
    api = await client.Client.connect(str(c.kubeconfig))
    body = {
        "request": {"uid": "u", "namespace": obj["metadata"]["namespace"], "object": obj, "oldObject": old}
    }
    response: dict[str, Any] = (await validating.Admission(api).review(body))["response"]
    return response


def test_a_valid_job_is_admitted_without_warnings_and_nothing_is_stored(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    # This tier runs no controller-manager, which would have made the namespace's default ServiceAccount.
    cluster.kubectl("create", "serviceaccount", "default", "-n", namespace)
    response = asyncio.run(review(cluster, job(namespace)))
    assert response["allowed"], response
    assert "warnings" not in response
    pods = cluster.kubectl("get", "pods,services", "-n", namespace, "-o", "name").stdout
    assert pods == ""


def test_what_the_apiserver_refuses_in_a_pod_is_refused_with_the_path_in_the_job(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    obj = job(namespace)
    worker = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]
    del worker["containers"][0]["image"]
    worker["containers"].append({"name": "-1", "image": "x"})
    obj["spec"]["replicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "a-port-name-longer-than-fifteen", "containerPort": 1}
    ]
    response = asyncio.run(review(cluster, obj))
    assert not response["allowed"]
    assert response["status"]["code"] == 422
    found = response["status"]["message"].split("; ")
    assert "spec.replicaSpecs.Worker.template.spec.containers[0].image: Required value" in found
    assert any(
        f.startswith('spec.replicaSpecs.Worker.template.spec.containers[1].name: Invalid value: "-1"')
        for f in found
    ), found
    assert any(
        f.startswith("spec.replicaSpecs.Master.template.spec.containers[0].ports[0].name: ") for f in found
    ), found


def test_what_the_apiserver_refuses_about_the_namespace_is_admitted_with_a_warning(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "none", "namespace": namespace},
        "spec": {"hard": {"pods": "0"}},
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(quota))
    response = asyncio.run(review(cluster, job(namespace, serviceAccountName="not-yet")))
    assert response["allowed"], response
    assert any("exceeded quota" in w or "service account" in w for w in response["warnings"]), response


def test_an_update_that_leaves_the_spec_alone_is_not_dry_run(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    obj = job(namespace)
    del obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    labelled = copy.deepcopy(obj)
    labelled["metadata"]["labels"] = {"team": "a"}
    # Only a spec change is dry-run: a label on a job stored before the webhook is not refused.
    assert asyncio.run(review(cluster, labelled, old=obj))["allowed"]
    assert not asyncio.run(review(cluster, obj))["allowed"]
